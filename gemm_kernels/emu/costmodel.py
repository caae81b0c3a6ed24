"""The emulator's virtual clock: the cost of each unit of one B200 SM, in cycles.

The numbers are the physical parameters of ``gemm_kernels.perf.params`` (published specifications
and microbenchmarks, each with its source and range there), not measurements of ours. The chip
model (``gemm_kernels.perf``) runs one SM's share of a full-size problem on this clock and sets
the TMA latency and bandwidth that the rest of the chip leaves to that SM (L2 hits and misses,
die crossing, shared L2/HBM bandwidth) with ``overridden``; the defaults below are those of an SM
whose operands hit in L2 and which has the L2 to itself."""
from contextlib import contextmanager

from ..perf.params import value as _p

#: SM clock turning cycles into nanoseconds (tensor clock of the spec listing).
CLOCK_GHZ = _p("clock_ghz")

#: Dense fp16 tensor-core rate per SM, FLOP per cycle (cta_group::1 and each SM of a ::2 pair).
MMA_FLOP_PER_CYCLE = _p("mma_flop_per_cycle_sm")

#: TMA: latency of a tiled load served by L2 while the chip streams (half the loads cross the die),
#: in cycles, and the SM's L2 -> shared bandwidth.
TMA_LATENCY_CYCLES = _p("tma_l2_latency_cycles") + 0.5 * _p("die_crossing_cycles")
TMA_BYTES_PER_CYCLE = _p("tma_port_bytes_per_cycle_sm")

#: tcgen05.ld of 32 lanes x 32 columns (one warp).
TMEM_LD_CYCLES_PER_32_COLS = _p("tmem_ld_cycles_per_32_cols")

#: mbarrier arrive -> waiter wake-up, and a named barrier, in cycles.
BARRIER_LATENCY_CYCLES = _p("barrier_latency_cycles")

#: One ordinary instruction of a thread (a PTX op twin's issue cost).
ISSUE_CYCLES = _p("issue_cycles")

#: A global-memory element access by ordinary loads/stores (amortised: latency hidden by the
#: other warps of the SM), per element.
GLOBAL_ACCESS_CYCLES = _p("global_access_cycles")

#: The latency a thread pays once at the start of each run of ordinary global loads (the
#: rest of the run overlaps with it: loads are pipelined; stores do not stall the thread): an L2
#: hit's latency.
GLOBAL_LATENCY_CYCLES = _p("l2_hit_latency_cycles")


def cycles_to_ns(cycles):
    return cycles / CLOCK_GHZ


def mma_cycles(m, n, k):
    return 2 * m * n * k / MMA_FLOP_PER_CYCLE


def tma_cycles(nbytes):
    return nbytes / TMA_BYTES_PER_CYCLE


@contextmanager
def overridden(**values):
    """Set some of the parameters above (by name) for the duration of a ``with`` block."""
    g = globals()
    unknown = [k for k in values if k not in g or not k.isupper()]
    if unknown:
        raise KeyError(f"not cost-model parameters: {unknown}")
    old = {k: g[k] for k in values}
    g.update(values)
    try:
        yield
    finally:
        g.update(old)
