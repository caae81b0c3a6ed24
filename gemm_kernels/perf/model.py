"""The model's prediction for one (chapter, M, N, K, depth): chip schedule + L2 model -> what one
SM's TMA sees -> one SM's share on the virtual clock -> kernel time, TFLOP/s, utilisations, the
unit that limits it, and the range the parameters' sourced ranges give. A MODEL, never a measurement.

    from gemm_kernels.perf.model import predict
    p = predict(9, 8192, 8192, 8192)        # p.tflops, p.tflops_low, p.tflops_high, p.bottleneck

The parameters come in as ``values`` (params.Values: NOMINAL by default). The range: the model is
run with each ranged parameter at each end of its sourced range, the others at their values; the
effects (log ratios to the figure) that lower the figure are added as independent errors
(root-sum-square) into ``tflops_low``, those that raise it into ``tflops_high``.

Speed: a share is a fill, T identical tiles and a drain, and each tile a fill, K/64 identical
k-blocks and an epilogue, so once the ring is steady its span is linear in T and in K. The model
runs cluster 0 at 1 and 2 tiles of a short K (the emulator's cost is mostly the tiles' epilogues) and
extrapolates to the full problem: each further tile adds the difference of the two runs, each further
k-block the steady k-block cadence read off the last tile's MMA starts over whole ring turns
(``exact=True`` runs it whole; tests/test_perf_steady.py checks that the two agree to 0.1%). Costs
are in cycles, so a share does not depend on the clock and runs at any clock are one cached run."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from . import chip
from .params import NOMINAL, PARAMS, RANGED

#: Below this utilisation no unit is called the bottleneck: the SM mostly waits (latency, fill,
#: handoffs that do not overlap). A reading aid for the table, not a model parameter.
BUSY = 0.8
#: The published harnesses time many calls back to back and divide; "single" is one synchronous launch.
HARNESSES = ("back-to-back", "single")


@dataclass
class Prediction:
    chapter: int
    m: int
    n: int
    k: int
    pipe_depth: int | None
    tflops: float
    time_us: float
    bottleneck: str
    util_tensor_core: float
    util_tma: float
    util_l2: float
    util_hbm: float
    util_smem: float
    launch_share: float
    tma_latency_cycles: float
    tma_bytes_per_cycle: float
    tma_limiter: str
    l2_miss_fraction: float
    units: int  # SMs or pairs the schedule uses
    tiles_per_unit: int  # the largest share (persistent) or CTAs on the busiest SM
    occupancy: int
    share_span_cycles: float
    wall_s: float  # how long the model took on this machine
    share: object = None
    tflops_low: float | None = None  # the range from the parameters' ranges (root-sum-square of their effects)
    tflops_high: float | None = None
    effects: dict | None = None  # parameter -> (log ratio at its pessimistic end, at its optimistic end)
    harness: str = "back-to-back"
    tmem_cols: int | None = None  # a design's TMEM allocation, where it differs from the chapter's
    split: dict | None = None  # microseconds: launch, fill (to the first MMA), steady, drain (last MMA to exit)
    config: dict | None = None  # kernel settings beyond the depth (acc_stages), where not the chapter's

    @property
    def range_text(self):
        return f"{self.tflops:.0f} ({self.tflops_low:.0f}-{self.tflops_high:.0f})"


def _config(chapter, pipe_depth, extra=None):
    from ..chapters import CHAPTERS

    config = CHAPTERS[chapter].config
    unknown = [k for k in (extra or {}) if k not in config]
    if unknown:
        raise ValueError(f"chapter {chapter}'s kernel takes no setting {unknown}")
    if "pipe_depth" not in config:
        return dict(extra or {}), None
    depth = int(config["pipe_depth"] if pipe_depth is None else pipe_depth)
    return {"pipe_depth": depth, **(extra or {})}, depth


def check_shape(chapter, m, n, k):
    """The chapter's shape rule (its tile multiples; chapter 10: any M, N, K a multiple of 8), raised
    before the model runs: a shape the kernel refuses has no prediction."""
    from ..chapters import CHAPTERS

    tile = CHAPTERS[chapter].tile
    for name, v, t in zip("MNK", (m, n, k), tile):
        if v < 1 or v % t:
            raise ValueError(f"chapter {chapter} runs M, N, K that are multiples of {tile[0]}, {tile[1]}, {tile[2]}; "
                             f"got {name}={v}: pad the operands with zeros up to a multiple of {t}")


def takes_depth(chapter):
    from ..chapters import CHAPTERS

    return "pipe_depth" in CHAPTERS[chapter].config


def costs_for(values, feed):
    """The emulator's unit costs for one SM that the chip leaves ``feed`` (chip.TmaFeed)."""
    from ..emu.costmodel import Costs

    return Costs(clock_ghz=values["clock_ghz"], mma_flop_per_cycle=values["mma_flop_per_cycle_sm"],
                 tma_latency_cycles=round(feed.latency_cycles, 3), tma_bytes_per_cycle=round(feed.bytes_per_cycle, 3),
                 barrier_latency_cycles=values["barrier_latency_cycles"])


@dataclass
class _Steady:
    """A share extrapolated to the full problem (the fields model.py reads)."""

    span_cycles: float
    tc_busy_cycles: float
    tma_busy_cycles: float
    load_bytes: float
    mma_flops: float
    shared_bytes: int
    threads: int
    tmem_cols: int
    trace: object = None
    first_mma_cycles: float = 0.0  # the run's start to its first MMA (set-up and the ring's fill)
    tail_cycles: float = 0.0  # its last MMA's start to its end (the last writeback, teardown)


#: what one tile's epilogue costs the emulator, in k-blocks' worth of its time (for choosing the
#: cheaper of the exact run and the extrapolation; it changes no figure)
_EPILOGUE_KBLOCKS = 16


def _block_k(chapter):
    from ..chapters import CHAPTERS

    ch = CHAPTERS[chapter]  # the kernel's k-block (chapter 10's shape rule, tile[2] = 8, is not one)
    return getattr(ch._mod(), "BLOCK_K", ch.tile[2])


def steady_points(chapter, k, tiles_full, persistent, depth, *, always=False):
    """The short runs the extrapolation uses: (tiles, K1) for 1 and 2 tiles (or the share's own 1 or 2),
    at a K1 of more than twice the ring's depth in k-blocks (the ring fills and then runs steadily).
    Returns (tiles per run, K1), or None where the full run is as cheap (unless ``always``) or K is
    no longer than K1."""
    block_k = _block_k(chapter)
    k1 = max(8, 2 * (depth or 1) + 4) * block_k
    tiles = tiles_full if persistent else 1
    ts = (1, 2) if tiles > 2 else (tiles,)
    if k <= k1 and len(ts) == 1:
        return None
    k1 = min(k1, k)
    cost = sum(t * (k1 // block_k + _EPILOGUE_KBLOCKS) for t in ts)
    if cost >= tiles * (k // block_k + _EPILOGUE_KBLOCKS) and not always:
        return None
    return ts, k1


def kblock_period(share, tiles, kblocks, depth):
    """The steady cadence of one k-block, cycles: in the run's last tile, the time between the first
    MMA of a k-block and the first MMA W k-blocks later, over the last W k-blocks (W a whole number of
    ring turns, ``depth`` k-blocks each, so a ring's uneven turn averages out; the first turns of the
    tile, where the ring fills or the previous tile's epilogue competes, are left out)."""
    starts = share.mma_starts
    per_kblock, rest = divmod(len(starts), tiles * kblocks)
    if rest or not per_kblock:
        raise ValueError(f"{len(starts)} MMAs do not split into {tiles} tiles of {kblocks} k-blocks")
    d = depth or 1
    window = d * max(1, (kblocks - d - 1) // d)
    last = (tiles * kblocks - 1) * per_kblock  # first MMA of the last k-block
    return (starts[last] - starts[last - window * per_kblock]) / window


def _share(chapter, m, n, k, cfg, costs, tiles_full, geo, exact, keep_trace, sms):
    """One SM's share of the full problem: run as it is (``exact``, or where that is as cheap), or
    extrapolated from the short runs of ``steady_points``: linearly in the tiles (each tile after
    the first adds the same time: the difference of the 1- and 2-tile runs) and in K (each k-block
    adds the steady k-block cadence of ``kblock_period`` to every tile).

    The short runs use the smallest problem that gives cluster 0 the same work: t tiles of one
    tile row (timing mode has no values, and a tile's cost does not depend on where it lies), so
    the runs of one chapter and depth are shared by every size whose SMs see the same feed."""
    from .share import run_share

    persistent = geo.persistent
    depth = cfg.get("pipe_depth")
    points = None if exact or keep_trace else steady_points(chapter, k, tiles_full, persistent, depth,
                                                            always=exact is False)
    if points is None:
        return run_share(chapter, m, n, k, sm_count=sms, keep_trace=keep_trace, costs=costs, **cfg)
    ts, k1 = points

    def run(t):
        if persistent:
            return run_share(chapter, geo.tile_m * t, geo.tile_n, k1, sm_count=sms, costs=costs, tiles=t, **cfg)
        return run_share(chapter, geo.tile_m, geo.tile_n, k1, sm_count=sms, costs=costs, **cfg)

    runs = [run(t) for t in ts]
    base, t0 = runs[0], ts[0]
    n_tiles = tiles_full if persistent else 1
    kb1 = -(-k1 // _block_k(chapter))
    more_k = -(-k // _block_k(chapter)) - kb1  # k-blocks each tile adds (a ragged K's last one is a whole one)
    more_t = n_tiles - t0  # tiles beyond the base run

    def per_tile(field):
        return getattr(runs[1], field) - getattr(base, field) if len(runs) == 2 else 0.0

    def per_kblock(value):  # a figure that grows with every k-block of every tile and nothing else
        return value / (t0 * kb1)

    period = kblock_period(runs[-1], ts[-1], kb1, depth) if more_k else 0.0
    span = base.span_cycles + more_t * per_tile("span_cycles") + n_tiles * more_k * period
    loads_busy = base.tma_busy_cycles - base.store_busy_cycles

    def grown(field, kblock_share):
        return getattr(base, field) + more_t * per_tile(field) + n_tiles * more_k * per_kblock(kblock_share)

    last = runs[-1]
    return _Steady(span, grown("tc_busy_cycles", base.tc_busy_cycles), grown("tma_busy_cycles", loads_busy),
                   grown("load_bytes", base.load_bytes), grown("mma_flops", base.mma_flops),
                   base.shared_bytes, base.threads, base.tmem_cols, first_mma_cycles=base.mma_starts[0],
                   tail_cycles=last.span_cycles - last.mma_starts[-1])


def predict(chapter, m, n, k, pipe_depth=None, *, values=None, with_range=True, harness="back-to-back",
            tmem_cols=None, exact=None, keep_trace=False, config=None):
    """The model's prediction for chapter ``chapter`` at M x N x K (depth: the chapter's default when
    None), with ``tflops_low``/``tflops_high`` from the parameters' ranges unless ``with_range=False``.
    ``harness``: "back-to-back" (calls timed in a loop, as the published figures are) or "single".
    ``tmem_cols``: compare as a design that allocates this many TMEM columns per CTA (occupancy).
    ``exact``: True runs the whole share, False extrapolates wherever it can, None (default) does
    whichever is cheaper (the two agree: tests/test_perf_steady.py)."""
    if harness not in HARNESSES:
        raise ValueError(f"harness must be one of {HARNESSES}, got {harness!r}")
    check_shape(chapter, m, n, k)
    t_wall = time.perf_counter()
    kw = dict(harness=harness, tmem_cols=tmem_cols, exact=exact, config=config)
    values = NOMINAL if values is None else values
    nominal = _predict(chapter, m, n, k, pipe_depth, values, keep_trace=keep_trace, **kw)
    if with_range:
        effects = {}
        for name in RANGED:
            if name == "launch_overhead_us" and harness != "single" or name == "launch_gap_us" and harness == "single":
                continue
            p = PARAMS[name]
            ends = [values.with_(**{name: end}) for end in (p.pessimistic, p.optimistic)]
            effects[name] = tuple(0.0 if v == values else
                                  math.log(_predict(chapter, m, n, k, pipe_depth, v, **kw).tflops / nominal.tflops)
                                  for v in ends)
        down = math.sqrt(sum(min(0.0, *e) ** 2 for e in effects.values()))
        up = math.sqrt(sum(max(0.0, *e) ** 2 for e in effects.values()))
        nominal = replace(nominal, tflops_low=nominal.tflops * math.exp(-down), tflops_high=nominal.tflops * math.exp(up),
                          effects=effects)
    return replace(nominal, wall_s=time.perf_counter() - t_wall)


_OCCUPANCY = {}  # (chapter, config, TMEM columns, the SM's limits) -> resident CTAs per SM
_OCCUPANCY_PARAMS = ("smem_bytes_per_sm", "threads_per_sm", "tmem_cols_per_sm")


def _predict(chapter, m, n, k, pipe_depth, values, *, harness, tmem_cols, exact, keep_trace=False, config=None):
    cfg, depth = _config(chapter, pipe_depth, config)
    geo = chip.geometry(chapter, cfg)
    sms = int(values["sm_count"])
    ghz = values["clock_ghz"]
    order = chip.tile_order(geo, m, n)
    units_on_chip = sms // geo.ctas_per_unit
    per_unit = math.ceil(len(order) / units_on_chip)  # tiles of the busiest unit (CTAs on the busiest SM)
    # occupancy only matters for one-tile-per-CTA grids, whose share is one tile: run it at the L2
    # figures of a chip-wide round first, then correct the concurrency once known. The occupancy
    # depends on the launch alone (shared memory, threads, TMEM columns), not on the costs, so the
    # first prediction of a design remembers it for the others (its range's settings).
    occ_key = (chapter, tuple(sorted(cfg.items())), tmem_cols, *(values[p] for p in _OCCUPANCY_PARAMS))
    occ = _OCCUPANCY.get(occ_key, 1)
    for _ in range(2):
        concurrent = min(len(order), units_on_chip * occ)
        traffic = chip.l2_traffic(order, geo, k, concurrent, values=values)
        active = min(sms, concurrent * geo.ctas_per_unit)
        feed = chip.tma_feed(traffic, active, values)
        share = _share(chapter, m, n, k, cfg, costs_for(values, feed), per_unit, geo, exact, keep_trace, sms)
        cols = share.tmem_cols if tmem_cols is None else tmem_cols
        new_occ = 1 if geo.persistent else chip.occupancy(share.shared_bytes, share.threads, cols, values)
        if new_occ == occ:
            break
        occ = new_occ
    _OCCUPANCY[occ_key] = occ
    copies = 1 if geo.persistent else per_unit  # how many times the busiest SM runs the share
    # shared memory: the TMA's writes and the tensor core's operand reads share its bandwidth
    smem_bytes = copies * (share.load_bytes + share.mma_flops * geo.smem_read_bytes_per_flop)
    smem_cycles = smem_bytes / values["smem_bytes_per_cycle_sm"]
    if geo.persistent:
        sm_cycles = share.span_cycles
    else:
        busiest = max(share.tc_busy_cycles, share.tma_busy_cycles)
        sm_cycles = max(math.ceil(per_unit / occ) * share.span_cycles, per_unit * busiest)
    sm_cycles = max(sm_cycles, smem_cycles)
    tma_cycles = copies * share.tma_busy_cycles
    launch_us = values["launch_gap_us" if harness == "back-to-back" else "launch_overhead_us"]
    time_us = launch_us + sm_cycles / (ghz * 1e3)
    t_cycles = time_us * ghz * 1e3
    flops = 2 * m * n * k
    util_tc = flops / (sms * values["mma_flop_per_cycle_sm"] * t_cycles)
    util_tma = tma_cycles / t_cycles
    util_l2 = (traffic.l2_read_bytes + traffic.d_bytes) / (values["l2_bytes_per_s"] * time_us * 1e-6)
    util_hbm = (traffic.hbm_read_bytes + traffic.d_bytes) / (values["hbm_bytes_per_s"] * time_us * 1e-6)
    util_smem = smem_cycles / t_cycles
    utils = {"tensor core": util_tc, "shared memory": util_smem,
             feed.limiter: max(util_tma, util_l2 if feed.limiter == "L2" else 0,
                               util_hbm if feed.limiter == "HBM" else 0)}
    unit = max(utils, key=utils.get)
    launch_share = launch_us / time_us
    if launch_share > 0.3:
        bottleneck = "launch overhead"
    elif utils[unit] >= BUSY:
        bottleneck = unit
    else:
        bottleneck = "latency"
    # where the time goes: the share's own fill (start to first MMA) and drain (last MMA to exit);
    # a one-tile-per-CTA grid's passes scale them alike
    first = getattr(share, "first_mma_cycles", None)
    if first is None:  # a whole run (model.share.Share)
        first, tail = share.mma_starts[0], share.span_cycles - share.mma_starts[-1]
    else:
        tail = share.tail_cycles
    scale = sm_cycles / share.span_cycles / (ghz * 1e3)
    split = {"launch": round(launch_us, 3), "fill": round(first * scale, 3),
             "steady": round((share.span_cycles - first - tail) * scale, 3), "drain": round(tail * scale, 3)}
    return Prediction(chapter, m, n, k, depth, flops / (time_us * 1e-6) / 1e12, time_us, bottleneck, util_tc, util_tma,
                      util_l2, util_hbm, util_smem, launch_share, feed.latency_cycles, feed.bytes_per_cycle,
                      feed.limiter, traffic.miss_fraction, min(len(order), units_on_chip), per_unit, occ,
                      share.span_cycles, 0.0, share if keep_trace else None, harness=harness, tmem_cols=tmem_cols,
                      split=split, config={k: v for k, v in cfg.items() if k != "pipe_depth"} or None)
