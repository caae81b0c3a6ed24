"""Matrix descriptors as the kernels build them in device code (128B-swizzled K-major tiles).
The bit layout and its validation live in ``gemm_kernels.layouts``; this module only adapts it."""
from numba import cuda, uint32, uint64

SBO_8_ROWS_128B = 1024  # one 8-row group of 128-byte rows
K_STEP_BYTES = 32  # 16 fp16 along K: one MMA


@cuda.jit(device=True, forceinline=True)
def sw128_kmajor_desc(addr):
    """Descriptor of a 128B-swizzled K-major tile at shared address ``addr`` (1024-aligned, or
    advanced along K by multiples of 32 bytes inside the atom): start address, LBO 16 (ignored
    for swizzled K-major), SBO 1024, the sm_100 fixed bit 46, swizzle code 2 (128B)."""
    start = uint64((uint32(addr) & uint32(0x3FFFF)) >> uint32(4))
    return (start | (uint64(1) << uint64(16)) | (uint64(SBO_8_ROWS_128B >> 4) << uint64(32))
            | (uint64(1) << uint64(46)) | (uint64(2) << uint64(61)))
