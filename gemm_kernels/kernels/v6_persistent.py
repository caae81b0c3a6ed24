"""Compared with step 5: one persistent CTA per SM walks the tiles (a grouped scheduler that does not divide).

Step 6: a persistent kernel. The grid shrinks to one CTA per SM; each CTA sets up its barriers
and TMEM once, then walks output tiles handed out by a grouped (L2-friendly) scheduler: tile t,
t + gridDim, t + 2 gridDim, ... (``schedule.static_first`` and ``static_next``, the tile loop of
every persistent step). The per-tile work is step 5's pipeline.

The ring position (stage and phase) and the barriers' phases are carried from one tile to the
next (the accumulator, a ring of depth 1, steps with ``pipeline.advance`` like the stages). Resetting
them at each tile, as a first attempt often does, is only correct when every barrier completes an
even number of phases per tile; with an odd number of K chunks a wait
passes on an old phase and the MMA reads a stage the TMA has not filled (the chapter's "Break it"
plants that reset with ``exercises.RESET_PHASES``; the emulator reports StalePhaseWait)."""
import functools

from numba import cuda, uint8, uint32

from .. import pipeline, ptx, schedule
from ..layouts import make_instr_desc
from ..pipeline import grouped_tile, scheduler_args
from .descriptors import K_STEP_BYTES, sw128_kmajor_desc
from .epilogue import store_staging, tmem_rows_to_staging
from .host import EMULATOR_CTAS, GROUP, tma_launch
from .tmem_lifecycle import tmem_allocate, tmem_free
from .v5_pipeline import BLOCK_K, BLOCK_M, BLOCK_N, DEFAULT_DEPTH, MMA_K, THREADS, TILE_BYTES, TMEM_COLS, make_plan

IDESC = make_instr_desc(BLOCK_M, BLOCK_N)


@functools.lru_cache(maxsize=None)
def make_kernel(depth, group=GROUP):
    plan, o = make_plan(depth)
    A0, B0, D_STAGING, TMA2MMA, MMA2TMA, MMA2LD, TMEM_SLOT = (
        o[k] for k in ("a", "b", "d", "tma2mma", "mma2tma", "mma2ld", "slot"))
    DEPTH, GROUP_M = depth, group

    @cuda.jit
    def gemm_v6_kernel(tmap_a, tmap_b, tmap_d, k_tiles, num_m, num_n, div_group, div_last):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        smem32 = cuda.shared.array(0, uint32, alignment=1024)
        base = ptx.shared_addr(smem)
        tid = cuda.threadIdx.x
        warp = tid // 32
        mma2tma = base + MMA2TMA
        mma2ld = base + MMA2LD

        # set up once per CTA, not once per tile
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

        stage = uint32(0)
        tma_phase = uint32(0)
        mma_phase = uint32(0)
        acc_phase = uint32(0)
        num_tiles = num_m * num_n
        more, t = schedule.static_first(cuda.blockIdx.x, num_tiles)  # tiles t, t + gridDim, ...
        while more:
            m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
            m0 = m_idx * BLOCK_M
            n0 = n_idx * BLOCK_N
            if tid == 0:
                for i in range(min(DEPTH, k_tiles)):
                    s = (stage + i) % DEPTH
                    tma2mma = pipeline.expect_tx(base + TMA2MMA, s, 2 * TILE_BYTES)
                    ptx.tma_load_2d(pipeline.stage_buffer(base + A0, s, TILE_BYTES), tmap_a, i * BLOCK_K, m0, tma2mma)
                    ptx.tma_load_2d(pipeline.stage_buffer(base + B0, s, TILE_BYTES), tmap_b, i * BLOCK_K, n0, tma2mma)
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
                    ptx.mbarrier_wait(mma2tma, mma_phase)
                    _, mma_phase = pipeline.advance(0, mma_phase, 1)  # one mma2tma barrier: a ring of depth 1
                    nxt = kc + DEPTH
                    if nxt < k_tiles:
                        tma2mma = pipeline.expect_tx(base + TMA2MMA, stage, 2 * TILE_BYTES)
                        ptx.tma_load_2d(a_stage, tmap_a, nxt * BLOCK_K, m0, tma2mma)
                        ptx.tma_load_2d(b_stage, tmap_b, nxt * BLOCK_K, n0, tma2mma)
                    stage, tma_phase = pipeline.advance(stage, tma_phase, DEPTH)
                ptx.tcgen05_commit(mma2ld)

            ptx.mbarrier_wait(mma2ld, acc_phase)
            _, acc_phase = pipeline.advance(0, acc_phase, 1)  # one accumulator: a ring of depth 1
            ptx.tcgen05_fence_after()
            tmem_rows_to_staging(base + D_STAGING, tmem, warp, tid % 32, 0, BLOCK_N)
            ptx.fence_proxy_async()
            ptx.tcgen05_fence_before()
            cuda.syncthreads()
            if tid == 0:
                store_staging(tmap_d, base + D_STAGING, m0, n0, BLOCK_N)
            more, t = schedule.static_next(t, cuda.gridDim.x, num_tiles)

        cuda.syncthreads()
        tmem_free(warp, 0, tmem, TMEM_COLS)

    return gemm_v6_kernel, plan


gemm_v6_kernel, plan = make_kernel(DEFAULT_DEPTH)
SIGNATURE = "void(uint64, uint64, uint64, int32, int32, int32, uint64, uint64)"
LIMITS = "M and N multiples of 128, K a multiple of 64; persistent grid of min(SMs, tiles) CTAs"


def gemm_v6(a, b, *, backend=None, policy="lazy", seed=0, trace=False, pipe_depth=DEFAULT_DEPTH, group=GROUP,
            num_ctas=None):
    """D = A @ B.T with a persistent grid and a grouped tile scheduler (steps 5's pipeline per tile)."""
    from .host import check_operands, check_pipeline_config, choose_backend, persistent_size

    check_pipeline_config(pipe_depth, group)
    m, n, k = check_operands(a, b, chapter=6, tile_m=BLOCK_M, tile_n=BLOCK_N, tile_k=BLOCK_K)
    backend = choose_backend(backend, 6)
    tiles = (m // BLOCK_M) * (n // BLOCK_N)
    grid = (min(persistent_size(backend, num_ctas, EMULATOR_CTAS), tiles), 1)
    kernel, kplan = make_kernel(pipe_depth, group)
    return tma_launch(kernel, grid, a, b, m, n, k, backend, policy, seed, trace, plan=kplan, threads=THREADS,
                      boxes=((BLOCK_M, BLOCK_K), (BLOCK_N, BLOCK_K), (BLOCK_M, 64)),
                      extra=scheduler_args(m // BLOCK_M, n // BLOCK_N, group))
