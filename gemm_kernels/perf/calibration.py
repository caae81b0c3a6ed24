"""The calibration set and the model's error on every point of it.

The set is the two columns (2048^3, 4096^3) of the CMU 15-442/642 TIRx GEMM assignment's B200
reference times (github.com/mlsyscourse/assignment-tirx-gemm, ``REFERENCE_TIMES`` in utils.py,
"averaged over multiple runs on modal"; TFLOP/s = 2 M N K / time), mapped to our chapters by
design (tile, depth, roles). They are that course's measurements of its kernels, not ours, and not
of our kernels. Other published B200 figures are held out: nothing here is fitted to them.

Like for like: each point is compared with our kernel configured as the published design. Its
steps 4 and 5 allocate all 512 TMEM columns (one CTA per SM), where our chapters 4-5 allocate 128
(so two or three CTAs share an SM): the model runs ours at their allocation (``tmem_cols``). Its
step 9 runs the two-CTA kernel at PIPE_DEPTH 4: our chapter 8 at depth 4, not its default 6. The
published times are averages of calls timed back to back: the model's harness "back-to-back"."""
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
    tmem_cols: int | None = None  # the published design's TMEM allocation, where ours differs


def _points():
    rows = [  # (CMU step, design, chapter, depth, TMEM columns, {size: TFLOP/s})
        (4, "TMA load + TMA store, 128x128 tile, 512 TMEM columns", 4, None, 512, {2048: 330}),
        (5, "software pipeline, PIPE_DEPTH 2, 512 TMEM columns", 5, 2, 512, {2048: 521, 4096: 505}),
        (6, "persistent + tile scheduler", 6, 2, None, {2048: 491, 4096: 575}),
        (7, "warp specialization, depth 2", 7, 2, None, {2048: 554, 4096: 598}),
        (8, "warp specialization, depth 4", 7, 4, None, {2048: 747, 4096: 1041}),
        (9, "2-CTA cluster, cta_group::2, 256x256, PIPE_DEPTH 4", 8, 4, None, {2048: 747, 4096: 1185}),
        (10, "two consumers, 512x256 cluster tile", 9, None, None, {2048: 491, 4096: 1284}),
    ]
    from ..chapters import CHAPTERS

    # a design without a stated depth is compared with our chapter at its default depth
    return tuple(Point(ch, d if d is not None else CHAPTERS[ch].config.get("pipe_depth"), s, tf, step, design, cols)
                 for step, design, ch, d, cols, by in rows for s, tf in by.items())


CALIBRATION = _points()


def published(chapter, size, pipe_depth=None, tmem_cols=None):
    """The published figure for our chapter's design at size^3, or None."""
    for p in CALIBRATION:
        if (p.chapter, p.size, p.pipe_depth, p.tmem_cols) == (chapter, size, pipe_depth, tmem_cols):
            return p
    return None


@dataclass
class Row:
    point: Point
    model_tflops: float
    bottleneck: str
    low: float | None = None
    high: float | None = None

    @property
    def error(self):
        """Relative error of the model: (model - published) / published."""
        return self.model_tflops / self.point.tflops - 1

    @property
    def factor(self):
        """How far off, as a factor >= 1 either way."""
        r = self.model_tflops / self.point.tflops
        return max(r, 1 / r)

    @property
    def inside(self):
        """Whether the published figure lies inside the model's range (None: no range)."""
        return None if self.low is None else self.low <= self.point.tflops <= self.high


def evaluate(points=CALIBRATION, predict=None, *, with_range=True, values=None):
    """Predict every calibration point as its published design (depth, TMEM allocation)."""
    from .model import predict as _predict

    rows = []
    for p in points:
        if predict is None:
            pred = _predict(p.chapter, p.size, p.size, p.size, p.pipe_depth, tmem_cols=p.tmem_cols,
                            with_range=with_range, values=values)
        else:
            pred = predict(p.chapter, p.size, p.size, p.size, p.pipe_depth, p.tmem_cols)
        rows.append(Row(p, pred.tflops, pred.bottleneck, getattr(pred, "tflops_low", None),
                        getattr(pred, "tflops_high", None)))
    return rows


def summary(rows):
    """(mean |error|, rms of log ratio, worst |error|)."""
    errs = [r.error for r in rows]
    logs = [math.log(r.model_tflops / r.point.tflops) for r in rows]
    return (sum(abs(e) for e in errs) / len(errs), math.sqrt(sum(x * x for x in logs) / len(logs)),
            max(abs(e) for e in errs))


def scores(rows):
    """The issue's measures: median factor, share within 1.35x, worst factor, share of published
    figures inside the model's range, mean range width (high / low)."""
    import statistics

    f = [r.factor for r in rows]
    ranged = [r for r in rows if r.low is not None]
    return {"median": statistics.median(f), "within_1_35": sum(x <= 1.35 for x in f) / len(f), "worst": max(f),
            "inside": sum(r.inside for r in ranged) / len(ranged) if ranged else None,
            "mean_width": statistics.mean(r.high / r.low for r in ranged) if ranged else None}


#: the calibration table's columns: (header, width, alignment); header and rows are formatted from
#: this one list, so each value sits under its header (tests/test_perf_book.py checks the edges)
COLUMNS = (("chapter", 8, "<"), ("depth", 6, ">"), ("size", 6, ">"), ("CMU step", 10, ">"), ("published", 11, ">"),
           ("MODEL (range)", 20, ">"), ("off by", 8, ">"), ("inside", 8, ">"), ("limited by (model)", 20, ">"))


def _line(cells):
    return "".join(f"{str(c):{a}{w}}" for c, (_, w, a) in zip(cells, COLUMNS)).rstrip()


def table(rows):
    lines = [_line(h for h, _, _ in COLUMNS)]
    lines.append("-" * len(lines[0]))
    for r in rows:
        p = r.point
        rng = f"{r.model_tflops:.0f}" + ("" if r.low is None else f" ({r.low:.0f}-{r.high:.0f})")
        inside = "-" if r.inside is None else ("yes" if r.inside else "no")
        lines.append(_line((p.chapter, "-" if p.pipe_depth is None else p.pipe_depth, p.size, p.cmu_step,
                            f"{p.tflops:.0f}", rng, f"{r.factor:.2f}x", inside, r.bottleneck)))
    s = scores(rows)
    line = f"median {s['median']:.2f}x, {100 * s['within_1_35']:.0f}% within 1.35x, worst {s['worst']:.2f}x"
    if s["inside"] is not None:
        line += f"; published inside the range at {100 * s['inside']:.0f}% of points, mean range width {s['mean_width']:.2f}x"
    lines.append(line)
    return "\n".join(lines)
