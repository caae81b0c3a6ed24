"""One SM's share of a full-size GEMM, run on the emulator's virtual clock in timing mode.

The chapter's own host entry builds the launch (grid, tensor maps, shared-memory plan) exactly as
for a B200; we then run only cluster 0 of that grid (CTA 0, or the CTA pair 0-1 for chapters 8-9),
with no values: tensor-core numerics and TMA copies are skipped, while control flow, barriers, the
asynchronous units, their queues and the hazard checks all run. For a persistent grid, cluster 0
takes tiles 0, G, 2G, ... (G = grid size), the largest share of any SM; for a one-tile-per-CTA
grid, it is one tile, and the chip model (``chip``) multiplies by the waves.

The unit costs come in as an argument (``costs``, an ``emu.costmodel.Costs``). ``tiles`` asks for a
persistent grid sized so that cluster 0 takes that many tiles (the model's steady-state
extrapolation, model.py); runs are cached by everything they depend on."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field, replace

import numpy as np


@dataclass
class Share:
    """What one SM (pair) did: virtual times in cycles."""

    span_cycles: float  # first event to last event of the run
    tc_busy_cycles: float  # tensor core of CTA 0 (its SM)
    tma_busy_cycles: float  # TMA engine of CTA 0: transfer time of its loads and stores
    load_bytes: int  # TMA load bytes of CTA 0
    store_bytes: int
    mma_flops: int  # FLOPs the tensor core of CTA 0's SM computed (its share of pair MMAs)
    grid: tuple = ()
    cluster: tuple = (1, 1, 1)
    threads: int = 0
    shared_bytes: int = 0
    tmem_cols: int = 0
    trace: object = None
    lanes: dict = field(default_factory=dict)
    store_busy_cycles: float = 0.0  # the part of tma_busy_cycles that is stores (once per tile, whatever K)
    mma_starts: tuple = ()  # start of each MMA of CTA 0, cycles from the run's start, in order (the k-block cadence)


def _busy(events):
    """Total time covered by a list of events (union of their intervals), ns."""
    total, end = 0.0, -np.inf
    for e in sorted(events, key=lambda e: e.start):
        if e.end <= end:
            continue
        total += e.end - max(e.start, end)
        end = e.end
    return total


def grid_config(chapter, sm_count):
    """The keyword that sizes a persistent grid on a B200 (num_ctas = SMs, num_clusters = pairs),
    or {} for a one-tile-per-CTA grid."""
    from ..chapters import CHAPTERS

    params = inspect.signature(CHAPTERS[chapter].entry).parameters
    if "num_clusters" in params:
        return {"num_clusters": sm_count // 2}
    if "num_ctas" in params:
        return {"num_ctas": sm_count}
    return {}


def units_for_tiles(chapter, m, n, tiles):
    """The persistent grid size (CTAs or pairs) that gives cluster 0 ``tiles`` tiles of M x N."""
    import math

    from .chip import geometry

    geo = geometry(chapter)
    total = -(-m // geo.tile_m) * -(-n // geo.tile_n)  # ragged M, N (chapter 10): partial tiles count
    units = math.ceil(total / tiles)
    if math.ceil(total / units) != tiles:
        raise ValueError(f"no persistent grid gives cluster 0 exactly {tiles} of {total} tiles")
    return units


_CACHE = {}


def run_share(chapter, m, n, k, *, sm_count=148, keep_trace=False, timing=True, costs=None, tiles=None, **config):
    """Run cluster 0's share of chapter ``chapter`` at M x N x K on the emulator (timing mode unless
    ``timing=False``) with the unit costs ``costs`` (default: the emulator's). Returns a Share."""
    from ..emu import costmodel

    costs = costmodel.DEFAULT if costs is None else costs
    if not keep_trace:  # every cost is in cycles and a Share reports cycles: the clock only names the trace's
        costs = replace(costs, clock_ghz=1.0)  # nanoseconds, so runs at any clock are one run (and one cache entry)
    key = (chapter, m, n, k, sm_count, timing, costs, tiles, tuple(sorted(config.items())))
    if not keep_trace and key in _CACHE:
        return _CACHE[key]
    share = _run_share(chapter, m, n, k, sm_count, keep_trace, timing, costs, tiles, config)
    if not keep_trace:
        _CACHE[key] = share
    return share


def _run_share(chapter, m, n, k, sm_count, keep_trace, timing, costs, tiles, config):
    from .. import emu
    from ..chapters import CHAPTERS
    from ..kernels import host

    seen = {}
    real = host.run_on_emulator

    def run_on_emulator(kernel, grid, block, args, *, plan, cluster=(1, 1, 1), policy="lazy", seed=0, trace=False,
                        tensor_maps=None, **clc):  # clc: resident= (chapter 10's cluster launch control)
        seen.update(grid=grid, block=block, cluster=cluster, shared_bytes=plan.size)
        seen["launch"] = emu.run(kernel, grid, block, args, cluster=cluster, shared_bytes=plan.size, policy=policy,
                                 seed=seed, trace=True, names=plan.regions, tensor_maps=tensor_maps, timing=timing,
                                 only_clusters={0}, costs=costs, **clc)
        return seen["launch"]

    a = np.zeros((m, k), np.float16)  # never read in timing mode (pages stay untouched)
    b = np.zeros((n, k), np.float16)
    cfg = dict(grid_config(chapter, sm_count), **config)
    if "tile_n" in inspect.signature(CHAPTERS[chapter].entry).parameters:  # chapter 10 chooses by shape:
        from .chip import geometry  # (chip imports this module)

        cfg.setdefault("tile_n", geometry(chapter).tile_n)  # the model runs the design it describes
    if tiles is not None:
        (name,) = grid_config(chapter, sm_count)
        cfg[name] = units_for_tiles(chapter, m, n, tiles)
    host.run_on_emulator = run_on_emulator
    try:
        CHAPTERS[chapter].entry(a, b, backend="emulator", **cfg)
    finally:
        host.run_on_emulator = real
    tr = seen["launch"].trace
    t0, t1 = tr.span()
    cta0 = [e for e in tr.events if e.cta == 0]
    tc = [e for e in cta0 if e.op == "mma"]
    tma = [e for e in cta0 if e.op in ("tma.load", "tma.store")]
    ghz = costs.clock_ghz
    starts = tuple(sorted((e.start - t0) * ghz for e in tc))
    ncta = seen["cluster"][0] * seen["cluster"][1] * seen["cluster"][2]
    block = seen["block"]
    threads = block if isinstance(block, int) else int(np.prod(block))
    mod = CHAPTERS[chapter]._mod()
    return Share(span_cycles=(t1 - t0) * ghz, tc_busy_cycles=_busy(tc) * ghz, tma_busy_cycles=_busy(tma) * ghz,
                 load_bytes=sum(e.nbytes for e in cta0 if e.op == "tma.load"),
                 store_bytes=sum(e.nbytes for e in cta0 if e.op == "tma.store"),
                 mma_flops=sum(e.flops for e in tc) // ncta, grid=tuple(np.atleast_1d(seen["grid"])),
                 cluster=seen["cluster"], threads=threads, shared_bytes=seen["shared_bytes"],
                 tmem_cols=int(getattr(mod, "TMEM_COLS", 512)), trace=tr if keep_trace else None,
                 store_busy_cycles=_busy([e for e in tma if e.op == "tma.store"]) * ghz, mma_starts=starts)
