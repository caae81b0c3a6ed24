"""Matrix descriptors as the kernels build them in device code. The bit layout lives once, in
``gemm_kernels.layouts``; this module only names the one tile shape every chapter uses.

Two ways to get a descriptor:

* ``sw128_kmajor_desc(addr)``: the whole 64-bit descriptor of a shared address (chapters 1-6);
* the split form the MMA warp of chapters 7-9 uses, as CUTLASS does: for this tile shape the high
  word (SBO, the fixed bit, the swizzle code) is one constant, ``DESC_HI``, and only the low word
  (the start address >> 4, and LBO) moves. A stage's low word is computed once per buffer and
  advanced with 32-bit adds (``DESC_LO_K_STEP`` per K = 16 step), so no 64-bit arithmetic runs in
  the loop; ``ptx.tcgen05_mma_lo`` pairs the low word with DESC_HI inside the PTX (mov.b64)."""
from numba import cuda, uint32

from ..layouts import make_smem_desc, smem_desc_sw128_kmajor_dev

SBO_8_ROWS_128B = 1024  # one 8-row group of 128-byte rows
K_STEP_BYTES = 32  # 16 fp16 along K: one MMA
_DESC0 = make_smem_desc(0, lbo=16, sbo=SBO_8_ROWS_128B, swizzle="128B")
DESC_HI = _DESC0 >> 32  # the constant high word (0x40004040)
DESC_LO_LBO = _DESC0 & 0xFFFFFFFF  # the low word of address 0: just the LBO field
DESC_LO_K_STEP = K_STEP_BYTES >> 4  # the start-address field counts 16-byte units


@cuda.jit(device=True, forceinline=True)
def sw128_kmajor_desc(addr):
    """Descriptor of a 128B-swizzled K-major tile at shared address ``addr`` (1024-aligned, or
    advanced along K by multiples of 32 bytes inside the swizzle atom)."""
    return smem_desc_sw128_kmajor_dev(addr, SBO_8_ROWS_128B)


@cuda.jit(device=True, forceinline=True)
def sw128_desc_lo(addr):
    """The low word of ``sw128_kmajor_desc(addr)``: start address >> 4 (bits 0-13) and LBO. Adding
    ``bytes >> 4`` to it advances the descriptor by ``bytes`` (no carry out of the 14-bit field
    while the address stays inside the 256 KiB shared window)."""
    return uint32(((uint32(addr) & uint32(0x3FFFF)) >> uint32(4)) | uint32(DESC_LO_LBO))

