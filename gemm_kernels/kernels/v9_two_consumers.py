"""Compared with step 8: two MMA consumers share every B stage (512 x 256 per cluster tile).

Step 9: two MMA consumers share every B stage. Each stage holds two A blocks and one B block per
CTA; consumer c (c = 0, 1) multiplies A block c by the shared B with its own cta_group::2 MMAs into
its own TMEM columns [256 c, 256 c + 256). A cluster of two CTAs now computes 512 x 256 per tile,
and every B byte fetched feeds two MMAs instead of one.

Three warpgroups per CTA: warpgroups 0 and 1 write back consumer 0's and consumer 1's rows (each
with its own named-barrier ID), warpgroup 2 holds the TMA producer (warp 8) and the two MMA
issuers (warps 9 and 10; only the even CTA's issue).

What changes in the handoffs (step 8's names):
  tma2mma[s]  the leader's: both CTAs' 2 A blocks + 1 B block, 96 KiB announced by the leader
  mma2tma[s]  2 arrivals: a stage is empty only when both consumers' MMAs have read it
  mma2ld[c]   one per consumer (multicast to both CTAs)
  ld2mma[c]   one per consumer, the leader's, 8 arrivals (one lane per writeback warp, 4 per CTA)
The writeback is step 7's, in 32-column subtiles; each writeback warpgroup has its own ring of
two 8 KiB staging buffers, so neither waits for its last store before filling the next subtile."""
import functools

from numba import cuda, uint8, uint32

from .. import pipeline, ptx, schedule
from ..layouts import make_instr_desc
from ..pipeline import grouped_tile, scheduler_args
from ..smem_plan import SmemPlan
from ..trace import ROLE_MMA, ROLE_MMA1, ROLE_TMA, ROLE_WRITEBACK, ROLE_WRITEBACK1
from .descriptors import DESC_HI, DESC_LO_K_STEP, sw128_desc_lo
from .epilogue import (SUBTILE_BYTES, SUBTILE_COLS, SUBTILE_SWIZZLE, stage_subtile_row,
                       store_subtiles, subtile_row, subtile_row_chunks, tmem_load_subtile)
from .host import GROUP, tma_launch

CTA_M, CTA_N, BLOCK_K, MMA_K = 128, 128, 64, 16
CONSUMERS = 2
CONSUMER_M, CONSUMER_N = 256, 256  # one consumer's tile: M = 256 cta_group::2 MMAs over the pair, N = 256
CLUSTER_M, CLUSTER_N = CONSUMERS * CONSUMER_M, CONSUMER_N
THREADS = 384
TILE_BYTES = CTA_M * BLOCK_K * 2
STAGE_TILES = CONSUMERS + 1  # A block per consumer + the shared B block
TMEM_COLS = CONSUMERS * CONSUMER_N  # consumer c owns columns [256 c, 256 c + 256)
STAGING_BUFFERS = 2  # per writeback warpgroup: 2 x 2 x 8 KiB next to 4 stages of 48 KiB = 224 KiB
SUBTILES = CONSUMER_N // SUBTILE_COLS  # per consumer tile: 8, a multiple of STAGING_BUFFERS
IDESC = make_instr_desc(CONSUMER_M, CONSUMER_N, cta_group=2)
DEFAULT_DEPTH = 4
EMULATOR_CLUSTERS = 2
PRODUCER_WARP, MMA_WARP0 = 8, 9
WRITEBACK_BARRIER0 = 1  # warpgroup c uses ID 1 + c
PAIR = 0b11


def make_plan(depth):
    plan = SmemPlan()
    offs = dict(
        a=plan.add("A stage", CONSUMERS * TILE_BYTES, align=1024, count=depth),
        b=plan.add("B stage", TILE_BYTES, align=1024, count=depth),
        d=plan.add("D staging", SUBTILE_BYTES, align=1024, count=CONSUMERS * STAGING_BUFFERS),
        tma2mma=plan.add("tma2mma", 8, align=8, count=depth),
        mma2tma=plan.add("mma2tma", 8, align=8, count=depth),
        mma2ld=plan.add("mma2ld", 8, align=8, count=CONSUMERS),
        ld2mma=plan.add("ld2mma", 8, align=8, count=CONSUMERS),
        slot=plan.add("TMEM address slot", 4, align=4),
    )
    return plan.check(f"a {depth}-stage pipeline with two A blocks per stage"), offs


@functools.lru_cache(maxsize=None)
def make_kernel(depth, group=GROUP):
    plan, o = make_plan(depth)
    A0, B0, D_STAGING0, TMA2MMA, MMA2TMA, MMA2LD0, LD2MMA0, TMEM_SLOT = (
        o[k] for k in ("a", "b", "d", "tma2mma", "mma2tma", "mma2ld", "ld2mma", "slot"))
    DEPTH, GROUP_M = depth, group
    A_STAGE_BYTES = CONSUMERS * TILE_BYTES
    A_STAGE_DESC_STEP, B_STAGE_DESC_STEP = A_STAGE_BYTES >> 4, TILE_BYTES >> 4  # per stage, in a low word

    @cuda.jit
    def gemm_v9_kernel(tmap_a, tmap_b, tmap_d, k_tiles, num_m, num_n, div_group, div_last):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        smem32 = cuda.shared.array(0, uint32, alignment=1024)
        base = ptx.shared_addr(smem)
        tid = cuda.threadIdx.x
        warp = ptx.warp_uniform(tid // 32)  # the same in all 32 lanes, and ptxas knows it
        rank = ptx.cluster_ctarank()
        cluster = cuda.blockIdx.x // 2
        num_clusters = cuda.gridDim.x // 2
        num_tiles = num_m * num_n

        if tid == 0:
            for s in range(DEPTH):
                ptx.mbarrier_init(pipeline.barrier(base + TMA2MMA, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), CONSUMERS)  # both consumers' commits
            for c in range(CONSUMERS):
                ptx.mbarrier_init(pipeline.barrier(base + MMA2LD0, c), 1)
                ptx.mbarrier_init(pipeline.barrier(base + LD2MMA0, c), 2 * 4)  # one lane per writeback warp, both CTAs
            ptx.fence_mbarrier_init()
        ptx.cluster_arrive()  # barriers initialised in both CTAs, and both CTAs are running
        ptx.cluster_wait()
        if warp == 0:  # the pair's allocation writes into the peer CTA: only now that it is known to run
            ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)
        ptx.tcgen05_fence_before()
        cuda.syncthreads()  # the TMEM address is published to the CTA
        ptx.tcgen05_fence_after()
        tmem = smem32[TMEM_SLOT // 4]

        if warp == PRODUCER_WARP:
            ptx.set_warp_role(ROLE_TMA)  # step 8's producer warp, with a second A block per stage
            ptx.fence_proxy_tensormap_acquire(tmap_a)
            ptx.fence_proxy_tensormap_acquire(tmap_b)
            if ptx.elect_sync():
                ptx.prefetch_tensormap(tmap_a)
                ptx.prefetch_tensormap(tmap_b)
            base = ptx.warp_uniform(base)  # ptxas misses this here (3 loads): ~1 instruction per k-block
            leader_tma2mma0 = ptx.mapa(base + TMA2MMA, 0)
            stage = uint32(0)
            phase = uint32(1)
            k_end = uint32(k_tiles * BLOCK_K)
            more, t = schedule.static_first(cluster, num_tiles)
            while more:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                a_row = m_idx * CLUSTER_M + rank * CTA_M  # consumer 0's rows; consumer 1's: + CONSUMER_M
                b_row = n_idx * CLUSTER_N + rank * CTA_N
                k0 = uint32(0)
                while k0 < k_end:
                    pipeline.wait_cluster(base + MMA2TMA, stage, phase)  # both consumers released the stage
                    if ptx.elect_sync():
                        if rank == 0:
                            pipeline.expect_tx(base + TMA2MMA, stage, 2 * STAGE_TILES * TILE_BYTES)
                        leader_tma2mma = pipeline.barrier(leader_tma2mma0, stage)
                        a_stage = pipeline.stage_buffer(base + A0, stage, A_STAGE_BYTES)
                        for c in range(CONSUMERS):
                            ptx.tma_load_2d_cg2(a_stage + c * TILE_BYTES, tmap_a, k0, a_row + c * CONSUMER_M,
                                                leader_tma2mma)
                        ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + B0, stage, TILE_BYTES), tmap_b, k0, b_row,
                                            leader_tma2mma)
                    stage, phase = pipeline.advance(stage, phase, DEPTH)
                    k0 = uint32(k0 + uint32(BLOCK_K))
                more, t = schedule.static_next(t, num_clusters, num_tiles)
            # the tail (step 8): wait until both consumers have released every stage once more
            pipeline.producer_tail_cluster(base + MMA2TMA, stage, phase, DEPTH)
        elif warp == MMA_WARP0 or warp == MMA_WARP0 + 1:
            c = warp - MMA_WARP0  # this warp's consumer
            if rank == 0:
                ptx.set_warp_role(ROLE_MMA + (ROLE_MMA1 - ROLE_MMA) * c)
                a_lo = sw128_desc_lo(base + A0 + c * TILE_BYTES)
                b_lo = sw128_desc_lo(base + B0)
                stage = uint32(0)
                phase = uint32(0)
                acc_phase = uint32(1)  # this consumer's accumulator: a ring of depth 1, free at first
                d_tmem = tmem + CONSUMER_N * c
                more, t = schedule.static_first(cluster, num_tiles)
                while more:
                    pipeline.wait_cluster(base + LD2MMA0, c, acc_phase)  # both CTAs drained this consumer's accumulator
                    ptx.tcgen05_fence_after()
                    accumulate = uint32(0)  # the tile's first MMA overwrites the accumulator, every later one adds
                    for kc in range(k_tiles):
                        pipeline.wait_cluster(base + TMA2MMA, stage, phase)  # the stage is full, in both CTAs
                        ptx.tcgen05_fence_after()
                        a_desc = a_lo + stage * A_STAGE_DESC_STEP
                        b_desc = b_lo + stage * B_STAGE_DESC_STEP
                        if ptx.elect_sync():
                            for k in range(BLOCK_K // MMA_K):
                                ptx.tcgen05_mma_cg2_lo(d_tmem, a_desc + k * DESC_LO_K_STEP, b_desc + k * DESC_LO_K_STEP, DESC_HI,
                                                       IDESC, accumulate | uint32(k > 0))
                            ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2TMA, stage), PAIR)
                        accumulate = uint32(1)
                        stage, phase = pipeline.advance(stage, phase, DEPTH)
                    if ptx.elect_sync():
                        ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD0, c), PAIR)
                    _, acc_phase = pipeline.advance(0, acc_phase, 1)
                    more, t = schedule.static_next(t, num_clusters, num_tiles)
        elif warp < 4 * CONSUMERS:
            c = warp // 4  # warpgroup c writes back consumer c, with its own ring of staging buffers
            ptx.set_warp_role(ROLE_WRITEBACK + (ROLE_WRITEBACK1 - ROLE_WRITEBACK) * c)
            leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA0, c), 0)
            base = ptx.warp_uniform(base)  # step 7: the store's operands stay in uniform registers
            staging = base + D_STAGING0 + c * STAGING_BUFFERS * SUBTILE_BYTES
            row = tid % 128
            if row == 0:  # the thread that issues the stores acquires the D tensor map
                ptx.fence_proxy_tensormap_acquire(tmap_d)
                ptx.prefetch_tensormap(tmap_d)
            chunks = subtile_row_chunks(subtile_row(staging, row))  # this thread's row, buffer 0
            lanes = tmem + ((32 * (warp % 4)) << 16) + CONSUMER_N * c
            acc_phase = uint32(0)  # consumer c's accumulator: a ring of depth 1
            more, t = schedule.static_first(cluster, num_tiles)
            while more:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                col0 = ptx.warp_uniform(n_idx * CLUSTER_N)  # the tile's store coordinates, once per tile
                row0 = ptx.warp_uniform(m_idx * CLUSTER_M + c * CONSUMER_M + rank * CTA_M)
                # a whole tile's MMAs: sleep (step 8's cluster-scope wait)
                ptx.mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD0, c), acc_phase)
                ptx.tcgen05_fence_after()
                for sub in range(SUBTILES):
                    packed = tmem_load_subtile(lanes + sub * SUBTILE_COLS)  # tcgen05.wait::ld'ed
                    if sub == SUBTILES - 1:  # step 8's canonical hand-back, one lane per warp
                        ptx.tcgen05_fence_before()
                        cuda.syncwarp()  # every lane's tcgen05.wait::ld is ordered before the elected lane's arrive
                        if ptx.elect_sync():
                            ptx.mbarrier_arrive_relaxed_cluster(leader_ld2mma)
                    buf = sub % STAGING_BUFFERS
                    stage_subtile_row(chunks, buf, packed)  # st.shared.v4 x 4
                    ptx.fence_proxy_async()
                    ptx.named_barrier_sync(WRITEBACK_BARRIER0 + c, 128)  # staging complete: the subtile is published
                    if row == 0:  # its TMA store; then wait for the previous subtile's (wait_group.read 1),
                        store_subtiles(tmap_d, col0 + sub * SUBTILE_COLS, row0, staging + buf * SUBTILE_BYTES,
                                       1, STAGING_BUFFERS)
                    ptx.named_barrier_sync(WRITEBACK_BARRIER0 + c, 128)  # ... which the others learn here
                _, acc_phase = pipeline.advance(0, acc_phase, 1)
                more, t = schedule.static_next(t, num_clusters, num_tiles)
            if row == 0:
                ptx.bulk_wait_group_read0()  # the last stores have read their buffers before the CTA exits

        ptx.tcgen05_fence_before()
        ptx.cluster_arrive()  # neither CTA frees TMEM while the pair still uses it
        ptx.cluster_wait()
        if warp == 0:
            ptx.tcgen05_fence_after()
            ptx.tmem_relinquish_cg2()
            ptx.tmem_dealloc_cg2(tmem, TMEM_COLS)

    return gemm_v9_kernel, plan


gemm_v9_kernel, plan = make_kernel(DEFAULT_DEPTH)
SIGNATURE = "void(uint64, uint64, uint64, int32, int32, int32, uint64, uint64)"
LIMITS = "M a multiple of 512, N of 256, K of 64; clusters of 2 CTAs, two MMA consumers"


def gemm_v9(a, b, *, backend=None, policy="lazy", seed=0, trace=False, pipe_depth=DEFAULT_DEPTH, group=GROUP,
            num_clusters=None):
    """D = A @ B.T with two-CTA clusters and two MMA consumers per stage (512 x 256 cluster tiles)."""
    from .host import check_operands, check_pipeline_config, choose_backend, persistent_size

    check_pipeline_config(pipe_depth, group)
    m, n, k = check_operands(a, b, chapter=9, tile_m=CLUSTER_M, tile_n=CLUSTER_N, tile_k=BLOCK_K)
    backend = choose_backend(backend, 9)
    tiles = (m // CLUSTER_M) * (n // CLUSTER_N)
    num_clusters = persistent_size(backend, num_clusters, EMULATOR_CLUSTERS, 2)
    kernel, kplan = make_kernel(pipe_depth, group)
    return tma_launch(kernel, (2 * min(num_clusters, tiles), 1), a, b, m, n, k, backend, policy, seed, trace,
                      plan=kplan, threads=THREADS, cluster=(2, 1, 1),
                      boxes=((CTA_M, BLOCK_K), (CTA_N, BLOCK_K), (CTA_M, SUBTILE_COLS, SUBTILE_SWIZZLE)),
                      extra=scheduler_args(m // CLUSTER_M, n // CLUSTER_N, group))

