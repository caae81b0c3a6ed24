"""The chip around one SM's share: how many SMs, in which order the tiles run, what L2 and HBM
give each SM, and how long the whole kernel takes.

* Tile order. A one-tile-per-CTA grid (chapters 4-5) is dispatched in block order (x fastest),
  ``occupancy`` CTAs per SM at once; a persistent grid (6-9) runs tile t on unit t mod G (G = 148
  SMs, or 74 pairs for the two-CTA chapters) in the kernel's own grouped order
  (``pipeline.grouped_tile``), so round r runs tiles rG .. rG + G - 1. Chapter 10 launches a
  cluster per tile and schedules by cluster launch control: min(74, tiles) clusters are resident,
  and each takes its own tile and then, through CLC, tiles it cancels from the waiting clusters;
  the emulator's CLC unit gives a requester the waiting clusters of its own slot (emu/clc.py), so
  the schedule is the persistent one over min(74, tiles) pairs, and the model treats it as such.
  Ragged M and N count ceil-div tiles; an edge tile costs a full tile's time (the TMA fills the
  missing elements with zeros in shared memory and the MMAs run over the whole tile).
* L2. A tile-granular LRU cache over panels (a tile row's A panel, a tile column's B panel, all of
  K): each round touches its panels; a panel not in the cache comes from HBM. That gives the HBM
  bytes and the fraction of TMA bytes that miss.
* What one SM's TMA sees: latency = an L2-served load under load + half the die crossing (half the
  data lives on the other die); bandwidth = the least of its own port, its share of the L2's
  measured total and its share of HBM divided by the bytes HBM must serve per byte loaded.
* Time (model.py): the launch gap + the share's virtual span (persistent), or the waves of one-tile
  CTAs (the SM with the most CTAs runs them ``occupancy`` at a time), never faster than its busiest
  unit allows, shared memory included (TMA writes and MMA operand reads share its bandwidth).

Every function takes the parameters as ``values`` (a params.Values), never a global."""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

from .params import NOMINAL


@dataclass(frozen=True)
class Geometry:
    tile_m: int  # output tile of one scheduling unit (a CTA, or a CTA pair)
    tile_n: int
    ctas_per_unit: int  # 1, or 2 for the pair chapters
    persistent: bool
    group: int  # grouped tile order (persistent chapters)
    mma_m: int = 128  # one MMA instruction's shape (M over the pair for cta_group::2)
    mma_n: int = 128

    @property
    def smem_read_bytes_per_flop(self):
        """Operand bytes an SM's tensor core reads from shared memory per FLOP it computes: a K=16
        MMA of M x N over c CTAs reads M/c rows of A and N/c rows of B (fp16) on each SM for
        2 (M/c) N 16 FLOPs there: (M + N) / (M N), whatever c."""
        return (self.mma_m + self.mma_n) / (self.mma_m * self.mma_n)


def geometry(chapter, config=None):
    from ..chapters import CHAPTERS
    from .share import grid_config

    ch = CHAPTERS[chapter]
    mod = ch._mod()
    cfg = dict(ch.config, **(config or {}))
    pair = hasattr(mod, "CLUSTER_M")
    tm = mod.CLUSTER_M if pair else mod.BLOCK_M
    tn = mod.CLUSTER_N if pair else mod.BLOCK_N
    persistent = bool(grid_config(chapter, 148))
    mma_m = getattr(mod, "CONSUMER_M", tm)
    mma_n = getattr(mod, "CONSUMER_N", tn)
    return Geometry(tm, tn, 2 if pair else 1, persistent, int(cfg.get("group", 1) or 1), mma_m, mma_n)


def tile_order(geo, m, n):
    """Tiles (m_idx, n_idx) in the order the schedule starts them. A ragged M or N (chapter 10) ends
    in a partial tile row or column, which is still a tile to schedule: the counts round up."""
    from ..pipeline import host_tile_order

    num_m, num_n = -(-m // geo.tile_m), -(-n // geo.tile_n)
    if geo.persistent:  # the kernel's own scheduler device function, as the emulator runs it
        return host_tile_order(num_m, num_n, geo.group)
    return [(i % num_m, i // num_m) for i in range(num_m * num_n)]


def occupancy(shared_bytes, threads, tmem_cols, values=NOMINAL):
    """Resident CTAs per SM of a one-tile-per-CTA kernel: shared memory (1 KiB reserved per CTA),
    threads and TMEM columns each limit it."""
    return max(1, min(int(values["smem_bytes_per_sm"] // (shared_bytes + 1024)),
                      int(values["threads_per_sm"] // threads), int(values["tmem_cols_per_sm"] // max(tmem_cols, 32))))


@dataclass
class Traffic:
    l2_read_bytes: int  # TMA load bytes, all SMs
    hbm_read_bytes: int  # of those, from HBM (L2 misses)
    d_bytes: int  # result written (to L2, then HBM)
    rounds: int
    concurrent: int  # tiles in flight at once

    @property
    def miss_fraction(self):
        return self.hbm_read_bytes / self.l2_read_bytes if self.l2_read_bytes else 0.0


def l2_traffic(order, geo, k, concurrent, *, capacity=None, values=NOMINAL):
    """Tile-granular LRU model of the L2 under the schedule: rounds of ``concurrent`` tiles."""
    capacity = values["l2_effective_bytes"] if capacity is None else capacity
    a_panel, b_panel = geo.tile_m * k * 2, geo.tile_n * k * 2
    cache = OrderedDict()
    used = hbm = reads = 0
    rounds = math.ceil(len(order) / concurrent)
    for r in range(rounds):
        tiles = order[r * concurrent:(r + 1) * concurrent]
        panels = {("A", mi) for mi, _ in tiles} | {("B", ni) for _, ni in tiles}
        reads += len(tiles) * (a_panel + b_panel)
        for p in sorted(panels):
            size = a_panel if p[0] == "A" else b_panel
            if p in cache:
                cache.move_to_end(p)
                continue
            hbm += size
            cache[p] = size
            used += size
            while used > capacity and len(cache) > 1:
                _, s = cache.popitem(last=False)
                used -= s
    d = len(order) * geo.tile_m * geo.tile_n * 2
    return Traffic(reads, hbm, d, rounds, concurrent)


@dataclass
class TmaFeed:
    latency_cycles: float
    bytes_per_cycle: float
    limiter: str  # "TMA" (the SM's own port), "L2" or "HBM"


def tma_feed(traffic, active_sms, values=NOMINAL):
    """Latency and bandwidth one SM's TMA sees, from the L2 model and the shared bandwidths."""
    hz = values["clock_ghz"] * 1e9
    latency = values["tma_l2_latency_cycles"] + 0.5 * values["die_crossing_cycles"]
    options = {"TMA": values["tma_port_bytes_per_cycle_sm"], "L2": values["l2_bytes_per_s"] / hz / active_sms}
    hbm_per_read = (traffic.hbm_read_bytes + traffic.d_bytes) / max(traffic.l2_read_bytes, 1)
    if hbm_per_read > 0:  # HBM serves the misses and the result; spread over the time the loads take
        options["HBM"] = values["hbm_bytes_per_s"] / hz / (hbm_per_read * active_sms)
    limiter = min(options, key=options.get)
    return TmaFeed(latency, options[limiter], limiter)
