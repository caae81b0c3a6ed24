"""Step 2: the K-loop. One CTA still computes one 128 x 128 tile, now for any K that is a multiple
of 64: the same two shared buffers and the same TMEM accumulator serve every 64-wide K chunk.

What is new against step 1: the loop; ``accumulate`` is off only for the very first MMA; the
mbarrier is reused, so the parity we wait for flips after every completion; and nobody may
overwrite the shared tiles until the MMAs reading them have completed (that same wait)."""
from numba import cuda, uint8, uint32
from numba.types import float16

from .. import ptx
from .descriptors import K_STEP_BYTES, sw128_kmajor_desc
from .epilogue import tmem_rows_to_global
from .tile_copy import copy_tile_sw128
from .tmem_lifecycle import tmem_allocate, tmem_free
from .v1_one_tile import (A_TILE, B_TILE, BLOCK_K, BLOCK_M, BLOCK_N, IDESC, MMA_DONE, MMA_K, THREADS, TMEM_COLS,
                          TMEM_SLOT, _launch)
# the same launch signature and shared-memory plan as step 1 (chapters.py reads them from this module)
from .v1_one_tile import SIGNATURE as SIGNATURE, plan as plan  # (explicit re-export)


@cuda.jit
def gemm_v2_kernel(a, b, d32):
    smem = cuda.shared.array(0, uint8, alignment=1024)
    smem16 = cuda.shared.array(0, float16, alignment=1024)
    smem32 = cuda.shared.array(0, uint32, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    warp = tid // 32
    mma_done = base + MMA_DONE

    # 1. set-up: one barrier for "the MMAs finished", and 128 TMEM columns for the accumulator
    if tid == 0:
        ptx.mbarrier_init(mma_done, 1)
        ptx.fence_mbarrier_init()
    tmem_allocate(warp, 0, base + TMEM_SLOT, TMEM_COLS)
    cuda.syncthreads()
    tmem = smem32[TMEM_SLOT // 4]

    phase = 0
    for kc in range(a.shape[1] // BLOCK_K):
        # 2. all threads copy chunk kc of A and B into the (free) buffers, for the async proxy
        copy_tile_sw128(smem16, A_TILE // 2, a, 0, kc * BLOCK_K, tid, THREADS)
        copy_tile_sw128(smem16, B_TILE // 2, b, 0, kc * BLOCK_K, tid, THREADS)
        ptx.fence_proxy_async()
        cuda.syncthreads()
        # 3. one thread issues the four K = 16 MMAs of the chunk and commits them to the barrier
        if tid == 0:
            ptx.tcgen05_fence_after()
            for k in range(BLOCK_K // MMA_K):
                ptx.tcgen05_mma(tmem, sw128_kmajor_desc(base + A_TILE + k * K_STEP_BYTES),
                                sw128_kmajor_desc(base + B_TILE + k * K_STEP_BYTES), IDESC, kc + k)
            ptx.tcgen05_commit(mma_done)
        # 4. everyone waits: when this phase completes, the chunk's MMAs have read the buffers
        #    (and updated the accumulator); the next wait is for the next phase: flip the parity
        ptx.mbarrier_wait(mma_done, phase)
        phase ^= 1

    # 5. after the last chunk, each warp reads its rows out of TMEM; then TMEM is freed
    ptx.tcgen05_fence_after()
    tmem_rows_to_global(d32, tmem, warp, tid % 32, 0, 0, BLOCK_N)
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    tmem_free(warp, 0, tmem, TMEM_COLS)


LIMITS = "M = N = 128, K a multiple of 64"


def gemm_v2(a, b, *, backend=None, policy="lazy", seed=0, trace=False):
    """D = A @ B.T for A [128, K] and B [128, K] fp16, K a multiple of 64; one CTA."""
    from .host import check_operands, choose_backend

    m, n, k = check_operands(a, b, chapter=2, tile_m=BLOCK_M, tile_n=BLOCK_N, tile_k=BLOCK_K,
                             exact=(BLOCK_M, BLOCK_N, None))
    return _launch(gemm_v2_kernel, (1, 1), a, b, m, n, choose_backend(backend, 2), policy, seed, trace)
