"""Matrix descriptors as the kernels build them in device code. The bit layout lives once, in
``gemm_kernels.layouts.smem_desc_raw``; here it is compiled as a device function."""
from numba import cuda

from ..layouts import SWIZZLE_CODES, smem_desc_raw

SBO_8_ROWS_128B = 1024  # one 8-row group of 128-byte rows
LBO_IGNORED = 16  # unused for swizzled K-major layouts ("assumed 1"); we encode 1 (16 bytes)
K_STEP_BYTES = 32  # 16 fp16 along K: one MMA
SW128 = SWIZZLE_CODES["128B"]

_desc = cuda.jit(device=True, forceinline=True)(smem_desc_raw)


@cuda.jit(device=True, forceinline=True)
def sw128_kmajor_desc(addr):
    """Descriptor of a 128B-swizzled K-major tile at shared address ``addr`` (1024-aligned, or
    advanced along K by multiples of 32 bytes inside the swizzle atom)."""
    return _desc(addr, LBO_IGNORED, SBO_8_ROWS_128B, SW128, 0)
