"""Compared with step 3: the TMA engine loads the A and B tiles and stores D; one thread drives it.

Step 4: the Tensor Memory Accelerator. One thread asks the TMA engine for each 128 x 64 tile of
A and B (the engine computes addresses, swizzles and counts bytes); the tile barrier learns how
many bytes to expect with ``arrive.expect_tx`` and completes when they have all landed. The result
leaves through a 128B-swizzled shared staging buffer and two TMA stores.

Each barrier is named after the handoff it carries, as in every later step: ``tma2mma`` (the TMA
has filled the tiles: the MMAs may read them), ``mma2tma`` (the MMAs have read them: the TMA may
refill them), ``mma2ld`` (the accumulator is final: the epilogue may load it from TMEM).

Still one stage: load, wait, MMA, wait. Nothing overlaps yet; the TMA only takes the copying off
the 128 threads (on a B200 this step alone may not be faster than step 3: see the chapter)."""
from numba import cuda, uint8, uint32

from .. import ptx
from ..layouts import make_instr_desc
from ..smem_plan import SmemPlan
from .descriptors import K_STEP_BYTES, sw128_kmajor_desc
from .epilogue import store_staging, tmem_rows_to_staging
from .host import tma_launch
from .tmem_lifecycle import tmem_allocate, tmem_free

BLOCK_M, BLOCK_N, BLOCK_K, MMA_K = 128, 128, 64, 16
THREADS = 128
TILE_BYTES = BLOCK_M * BLOCK_K * 2
TMEM_COLS = 128
IDESC = make_instr_desc(BLOCK_M, BLOCK_N)

plan = SmemPlan()
A_TILE = plan.add("A tile", TILE_BYTES, align=1024)
B_TILE = plan.add("B tile", TILE_BYTES, align=1024)
D_STAGING = plan.add("D staging", BLOCK_M * BLOCK_N * 2, align=1024)
TMA2MMA = plan.add("tma2mma", 8, align=8)
MMA2TMA = plan.add("mma2tma", 8, align=8)
MMA2LD = plan.add("mma2ld", 8, align=8)
TMEM_SLOT = plan.add("TMEM address slot", 4, align=4)


@cuda.jit
def gemm_v4_kernel(tmap_a, tmap_b, tmap_d, k_tiles):
    smem = cuda.shared.array(0, uint8, alignment=1024)
    smem32 = cuda.shared.array(0, uint32, alignment=1024)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    warp = tid // 32
    tma2mma = base + TMA2MMA
    mma2tma = base + MMA2TMA
    mma2ld = base + MMA2LD
    m0 = cuda.blockIdx.x * BLOCK_M
    n0 = cuda.blockIdx.y * BLOCK_N

    if tid == 0:
        ptx.fence_proxy_tensormap_acquire(tmap_a)
        ptx.fence_proxy_tensormap_acquire(tmap_b)
        ptx.fence_proxy_tensormap_acquire(tmap_d)
        ptx.mbarrier_init(tma2mma, 1)
        ptx.mbarrier_init(mma2tma, 1)
        ptx.mbarrier_init(mma2ld, 1)
        ptx.fence_mbarrier_init()
    tmem_allocate(warp, 0, base + TMEM_SLOT, TMEM_COLS)
    cuda.syncthreads()
    tmem = smem32[TMEM_SLOT // 4]

    phase = 0
    accumulate = uint32(0)  # the tile's first MMA overwrites the accumulator, every later one adds
    for kc in range(k_tiles):
        if tid == 0:
            # one arrival plus 2 x 16 KiB of transactions complete this phase
            ptx.mbarrier_arrive_expect_tx(tma2mma, 2 * TILE_BYTES)
            ptx.tma_load_2d(base + A_TILE, tmap_a, kc * BLOCK_K, m0, tma2mma)
            ptx.tma_load_2d(base + B_TILE, tmap_b, kc * BLOCK_K, n0, tma2mma)
            ptx.mbarrier_wait(tma2mma, phase)
            ptx.tcgen05_fence_after()
            for k in range(BLOCK_K // MMA_K):
                ptx.tcgen05_mma(tmem, sw128_kmajor_desc(base + A_TILE + k * K_STEP_BYTES),
                                sw128_kmajor_desc(base + B_TILE + k * K_STEP_BYTES), IDESC, accumulate | uint32(k > 0))
            ptx.tcgen05_commit(mma2tma)
            accumulate = uint32(1)
            ptx.mbarrier_wait(mma2tma, phase)  # the tiles are free again
            phase ^= 1
    if tid == 0:
        ptx.tcgen05_commit(mma2ld)

    # Every thread waits for the accumulator. Not on mma2tma: it completes once per K chunk, and a
    # thread that waited there for "parity of the last chunk" could be released by an early chunk
    # with the same parity. mma2ld completes exactly once per tile.
    ptx.mbarrier_wait(mma2ld, 0)
    ptx.tcgen05_fence_after()
    tmem_rows_to_staging(base + D_STAGING, tmem, warp, tid % 32, 0, BLOCK_N)
    ptx.fence_proxy_async()
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    if tid == 0:
        store_staging(tmap_d, base + D_STAGING, m0, n0, BLOCK_N)
    tmem_free(warp, 0, tmem, TMEM_COLS)


SIGNATURE = "void(uint64, uint64, uint64, int32)"
LIMITS = "M and N multiples of 128, K a multiple of 64"


def gemm_v4(a, b, *, backend=None, policy="lazy", seed=0, trace=False):
    """D = A @ B.T with TMA loads and stores; M, N multiples of 128, K of 64; one CTA per tile."""
    from .host import check_operands, choose_backend

    m, n, k = check_operands(a, b, chapter=4, tile_m=BLOCK_M, tile_n=BLOCK_N, tile_k=BLOCK_K)
    return tma_launch(gemm_v4_kernel, (m // BLOCK_M, n // BLOCK_N), a, b, m, n, k, choose_backend(backend, 4),
                      policy, seed, trace, plan=plan, threads=THREADS,
                      boxes=((BLOCK_M, BLOCK_K), (BLOCK_N, BLOCK_K), (BLOCK_M, 64)))
