"""The emulator's cost model of one B200 SM: the parameters behind its virtual clock.

These are a MODEL, chosen from published figures, not measurements of ours. They make the
emulator's timelines show which units overlap and roughly for how long; they do not predict a
B200's TFLOP/s. Every parameter is here, with where it comes from.
"""

#: SM clock used to turn cycles into nanoseconds. B200 boost is about 1.9 GHz (field survey);
#: we use 1.85 GHz as a round sustained figure.
CLOCK_GHZ = 1.85

#: Dense fp16 tensor-core rate per SM: 2.25 PFLOP/s / 148 SMs / 1.85 GHz ~ 8192 FLOP per cycle
#: (NVIDIA's B200 dense fp16 peak as quoted in the field survey).
MMA_FLOP_PER_CYCLE = 8192

#: TMA: fixed latency of a tiled load from L2/HBM (cycles) and the SM's share of bandwidth.
#: 8 TB/s HBM over 148 SMs at 1.85 GHz is ~29 B/cycle; L2 hits are faster. We take 64 B/cycle
#: as the per-SM share for operand tiles that mostly hit L2 in a tiled GEMM.
TMA_LATENCY_CYCLES = 600
TMA_BYTES_PER_CYCLE = 64

#: tcgen05.ld of 32 columns x 32 lanes (one warp): a guess of the TMEM read cost.
TMEM_LD_CYCLES_PER_32_COLS = 16

#: mbarrier arrive -> waiter wake-up, and a named barrier, in cycles.
BARRIER_LATENCY_CYCLES = 20

#: One ordinary instruction of a thread (a PTX op twin's issue cost).
ISSUE_CYCLES = 1

#: A global-memory element access by ordinary loads/stores (amortised: latency hidden by the
#: other warps of the SM), per element.
GLOBAL_ACCESS_CYCLES = 2

#: The latency a thread pays once at the start of each run of ordinary global loads (the
#: rest of the run overlaps with it: loads are pipelined; stores do not stall the thread). The
#: same DRAM/L2 latency as a TMA load.
GLOBAL_LATENCY_CYCLES = TMA_LATENCY_CYCLES


def cycles_to_ns(cycles):
    return cycles / CLOCK_GHZ


def mma_cycles(m, n, k):
    return 2 * m * n * k / MMA_FLOP_PER_CYCLE


def tma_cycles(nbytes):
    return nbytes / TMA_BYTES_PER_CYCLE
