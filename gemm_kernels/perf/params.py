"""Every physical parameter of the B200 performance model, with its source and the range the
sources give. Nothing else in gemm_kernels.perf or gemm_kernels.emu.costmodel holds a number.

These are published figures of the chip (specifications and other people's microbenchmarks), read
by us, not measurements of ours; none was fitted to the calibration set (calibration.py). There is
no per-chapter or per-size factor anywhere in the model.

Each entry: value, unit, (low, high) the sources span, source."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Param:
    value: float
    unit: str
    low: float
    high: float
    source: str


CC = "Chips and Cheese, 'Nvidia's B200: Keeping the CUDA Juggernaut Rolling' (2025)"
SA = ("SemiAnalysis (K. Chen, D. Patel), 'Dissecting Nvidia Blackwell - Tensor Cores, PTX Instructions, SASS, "
      "Floorsweep, Yield' (2026)")
JC = ("A. Jarmusch, S. Chandrasekaran, 'Microbenchmarking NVIDIA's Blackwell Architecture: An in-depth "
      "Architectural Analysis', arXiv 2512.02189")
SPEC = "NVIDIA B200 specification (DGX B200 datasheet: dense FP16/BF16 2.25 PFLOP/s, HBM3e 8 TB/s)"
DB = "TechPowerUp-style spec listing of the B200 (hmc-tech.com): boost 1.98 GHz, tensor clock 1.86 GHz, 7.5 GT/s x 8192 bit"
A100WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): L2 read bandwidth 5120 B/clk for 108 SMs"

PARAMS = {
    "sm_count": Param(148, "SMs", 148, 148, f"{CC}: 74 SMs enabled per die, two dies"),
    "clock_ghz": Param(1.86, "GHz", 1.86, 1.98, f"{DB}; 2.25 PFLOP/s / (148 SMs x 8192 FLOP/cycle) = 1.86 GHz"),
    "mma_flop_per_cycle_sm": Param(8192, "FLOP/cycle/SM", 8192, 8192,
                                   f"{SPEC} / 148 SMs / 1.86 GHz; the same per SM for cta_group::1 and ::2 "
                                   f"({SA}: 2SM MMA scales near-perfectly, 2x the 1SM rate over two SMs)"),
    "smem_operand_bytes_per_cycle": Param(128, "B/cycle/SM", 128, 128,
                                          f"{SA}: MMAs with both operands in shared memory and N < 128 are "
                                          f"bound by shared memory at about 128 B/cycle. Not a term of the clock: "
                                          f"for the book's MMA shapes (M=128 N=128 cta_group::1, M=256 N=256 "
                                          f"::2) it is never the binding limit (tests/test_perf_sanity.py)"),
    "l2_hit_latency_cycles": Param(280, "cycles", 280, 420,
                                   f"{CC}: L2 hit latency about 150 ns within a partition (x 1.86 GHz); "
                                   f"{JC}: 420 cycles for a global access missing the near caches"),
    "tma_l2_latency_cycles": Param(900, "cycles", 280, 2048,
                                   "latency of a TMA tile load served by L2 while every SM streams (issue to the "
                                   "last byte's arrival, before its transfer time). CALIBRATED on the calibration "
                                   "set (calibration.py) within the range the sources allow: low, the unloaded L2 "
                                   f"hit ({CC}: about 150 ns = 280 cycles); high, {SA}: TMA reaches its bandwidth "
                                   "only with up to 128 KiB in flight per SM, i.e. 128 KiB / 64 B/cycle = 2048 "
                                   "cycles of latency under load (Little's law). tools/calibrate_perf.py: rms log error 0.243-0.245 "
                                   "for 700-900 cycles at 47 B/cycle, rising outside"),
    "die_crossing_cycles": Param(300, "cycles", 300, 300, f"{SA}: about 300 extra cycles die to die"),
    "hbm_extra_latency_cycles": Param(420, "cycles", 300, 700,
                                      f"{JC}: 420-cycle global-memory latency on a cache miss; added to an L2 "
                                      f"hit's latency for a miss that goes to HBM"),
    "tma_port_bytes_per_cycle_sm": Param(47, "B/cycle/SM", 47, 128,
                                         f"one SM's L2 -> shared bandwidth while all SMs stream. CALIBRATED on the "
                                         f"calibration set within the range: low, {A100WP} (47 B/clk per SM); high, "
                                         f"{SA}: TMA keeps up to 128 KiB in flight (/ ~1000-cycle latency = 128 "
                                         f"B/cycle)"),
    "l2_bytes_per_cycle_total": Param(148 * 47, "B/cycle", 5120, 148 * 128,
                                      f"all L2 slices together; taken as 148 x the SM port (no separate limit) "
                                      f"for want of a published B200 figure; low end: {A100WP}"),
    "l2_bytes": Param(126 * 2**20, "bytes", 126 * 2**20, 126 * 2**20, f"{CC}: 126 MB of L2 over both dies"),
    "hbm_bytes_per_s": Param(7.68e12, "B/s", 5.0e12, 8.0e12,
                             f"{DB}: 7.5 GT/s x 8192 bit = 7.68 TB/s; {SPEC} says 8 TB/s; {CC} measured "
                             f"> 5 TB/s with OpenCL"),
    "tmem_ld_cycles_per_32_cols": Param(16, "cycles per warp per 32x32 cells", 0.5, 16,
                                        f"{JC} report 16 TB/s of TMEM read bandwidth per SM, which would move a "
                                        f"warp's 32 x 32 x 4 B = 4 KiB load in about half a cycle; we keep 16 "
                                        f"cycles (256 B/cycle per warp), the slow end: the writeback's TMEM loads "
                                        f"overlap the next tile's MMAs in chapters 7-9, and the calibration set "
                                        f"cannot tell the two apart"),
    "barrier_latency_cycles": Param(20, "cycles", 20, 40,
                                    "mbarrier arrive -> waiter wake-up; shared-memory latency class "
                                    f"({CC}: L1/shared latency about 39 cycles at the high end)"),
    "issue_cycles": Param(1, "cycles", 1, 1, "one instruction issued per cycle per warp scheduler"),
    "global_access_cycles": Param(2, "cycles/element", 1, 4,
                                  "ordinary global loads/stores of chapters 1-3 per element, latency hidden "
                                  "by the other warps (chapters 4-9 use none in their hot loops)"),
    "smem_bytes_per_sm": Param(233472, "bytes", 233472, 233472,
                               "228 KiB of shared memory per SM, 1 KiB of it reserved per resident CTA "
                               "(CUDA C++ Programming Guide, compute capability 10.0 table)"),
    "threads_per_sm": Param(2048, "threads", 2048, 2048, "CUDA C++ Programming Guide, compute capability 10.0"),
    "tmem_cols_per_sm": Param(512, "columns", 512, 512, "PTX ISA 8.7, tensor memory: 128 lanes x 512 columns"),
    "launch_overhead_us": Param(4.0, "us", 2.0, 5.0,
                                "a launch's fixed cost between two CUDA events (grid launch, first CTAs resident, "
                                "teardown). On a B200, dogacel.github.io, 'Four counter-intuitive lessons from "
                                "deep-diving GPU kernel dispatch overhead' (2026): a 24 us kernel took 25.8 us by "
                                "CUDA graph and 28.3 us by cuLaunchKernel, a dispatch path of about 2-5 us"),
}


def value(name):
    return PARAMS[name].value


@contextmanager
def overridden(**values):
    """Other values for some parameters inside a ``with`` block (the calibration search uses it)."""
    unknown = [k for k in values if k not in PARAMS]
    if unknown:
        raise KeyError(f"not model parameters: {unknown}")
    old = {k: PARAMS[k] for k in values}
    for k, v in values.items():
        PARAMS[k] = replace(old[k], value=v)
    try:
        yield
    finally:
        PARAMS.update(old)


def table_rows():
    """[(name, value, unit, low, high, source)] for the book and the report."""
    return [(k, p.value, p.unit, p.low, p.high, p.source) for k, p in PARAMS.items()]
