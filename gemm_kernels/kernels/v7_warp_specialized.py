"""Compared with step 6: three warp roles (TMA, MMA, writeback) hand buffers over through mbarriers.

Step 7: warp specialization. Three roles run at once instead of one thread doing everything:

* warp 4 (warpgroup 1): the TMA producer, filling a ring of PIPE_DEPTH stages;
* warp 5 (warpgroup 1): the MMA issuer (both run their loops with the whole warp and issue from one
  elected lane);
* warpgroup 0 (warps 0-3, 128 threads): the writeback, TMEM -> registers -> staging -> TMA store.

Four barrier handoffs connect them (the chapter's table):
  tma2mma[s]  stage s is full      TMA bytes + the producer's arrive.expect_tx   -> MMA waits
  mma2tma[s]  stage s is empty     commit after the MMAs that read it            -> producer waits
  mma2ld[a]   accumulator a ready  commit after the tile's last MMA              -> writeback waits
  ld2mma[a]   accumulator a free   one elected lane per writeback warp (4) arrives     -> MMA waits
TMEM holds ACC_STAGES (default 2) accumulators of 128 columns, used in turn like the smem ring, so
the MMAs of tile i+1 run while the writeback drains tile i.
A ring position is a (stage, phase) pair; the roles drive the rings with pipeline.py's vocabulary
(wait, expect_tx, release, arrive, advance, producer_tail). The producer starts at phase 1 on the
empty barriers: a fresh barrier's "previous phase" counts as complete, so its first pass through
the ring does not wait. The accumulator ring is stepped the same way (advance), once per tile.
Every role walks its tiles with the same three lines (schedule.static_first, ``while more``,
schedule.static_next). The writeback synchronises on its own named barrier, never the CTA's."""
import functools

from numba import cuda, uint8, uint32

from .. import pipeline, ptx, schedule
from ..layouts import make_instr_desc
from ..pipeline import grouped_tile, scheduler_args
from ..smem_plan import SmemPlan
from ..trace import ROLE_MMA, ROLE_TMA, ROLE_WRITEBACK
from .descriptors import DESC_HI, DESC_LO_K_STEP, sw128_desc_lo
from .epilogue import SUBTILE_BYTES, SUBTILE_COLS, SUBTILE_SWIZZLE, subtile_row, subtile_row_chunks, subtiled_writeback
from .host import EMULATOR_CTAS, GROUP, tma_launch
from .tmem_lifecycle import tmem_allocate, tmem_free

BLOCK_M, BLOCK_N, BLOCK_K, MMA_K = 128, 128, 64, 16
THREADS = 256
TILE_BYTES = BLOCK_M * BLOCK_K * 2
STAGE_DESC_STEP = TILE_BYTES >> 4  # one stage further in a descriptor's low word
ACC_COLS = 128  # one fp32 accumulator of a 128 x 128 tile
IDESC = make_instr_desc(BLOCK_M, BLOCK_N)
DEFAULT_DEPTH = 6  # 6 x 32 KiB of A/B stages + 4 x 8 KiB of staging: 224 KiB of the 227 KiB
DEFAULT_ACC_STAGES = 2  # TMEM accumulators: the MMA fills one while the writeback drains the other
STAGING_BUFFERS = 4  # 8 KiB subtile buffers of 128 x 32 fp16, used in turn
SUBTILES_PER_GROUP = 2  # subtiles published together by a named barrier and stored as one bulk group
STAGING_GROUPS = STAGING_BUFFERS // SUBTILES_PER_GROUP  # bulk groups in the ring: 2
SUBTILES = BLOCK_N // SUBTILE_COLS  # per tile; a multiple of STAGING_BUFFERS keeps the ring in step
WRITEBACK_BARRIER = 1  # named barrier ID of warpgroup 0 (0 is __syncthreads)
PRODUCER_WARP, MMA_WARP = 4, 5


def make_plan(depth, acc_stages=DEFAULT_ACC_STAGES):
    plan = SmemPlan()
    offs = dict(
        a=plan.add("A stage", TILE_BYTES, align=1024, count=depth),
        b=plan.add("B stage", TILE_BYTES, align=1024, count=depth),
        d=plan.add("D staging", SUBTILE_BYTES, align=1024, count=STAGING_BUFFERS),
        tma2mma=plan.add("tma2mma", 8, align=8, count=depth),
        mma2tma=plan.add("mma2tma", 8, align=8, count=depth),
        mma2ld=plan.add("mma2ld", 8, align=8, count=acc_stages),
        ld2mma=plan.add("ld2mma", 8, align=8, count=acc_stages),
        slot=plan.add("TMEM address slot", 4, align=4),
    )
    return plan.check(f"a {depth}-stage pipeline"), offs


@functools.lru_cache(maxsize=None)
def make_kernel(depth, group=GROUP, acc_stages=DEFAULT_ACC_STAGES):
    if acc_stages not in (1, 2, 4):
        raise ValueError(f"acc_stages must be 1, 2 or 4 (x {ACC_COLS} TMEM columns, a power of 2 <= 512)")
    plan, o = make_plan(depth, acc_stages)
    A0, B0, D_STAGING, TMA2MMA, MMA2TMA, MMA2LD, LD2MMA, TMEM_SLOT = (
        o[k] for k in ("a", "b", "d", "tma2mma", "mma2tma", "mma2ld", "ld2mma", "slot"))
    DEPTH, GROUP_M, ACC = depth, group, acc_stages
    TMEM_COLS = ACC_COLS * acc_stages

    @cuda.jit
    def gemm_v7_kernel(tmap_a, tmap_b, tmap_d, k_tiles, num_m, num_n, div_group, div_last):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        smem32 = cuda.shared.array(0, uint32, alignment=1024)
        base = ptx.shared_addr(smem)
        tid = cuda.threadIdx.x
        warp = ptx.warp_uniform(tid // 32)  # the same in all 32 lanes, and ptxas knows it
        num_tiles = num_m * num_n

        if tid == 0:
            for s in range(DEPTH):
                ptx.mbarrier_init(pipeline.barrier(base + TMA2MMA, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 1)
            for s in range(ACC):
                ptx.mbarrier_init(pipeline.barrier(base + MMA2LD, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)  # one elected lane per writeback warp
            ptx.fence_mbarrier_init()
        tmem_allocate(warp, 0, base + TMEM_SLOT, TMEM_COLS)
        cuda.syncthreads()
        tmem = smem32[TMEM_SLOT // 4]

        if warp == PRODUCER_WARP:
            # Written like the MMA warp below: the whole warp runs the loop over warp-uniform
            # values (ptxas keeps them in uniform registers, where the TMA instruction reads them),
            # and one elected lane makes each stage's arrival and issues its loads.
            ptx.set_warp_role(ROLE_TMA)
            # Any lane may be the one that issues: each acquires the host-written tensor maps, and one
            # asks the TMA unit to fetch them now, not at the first load
            ptx.fence_proxy_tensormap_acquire(tmap_a)
            ptx.fence_proxy_tensormap_acquire(tmap_b)
            if ptx.elect_sync():
                ptx.prefetch_tensormap(tmap_a)
                ptx.prefetch_tensormap(tmap_b)
            stage = uint32(0)
            phase = uint32(1)  # the producer's first pass finds every stage empty
            k_end = uint32(k_tiles * BLOCK_K)
            more, t = schedule.static_first(cuda.blockIdx.x, num_tiles)
            while more:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                a_row = m_idx * BLOCK_M  # the tile's coordinates, once per tile
                b_row = n_idx * BLOCK_N
                k0 = uint32(0)  # the chunk's k coordinate (a while loop: Numba's range costs more here)
                while k0 < k_end:
                    pipeline.wait(base + MMA2TMA, stage, phase)  # the stage is empty (all 32 lanes wait)
                    if ptx.elect_sync():  # one arrival per stage: the barrier counts 1
                        tma2mma = pipeline.expect_tx(base + TMA2MMA, stage, 2 * TILE_BYTES)
                        ptx.tma_load_2d(pipeline.stage_buffer(base + A0, stage, TILE_BYTES), tmap_a, k0, a_row,
                                        tma2mma)
                        ptx.tma_load_2d(pipeline.stage_buffer(base + B0, stage, TILE_BYTES), tmap_b, k0, b_row,
                                        tma2mma)
                    stage, phase = pipeline.advance(stage, phase, DEPTH)
                    k0 = uint32(k0 + uint32(BLOCK_K))
                more, t = schedule.static_next(t, cuda.gridDim.x, num_tiles)
            # the tail: wait for every stage to be released once more, so that no commit of the
            # MMA warp still arrives on a barrier of a CTA that is tearing down
            pipeline.producer_tail(base + MMA2TMA, stage, phase, DEPTH)
        elif warp == MMA_WARP:
            # The whole warp runs the loop (its values are warp-uniform, so ptxas keeps them in
            # uniform registers); one elected lane issues each MMA and commit. The descriptors'
            # high word is a constant; the low words advance by 32-bit adds.
            ptx.set_warp_role(ROLE_MMA)
            a_lo = sw128_desc_lo(base + A0)
            b_lo = sw128_desc_lo(base + B0)
            stage = uint32(0)
            phase = uint32(0)
            acc = uint32(0)
            acc_phase = uint32(1)  # the accumulators start free
            more, t = schedule.static_first(cuda.blockIdx.x, num_tiles)
            while more:
                pipeline.wait(base + LD2MMA, acc, acc_phase)  # drained by the writeback
                ptx.tcgen05_fence_after()
                d_tmem = tmem + acc * ACC_COLS
                accumulate = uint32(0)  # the tile's first MMA overwrites the accumulator, every later one adds
                for kc in range(k_tiles):
                    pipeline.wait(base + TMA2MMA, stage, phase)  # the stage is full
                    ptx.tcgen05_fence_after()
                    a_desc = a_lo + stage * STAGE_DESC_STEP
                    b_desc = b_lo + stage * STAGE_DESC_STEP
                    if ptx.elect_sync():
                        for k in range(BLOCK_K // MMA_K):
                            ptx.tcgen05_mma_lo(d_tmem, a_desc + k * DESC_LO_K_STEP, b_desc + k * DESC_LO_K_STEP, DESC_HI,
                                               IDESC, accumulate | uint32(k > 0))
                        pipeline.release(base + MMA2TMA, stage)  # stage free once these MMAs are done
                    accumulate = uint32(1)
                    stage, phase = pipeline.advance(stage, phase, DEPTH)
                if ptx.elect_sync():
                    pipeline.release(base + MMA2LD, acc)  # the whole tile is in TMEM
                acc, acc_phase = pipeline.advance(acc, acc_phase, ACC)
                more, t = schedule.static_next(t, cuda.gridDim.x, num_tiles)
        elif warp < 4:
            # The writeback, one 32-column subtile at a time: TMEM -> registers (16 fp16 pairs) ->
            # staging buffer sub % STAGING_BUFFERS. Every SUBTILES_PER_GROUP subtiles form a group: a
            # named barrier publishes it, thread 0 stores it as one bulk group, which goes on reading
            # while the warps fill the other half of the ring, and a second barrier frees that half.
            ptx.set_warp_role(ROLE_WRITEBACK)
            if tid == 0:  # the thread that issues the stores acquires the D tensor map
                ptx.fence_proxy_tensormap_acquire(tmap_d)
                ptx.prefetch_tensormap(tmap_d)
            # warp-uniform values (shfl.sync): ptxas keeps them, and all the store's operands, in
            # uniform registers instead of recomputing them per tile and copying them (R2UR) per store
            base = ptx.warp_uniform(base)
            staging = base + D_STAGING
            chunks = subtile_row_chunks(subtile_row(staging, tid))  # this thread's row, buffer 0
            lanes = tmem + ((32 * warp) << 16)  # this warp's TMEM lane quarter
            acc = uint32(0)
            acc_phase = uint32(0)
            more, t = schedule.static_first(cuda.blockIdx.x, num_tiles)
            while more:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                col0 = ptx.warp_uniform(n_idx * BLOCK_N)  # the tile's store coordinates, once per tile
                row0 = ptx.warp_uniform(m_idx * BLOCK_M)
                ptx.mbarrier_wait_sleep(pipeline.barrier(base + MMA2LD, acc), acc_phase)  # a whole tile's MMAs: sleep
                ptx.tcgen05_fence_after()
                # the tile's subtiles, in groups, to D; the accumulator handed back after the last load
                subtiled_writeback(tmap_d, lanes + acc * ACC_COLS, chunks, staging, tid, col0, row0,
                                   pipeline.barrier(base + LD2MMA, acc), False, WRITEBACK_BARRIER, 128,
                                   SUBTILES, SUBTILES_PER_GROUP, STAGING_BUFFERS)
                acc, acc_phase = pipeline.advance(acc, acc_phase, ACC)
                more, t = schedule.static_next(t, cuda.gridDim.x, num_tiles)
            if tid == 0:
                ptx.bulk_wait_group_read0()  # the last stores have read their buffers before the CTA exits

        cuda.syncthreads()
        tmem_free(warp, 0, tmem, TMEM_COLS)

    return gemm_v7_kernel, plan


gemm_v7_kernel, plan = make_kernel(DEFAULT_DEPTH)
SIGNATURE = "void(uint64, uint64, uint64, int32, int32, int32, uint64, uint64)"
LIMITS = "M and N multiples of 128, K a multiple of 64; persistent, warp-specialized"


def gemm_v7(a, b, *, backend=None, policy="lazy", seed=0, trace=False, pipe_depth=DEFAULT_DEPTH, group=GROUP,
            num_ctas=None, acc_stages=DEFAULT_ACC_STAGES):
    """D = A @ B.T with a TMA warp, an MMA warp and a writeback warpgroup (persistent grid)."""
    from .host import check_operands, check_pipeline_config, choose_backend, persistent_size

    check_pipeline_config(pipe_depth, group)
    m, n, k = check_operands(a, b, chapter=7, tile_m=BLOCK_M, tile_n=BLOCK_N, tile_k=BLOCK_K)
    backend = choose_backend(backend, 7)
    tiles = (m // BLOCK_M) * (n // BLOCK_N)
    num_ctas = persistent_size(backend, num_ctas, EMULATOR_CTAS, 1)
    kernel, kplan = make_kernel(pipe_depth, group, acc_stages)
    return tma_launch(kernel, (min(num_ctas, tiles), 1), a, b, m, n, k, backend, policy, seed, trace, plan=kplan,
                      threads=THREADS, boxes=((BLOCK_M, BLOCK_K), (BLOCK_N, BLOCK_K), (BLOCK_M, SUBTILE_COLS, SUBTILE_SWIZZLE)),
                      extra=scheduler_args(m // BLOCK_M, n // BLOCK_N, group))

