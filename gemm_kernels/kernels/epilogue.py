"""Epilogues: the fp32 accumulator leaves TMEM through registers, is rounded to fp16, and goes to
global memory (steps 1-3: ordinary stores) or to a shared staging buffer for a TMA store (4-9).

Warp w of a warpgroup owns TMEM lanes 32*(w%4) .. +31 (its lane quarter); lane i of the warp reads
accumulator row 32*(w%4) + i, 32 columns per tcgen05.ld."""
from numba import cuda, float32, uint32

from .. import ptx
from ..layouts import tile_offset_k_major_sw128_dev

COLS_PER_LD = 32
PACKED_PER_LD = 16  # fp16 pairs from one 32-column load


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


STAGE_COLS = 64  # one 128B-swizzled staging box: 64 fp16 = 128 bytes per row
MAX_PACKED = 64  # fp16 pairs of up to 128 columns held in registers at once


@cuda.jit(device=True, forceinline=True)
def tmem_load_packed(packed, tmem_base, warp_in_group, tmem_col0, ncols):
    """Load this thread's row of accumulator columns [tmem_col0, +ncols) from TMEM and round it to
    fp16 pairs in ``packed`` (a local uint32 array of ncols/2). After it returns, the TMEM columns
    may be overwritten: every tcgen05.ld has been waited on."""
    quarter = 32 * warp_in_group
    vals = cuda.local.array(COLS_PER_LD, float32)
    for chunk in range(ncols // COLS_PER_LD):
        v = ptx.tmem_ld_32x32b_x32(tmem_base + (quarter << 16) + tmem_col0 + chunk * COLS_PER_LD)
        ptx.tmem_wait_ld()
        for i in range(COLS_PER_LD):
            vals[i] = v[i]
        for j in range(COLS_PER_LD // 2):
            packed[chunk * (COLS_PER_LD // 2) + j] = ptx.pack_f16x2(vals[2 * j], vals[2 * j + 1])


@cuda.jit(device=True, forceinline=True)
def packed_to_staging(staging_addr, packed, row, col0, ncols):
    """Write one row of ncols fp16 values (as pairs), staging columns [col0, col0 + ncols), into
    the shared staging area at shared address ``staging_addr``: boxes of 128 rows x 64 columns,
    each 128B-swizzled (16 KiB, 1024-aligned), the layout a TMA store with a 128B-swizzled box
    reads. One 16-byte store per 8 columns (st.shared.v4): conflict-free under the swizzle."""
    for j in range(ncols // 8):
        c = col0 + 8 * j
        box = staging_addr + (c // STAGE_COLS) * (128 * 128)
        off = box + tile_offset_k_major_sw128_dev(row, c % STAGE_COLS, 2)
        ptx.st_shared_v4(off, packed[4 * j], packed[4 * j + 1], packed[4 * j + 2], packed[4 * j + 3])


@cuda.jit(device=True, forceinline=True)
def tmem_rows_to_staging(staging_addr, tmem_base, warp_in_group, lane, tmem_col0, ncols):
    """TMEM -> registers (fp16 pairs) -> swizzled staging, for this thread's row, 32 columns at a
    time (few registers: nothing else is in flight while it runs)."""
    packed = cuda.local.array(PACKED_PER_LD, uint32)
    for chunk in range(ncols // COLS_PER_LD):
        tmem_load_packed(packed, tmem_base, warp_in_group, tmem_col0 + chunk * COLS_PER_LD, COLS_PER_LD)
        packed_to_staging(staging_addr, packed, 32 * warp_in_group + lane, chunk * COLS_PER_LD, COLS_PER_LD)


@cuda.jit(device=True, forceinline=True)
def store_staging_async(tmap_d, staging_addr, row0, col0, ncols):
    """As store_staging, for two staging buffers used in turn: wait only until the store issued
    before this one has read its buffer (the buffer the next store will reuse); this store may go
    on reading while the warps fill the other buffer. Drain with bulk_wait_group_read0 before exit."""
    for box in range(ncols // STAGE_COLS):
        ptx.tma_store_2d(tmap_d, col0 + box * STAGE_COLS, row0, staging_addr + box * (128 * 128))
    ptx.bulk_commit_group()
    ptx.bulk_wait_group_read1()


@cuda.jit(device=True, forceinline=True)
def store_staging(tmap_d, staging_addr, row0, col0, ncols):
    """One thread: TMA-store the staging boxes to D at (row0, col0), then wait until the engine has
    read them (so the staging buffer may be written again)."""
    for box in range(ncols // STAGE_COLS):
        ptx.tma_store_2d(tmap_d, col0 + box * STAGE_COLS, row0, staging_addr + box * (128 * 128))
    ptx.bulk_commit_group()
    ptx.bulk_wait_group_read0()
