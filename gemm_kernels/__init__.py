"""Nine Blackwell (sm_100a) GEMM kernels in Numba-CUDA with inline PTX, and a CPU emulator
of the Blackwell units they use. See ARCHITECTURE.md at the repository root.

``gemm_v1 .. gemm_vN(A, B, *, backend=None, **config) -> D``: A is [M, K], B is [N, K] (fp16,
K-major), D = A @ B.T in fp16 with fp32 accumulation. ``CHAPTERS`` maps each step to its kernel."""
from .runtime import ensure_numpy_compat as _compat

_compat()  # numba-cuda 0.30 calls np.row_stack, which numpy 2.5 removed

from .chapters import CHAPTERS  # noqa: E402

__version__ = "0.1.0"


def __getattr__(name):
    # gemm_vN imports its kernel module lazily: importing the package stays cheap
    if name.startswith("gemm_v") and name[6:].isdigit() and int(name[6:]) in CHAPTERS:
        return CHAPTERS[int(name[6:])].entry
    if name == "gemm_v11":  # step 11's kernel, not (yet) a chapter: as lazy as the chapters' entries
        from .kernels.v11_low_precision import gemm_v11

        return gemm_v11
    raise AttributeError(f"module 'gemm_kernels' has no attribute {name!r}")


__all__ = ["CHAPTERS"] + [f"gemm_v{n}" for n in CHAPTERS]
