"""The model's prediction for one (chapter, M, N, K, depth): chip schedule + L2 model -> what one
SM's TMA sees -> one SM's share on the virtual clock -> kernel time, TFLOP/s, utilisations and the
unit that limits it. A MODEL, never a measurement."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from . import chip
from .params import value as P

#: Below this utilisation no unit is called the bottleneck: the SM mostly waits (latency, fill,
#: handoffs that do not overlap). A reading aid for the table, not a model parameter.
BUSY = 0.8


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


def _config(chapter, pipe_depth):
    from ..chapters import CHAPTERS

    config = CHAPTERS[chapter].config
    if "pipe_depth" not in config:
        return {}, None
    depth = int(config["pipe_depth"] if pipe_depth is None else pipe_depth)
    return {"pipe_depth": depth}, depth


def takes_depth(chapter):
    from ..chapters import CHAPTERS

    return "pipe_depth" in CHAPTERS[chapter].config


def predict(chapter, m, n, k, pipe_depth=None, *, keep_trace=False):
    from ..emu import costmodel
    from .share import run_share

    t_wall = time.perf_counter()
    cfg, depth = _config(chapter, pipe_depth)
    geo = chip.geometry(chapter, cfg)
    sms = int(P("sm_count"))
    ghz = P("clock_ghz")
    order = chip.tile_order(geo, m, n)
    units_on_chip = sms // geo.ctas_per_unit
    # a first, cheap look at the kernel (occupancy needs its smem/threads/TMEM) is the share itself;
    # occupancy only matters for one-tile-per-CTA grids, whose share is one tile: run it at the L2
    # figures of a chip-wide round first, then correct the concurrency once known.
    occ = 1
    for _ in range(2):
        concurrent = min(len(order), units_on_chip * occ)
        traffic = chip.l2_traffic(order, geo, k, concurrent)
        active = min(sms, concurrent * geo.ctas_per_unit)
        feed = chip.tma_feed(traffic, active)
        with costmodel.overridden(TMA_LATENCY_CYCLES=feed.latency_cycles, TMA_BYTES_PER_CYCLE=feed.bytes_per_cycle):
            share = run_share(chapter, m, n, k, sm_count=sms, keep_trace=keep_trace, **cfg)
        new_occ = 1 if geo.persistent else chip.occupancy(share.shared_bytes, share.threads, share.tmem_cols)
        if new_occ == occ:
            break
        occ = new_occ
    if geo.persistent:
        per_unit = math.ceil(len(order) / units_on_chip)
        sm_cycles = share.span_cycles
        tma_cycles = share.tma_busy_cycles
    else:
        per_unit = math.ceil(len(order) / units_on_chip)  # CTAs on the busiest SM
        busiest = max(share.tc_busy_cycles, share.tma_busy_cycles)
        sm_cycles = max(math.ceil(per_unit / occ) * share.span_cycles, per_unit * busiest)
        tma_cycles = per_unit * share.tma_busy_cycles
    launch_us = P("launch_overhead_us")
    time_us = launch_us + sm_cycles / (ghz * 1e3)
    t_cycles = time_us * ghz * 1e3
    flops = 2 * m * n * k
    util_tc = flops / (sms * P("mma_flop_per_cycle_sm") * t_cycles)
    util_tma = tma_cycles / t_cycles
    util_l2 = (traffic.l2_read_bytes + traffic.d_bytes) / (P("l2_bytes_per_cycle_total") * t_cycles)
    util_hbm = (traffic.hbm_read_bytes + traffic.d_bytes) / (P("hbm_bytes_per_s") * time_us * 1e-6)
    utils = {"tensor core": util_tc, feed.limiter: max(util_tma, util_l2 if feed.limiter == "L2" else 0,
                                                       util_hbm if feed.limiter == "HBM" else 0)}
    unit = max(utils, key=utils.get)
    launch_share = launch_us / time_us
    if launch_share > 0.3:
        bottleneck = "launch overhead"
    elif utils[unit] >= BUSY:
        bottleneck = unit
    else:
        bottleneck = "latency"
    return Prediction(chapter, m, n, k, depth, flops / (time_us * 1e-6) / 1e12, time_us, bottleneck, util_tc, util_tma,
                      util_l2, util_hbm, launch_share, feed.latency_cycles, feed.bytes_per_cycle, feed.limiter,
                      traffic.miss_fraction, min(len(order), units_on_chip), per_unit, occ, share.span_cycles,
                      time.perf_counter() - t_wall, share if keep_trace else None)
