"""Allocating and freeing tensor memory: whole-warp operations whose result travels through
shared memory. Shared by every chapter."""
from numba import cuda

from .. import ptx


@cuda.jit(device=True, forceinline=True)
def tmem_allocate(warp, alloc_warp, slot_addr, ncols):
    """Warp ``alloc_warp`` allocates ``ncols`` columns; the TMEM address lands in shared memory at
    ``slot_addr``. The caller makes it visible with a CTA barrier before reading the slot."""
    if warp == alloc_warp:
        ptx.tmem_alloc(slot_addr, ncols)


@cuda.jit(device=True, forceinline=True)
def tmem_free(warp, alloc_warp, tmem_base, ncols):
    """The allocating warp gives the permit back and frees the columns. Call it after a barrier
    that every reader and the last MMA commit are ordered before."""
    if warp == alloc_warp:
        ptx.tcgen05_fence_after()  # order the readers' TMEM accesses (before the barrier) first
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem_base, ncols)
