"""Other authors' published final results for Blackwell GEMM tutorials, each with where, when, at
what shape and by what method it was published, as far as this book could confirm them.

These are their measurements of their kernels, never of this book's. book/benchmarking.md and the
chapters' Performance sections quote them from here, so that a figure and its provenance travel
together and every number derived from them (the cuBLAS spread) is computed, not typed.
Where a field could not be confirmed, it says so instead of guessing."""
from __future__ import annotations

from dataclasses import dataclass

from .calibration import SOURCE as CMU_SOURCE

NOT_CONFIRMED = "not confirmed by this book"
CMU_URL = "https://github.com/mlsyscourse/assignment-tirx-gemm"
CMU_METHOD = ('REFERENCE_TIMES in its utils.py, "averaged over multiple runs on modal"; '
              "TFLOP/s = 2 M N K / time")

#: The MLSys web book's published time for its final kernel at 4096^3 (equal to cuBLAS's there).
MLSYS_SECONDS_4096 = 0.0941e-3


def tflops_from_time(m, n, k, seconds):
    """TFLOP/s as every figure here is stated: 2 M N K floating-point operations per call."""
    return 2 * m * n * k / seconds / 1e12


@dataclass(frozen=True)
class Peer:
    name: str
    gpu: str
    dtype: str
    shape: str            # M x N x K as the source states it
    tflops: float         # the source's own kernel, as published
    cublas: float | None  # cuBLAS as published by the same source, or None
    url: str
    date: str
    method: str


def _peers():
    from .book import HELD_OUT  # the CMU assignment's 8192 column (held out from calibration)

    mlsys = tflops_from_time(4096, 4096, 4096, MLSYS_SECONDS_4096)
    return (
        Peer("MLSys web book (TIRx)", "B200", "fp16", "4096 x 4096 x 4096", mlsys, mlsys,
             "https://mlc.ai/modern-gpu-programming-for-mlsys/", "announced June 2026",
             f"published time per call, {MLSYS_SECONDS_4096 * 1e3} ms, equal to cuBLAS; "
             "TFLOP/s = 2 M N K / time"),
        Peer("CMU 15-442 (TIRx)", "B200", "fp16", "8192 x 8192 x 8192", HELD_OUT[(9, 8192)], None,
             CMU_URL, "no date per figure in the repository", CMU_METHOD),
        Peer("NVIDIA Tilus", "B200", "fp16", "8192 x 8192 x 8192", 1610, 1600,
             "https://nvidia.github.io/tilus/", NOT_CONFIRMED, NOT_CONFIRMED),
        Peer("gau-nernst", "B200", "bf16", "4096 x 4096 x 4096", 1476, 1507,
             NOT_CONFIRMED, NOT_CONFIRMED, NOT_CONFIRMED),
        Peer("pyptx", "B200", "not stated", "not stated", 1240, 1610,
             NOT_CONFIRMED, NOT_CONFIRMED, NOT_CONFIRMED),
        Peer("Triton Gluon", "GB200", "not stated", "8192 x 8192 x 4096", 1391, 1299,
             "https://github.com/triton-lang/triton", NOT_CONFIRMED, NOT_CONFIRMED),
    )


PEERS = _peers()


def cublas_figures(gpu="B200"):
    """The cuBLAS figures the peers published on ``gpu``."""
    return [p.cublas for p in PEERS if p.gpu == gpu and p.cublas is not None]


def cublas_range(gpu="B200"):
    """(lowest, highest, highest / lowest) of the published cuBLAS figures on ``gpu``."""
    figs = cublas_figures(gpu)
    return min(figs), max(figs), max(figs) / min(figs)


def best_cublas(size, gpu="B200"):
    """The highest cuBLAS figure a peer published on ``gpu`` at size^3 (the model's ceiling test), or None."""
    shape = f"{size} x {size} x {size}"
    figs = [p.cublas for p in PEERS if p.gpu == gpu and p.cublas is not None and p.shape == shape]
    return max(figs, default=None)


def provenance(p):
    """Where a figure comes from, one field a line (short enough for a book page)."""
    import textwrap

    method = textwrap.fill(p.method, 88, initial_indent="  method: ", subsequent_indent="          ")
    cublas = "" if p.cublas is None else f" (cuBLAS by the same source: {p.cublas:.0f})"
    return (f"{p.name}: {p.tflops:.0f} TFLOP/s{cublas}, {p.gpu}, {p.dtype}, {p.shape}\n"
            f"  source: {p.url}\n  date:   {p.date}\n{method}")


def ladder_rows():
    """[(CMU step, design, our chapter, depth, 4096 TFLOP/s, 8192 TFLOP/s or None)] of the CMU
    assignment, from the calibration set (4096) and the held-out 8192 column."""
    from .book import HELD_OUT
    from .calibration import CALIBRATION

    rows = []
    for p in CALIBRATION:
        if p.size == 4096:
            rows.append((p.cmu_step, p.design, p.chapter, p.pipe_depth, p.tflops,
                         HELD_OUT.get((p.chapter, 8192))))
    return rows


__all__ = ["CMU_SOURCE", "PEERS", "Peer", "best_cublas", "cublas_range", "ladder_rows", "provenance",
           "tflops_from_time"]
