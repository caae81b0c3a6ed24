"""Compared with step 4: a ring of PIPE_DEPTH stages, so loads of later chunks overlap the MMAs.

Step 5: a software pipeline. The shared A/B buffers become a ring of PIPE_DEPTH stages, each
with its own TMA barrier, so the TMA fills stage s+1 (and s+2, ...) while the tensor core reads
stage s. A prologue fills the ring; after the MMAs of chunk k have completed, their stage is
refilled with chunk k + PIPE_DEPTH. One thread still drives everything.

Each stage's ``tma2mma`` barrier completes once per pass around the ring, so the parity a wait
names flips when the stage index wraps, not after every chunk (pipeline.advance). The ring is
driven through pipeline.py's vocabulary: ``pipeline.expect_tx`` (the producer's arrival with the
bytes to expect), ``pipeline.wait``, ``pipeline.stage_buffer`` and ``pipeline.advance``, each a
few lines of ptx.* calls."""
import functools

from numba import cuda, uint8, uint32

from .. import pipeline, ptx
from ..layouts import make_instr_desc
from ..smem_plan import SmemPlan
from .descriptors import K_STEP_BYTES, sw128_kmajor_desc
from .epilogue import store_staging, tmem_rows_to_staging
from .host import tma_launch
from .tmem_lifecycle import tmem_allocate, tmem_free
from .v4_tma import SIGNATURE as SIGNATURE  # the same launch signature as step 4 (explicit re-export)

BLOCK_M, BLOCK_N, BLOCK_K, MMA_K = 128, 128, 64, 16
THREADS = 128
TILE_BYTES = BLOCK_M * BLOCK_K * 2
TMEM_COLS = 128
IDESC = make_instr_desc(BLOCK_M, BLOCK_N)
DEFAULT_DEPTH = 2


def make_plan(depth):
    plan = SmemPlan()
    offs = dict(
        a=plan.add("A stage", TILE_BYTES, align=1024, count=depth),
        b=plan.add("B stage", TILE_BYTES, align=1024, count=depth),
        d=plan.add("D staging", BLOCK_M * BLOCK_N * 2, align=1024),
        tma2mma=plan.add("tma2mma", 8, align=8, count=depth),  # one per stage
        mma2tma=plan.add("mma2tma", 8, align=8),  # one: thread 0 waits on it after every chunk
        mma2ld=plan.add("mma2ld", 8, align=8),
        slot=plan.add("TMEM address slot", 4, align=4),
    )
    return plan.check(f"a {depth}-stage pipeline"), offs


@functools.lru_cache(maxsize=None)
def make_kernel(depth):
    plan, o = make_plan(depth)
    A0, B0, D_STAGING, TMA2MMA, MMA2TMA, MMA2LD, TMEM_SLOT = (
        o[k] for k in ("a", "b", "d", "tma2mma", "mma2tma", "mma2ld", "slot"))
    DEPTH = depth

    @cuda.jit
    def gemm_v5_kernel(tmap_a, tmap_b, tmap_d, k_tiles):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        smem32 = cuda.shared.array(0, uint32, alignment=1024)
        base = ptx.shared_addr(smem)
        tid = cuda.threadIdx.x
        warp = tid // 32
        mma2tma = base + MMA2TMA
        mma2ld = base + MMA2LD
        m0 = cuda.blockIdx.x * BLOCK_M
        n0 = cuda.blockIdx.y * BLOCK_N

        if tid == 0:
            ptx.fence_proxy_tensormap_acquire(tmap_a)
            ptx.fence_proxy_tensormap_acquire(tmap_b)
            ptx.fence_proxy_tensormap_acquire(tmap_d)
            for s in range(DEPTH):
                ptx.mbarrier_init(pipeline.barrier(base + TMA2MMA, s), 1)
            ptx.mbarrier_init(mma2tma, 1)
            ptx.mbarrier_init(mma2ld, 1)
            ptx.fence_mbarrier_init()
        tmem_allocate(warp, 0, base + TMEM_SLOT, TMEM_COLS)
        cuda.syncthreads()
        tmem = smem32[TMEM_SLOT // 4]

        if tid == 0:
            # prologue: fill the ring
            for s in range(min(DEPTH, k_tiles)):
                tma2mma = pipeline.expect_tx(base + TMA2MMA, s, 2 * TILE_BYTES)
                ptx.tma_load_2d(pipeline.stage_buffer(base + A0, s, TILE_BYTES), tmap_a, s * BLOCK_K, m0, tma2mma)
                ptx.tma_load_2d(pipeline.stage_buffer(base + B0, s, TILE_BYTES), tmap_b, s * BLOCK_K, n0, tma2mma)
            stage = uint32(0)
            tma_phase = uint32(0)
            mma_phase = 0
            accumulate = uint32(0)  # the tile's first MMA overwrites the accumulator, every later one adds
            for kc in range(k_tiles):
                pipeline.wait(base + TMA2MMA, stage, tma_phase)
                ptx.tcgen05_fence_after()
                a_stage = pipeline.stage_buffer(base + A0, stage, TILE_BYTES)
                b_stage = pipeline.stage_buffer(base + B0, stage, TILE_BYTES)
                for k in range(BLOCK_K // MMA_K):
                    ptx.tcgen05_mma(tmem, sw128_kmajor_desc(a_stage + k * K_STEP_BYTES),
                                    sw128_kmajor_desc(b_stage + k * K_STEP_BYTES), IDESC, accumulate | uint32(k > 0))
                ptx.tcgen05_commit(mma2tma)
                accumulate = uint32(1)
                ptx.mbarrier_wait(mma2tma, mma_phase)  # stage `stage` has been read
                mma_phase ^= 1
                nxt = kc + DEPTH
                if nxt < k_tiles:  # refill this stage with chunk kc + DEPTH
                    tma2mma = pipeline.expect_tx(base + TMA2MMA, stage, 2 * TILE_BYTES)
                    ptx.tma_load_2d(a_stage, tmap_a, nxt * BLOCK_K, m0, tma2mma)
                    ptx.tma_load_2d(b_stage, tmap_b, nxt * BLOCK_K, n0, tma2mma)
                stage, tma_phase = pipeline.advance(stage, tma_phase, DEPTH)
            ptx.tcgen05_commit(mma2ld)

        ptx.mbarrier_wait(mma2ld, 0)
        ptx.tcgen05_fence_after()
        tmem_rows_to_staging(base + D_STAGING, tmem, warp, tid % 32, 0, BLOCK_N)
        ptx.fence_proxy_async()
        ptx.tcgen05_fence_before()
        cuda.syncthreads()
        if tid == 0:
            store_staging(tmap_d, base + D_STAGING, m0, n0, BLOCK_N)
        tmem_free(warp, 0, tmem, TMEM_COLS)

    return gemm_v5_kernel, plan


gemm_v5_kernel, plan = make_kernel(DEFAULT_DEPTH)
LIMITS = "M and N multiples of 128, K a multiple of 64; PIPE_DEPTH stages must fit in 227 KiB"


def gemm_v5(a, b, *, backend=None, policy="lazy", seed=0, trace=False, pipe_depth=DEFAULT_DEPTH):
    """D = A @ B.T with a PIPE_DEPTH-stage TMA/MMA pipeline; one CTA per 128 x 128 tile."""
    from .host import check_operands, check_pipeline_config, choose_backend

    check_pipeline_config(pipe_depth)
    m, n, k = check_operands(a, b, chapter=5, tile_m=BLOCK_M, tile_n=BLOCK_N, tile_k=BLOCK_K)
    kernel, kplan = make_kernel(pipe_depth)
    return tma_launch(kernel, (m // BLOCK_M, n // BLOCK_N), a, b, m, n, k, choose_backend(backend, 5), policy, seed,
                      trace, plan=kplan, threads=THREADS, boxes=((BLOCK_M, BLOCK_K), (BLOCK_N, BLOCK_K), (BLOCK_M, 64)))
