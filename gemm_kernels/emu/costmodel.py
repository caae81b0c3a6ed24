"""The emulator's virtual clock: the cost of each unit of one B200 SM, in cycles.

A launch takes its costs as an argument (``emu.run(..., costs=Costs(...))``); nothing here is
overridden globally. ``DEFAULT`` is the clock of the book's small traces (an SM whose operands hit
in L2 and which has the L2 to itself); the B200 performance model (``gemm_kernels.perf``) builds
its own ``Costs`` from its sourced parameters (``perf/params.py``) and the share of L2 and HBM the
rest of the chip leaves to one SM. This module imports nothing from ``perf``: the layers run one
way, perf -> emu."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Costs:
    #: SM clock turning cycles into nanoseconds.
    clock_ghz: float = 1.86
    #: Dense fp16 tensor-core rate per SM, FLOP per cycle (cta_group::1 and each SM of a ::2 pair).
    mma_flop_per_cycle: float = 8192
    #: TMA: latency of a tiled load (issue to the first byte's transfer), and the SM's share of
    #: L2 -> shared bandwidth, bytes per cycle.
    tma_latency_cycles: float = 1050
    tma_bytes_per_cycle: float = 47
    #: tcgen05.ld of 32 lanes x 32 columns (one warp). An emulator stand-in, not a model parameter:
    #: no published figure was found, and the B200 model's predictions do not depend on it (the
    #: writeback's loads overlap the next tile's MMAs; tests/test_perf_sanity.py).
    tmem_ld_cycles_per_32_cols: float = 16
    #: mbarrier arrive -> waiter wake-up, and a named barrier, in cycles.
    barrier_latency_cycles: float = 20
    #: One ordinary instruction of a thread (a PTX op twin's issue cost).
    issue_cycles: float = 1
    #: A global-memory element access by ordinary loads/stores (amortised: latency hidden by the
    #: other warps of the SM), per element; and the latency a thread pays once at the start of a
    #: run of ordinary global loads (an L2 hit's).
    global_access_cycles: float = 2
    global_latency_cycles: float = 280

    def cycles_to_ns(self, cycles):
        return cycles / self.clock_ghz

    def mma_cycles(self, m, n, k):
        return 2 * m * n * k / self.mma_flop_per_cycle

    def tma_cycles(self, nbytes):
        return nbytes / self.tma_bytes_per_cycle


DEFAULT = Costs()

# The default clock's figures by their old names (book pages and reports quote them).
CLOCK_GHZ = DEFAULT.clock_ghz
MMA_FLOP_PER_CYCLE = DEFAULT.mma_flop_per_cycle
TMA_LATENCY_CYCLES = DEFAULT.tma_latency_cycles
TMA_BYTES_PER_CYCLE = DEFAULT.tma_bytes_per_cycle
TMEM_LD_CYCLES_PER_32_COLS = DEFAULT.tmem_ld_cycles_per_32_cols
BARRIER_LATENCY_CYCLES = DEFAULT.barrier_latency_cycles
ISSUE_CYCLES = DEFAULT.issue_cycles
GLOBAL_ACCESS_CYCLES = DEFAULT.global_access_cycles
GLOBAL_LATENCY_CYCLES = DEFAULT.global_latency_cycles


def cycles_to_ns(cycles):
    return DEFAULT.cycles_to_ns(cycles)


def mma_cycles(m, n, k):
    return DEFAULT.mma_cycles(m, n, k)


def tma_cycles(nbytes):
    return DEFAULT.tma_cycles(nbytes)


def of(thread_or_launch):
    """The costs of the launch a thread (or the launch itself) belongs to; DEFAULT outside a launch."""
    launch = getattr(thread_or_launch, "launch", thread_or_launch)
    return getattr(launch, "costs", DEFAULT)
