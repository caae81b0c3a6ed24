"""Steps 1-3: copy a 128 x 64 fp16 tile from global memory into 128B-swizzled shared memory with
ordinary loads and stores, all threads of the CTA together.

Each tile row is 64 fp16 = 128 bytes = eight 16-byte chunks. With the 128B swizzle, chunk c of
row r lives at chunk position c XOR (r % 8) of that row (layouts.tile_offset_k_major_sw128): the
layout the TMA produces and the MMA's matrix descriptor expects."""
from numba import cuda

from ..layouts import tile_offset_k_major_sw128_dev

ROWS, COLS = 128, 64
CHUNK_ELEMS = 8  # 16 bytes of fp16


@cuda.jit(device=True, forceinline=True)
def copy_tile_sw128(smem16, tile_elem_offset, src, row0, col0, tid, nthreads):
    """smem16: the dynamic shared memory as fp16; the tile starts at element ``tile_elem_offset``
    (its byte offset must be a multiple of 1024 for the swizzle pattern to line up)."""
    nchunks = ROWS * (COLS // CHUNK_ELEMS)
    for chunk in range(tid, nchunks, nthreads):
        r = chunk // 8
        c = chunk % 8
        dst = tile_elem_offset + tile_offset_k_major_sw128_dev(r, c * CHUNK_ELEMS, 2) // 2
        for e in range(CHUNK_ELEMS):
            smem16[dst + e] = src[row0 + r, col0 + c * CHUNK_ELEMS + e]
