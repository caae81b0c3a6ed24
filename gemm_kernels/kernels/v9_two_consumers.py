"""Step 9: two MMA consumers share every B stage. Each stage holds two A blocks and one B block per
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
The writeback leaves TMEM in 64-column chunks: 32 fp16 pairs of registers per thread."""
import functools

from numba import cuda, uint8, uint32

from .. import ptx
from ..layouts import make_instr_desc
from ..pipeline import advance, grouped_tile, scheduler_args
from ..smem_plan import SmemPlan
from ..trace import ROLE_MMA, ROLE_MMA1, ROLE_TMA, ROLE_WRITEBACK, ROLE_WRITEBACK1
from .descriptors import DESC_LO_K_STEP, sw128_desc, sw128_desc_lo
from .epilogue import packed_to_staging, store_staging, tmem_load_packed
from .v4_tma import tma_launch
from .v6_persistent import GROUP

CTA_M, CTA_N, BLOCK_K, MMA_K = 128, 128, 64, 16
CONSUMERS = 2
CLUSTER_M, CLUSTER_N = 2 * 256, 256
THREADS = 384
TILE_BYTES = CTA_M * BLOCK_K * 2
STAGE_TILES = CONSUMERS + 1  # A block per consumer + the shared B block
TMEM_COLS = 512  # consumer c owns columns [256 c, 256 c + 256)
EPI_COLS = 64
EPI_PACKED = EPI_COLS // 2  # fp16 pairs in registers per chunk (a compile-time constant)
IDESC = make_instr_desc(256, 256, cta_group=2)
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
        d=plan.add("D staging", CTA_M * EPI_COLS * 2, align=1024, count=CONSUMERS),
        full=plan.add("tma2mma", 8, align=8, count=depth),
        empty=plan.add("mma2tma", 8, align=8, count=depth),
        acc_full=plan.add("mma2ld", 8, align=8, count=CONSUMERS),
        acc_empty=plan.add("ld2mma", 8, align=8, count=CONSUMERS),
        slot=plan.add("TMEM address slot", 4, align=4),
    )
    return plan.check(f"a {depth}-stage pipeline with two A blocks per stage"), offs


@functools.lru_cache(maxsize=None)
def make_kernel(depth, group=GROUP):
    plan, o = make_plan(depth)
    A0, B0, D_STAGING0, FULL0, EMPTY0, MMA2LD0, LD2MMA0, TMEM_SLOT = (
        o[k] for k in ("a", "b", "d", "full", "empty", "acc_full", "acc_empty", "slot"))
    DEPTH, GROUP_M = depth, group
    A_STAGE_BYTES = CONSUMERS * TILE_BYTES
    A_STAGE_DESC_STEP, B_STAGE_DESC_STEP = A_STAGE_BYTES >> 4, TILE_BYTES >> 4  # per stage, in a low word
    STAGING_BYTES = CTA_M * EPI_COLS * 2

    @cuda.jit
    def gemm_v9_kernel(tmap_a, tmap_b, tmap_d, k_tiles, num_m, num_n, div_group, div_last):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        smem32 = cuda.shared.array(0, uint32, alignment=1024)
        base = ptx.shared_addr(smem)
        tid = cuda.threadIdx.x
        warp = tid // 32
        rank = ptx.cluster_ctarank()
        cluster = cuda.blockIdx.x // 2
        num_clusters = cuda.gridDim.x // 2
        num_tiles = num_m * num_n

        if tid == 0:
            for s in range(DEPTH):
                ptx.mbarrier_init(base + FULL0 + 8 * s, 1)
                ptx.mbarrier_init(base + EMPTY0 + 8 * s, CONSUMERS)  # both consumers' commits
            for c in range(CONSUMERS):
                ptx.mbarrier_init(base + MMA2LD0 + 8 * c, 1)
                ptx.mbarrier_init(base + LD2MMA0 + 8 * c, 2 * 4)  # one lane per writeback warp, both CTAs
            ptx.fence_mbarrier_init()
        if warp == 0:
            ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)
        ptx.cluster_arrive()  # barriers initialised and TMEM allocated in both CTAs
        ptx.cluster_wait()
        tmem = smem32[TMEM_SLOT // 4]

        if warp == PRODUCER_WARP:
            ptx.set_warp_role(ROLE_TMA)
            if ptx.elect_sync():
                # this thread issues every load: it acquires the host-written tensor maps itself and
                # asks the TMA unit to fetch them now, not at the first load
                ptx.fence_proxy_tensormap_acquire(tmap_a)
                ptx.fence_proxy_tensormap_acquire(tmap_b)
                ptx.prefetch_tensormap(tmap_a)
                ptx.prefetch_tensormap(tmap_b)
                stage = uint32(0)
                phase = uint32(1)
                t = cluster
                while t < num_tiles:
                    m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                    for kc in range(k_tiles):
                        ptx.mbarrier_wait(base + EMPTY0 + 8 * stage, phase)
                        leader_full = ptx.mapa(base + FULL0 + 8 * stage, 0)
                        if rank == 0:
                            ptx.mbarrier_arrive_expect_tx(base + FULL0 + 8 * stage, 2 * STAGE_TILES * TILE_BYTES)
                        for c in range(CONSUMERS):
                            ptx.tma_load_2d_cg2(base + A0 + stage * A_STAGE_BYTES + c * TILE_BYTES, tmap_a,
                                                kc * BLOCK_K, m_idx * CLUSTER_M + c * 256 + rank * CTA_M, leader_full)
                        ptx.tma_load_2d_cg2(base + B0 + stage * TILE_BYTES, tmap_b, kc * BLOCK_K,
                                            n_idx * CLUSTER_N + rank * CTA_N, leader_full)
                        stage, phase = advance(stage, phase, DEPTH)
                    t += num_clusters
                # the tail (step 8): wait until both consumers have released every stage once more
                for _ in range(DEPTH):
                    ptx.mbarrier_wait(base + EMPTY0 + 8 * stage, phase)
                    stage, phase = advance(stage, phase, DEPTH)
        elif warp == MMA_WARP0 or warp == MMA_WARP0 + 1:
            c = warp - MMA_WARP0  # this warp's consumer
            if rank == 0:
                ptx.set_warp_role(ROLE_MMA + (ROLE_MMA1 - ROLE_MMA) * c)
                a_lo = sw128_desc_lo(base + A0 + c * TILE_BYTES)
                b_lo = sw128_desc_lo(base + B0)
                stage = uint32(0)
                phase = uint32(0)
                acc_phase = uint32(1)
                d_tmem = tmem + 256 * c
                t = cluster
                while t < num_tiles:
                    ptx.mbarrier_wait(base + LD2MMA0 + 8 * c, acc_phase)
                    acc_phase ^= uint32(1)
                    ptx.tcgen05_fence_after()
                    accumulate = uint32(0)  # the tile's first MMA overwrites the accumulator, every later one adds
                    for kc in range(k_tiles):
                        ptx.mbarrier_wait(base + FULL0 + 8 * stage, phase)
                        ptx.tcgen05_fence_after()
                        a_desc = a_lo + stage * A_STAGE_DESC_STEP
                        b_desc = b_lo + stage * B_STAGE_DESC_STEP
                        if ptx.elect_sync():
                            for k in range(BLOCK_K // MMA_K):
                                ptx.tcgen05_mma_cg2(d_tmem, sw128_desc(a_desc + k * DESC_LO_K_STEP),
                                                    sw128_desc(b_desc + k * DESC_LO_K_STEP), IDESC, accumulate | uint32(k > 0))
                            ptx.tcgen05_commit_cg2_multicast(base + EMPTY0 + 8 * stage, PAIR)
                        accumulate = uint32(1)
                        stage, phase = advance(stage, phase, DEPTH)
                    if ptx.elect_sync():
                        ptx.tcgen05_commit_cg2_multicast(base + MMA2LD0 + 8 * c, PAIR)
                    t += num_clusters
        elif warp < 4 * CONSUMERS:
            c = warp // 4  # warpgroup c writes back consumer c
            ptx.set_warp_role(ROLE_WRITEBACK + (ROLE_WRITEBACK1 - ROLE_WRITEBACK) * c)
            packed = cuda.local.array(EPI_PACKED, uint32)
            leader_ld2mma = ptx.mapa(base + LD2MMA0 + 8 * c, 0)
            staging = D_STAGING0 + c * STAGING_BYTES
            row = tid % 128
            if row == 0:  # the thread that issues the stores acquires the D tensor map
                ptx.fence_proxy_tensormap_acquire(tmap_d)
            acc_phase = uint32(0)
            t = cluster
            while t < num_tiles:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                row0 = m_idx * CLUSTER_M + c * 256 + rank * CTA_M
                ptx.mbarrier_wait_sleep(base + MMA2LD0 + 8 * c, acc_phase)  # a whole tile's MMAs: sleep
                acc_phase ^= uint32(1)
                ptx.tcgen05_fence_after()
                for chunk in range(256 // EPI_COLS):
                    tmem_load_packed(packed, tmem, warp % 4, 256 * c + chunk * EPI_COLS, EPI_COLS)
                    if chunk == 256 // EPI_COLS - 1:  # step 8's canonical hand-back, one lane per warp
                        ptx.tcgen05_fence_before()
                        if ptx.elect_sync():
                            ptx.mbarrier_arrive_relaxed_cluster(leader_ld2mma)
                    ptx.named_barrier_sync(WRITEBACK_BARRIER0 + c, 128)
                    packed_to_staging(base + staging, packed, row, 0, EPI_COLS)
                    ptx.fence_proxy_async()
                    ptx.named_barrier_sync(WRITEBACK_BARRIER0 + c, 128)
                    if row == 0:
                        store_staging(tmap_d, base + staging, row0, n_idx * CLUSTER_N + chunk * EPI_COLS, EPI_COLS)
                t += num_clusters

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
                      boxes=((CTA_M, BLOCK_K), (CTA_N, BLOCK_K), (CTA_M, 64)),
                      extra=scheduler_args(m // CLUSTER_M, n // CLUSTER_N, group))

