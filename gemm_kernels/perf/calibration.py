"""The calibration set and the model's error on every point of it.

The set is the two columns (2048^3, 4096^3) of the CMU 15-442/642 TIRx GEMM assignment's B200
reference times (github.com/mlsyscourse/assignment-tirx-gemm, ``REFERENCE_TIMES`` in utils.py,
"averaged over multiple runs on modal"; TFLOP/s = 2 M N K / time), mapped to our chapters by
design (tile, depth, roles). They are that course's measurements of its kernels, not ours, and not
of our kernels. Other published B200 figures are held out: nothing here is fitted to them."""
from __future__ import annotations

import math
from dataclasses import dataclass

SOURCE = ("CMU 15-442/642 TIRx GEMM assignment, B200 reference times (github.com/mlsyscourse/assignment-tirx-gemm, "
          "utils.py REFERENCE_TIMES)")


@dataclass(frozen=True)
class Point:
    chapter: int
    pipe_depth: int | None
    size: int
    tflops: float  # published
    cmu_step: int
    design: str


def _points():
    rows = [  # (CMU step, design, chapter, depth, {size: TFLOP/s})
        (4, "TMA load + TMA store, 128x128 tile", 4, None, {2048: 330}),
        (5, "software pipeline, PIPE_DEPTH 2", 5, 2, {2048: 521, 4096: 505}),
        (6, "persistent + tile scheduler", 6, 2, {2048: 491, 4096: 575}),
        (7, "warp specialization, depth 2", 7, 2, {2048: 554, 4096: 598}),
        (8, "warp specialization, depth 4", 7, 4, {2048: 747, 4096: 1041}),
        (9, "2-CTA cluster, cta_group::2, 256x256", 8, None, {2048: 747, 4096: 1185}),
        (10, "two consumers, 512x256 cluster tile", 9, None, {2048: 491, 4096: 1284}),
    ]
    from ..chapters import CHAPTERS

    # a design without a stated depth is compared with our chapter at its default depth
    return tuple(Point(ch, d if d is not None else CHAPTERS[ch].config.get("pipe_depth"), s, tf, step, design)
                 for step, design, ch, d, by in rows for s, tf in by.items())


CALIBRATION = _points()


def published(chapter, size, pipe_depth=None):
    """The published figure for our chapter's design at size^3, or None."""
    for p in CALIBRATION:
        if p.chapter == chapter and p.size == size and p.pipe_depth == pipe_depth:
            return p
    return None


@dataclass
class Row:
    point: Point
    model_tflops: float
    bottleneck: str

    @property
    def error(self):
        """Relative error of the model: (model - published) / published."""
        return self.model_tflops / self.point.tflops - 1


def evaluate(points=CALIBRATION, predict=None):
    """Predict every calibration point (with the chapter's default depth where the point has none)."""
    from .model import predict as _predict

    predict = predict or _predict
    rows = []
    for p in points:
        pred = predict(p.chapter, p.size, p.size, p.size, p.pipe_depth)
        rows.append(Row(p, pred.tflops, pred.bottleneck))
    return rows


def summary(rows):
    """(mean |error|, rms of log ratio, worst |error|)."""
    errs = [r.error for r in rows]
    logs = [math.log(r.model_tflops / r.point.tflops) for r in rows]
    return (sum(abs(e) for e in errs) / len(errs), math.sqrt(sum(x * x for x in logs) / len(logs)),
            max(abs(e) for e in errs))


def table(rows):
    lines = [f"{'chapter':<8}{'depth':>6}{'size':>6}  {'CMU step':<9}{'published':>10}{'model':>8}{'error':>8}  limited by",
             "-" * 74]
    for r in rows:
        p = r.point
        d = "-" if p.pipe_depth is None else str(p.pipe_depth)
        lines.append(f"{p.chapter:<8}{d:>6}{p.size:>6}  {p.cmu_step:<9}{p.tflops:>10.0f}{r.model_tflops:>8.0f}"
                     f"{100 * r.error:>7.0f}%  {r.bottleneck}")
    mean, rms, worst = summary(rows)
    lines.append(f"mean |error| {100 * mean:.0f}%, rms log ratio {rms:.2f}, worst {100 * worst:.0f}%")
    return "\n".join(lines)
