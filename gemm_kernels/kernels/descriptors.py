"""Matrix descriptors as the kernels build them in device code. The bit layout lives once, in
``gemm_kernels.layouts``; this module only names the one tile shape every chapter uses."""
from numba import cuda

from ..layouts import smem_desc_sw128_kmajor_dev

SBO_8_ROWS_128B = 1024  # one 8-row group of 128-byte rows
K_STEP_BYTES = 32  # 16 fp16 along K: one MMA


@cuda.jit(device=True, forceinline=True)
def sw128_kmajor_desc(addr):
    """Descriptor of a 128B-swizzled K-major tile at shared address ``addr`` (1024-aligned, or
    advanced along K by multiples of 32 bytes inside the swizzle atom)."""
    return smem_desc_sw128_kmajor_dev(addr, SBO_8_ROWS_128B)
