"""Step 1: one CTA, one 128 x 128 tile, K = 64, everything synchronous.

The whole Blackwell data path once, with nothing overlapped:
  global --(all 128 threads, ordinary stores)--> 128B-swizzled shared memory
  --(one thread: four tcgen05.mma, K = 16 each)--> fp32 accumulator in TMEM
  --(tcgen05.ld, each warp its lane quarter)--> registers --(fp16)--> global.
"""
from numba import cuda, uint8, uint32
from numba.types import float16

from .. import ptx
from ..layouts import make_instr_desc
from ..smem_plan import SmemPlan
from .descriptors import K_STEP_BYTES, sw128_kmajor_desc
from .epilogue import tmem_rows_to_global
from .tile_copy import copy_tile_sw128
from .tmem_lifecycle import tmem_allocate, tmem_free

BLOCK_M, BLOCK_N, BLOCK_K, MMA_K = 128, 128, 64, 16
THREADS = 128
TILE_BYTES = BLOCK_M * BLOCK_K * 2  # 16 KiB per operand tile
TMEM_COLS = 128  # one fp32 column per output column

plan = SmemPlan()
A_TILE = plan.add("A tile", TILE_BYTES, align=1024)
B_TILE = plan.add("B tile", TILE_BYTES, align=1024)
MMA_DONE = plan.add("mma_done barrier", 8, align=8)
TMEM_SLOT = plan.add("TMEM address slot", 4, align=4)
IDESC = make_instr_desc(BLOCK_M, BLOCK_N)  # f16 x f16 -> f32, both K-major


@cuda.jit
def gemm_v1_kernel(a, b, d32):
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

    # 2. all threads copy A and B into swizzled shared memory, then hand them to the async proxy
    copy_tile_sw128(smem16, A_TILE // 2, a, 0, 0, tid, THREADS)
    copy_tile_sw128(smem16, B_TILE // 2, b, 0, 0, tid, THREADS)
    ptx.fence_proxy_async()
    cuda.syncthreads()
    tmem = smem32[TMEM_SLOT // 4]

    # 3. one thread issues the four K = 16 MMAs and commits them to the barrier
    if tid == 0:
        ptx.tcgen05_fence_after()
        for k in range(BLOCK_K // MMA_K):
            ptx.tcgen05_mma(tmem, sw128_kmajor_desc(base + A_TILE + k * K_STEP_BYTES),
                            sw128_kmajor_desc(base + B_TILE + k * K_STEP_BYTES), IDESC, k)
        ptx.tcgen05_commit(mma_done)

    # 4. everyone waits for phase 0 of the barrier, then reads its rows out of TMEM
    ptx.mbarrier_wait(mma_done, 0)
    ptx.tcgen05_fence_after()
    tmem_rows_to_global(d32, tmem, warp, tid % 32, 0, 0, BLOCK_N)

    # 5. free TMEM once every warp has finished reading it
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    tmem_free(warp, 0, tmem, TMEM_COLS)

SIGNATURE = "void(float16[:, ::1], float16[:, ::1], uint32[:, ::1])"
LIMITS = "M = N = 128, K = 64 exactly"


def gemm_v1(a, b, *, backend=None, policy="lazy", seed=0, trace=False):
    """D = A @ B.T for A [128, 64] and B [128, 64] fp16 (fp32 accumulation), one CTA."""
    from .host import check_operands, choose_backend

    m, n, k = check_operands(a, b, chapter=1, tile_m=BLOCK_M, tile_n=BLOCK_N, tile_k=BLOCK_K,
                             exact=(BLOCK_M, BLOCK_N, BLOCK_K))
    return _launch(gemm_v1_kernel, (1, 1), a, b, m, n, choose_backend(backend, 1), policy, seed, trace)


def _launch(kernel, grid, a, b, m, n, backend, policy, seed, trace, extra=()):
    """Shared by steps 1-3: launch with (A, B, D as uint32 pairs, *extra) and return the result."""
    import numpy as np

    from .host import Launched, run_on_emulator, run_on_gpu

    d = np.zeros((m, n), dtype=np.float16)
    if backend == "emulator":
        launch = run_on_emulator(kernel, grid, THREADS, (a, b, d.view(np.uint32)) + tuple(extra), plan=plan,
                                 policy=policy, seed=seed, trace=trace)
        return Launched(d, backend, launch) if trace else d
    from numba import cuda

    da, db, dd = cuda.to_device(a), cuda.to_device(b), cuda.to_device(d.view(np.uint32))
    run_on_gpu(kernel, grid, THREADS, (da, db, dd) + tuple(extra), plan=plan)
    return dd.copy_to_host().view(np.float16)
