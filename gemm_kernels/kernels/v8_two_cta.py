"""Compared with step 7: a pair of CTAs computes a 256 x 256 tile with cta_group::2 MMAs.

Step 8: a cluster of two CTAs computes a 256 x 256 tile with cta_group::2 MMAs.

CTA r (r = %cluster_ctarank, 0 or 1) loads rows [128 r, 128 r + 128) of the cluster tile's A and
rows [128 r, 128 r + 128) of its B into its own shared memory, at the same offsets in both CTAs.
The even CTA's MMA warp issues one M = 256, N = 256, K = 16 MMA that reads both CTAs' halves and
writes rows 0-127 of D into CTA 0's TMEM and rows 128-255 into CTA 1's (256 columns each). So
each CTA writes back a 128 x 256 half of the tile, 32-column subtile by subtile as in step 7.

What changes in the handoffs (step 7's names):
  tma2mma[s]  only the leader's is used: both CTAs' TMA loads (.cta_group::2) complete bytes on
              it; the leader's producer announces all 64 KiB (both CTAs' A and B halves); each
              producer maps the leader's ring once (mapa) and indexes it per stage
  mma2tma[s]  the leader's commit multicasts to the same barrier in both CTAs (mask 0b11)
  mma2ld[a]   likewise: both writebacks learn their half of accumulator a is ready
  ld2mma[a]   the leader's, 8 arrivals: one elected lane of each of its own 4 writeback warps
              and of the peer's 4, which arrive remotely through a mapa address (relaxed, after
              tcgen05.wait::ld, tcgen05.fence::before_thread_sync and a warp barrier that orders
              the other lanes' loads before the elected lane's arrive: the ISA's form)
Two accumulators of 256 columns fill all 512 TMEM columns (step 7's double buffering). Every
pipeline wait is on a barrier that the peer CTA also completes (its remote arrivals, the leader's
multicast commits, its cta_group::2 loads), so it uses the ISA's cluster-scope form,
try_wait.parity.relaxed.cluster: by the PTX memory model a CTA-scope acquire (CUTLASS's choice; the
same SASS) does not synchronise with another CTA's arrive. Relaxed, because the transaction count
and the tcgen05 fences after the wait order the data; an acquire at cluster scope would also
invalidate L1 at every wait.
Set-up and teardown become cluster-wide: barrier inits are fenced and published with the cluster
barrier, which also shows each CTA that its peer is running; only then is TMEM allocated by both
CTAs together (cta_group::2: the allocation writes into the peer's shared memory), and the address
is published to the CTA by a CTA barrier between tcgen05 fences. At the end, the cluster barrier
guarantees neither CTA frees TMEM while the other still uses it."""
import functools

from numba import cuda, uint8, uint32

from .. import pipeline, ptx, schedule
from ..layouts import make_instr_desc
from ..pipeline import grouped_tile, scheduler_args
from ..smem_plan import SmemPlan
from ..trace import ROLE_MMA, ROLE_TMA, ROLE_WRITEBACK
from .descriptors import DESC_HI, DESC_LO_K_STEP, sw128_desc_lo
from .epilogue import SUBTILE_BYTES, SUBTILE_COLS, SUBTILE_SWIZZLE, subtile_row, subtile_row_chunks, subtiled_writeback
from .host import GROUP, tma_launch

CTA_M, CTA_N, BLOCK_K, MMA_K = 128, 128, 64, 16  # what one CTA loads per stage
CLUSTER_M, CLUSTER_N = 256, 256
THREADS = 256
TILE_BYTES = CTA_M * BLOCK_K * 2
STAGE_DESC_STEP = TILE_BYTES >> 4  # one stage further in a descriptor's low word
ACC_COLS = CLUSTER_N  # one accumulator: this CTA's 128 rows x all 256 columns, fp32
IDESC = make_instr_desc(CLUSTER_M, CLUSTER_N, cta_group=2)
DEFAULT_DEPTH = 6  # step 7's: 6 x 32 KiB of A/B stages + 4 x 8 KiB of staging per CTA
DEFAULT_ACC_STAGES = 2  # 2 x 256 columns: all of TMEM
EMULATOR_CLUSTERS = 2
STAGING_BUFFERS = 4  # step 7's ring of 8 KiB subtile buffers,
SUBTILES_PER_GROUP = 2  # stored in groups of two subtiles (one bulk group each)
STAGING_GROUPS = STAGING_BUFFERS // SUBTILES_PER_GROUP
SUBTILES = CLUSTER_N // SUBTILE_COLS  # per tile and CTA: 8, a multiple of STAGING_BUFFERS
WRITEBACK_BARRIER = 1
PRODUCER_WARP, MMA_WARP = 4, 5
PAIR = 0b11  # commit multicast mask: both CTAs of the pair


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
    if acc_stages not in (1, 2):
        raise ValueError(f"acc_stages must be 1 or 2 (x {ACC_COLS} TMEM columns <= 512)")
    plan, o = make_plan(depth, acc_stages)
    A0, B0, D_STAGING, TMA2MMA, MMA2TMA, MMA2LD, LD2MMA, TMEM_SLOT = (
        o[k] for k in ("a", "b", "d", "tma2mma", "mma2tma", "mma2ld", "ld2mma", "slot"))
    DEPTH, GROUP_M, ACC = depth, group, acc_stages
    TMEM_COLS = ACC_COLS * acc_stages

    @cuda.jit
    def gemm_v8_kernel(tmap_a, tmap_b, tmap_d, k_tiles, num_m, num_n, div_group, div_last):
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
                ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 1)
            for s in range(ACC):
                ptx.mbarrier_init(pipeline.barrier(base + MMA2LD, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 2 * 4)  # one lane per writeback warp, both CTAs
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
            ptx.set_warp_role(ROLE_TMA)  # step 7's producer warp
            ptx.fence_proxy_tensormap_acquire(tmap_a)
            ptx.fence_proxy_tensormap_acquire(tmap_b)
            if ptx.elect_sync():
                ptx.prefetch_tensormap(tmap_a)
                ptx.prefetch_tensormap(tmap_b)
            leader_tma2mma0 = ptx.mapa(base + TMA2MMA, 0)  # the leader's tma2mma ring, mapped once
            stage = uint32(0)
            phase = uint32(1)
            k_end = uint32(k_tiles * BLOCK_K)
            more, t = schedule.static_first(cluster, num_tiles)
            while more:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                a_row = m_idx * CLUSTER_M + rank * CTA_M  # this CTA's rows of the tile
                b_row = n_idx * CLUSTER_N + rank * CTA_N
                k0 = uint32(0)
                while k0 < k_end:
                    pipeline.wait_cluster(base + MMA2TMA, stage, phase)  # the stage is empty
                    if ptx.elect_sync():
                        if rank == 0:  # the leader announces both CTAs' bytes on its own (local) barrier
                            pipeline.expect_tx(base + TMA2MMA, stage, 2 * 2 * TILE_BYTES)
                        leader_tma2mma = pipeline.barrier(leader_tma2mma0, stage)
                        ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + A0, stage, TILE_BYTES), tmap_a, k0, a_row,
                                            leader_tma2mma)
                        ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + B0, stage, TILE_BYTES), tmap_b, k0, b_row,
                                            leader_tma2mma)
                    stage, phase = pipeline.advance(stage, phase, DEPTH)
                    k0 = uint32(k0 + uint32(BLOCK_K))
                more, t = schedule.static_next(t, num_clusters, num_tiles)
            # the tail: the leader's commits multicast into this CTA's mma2tma barriers; wait for
            # the last of them, so that the pair stays alive until its cta_group::2 work is done
            pipeline.producer_tail_cluster(base + MMA2TMA, stage, phase, DEPTH)
        elif warp == MMA_WARP:
            if rank == 0:  # step 7's lean MMA warp, issuing for the pair
                ptx.set_warp_role(ROLE_MMA)
                a_lo = sw128_desc_lo(base + A0)
                b_lo = sw128_desc_lo(base + B0)
                stage = uint32(0)
                phase = uint32(0)
                acc = uint32(0)
                acc_phase = uint32(1)
                more, t = schedule.static_first(cluster, num_tiles)
                while more:
                    pipeline.wait_cluster(base + LD2MMA, acc, acc_phase)  # both CTAs drained it
                    ptx.tcgen05_fence_after()
                    d_tmem = tmem + acc * ACC_COLS
                    accumulate = uint32(0)  # the tile's first MMA overwrites the accumulator, every later one adds
                    for kc in range(k_tiles):
                        pipeline.wait_cluster(base + TMA2MMA, stage, phase)  # the stage is full, in both CTAs
                        ptx.tcgen05_fence_after()
                        a_desc = a_lo + stage * STAGE_DESC_STEP
                        b_desc = b_lo + stage * STAGE_DESC_STEP
                        if ptx.elect_sync():
                            for k in range(BLOCK_K // MMA_K):
                                ptx.tcgen05_mma_cg2_lo(d_tmem, a_desc + k * DESC_LO_K_STEP, b_desc + k * DESC_LO_K_STEP, DESC_HI,
                                                       IDESC, accumulate | uint32(k > 0))
                            ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2TMA, stage), PAIR)
                        accumulate = uint32(1)
                        stage, phase = pipeline.advance(stage, phase, DEPTH)
                    if ptx.elect_sync():
                        ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), PAIR)
                    acc, acc_phase = pipeline.advance(acc, acc_phase, ACC)
                    more, t = schedule.static_next(t, num_clusters, num_tiles)
        elif warp < 4:
            # step 7's subtiled writeback, over this CTA's 128 rows x 256 columns
            ptx.set_warp_role(ROLE_WRITEBACK)
            if tid == 0:  # the thread that issues the stores acquires the D tensor map
                ptx.fence_proxy_tensormap_acquire(tmap_d)
                ptx.prefetch_tensormap(tmap_d)
            base = ptx.warp_uniform(base)  # step 7: the store's operands stay in uniform registers
            staging = base + D_STAGING
            chunks = subtile_row_chunks(subtile_row(staging, tid))  # this thread's row, buffer 0
            lanes = tmem + ((32 * warp) << 16)
            acc = uint32(0)
            acc_phase = uint32(0)
            more, t = schedule.static_first(cluster, num_tiles)
            while more:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                col0 = ptx.warp_uniform(n_idx * CLUSTER_N)  # the tile's store coordinates, once per tile
                row0 = ptx.warp_uniform(m_idx * CLUSTER_M + rank * CTA_M)
                # a whole tile's MMAs: sleep
                ptx.mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD, acc), acc_phase)
                ptx.tcgen05_fence_after()
                # step 7's writeback; the accumulator goes back to the leader CTA's barrier (mapa), with
                # a relaxed cluster-scope arrive (True) after the tcgen05 fence and a warp barrier
                leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA, acc), 0)
                subtiled_writeback(tmap_d, lanes + acc * ACC_COLS, chunks, staging, tid, col0, row0,
                                   leader_ld2mma, True, WRITEBACK_BARRIER, 128, SUBTILES, SUBTILES_PER_GROUP,
                                   STAGING_BUFFERS)
                acc, acc_phase = pipeline.advance(acc, acc_phase, ACC)
                more, t = schedule.static_next(t, num_clusters, num_tiles)
            if tid == 0:
                ptx.bulk_wait_group_read0()  # the last stores have read their buffers before the CTA exits

        ptx.tcgen05_fence_before()
        ptx.cluster_arrive()  # neither CTA frees TMEM while the pair still uses it
        ptx.cluster_wait()
        if warp == 0:
            ptx.tcgen05_fence_after()
            ptx.tmem_relinquish_cg2()
            ptx.tmem_dealloc_cg2(tmem, TMEM_COLS)

    return gemm_v8_kernel, plan


gemm_v8_kernel, plan = make_kernel(DEFAULT_DEPTH)
SIGNATURE = "void(uint64, uint64, uint64, int32, int32, int32, uint64, uint64)"
LIMITS = "M and N multiples of 256, K a multiple of 64; clusters of 2 CTAs"


def gemm_v8(a, b, *, backend=None, policy="lazy", seed=0, trace=False, pipe_depth=DEFAULT_DEPTH, group=GROUP,
            num_clusters=None, acc_stages=DEFAULT_ACC_STAGES):
    """D = A @ B.T with two-CTA clusters and cta_group::2 MMAs (256 x 256 cluster tiles)."""
    from .host import check_operands, check_pipeline_config, choose_backend, persistent_size

    check_pipeline_config(pipe_depth, group)
    m, n, k = check_operands(a, b, chapter=8, tile_m=CLUSTER_M, tile_n=CLUSTER_N, tile_k=BLOCK_K)
    backend = choose_backend(backend, 8)
    tiles = (m // CLUSTER_M) * (n // CLUSTER_N)
    num_clusters = persistent_size(backend, num_clusters, EMULATOR_CLUSTERS, 2)
    kernel, kplan = make_kernel(pipe_depth, group, acc_stages)
    return tma_launch(kernel, (2 * min(num_clusters, tiles), 1), a, b, m, n, k, backend, policy, seed, trace,
                      plan=kplan, threads=THREADS, cluster=(2, 1, 1),
                      boxes=((CTA_M, BLOCK_K), (CTA_N, BLOCK_K), (CTA_M, SUBTILE_COLS, SUBTILE_SWIZZLE)),
                      extra=scheduler_args(m // CLUSTER_M, n // CLUSTER_N, group))

