"""``perf.predict(design, m, n, k)``: the model's figure for any ``Design`` with its range, the unit
that limits it and where the time goes; and the explorer's helpers (a design beside the chapters'
designs, each chapter's sensitivity to each parameter). A MODEL, never a measurement.

A design one of the book's kernels implements runs that kernel's share on the emulator (model.py,
``engine="emulator"``); any other design runs the analytic share (analytic.py, ``engine="analytic"``),
on the same chip and parameters. ``engine="analytic"`` forces the latter for a chapter's design too
(tests/test_perf_design.py compares the two on every chapter)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from .design import CHAPTER_DESIGNS, Design
from .params import NOMINAL, PARAMS, RANGED

ENGINES = ("emulator", "analytic")


@dataclass
class DesignPrediction:
    design: Design
    m: int
    n: int
    k: int
    tflops: float
    time_us: float
    bottleneck: str
    util: dict  # unit -> busy share of the kernel's time
    split: dict  # microseconds: launch, fill, steady, then drain (emulator) or epilogue and split_k (analytic)
    engine: str
    tiles: int
    units: int  # SMs, or pairs
    tiles_per_unit: int  # the busiest unit's tiles
    harness: str = "back-to-back"
    tflops_low: float | None = None
    tflops_high: float | None = None
    effects: dict = field(default_factory=dict)  # parameter -> (log ratio at its pessimistic end, at its optimistic end)
    detail: object = None  # the emulator engine's model.Prediction (the stored rows' fields)
    schedule_busy: float | None = None  # the analytic engine's wave_busy, a K-split's included
    wall_s: float = 0.0

    @property
    def range_text(self):
        return f"{self.tflops:.0f} ({self.tflops_low:.0f}-{self.tflops_high:.0f})"

    @property
    def wave_busy(self):
        """The tensor core's busy share that the schedule allows at best: the k-blocks of all tiles
        over units x the busiest unit's k-blocks (a partly empty last wave leaves units idle; a
        K-split of it shares its k-blocks among all units)."""
        if self.schedule_busy is not None:
            return self.schedule_busy
        return self.tiles / (self.units * self.tiles_per_unit)

    @property
    def limit(self):
        """The busiest unit's name and share."""
        unit = max(self.util, key=self.util.get)
        return unit, self.util[unit]


def _one(design, m, n, k, values, harness, engine):
    if engine == "emulator":
        from .model import predict as chapter_predict

        chapter, cfg = design.chapter_config()
        depth = cfg.pop("pipe_depth", None)
        if depth is None and "pipe_depth" in _chapter_config(chapter):
            depth = design.stages
        p = chapter_predict(chapter, m, n, k, depth, values=values, with_range=False, harness=harness,
                            tmem_cols=design.tmem_cols, config=cfg or None)
        um, un = design.unit_tile
        tiles = -(-m // um) * -(-n // un)
        util = {"tensor core": p.util_tensor_core, "TMA": p.util_tma, "shared memory": p.util_smem,
                "L2": p.util_l2, "HBM": p.util_hbm}
        units = int(values["sm_count"]) // design.cta_group
        return DesignPrediction(design, m, n, k, p.tflops, p.time_us, p.bottleneck, util, p.split, engine, tiles,
                                units, p.tiles_per_unit, harness, detail=p)
    from .analytic import predict_design

    tf, t_us, util, bottleneck, split, sch, _, _, _ = predict_design(design, m, n, k, values, harness)
    kb = -(-k // design.tile_k)
    busiest = sch.per_unit * kb  # k-blocks of the busiest unit; a K-split shares the last wave's among all
    if sch.split > 1:
        busiest = (sch.per_unit - 1) * kb + math.ceil(sch.last_wave * kb / sch.units)
    return DesignPrediction(design, m, n, k, tf, t_us, bottleneck, util, split.as_dict(), engine, sch.tiles,
                            sch.units, sch.per_unit, harness, schedule_busy=sch.tiles * kb / (sch.units * busiest))


def _chapter_config(chapter):
    from ..chapters import CHAPTERS

    return CHAPTERS[chapter].config


def check_shape(design, m, n, k):
    """The shapes a design takes: the book's kernel's own rule where one implements it; otherwise
    any positive M and N (edge tiles are padded by the TMA) and K a multiple of 8 (16-byte rows)."""
    if design.chapter_config() is not None:
        from .model import check_shape as chapter_check

        return chapter_check(design.chapter, m, n, k)
    for name, v in zip("MNK", (m, n, k)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if k % 8:
        raise ValueError(f"K={k}: the TMA needs 16-byte rows, so K must be a multiple of 8: pad K with zeros")


def predict(design, m, n, k, *, values=None, with_range=True, harness="back-to-back", engine=None):
    """The model's figure for ``design`` at M x N x K (a DesignPrediction), with ``tflops_low``/
    ``tflops_high`` from the parameters' sourced ranges (each at each end, the others at their
    values; the effects added as independent errors) unless ``with_range=False``."""
    if isinstance(design, int):
        design = CHAPTER_DESIGNS[design]
    if not isinstance(design, Design):
        raise TypeError(f"predict takes a perf.Design (or a chapter number), got {type(design).__name__}")
    design.check()
    if engine is None:
        engine = "emulator" if design.chapter_config() is not None else "analytic"
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine == "emulator" and design.chapter_config() is None:
        raise ValueError("engine='emulator' runs one of the book's kernels, and no chapter implements this design")
    check_shape(design, m, n, k)
    values = NOMINAL if values is None else values
    t0 = time.perf_counter()
    nominal = _one(design, m, n, k, values, harness, engine)
    if with_range:
        effects = {}
        for name in RANGED:
            if (name == "launch_overhead_us") != (harness == "single") and name in ("launch_overhead_us", "launch_gap_us"):
                continue
            p = PARAMS[name]
            effects[name] = tuple(
                0.0 if end == values[name] else
                math.log(_one(design, m, n, k, values.with_(**{name: end}), harness, engine).tflops / nominal.tflops)
                for end in (p.pessimistic, p.optimistic))
        down = math.sqrt(sum(min(0.0, *e) ** 2 for e in effects.values()))
        up = math.sqrt(sum(max(0.0, *e) ** 2 for e in effects.values()))
        nominal.tflops_low, nominal.tflops_high = nominal.tflops * math.exp(-down), nominal.tflops * math.exp(up)
        nominal.effects = effects
        if nominal.detail is not None:
            nominal.detail.tflops_low, nominal.detail.tflops_high = nominal.tflops_low, nominal.tflops_high
            nominal.detail.effects = effects
    nominal.wall_s = time.perf_counter() - t0
    if nominal.detail is not None:
        nominal.detail.wall_s = nominal.wall_s
    return nominal


def describe(p):
    """A prediction in a few lines: figure and range, limit, utilisations, the time split."""
    d = p.design
    um, un = d.unit_tile
    lines = [f"{d.name or 'design'}: {um} x {un} unit tile ({'pair' if d.cta_group == 2 else 'one CTA'}), "
             f"{d.stages} stages, {d.accumulators} accumulator(s), {d.consumers} consumer(s), {d.epilogue} epilogue"
             f"{', K-split of the last wave' if d.k_split != 'none' else ''}",
             f"  MODEL at {p.m} x {p.n} x {p.k}: {p.range_text} TFLOP/s, limited by {p.bottleneck} "
             f"({p.engine} share)",
             f"  tiles {p.tiles} on {p.units} units: the busiest runs {p.tiles_per_unit}, so the schedule allows the "
             f"tensor core {p.wave_busy:.1%} busy; the model has it {p.util['tensor core']:.1%} busy",
             "  busy: " + ", ".join(f"{u} {v:.0%}" for u, v in p.util.items()),
             "  time (us): " + ", ".join(f"{k} {v:.1f}" for k, v in p.split.items() if v or k != "split_k")]
    return "\n".join(lines)


__all__ = ["DesignPrediction", "ENGINES", "check_shape", "describe", "predict"]
