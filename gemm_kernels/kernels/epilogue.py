"""Epilogues: the fp32 accumulator leaves TMEM through registers, is rounded to fp16, and goes to
global memory (steps 1-3: ordinary stores) or to a shared staging buffer for a TMA store (4-9).

Warp w of a warpgroup owns TMEM lanes 32*(w%4) .. +31 (its lane quarter); lane i of the warp reads
accumulator row 32*(w%4) + i, 32 columns per tcgen05.ld."""
from numba import cuda, float32

from .. import ptx

COLS_PER_LD = 32


@cuda.jit(device=True, forceinline=True)
def tmem_rows_to_global(d32, tmem_base, warp_in_group, lane, row0, col0, ncols):
    """Store the accumulator's columns [0, ncols) of this thread's row to D (viewed as uint32 pairs
    of fp16) at row ``row0 + 32*warp_in_group + lane``, columns ``col0 ..``."""
    quarter = 32 * warp_in_group
    row = row0 + quarter + lane
    vals = cuda.local.array(COLS_PER_LD, float32)
    for chunk in range(ncols // COLS_PER_LD):
        taddr = tmem_base + (quarter << 16) + chunk * COLS_PER_LD
        v = ptx.tmem_ld_32x32b_x32(taddr)
        ptx.tmem_wait_ld()
        for i in range(COLS_PER_LD):
            vals[i] = v[i]
        base = (col0 + chunk * COLS_PER_LD) // 2
        for j in range(COLS_PER_LD // 2):
            d32[row, base + j] = ptx.pack_f16x2(vals[2 * j], vals[2 * j + 1])
