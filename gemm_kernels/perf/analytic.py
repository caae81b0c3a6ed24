"""The analytic share: what one SM (pair) of any ``Design`` does, in closed form, on the same chip
(chip.py: schedule, L2/HBM, the TMA feed), the same parameters (params.py) and the same unit costs
as the emulator's share of the book's kernels (emu/costmodel.py). A MODEL, never a measurement.

One unit (a CTA, or a pair) runs: a set-up (barriers, TMEM allocation, the first load's latency),
then its tiles, then the last tile's writeback. A tile is K/tile_k k-blocks at the steady cadence

    P = max(MMA time, TMA transfer time, shared-memory time, ring round trip / stages)

where the round trip is a stage's load latency + its transfer + its MMAs + three barrier handoffs
(full -> MMA, commit -> empty, empty -> producer), plus its epilogue where the MMAs wait for it: a
serial epilogue holds the tensor core for the writeback's TMEM reads (and, without warp
specialisation, for the whole writeback and the ring's refill); an overlapped one costs only what
it exceeds the next tile's main loop by. A K-split of the last wave gives the idle units of a
partly empty last wave a share of its tiles' k-blocks, at the cost of writing and reading fp32
partial sums through L2. tests/test_perf_design.py compares this with the emulator's share on every
chapter's design."""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import chip
from .params import NOMINAL


@dataclass
class Split:
    """Where the busiest unit's time goes, in microseconds."""

    launch: float
    fill: float  # set-up and the first stage's load, before the first MMA
    steady: float  # the main loops at the steady k-block cadence
    epilogue: float  # writebacks the tensor core waits for (serial epilogues, the last tile's)
    split_k: float = 0.0  # the K-split's partial-sum traffic

    def as_dict(self):
        return {k: round(v, 3) for k, v in self.__dict__.items()}


@dataclass
class Costs:
    """One unit's per-k-block and per-tile costs, cycles."""

    t_mma: float
    t_tma: float
    t_smem: float
    round_trip: float
    period: float
    epilogue: float  # one tile's full writeback
    tmem_read: float  # its TMEM -> register part (what a serial, warp-specialised epilogue holds the MMAs for)
    setup: float
    fill: float
    limiter: str


def geometry(design):
    um, un = design.unit_tile
    return chip.Geometry(um, un, design.cta_group, design.persistent or design.scheduler == "clc",
                         design.raster_group, design.mma_m, design.tile_n)


def unit_costs(design, feed, values=NOMINAL, emu_costs=None):
    """Per-k-block and per-tile costs of one unit of ``design`` with the TMA feed ``feed`` (chip.TmaFeed)."""
    from ..emu.costmodel import DEFAULT

    ec = emu_costs or DEFAULT
    rate = values["mma_flop_per_cycle_sm"]
    b = values["barrier_latency_cycles"]
    lat = feed.latency_cycles
    flops = 2 * design.tile_m * design.tile_n * design.tile_k  # one CTA's (one SM's) MMAs per k-block
    t_mma = flops / rate
    t_tma = design.stage_bytes / feed.bytes_per_cycle
    reads = flops * (design.mma_m + design.tile_n) / (design.mma_m * design.tile_n)
    t_smem = (design.stage_bytes + reads) / values["smem_bytes_per_cycle_sm"]
    round_trip = lat + t_tma + t_mma + 3 * b
    parts = {"tensor core": t_mma, "TMA": t_tma, "shared memory": t_smem, "latency": round_trip / design.stages}
    limiter = max(parts, key=parts.get)
    period = parts[limiter]
    # the writeback of one tile: TMEM -> registers (the emulator's tcgen05.ld cost, 32 lanes x 32
    # columns a warp, the four warps of a writeback warpgroup side by side), then the fp16 tile out
    # through the TMA at the SM's feed (or by ordinary stores at the emulator's per-element cost)
    chunks = design.tile_n / 32 * max(1, design.tile_m // design.consumers // 128)
    tmem_read = chunks * ec.tmem_ld_cycles_per_32_cols + 2 * b
    out_bytes = design.tile_m * design.tile_n * 2 // design.consumers
    if design.epilogue_store == "tma":
        store = out_bytes / feed.bytes_per_cycle + lat
    else:
        store = design.tile_m * design.tile_n / design.consumers / 128 * ec.global_access_cycles + ec.global_latency_cycles
    epilogue = tmem_read + store
    setup = 6 * b  # barrier initialisation, TMEM allocation, the cluster's sync: barrier-latency handoffs
    fill = lat + t_tma + b  # the first stage's load before the first MMA
    return Costs(t_mma, t_tma, t_smem, round_trip, period, epilogue, tmem_read, setup, fill, limiter)


def tile_cycles(design, c, kblocks):
    """One tile's cycles on the tensor core's critical path, and the part of it that is epilogue."""
    main = kblocks * c.period
    if not design.warp_specialized:  # one thread issues loads and MMAs and then writes back: nothing overlaps
        return main + c.epilogue + c.fill, c.epilogue
    if design.epilogue == "overlapped":  # the next tile's MMAs run into the other accumulator
        extra = max(0.0, c.epilogue - main)
        return main + extra, extra
    return main + c.tmem_read, c.tmem_read  # the MMAs wait until the writeback has read TMEM


@dataclass
class Schedule:
    tiles: int
    units: int
    per_unit: int  # tiles of the busiest unit (non-persistent: CTAs on the busiest SM)
    last_wave: int  # tiles in the last, partly empty wave (0: the waves are full)
    split: float = 1.0  # units per last-wave tile when the last wave is split along K


def schedule(design, m, n, sms):
    """How the tiles fall on the units: a persistent or CLC design's busiest unit runs per_unit tiles;
    a one-tile-per-CTA grid's busiest SM hosts per_unit CTAs (``occupancy`` of them at once)."""
    um, un = design.unit_tile
    tiles = -(-m // um) * -(-n // un)
    units = sms // design.cta_group
    per = math.ceil(tiles / units)
    last = tiles - (per - 1) * units
    last = 0 if last == units else last
    split = 1
    if design.k_split == "last-wave" and last:
        split = units / last  # the last wave's k-blocks spread over every unit (each tile over ~units/last)
    return Schedule(tiles, units, per, last, split)


def occupancy(design, values=NOMINAL):
    if design.persistent or design.scheduler == "clc":
        return 1
    return chip.occupancy(design.smem_bytes - 1024, design.threads, design.tmem_alloc, values)


def predict_design(design, m, n, k, values=NOMINAL, harness="back-to-back"):
    """(TFLOP/s, time in us, utilisations dict, bottleneck, Split, Schedule, Costs, feed) of
    ``design`` at M x N x K. The caller adds the range (perf.predict)."""
    sms = int(values["sm_count"])
    ghz = values["clock_ghz"]
    geo = geometry(design)
    occ = occupancy(design, values)
    sch = schedule(design, m, n, sms)
    order = chip.tile_order(geo, m, n) if geo.persistent else [(i % -(-m // geo.tile_m), i // -(-m // geo.tile_m))
                                                               for i in range(sch.tiles)]
    concurrent = min(sch.tiles, sch.units * (1 if geo.persistent else occ))
    traffic = chip.l2_traffic(order, geo, k, concurrent, values=values)
    # multicast: one L2 read feeds several CTAs, so the L2 carries 1/multicast of the operand bytes
    active = min(sms, concurrent * design.cta_group)
    feed = chip.tma_feed(traffic, active, values)
    if design.multicast > 1 and feed.limiter != "TMA":
        feed = chip.TmaFeed(feed.latency_cycles, min(values["tma_port_bytes_per_cycle_sm"],
                                                     feed.bytes_per_cycle * design.multicast), feed.limiter)
    c = unit_costs(design, feed, values)
    kblocks = -(-k // design.tile_k)
    per_tile, epi_tile = tile_cycles(design, c, kblocks)
    full_waves = (sch.per_unit if geo.persistent else 1) - (1 if sch.split > 1 else 0)
    first = c.setup + c.fill if design.warp_specialized else c.setup  # a non-specialised tile refills its own ring
    busiest = first + full_waves * per_tile
    split_cycles = 0.0
    if sch.split > 1:  # the last wave's k-blocks shared evenly by all units, then the partial sums reduced in L2
        part = math.ceil(sch.last_wave * kblocks / sch.units)
        part_tile, _ = tile_cycles(design, c, part)
        partial = design.tile_m * design.tile_n * 4  # one CTA's fp32 partial sums of a tile
        # the busiest unit writes its partial sums once, and as a tile's finisher reads the other
        # parts' (a tile is split over about units / last-wave-tiles units), each through L2
        reads = math.ceil(sch.split) - 1
        split_cycles = (1 + reads) * partial / feed.bytes_per_cycle + 2 * feed.latency_cycles
        busiest += part_tile + split_cycles
    drain = c.epilogue if design.warp_specialized else 0.0  # the last tile's writeback after its last MMA
    busiest += drain
    one_pass = busiest
    if not geo.persistent:  # per_unit CTAs on the busiest SM, occ at once, sharing its tensor core and TMA port
        busiest = max(math.ceil(sch.per_unit / occ) * busiest,
                      sch.per_unit * kblocks * max(c.t_mma, c.t_tma, c.t_smem))
    launch_us = values["launch_gap_us" if harness == "back-to-back" else "launch_overhead_us"]
    time_us = launch_us + busiest / (ghz * 1e3)
    flops = 2 * m * n * k
    t_cycles = time_us * ghz * 1e3
    util = {"tensor core": flops / (sms * values["mma_flop_per_cycle_sm"] * t_cycles)}
    n_k = sch.per_unit * kblocks
    util["TMA"] = n_k * c.t_tma / t_cycles
    util["shared memory"] = n_k * c.t_smem / t_cycles
    util["L2"] = (traffic.l2_read_bytes / design.multicast + traffic.d_bytes) / (values["l2_bytes_per_s"] * time_us * 1e-6)
    util["HBM"] = (traffic.hbm_read_bytes + traffic.d_bytes) / (values["hbm_bytes_per_s"] * time_us * 1e-6)
    from .model import BUSY

    launch_share = launch_us / time_us
    unit = max(util, key=util.get)
    bottleneck = "launch overhead" if launch_share > 0.3 else unit if util[unit] >= BUSY else "latency"
    us = busiest / one_pass / (ghz * 1e3)  # a one-tile-per-CTA grid's passes scale every part alike
    fill = first + (0 if design.warp_specialized else full_waves * c.fill)
    epi = full_waves * epi_tile + drain
    split = Split(launch_us, fill * us, (one_pass - fill - epi - split_cycles) * us, epi * us, split_cycles * us)
    return flops / (time_us * 1e-6) / 1e12, time_us, util, bottleneck, split, sch, c, feed, traffic


__all__ = ["Split", "predict_design", "schedule", "unit_costs"]
