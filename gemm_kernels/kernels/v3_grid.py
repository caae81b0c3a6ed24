"""Step 3: many CTAs. A 2D grid launches one CTA per 128 x 128 output tile; CTA (bx, by) owns
D[128*bx : +128, 128*by : +128] and offsets its loads of A and B and its stores of D by that much.
Shared memory, TMEM, the K-loop and the barrier protocol are step 2's, unchanged."""
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
def gemm_v3_kernel(a, b, d32):
    smem = cuda.shared.array(0, uint8, alignment=1024)
    smem16 = cuda.shared.array(0, float16, alignment=1024)
    smem32 = cuda.shared.array(0, uint32, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    warp = tid // 32
    mma_done = base + MMA_DONE
    m0 = cuda.blockIdx.x * BLOCK_M  # this CTA's rows of A and D
    n0 = cuda.blockIdx.y * BLOCK_N  # this CTA's rows of B = columns of D

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
        copy_tile_sw128(smem16, A_TILE // 2, a, m0, kc * BLOCK_K, tid, THREADS)
        copy_tile_sw128(smem16, B_TILE // 2, b, n0, kc * BLOCK_K, tid, THREADS)
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
    tmem_rows_to_global(d32, tmem, warp, tid % 32, m0, n0, BLOCK_N)
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    tmem_free(warp, 0, tmem, TMEM_COLS)


LIMITS = "M and N multiples of 128, K a multiple of 64"


def gemm_v3(a, b, *, backend=None, policy="lazy", seed=0, trace=False):
    """D = A @ B.T for A [M, K] and B [N, K] fp16; M, N multiples of 128, K of 64; one CTA per tile."""
    from .host import check_operands, choose_backend

    m, n, k = check_operands(a, b, chapter=3, tile_m=BLOCK_M, tile_n=BLOCK_N, tile_k=BLOCK_K)
    return _launch(gemm_v3_kernel, (m // BLOCK_M, n // BLOCK_N), a, b, m, n, choose_backend(backend, 3), policy,
                   seed, trace)
