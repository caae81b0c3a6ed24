"""Every physical parameter of the B200 performance model, with its source and the range the
sources give. Nothing else in gemm_kernels.perf holds a number of the chip.

These are published figures of the chip (specifications and other people's microbenchmarks), read
by us, not measurements of ours. Each says its ``basis``: one parameter, the TMA's latency under
load, is set on the calibration set (calibration.py) inside the range its sources allow; the
others, the clock included, are sourced (the clock is a measured B200 clock under sustained
tensor-core load, never a figure chosen to reach a published GEMM result). There is no per-chapter or per-size factor anywhere in the model.

Each entry: value, unit, (low, high) the sources span, source. ``low``/``high`` are the parameter's
own ends; ``pessimistic``/``optimistic`` give the ends that make a kernel slower or faster. A
prediction's range (model.predict) moves one parameter at a time to each end and adds the effects
as independent errors (root-sum-square of the log ratios); the corners PESSIMISTIC and OPTIMISTIC,
every parameter at once, bound it."""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Param:
    value: float
    unit: str
    low: float
    high: float
    source: str
    faster: str = ""  # "high" or "low": which end makes a kernel faster; "" for a fixed figure
    #: where the value comes from: "sourced" (a published figure, or read off one), "derived" (computed
    #: from published figures with an assumption the source text names), "calibrated" (chosen on the
    #: calibration set inside the range its sources allow)
    basis: str = "sourced"

    @property
    def pessimistic(self):
        return {"high": self.low, "low": self.high}.get(self.faster, self.value)

    @property
    def optimistic(self):
        return {"high": self.high, "low": self.low}.get(self.faster, self.value)


CC = "Chips and Cheese, 'Nvidia's B200: Keeping the CUDA Juggernaut Rolling' (2025)"
SA = ("SemiAnalysis (K. Chen, D. Patel), 'Dissecting Nvidia Blackwell - Tensor Cores, PTX Instructions, SASS, "
      "Floorsweep, Yield' (2026)")
TS = "TileSight (Mo et al., arXiv 2607.22432, 2026)"
SPEC = "NVIDIA B200 specification (DGX B200 datasheet: dense FP16/BF16 2.25 PFLOP/s, HBM3e 8 TB/s)"
QUERY = "a B200 device query (pytorch/ao PR #4002): 148 SMs, 126.5 MB L2, 7680-bit HBM at 3996 MHz"
DISPATCH_TITLE = "Four counter-intuitive lessons from deep-diving GPU kernel dispatch overhead"
DISPATCH = (f"dogacel.github.io, '{DISPATCH_TITLE}' "
            "(2026), on a B200: a 24 us kernel took 25.8 us per call by CUDA graph and 28.3 us by cuLaunchKernel")
BOOST = "ByteDance-Seed/VeOmni PR #986 (the B200's boost clock, 1.965 GHz)"
THROTTLE = ("flashinfer-ai/flashinfer PR #2899 (2026-03, 'bench: fix GPU power throttling in benchmark utilities'): "
            "on a B200 running dense tensor-core kernels back to back, SM clocks drop from 1965 MHz to about 1580 MHz "
            "(19% less) with power near 1000 W, after about 5 ms of sustained compute (its GPU_POWER_THROTTLE_"
            "THRESHOLD_MS); with the host's natural gaps between calls the board draws about 250 W and keeps its boost")
PARAMS = {
    "sm_count": Param(148, "SMs", 148, 148, f"{QUERY}; {CC}: 74 SMs per die, two dies"),
    "clock_ghz": Param(
        1.58, "GHz", 1.50, 1.965,
        f"the SM clock a B200 holds while its tensor cores run back to back. SOURCED, NOT FITTED TO A GEMM FIGURE: "
        f"{THROTTLE}. VALUE: the clock that source measured once the board sat at its power limit, 1580 MHz (it "
        f"calls it approximate). LOW END: 5% below it (1.50 GHz), the precision of 'about'; the H200 analogue "
        f"(tile-ai/TileOPs #1587/#1588: an H200 at its 700 W limit holds about 1500 of 1830 MHz, ratio 0.82; x 1.965 "
        f"= 1.61 GHz) lies inside. HIGH END: the boost clock, 1.965 GHz ({BOOST}), which the same source saw before "
        f"the throttling set in: a timing loop shorter than the few milliseconds of sustained load it names runs "
        f"nearer this end. For reference, not an end: the datasheet's dense fp16 2.25 PFLOP/s is 1.86 GHz at 148 SMs "
        f"x 8192 FLOP/cycle, and {TS}'s MMA-only microbenchmark (Table 3), 2185 TFLOP/s, is 1.80 GHz. The best "
        f"published B200 fp16 figure this book holds, 1610 TFLOP/s at 8192^3 (perf/peers.py), needs at least "
        f"1610 / (148 x 8192) = 1.33 GHz: every clock of the range allows it", faster="high"),
    "mma_flop_per_cycle_sm": Param(
        8192, "FLOP/cycle/SM", 8192, 8192,
        f"ByteDance-Seed/VeOmni PR #986 (8192 dense fp16 FLOP/cycle/SM); {SPEC} / 148 SMs at 1.86 GHz; the same "
        f"per SM for cta_group::1 and ::2 ({SA}: 2SM MMA is 2x the 1SM rate over two SMs)"),
    "tma_port_bytes_per_cycle_sm": Param(
        100, "B/cycle/SM", 77, 128,
        f"the SM's TMA input port (L2 -> shared memory, one SM). Low end: {TS} measure 20.5 TB/s of L2 bandwidth "
        f"with all 148 SMs streaming, 77 B/cycle per SM at 1.80 GHz, which each port must at least carry; high "
        f"end: one 128-byte line per cycle ({SA}: TMA bandwidth keeps rising up to 128 KiB in flight per SM, "
        f"128 KiB over a ~1000-cycle latency). The value is the range's geometric middle", faster="high"),
    "l2_bytes_per_s": Param(
        20.5e12, "B/s", 19.5e12, 21.5e12,
        f"aggregate L2 bandwidth, all SMs streaming: {TS}, Table 3 (about 20.5 TB/s); the range is +-5%, the "
        f"precision of 'about'", faster="high"),
    "l2_effective_bytes": Param(
        83e6, "bytes", 83e6, 126.5e6,
        f"the L2 capacity a working set sees before it falls to HBM: {TS}, Fig. 2, about 83 MB (past it, data "
        f"streams from the far die or HBM); high end: the physical 126.5 MB ({QUERY}). The value sits at the low "
        f"end because it is the measured figure; the physical capacity is only reached if nothing were "
        f"duplicated across the two dies", faster="high"),
    "hbm_bytes_per_s": Param(
        7.0e12, "B/s", 7.0e12, 7.67e12,
        f"{TS}, Table 3: about 7.0 TB/s measured; high end: the peak 7680 bit x 3996 MHz x 2 = 7.67 TB/s "
        f"({QUERY}). The value sits at the low end because it is what a streaming kernel was measured to get",
        faster="high"),
    "smem_bytes_per_cycle_sm": Param(
        181, "B/cycle/SM", 128, 256,
        f"the shared-memory bandwidth that the TMA's writes and the tensor core's operand reads share. Low end: "
        f"{SA}: MMAs with both operands in shared memory and N < 128 are bound by shared memory at about 128 "
        f"B/cycle, so 128 B/cycle is the operand port, and if the TMA's writes take the same port that is all "
        f"there is; high end: the writes have a port of their own (128 + 128). The value is the range's "
        f"geometric middle: no source says how far the writes compete", faster="high"),
    "tma_l2_latency_cycles": Param(
        800, "cycles", 600, 1000,
        f"latency of a TMA tile load served by L2 while every SM streams (issue to the first byte). CALIBRATED "
        f"on the calibration set at the sourced clock (tools/calibrate_perf.py: rms log error 0.265 at 400 cycles, "
        f"0.219 at 600, 0.208 at 800, 0.233 at 1000); the range is the latencies whose error stays within 0.03 "
        f"of the best. It lies inside the bounds the sources allow: at least the unloaded L2 hit ({CC}: about "
        f"150 ns = 280 cycles), at most 128 KiB in flight over an SM's L2 share of about 90 B/cycle = 1450 "
        f"cycles ({SA}: TMA bandwidth keeps rising up to 128 KiB in flight per SM; Little's law)",
        faster="low", basis="calibrated"),
    "die_crossing_cycles": Param(300, "cycles", 300, 300,
                                 f"{SA}: about 300 extra cycles die to die; half of all loads cross"),
    "launch_gap_us": Param(
        2.5, "us", 1.8, 4.3,
        f"the time between two kernels launched back to back (the published harnesses time many calls and "
        f"divide): {DISPATCH}, i.e. 1.8 us by graph and 4.3 us by cuLaunchKernel. The value is the range's "
        f"geometric middle", faster="low"),
    "launch_overhead_us": Param(
        4.0, "us", 2.0, 5.0,
        f"one synchronous launch between two CUDA events (grid launch, first CTAs resident, teardown): {DISPATCH}; "
        f"the harness 'single' (model.predict(..., harness='single')) uses it", faster="low"),
    "barrier_latency_cycles": Param(30, "cycles", 20, 40,
                                    f"mbarrier arrive -> waiter wake-up; shared-memory latency class ({CC}: L1/shared "
                                    f"latency about 39 cycles at the high end; 20 the emulator's default). The value "
                                    f"is the middle of the range; over it, the depth-2 and depth-4 steps move by "
                                    f"about 2-3%", faster="low"),
    "smem_bytes_per_sm": Param(233472, "bytes", 233472, 233472,
                               "228 KiB of shared memory per SM, 1 KiB of it reserved per resident CTA "
                               "(CUDA C++ Programming Guide, compute capability 10.0 table)"),
    "threads_per_sm": Param(2048, "threads", 2048, 2048, "CUDA C++ Programming Guide, compute capability 10.0"),
    "tmem_cols_per_sm": Param(512, "columns", 512, 512, "PTX ISA 8.7, tensor memory: 128 lanes x 512 columns"),
}

#: NVIDIA's datasheet dense fp16 figure, TFLOP/s (SPEC): at 1.86 GHz, a clock a long GEMM does not sustain
DATASHEET_TFLOPS = 2250

#: the parameters whose sourced ranges give each prediction its range
RANGED = tuple(k for k, p in PARAMS.items() if p.faster)


@dataclass(frozen=True)
class Values:
    """One setting of every parameter (by name): the nominal values, or a corner of the ranges.
    The model reads its parameters only through one of these (no global state)."""

    values: dict

    def __getitem__(self, name):
        return self.values[name]

    def with_(self, **changes):
        unknown = [k for k in changes if k not in PARAMS]
        if unknown:
            raise KeyError(f"not model parameters: {unknown}")
        return Values({**self.values, **changes})


NOMINAL = Values({k: p.value for k, p in PARAMS.items()})
PESSIMISTIC = Values({k: p.pessimistic for k, p in PARAMS.items()})
OPTIMISTIC = Values({k: p.optimistic for k, p in PARAMS.items()})


def value(name):
    return PARAMS[name].value


def peak_tflops(values=NOMINAL):
    """The tensor core's dense fp16 peak at the parameters' clock (sustained, under the power limit)."""
    return values["sm_count"] * values["mma_flop_per_cycle_sm"] * values["clock_ghz"] / 1e3


def table_rows():
    """[(name, value, unit, low, high, source)] for the book and the report."""
    return [(k, p.value, p.unit, p.low, p.high, p.source) for k, p in PARAMS.items()]


__all__ = ["NOMINAL", "OPTIMISTIC", "PARAMS", "PESSIMISTIC", "Param", "RANGED", "Values", "peak_tflops",
           "replace", "table_rows", "value"]
