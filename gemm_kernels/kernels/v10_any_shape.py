"""Compared with step 9: any shape (TMA zero fill, clipping), no seam (step 8's two accumulators), CLC scheduling.

Step 10: the GEMM people call with their own matrices.

Edge tiles. The grid covers ceil(M / 256) x ceil(N / 256) cluster tiles and the k-loop runs
ceil(K / 64) k-blocks. A TMA load whose box reaches past the matrix fills the missing elements with
zeros in shared memory and still completes the whole box's bytes on its barrier, so the expect_tx
count does not change, and the zero rows, columns and k-columns add nothing to the accumulator.
A TMA store whose box reaches past D writes only the elements inside D's bounds (the tensor map's
global dimensions), so the kernel is the same for every shape: no masks, no branches. The one rule
left is the TMA's: every row of a matrix starts 16-byte aligned, so K is a multiple of 8. D, whose
rows have N elements, gets a padded pitch (N rounded up to 64: padded_pitch says why); its tensor
map keeps N as the row length, and the caller gets the M x N view.

The tile's width. The cluster tile is 256 x 256 (step 8's) or 256 x 128, chosen on the host before
launch (choose_tile_n): the narrower one where it leaves the busiest pair less work in the last
wave (4096^3: 256 wide tiles on 74 pairs give the busiest pair 4, an even split 3.46). The width is
a compile-time constant of make_kernel: B's share per CTA, its stage size, the MMA's N, the number
of accumulators (TMEM's 512 columns in accumulators of the tile's width) and the subtiles.

No seam. Step 9's two consumers fill all 512 TMEM columns with one tile, so its tensor core waits
while that tile is written back (the seam). TMEM has 512 columns: a double-buffered accumulator is
at most 2 x 256 columns, a 128 x 256 tile per CTA. So step 10 goes back to step 8's pair (a
256 x 256 tile per cluster, one MMA issuer, two 256-column accumulators): the next tile's MMAs run
into the other accumulator while this one drains. Measured in the emulator's timing mode
(gemm_kernels.seam on a one-cluster run, 12 tiles at 1024 x 768 x 1024), the tensor core waits
100 ns between tiles in the steady state, 2.3% of a tile's 4.4 us of MMAs; step 9 at the same shape
waits 3.3 us per 8.8-us tile (37%). A second writeback warpgroup on 128-column halves (the other
way to shorten the drain) was tried and changed no seam at K >= 512: the writeback's time is the
TMA engine's store bytes, not the warps' work, so step 10 keeps step 8's one warpgroup.
What this costs: step 9's B reuse. Each B byte feeds one MMA again (32 KiB of loads per CTA per
128 x 256 x 64 of MMAs, step 9: 24 KiB), and where the TMA feed is the limit (the emulator's one
cluster at 1024 x 768 x 1024) step 10 takes longer than step 9 despite the seam it removes.

The scheduler. The grid has a cluster per tile, and a cluster's first tile is its own. A scheduler
warp in the leader asks the chip for a cluster that has not started (clusterlaunchcontrol.try_cancel,
multicast to both CTAs); the cancelled cluster never runs and its tile is this cluster's next
(gemm_kernels.schedule). Every role reads every response from a ring of two 16-byte slots and stops
after the first failed one; the roles derive the slot, and the accumulator, from their tile count
(pipeline.ring_slot). Tile numbers still go through grouped_tile. The last partial wave is kept as
it is: CLC balances whole tiles, not parts of one (the chapter's "The last wave" says what the model
finds it costs, and what splitting it along K could recover at most).

Set-up in the order the ISA asks for a pair: barrier inits and their fence, the cluster barrier
(the peer is running and sees the barriers), then the cta_group::2 TMEM allocation (which writes
into the peer's shared memory), then the tcgen05 fences around a CTA barrier that publish the
TMEM address to every warp. As in step 8, every wait is on a barrier the peer CTA also completes, so
it takes the ISA's cluster-scope form (pipeline.wait_cluster, relaxed: a TMA copy or a tcgen05
operation follows, which the barrier and the tcgen05 fences order), and a warp barrier orders each
lane's tcgen05.wait::ld before the elected lane's ld2mma arrive. The CLC waits are the exception:
an ordinary load of the response follows the wait on clc_full, so those waits acquire
(schedule.clc_next; `sass --ordering` checks the SASS).

The handoffs, with step 8's names:
  tma2mma[s]  the leader's: both CTAs' A and B halves, 64 KiB announced by the leader (OOB fill included)
  mma2tma[s]  the leader's commit multicasts to both CTAs
  mma2ld[a]   per accumulator, multicast to both CTAs
  ld2mma[a]   per accumulator, the leader's, 8 arrivals: one lane of each writeback warp, 4 per CTA
  clc_full[s] per CTA: the leader's scheduler announces 16 bytes (the peer's through mapa), the response lands
  clc_empty[s] the leader's, CLC_READERS arrivals: one lane of each warp that read slot s"""
import functools

from numba import cuda, uint8, uint32

from .. import pipeline, ptx, schedule
from ..layouts import make_instr_desc
from ..pipeline import grouped_tile, scheduler_args
from ..smem_plan import SmemPlan
from ..schedule import CLC_STAGES, RESPONSE_BYTES
from ..trace import ROLE_MMA, ROLE_SCHEDULER, ROLE_TMA, ROLE_WRITEBACK
from .descriptors import DESC_HI, DESC_LO_K_STEP, sw128_desc_lo
from .epilogue import SUBTILE_BYTES, SUBTILE_COLS, SUBTILE_SWIZZLE, subtile_row, subtile_row_chunks, subtiled_writeback
from .host import GROUP, tma_launch

CTA_M, CTA_N, BLOCK_K, MMA_K = 128, 128, 64, 16  # what one CTA loads per stage (step 8's)
CLUSTER_M, CLUSTER_N = 256, 256
TILE_BYTES = CTA_M * BLOCK_K * 2
STAGE_DESC_STEP = TILE_BYTES >> 4  # one stage further in a descriptor's low word
ACC_COLS = CLUSTER_N  # one accumulator: this CTA's 128 rows x all 256 columns, fp32
TMEM_COLS = 512  # all of TMEM, in accumulators of ACC_COLS columns
ACC_STAGES = TMEM_COLS // ACC_COLS  # 2 x 256 columns
IDESC = make_instr_desc(CLUSTER_M, CLUSTER_N, cta_group=2)
DEFAULT_DEPTH = 6  # step 8's: 6 x 32 KiB of A/B stages + 4 x 8 KiB of staging per CTA
#: the cluster tile's widths the host chooses from (choose_tile_n): the pair's 256 x 256 (step 8's)
#: and 256 x 128, whose tiles are half as large, so that the last wave of tiles is fuller where
#: 256-wide tiles leave pairs idle. 128 columns keep four 32-column subtiles per tile (a whole ring
#: of staging buffers) and four accumulators in TMEM.
TILE_NS = (256, 128)
DEPTH_FOR_TILE_N = {256: DEFAULT_DEPTH, 128: 8}  # 8 x 24 KiB of A/B stages + 4 x 8 KiB of staging
EMULATOR_CLUSTERS = 2
STAGING_BUFFERS = 4  # step 8's ring of 8 KiB subtile buffers,
SUBTILES_PER_GROUP = 2  # stored in groups of two subtiles (one bulk group each)
STAGING_GROUPS = STAGING_BUFFERS // SUBTILES_PER_GROUP
SUBTILES = ACC_COLS // SUBTILE_COLS  # per tile and CTA: 8, a multiple of STAGING_BUFFERS
WRITEBACK_BARRIER = 1
PRODUCER_WARP, MMA_WARP, SCHEDULER_WARP = 4, 5, 6
THREADS = 224
# warps that read every CLC response and hand its slot back: per CTA the producer and the 4 writeback
# warps; in the leader also the MMA warp and the scheduler
CLC_READERS = 2 * (1 + 4) + 2
PAIR = 0b11  # commit multicast mask: both CTAs of the pair
K_MULTIPLE = 8  # 16 bytes of fp16: the TMA's row-stride rule for A and B


def b_tile_bytes(tile_n):
    """One CTA's B k-block: its half of the cluster tile's columns, BLOCK_K deep, fp16."""
    return tile_n // 2 * BLOCK_K * 2


def make_plan(depth, tile_n=CLUSTER_N):
    plan = SmemPlan()
    offs = dict(
        a=plan.add("A stage", TILE_BYTES, align=1024, count=depth),
        b=plan.add("B stage", b_tile_bytes(tile_n), align=1024, count=depth),
        d=plan.add("D staging", SUBTILE_BYTES, align=1024, count=STAGING_BUFFERS),
        tma2mma=plan.add("tma2mma", 8, align=8, count=depth),
        mma2tma=plan.add("mma2tma", 8, align=8, count=depth),
        mma2ld=plan.add("mma2ld", 8, align=8, count=TMEM_COLS // tile_n),
        ld2mma=plan.add("ld2mma", 8, align=8, count=TMEM_COLS // tile_n),
        slot=plan.add("TMEM address slot", 4, align=4),
        clc_resp=plan.add("CLC response", RESPONSE_BYTES, align=16, count=CLC_STAGES),
        clc_full=plan.add("clc_full", 8, align=8, count=CLC_STAGES),
        clc_empty=plan.add("clc_empty", 8, align=8, count=CLC_STAGES),
    )
    return plan.check(f"a {depth}-stage pipeline"), offs


@functools.lru_cache(maxsize=None)
def make_kernel(depth, group=GROUP, tile_n=CLUSTER_N):
    if tile_n not in TILE_NS:
        raise ValueError(f"step 10's cluster tile is 256 x N with N one of {TILE_NS}; got N={tile_n}")
    plan, o = make_plan(depth, tile_n)
    # the tile's width sets this CTA's share of B, its stage size, the accumulators and the MMA
    TILE_N, CTA_TILE_N, B_BYTES = tile_n, tile_n // 2, b_tile_bytes(tile_n)
    B_STAGE_DESC_STEP = B_BYTES >> 4
    TILE_ACC_COLS = tile_n
    TILE_ACC_STAGES = TMEM_COLS // tile_n
    TILE_IDESC = make_instr_desc(CLUSTER_M, tile_n, cta_group=2)
    TILE_SUBTILES = tile_n // SUBTILE_COLS
    A0, B0, D_STAGING, TMA2MMA, MMA2TMA, MMA2LD, LD2MMA, TMEM_SLOT, CLC_RESP, CLC_FULL, CLC_EMPTY = (
        o[k] for k in ("a", "b", "d", "tma2mma", "mma2tma", "mma2ld", "ld2mma", "slot", "clc_resp", "clc_full",
                       "clc_empty"))
    DEPTH, GROUP_M = depth, group

    @cuda.jit
    def gemm_v10_kernel(tmap_a, tmap_b, tmap_d, k_tiles, num_m, num_n, div_group, div_last):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        smem32 = cuda.shared.array(0, uint32, alignment=1024)
        base = ptx.shared_addr(smem)
        tid = cuda.threadIdx.x
        warp = ptx.warp_uniform(tid // 32)  # the same in all 32 lanes, and ptxas knows it
        rank = ptx.cluster_ctarank()
        cluster = cuda.blockIdx.x // 2  # one cluster per tile: this is the first tile's number

        if tid == 0:
            for s in range(DEPTH):
                ptx.mbarrier_init(pipeline.barrier(base + TMA2MMA, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 1)
            for s in range(TILE_ACC_STAGES):
                ptx.mbarrier_init(pipeline.barrier(base + MMA2LD, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 2 * 4)  # one lane per writeback warp, both CTAs
            for s in range(CLC_STAGES):
                ptx.mbarrier_init(pipeline.barrier(base + CLC_FULL, s), 1)  # the leader's scheduler announces
                ptx.mbarrier_init(pipeline.barrier(base + CLC_EMPTY, s), CLC_READERS)  # (the leader's is used)
            ptx.fence_mbarrier_init()
        ptx.cluster_arrive()  # barriers initialised in both CTAs, and both CTAs are running
        ptx.cluster_wait()
        if warp == 0:  # the pair's allocation writes into the peer CTA: only now that it is known to run
            ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)
        ptx.tcgen05_fence_before()
        cuda.syncthreads()  # the TMEM address is published to the CTA
        ptx.tcgen05_fence_after()
        tmem = smem32[TMEM_SLOT // 4]
        leader_clc_empty0 = ptx.mapa(base + CLC_EMPTY, 0)  # where every reader hands a response slot back

        if warp == PRODUCER_WARP:
            ptx.set_warp_role(ROLE_TMA)  # step 8's producer warp: boxes past the edges are zero-filled
            ptx.fence_proxy_tensormap_acquire(tmap_a)
            ptx.fence_proxy_tensormap_acquire(tmap_b)
            if ptx.elect_sync():
                ptx.prefetch_tensormap(tmap_a)
                ptx.prefetch_tensormap(tmap_b)
            leader_tma2mma0 = ptx.mapa(base + TMA2MMA, 0)  # the leader's tma2mma ring, mapped once
            stage = uint32(0)
            phase = uint32(1)
            k_end = uint32(k_tiles * BLOCK_K)
            done = uint32(0)  # tiles done: the CLC ring's position follows from it
            more, t = schedule.clc_first(cluster)
            while more:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                a_row = m_idx * CLUSTER_M + rank * CTA_M  # this CTA's rows of the tile
                b_row = n_idx * TILE_N + rank * CTA_TILE_N
                k0 = uint32(0)
                while k0 < k_end:
                    pipeline.wait_cluster(base + MMA2TMA, stage, phase)  # the stage is empty
                    if ptx.elect_sync():
                        if rank == 0:  # whole boxes: the zero-filled bytes count too
                            pipeline.expect_tx(base + TMA2MMA, stage, 2 * (TILE_BYTES + B_BYTES))
                        leader_tma2mma = pipeline.barrier(leader_tma2mma0, stage)
                        ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + A0, stage, TILE_BYTES), tmap_a, k0, a_row,
                                            leader_tma2mma)
                        ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + B0, stage, B_BYTES), tmap_b, k0, b_row,
                                            leader_tma2mma)
                    stage, phase = pipeline.advance(stage, phase, DEPTH)
                    k0 = uint32(k0 + uint32(BLOCK_K))
                more, t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, done)
                done = uint32(done + uint32(1))
            # the tail: the leader's commits multicast into this CTA's mma2tma barriers; wait for
            # the last of them, so that the pair stays alive until its cta_group::2 work is done
            pipeline.producer_tail_cluster(base + MMA2TMA, stage, phase, DEPTH)
        elif warp == MMA_WARP:
            if rank == 0:  # step 8's MMA warp, issuing for the pair into two accumulators
                ptx.set_warp_role(ROLE_MMA)
                a_lo = sw128_desc_lo(base + A0)
                b_lo = sw128_desc_lo(base + B0)
                stage = uint32(0)
                phase = uint32(0)
                done = uint32(0)  # tiles done: the accumulator and the CLC slot follow from it
                more, t = schedule.clc_first(cluster)
                while more:
                    acc, acc_phase = pipeline.ring_slot(done, TILE_ACC_STAGES)
                    # both CTAs drained it (the issuer fills the ring: parity 1 passes a fresh accumulator)
                    pipeline.wait_cluster(base + LD2MMA, acc, acc_phase ^ uint32(1))
                    ptx.tcgen05_fence_after()
                    d_tmem = tmem + acc * TILE_ACC_COLS
                    accumulate = uint32(0)  # the tile's first MMA overwrites the accumulator, every later one adds
                    for kc in range(k_tiles):
                        pipeline.wait_cluster(base + TMA2MMA, stage, phase)  # the stage is full, in both CTAs
                        ptx.tcgen05_fence_after()
                        a_desc = a_lo + stage * STAGE_DESC_STEP
                        b_desc = b_lo + stage * B_STAGE_DESC_STEP
                        if ptx.elect_sync():
                            for k in range(BLOCK_K // MMA_K):
                                ptx.tcgen05_mma_cg2_lo(d_tmem, a_desc + k * DESC_LO_K_STEP, b_desc + k * DESC_LO_K_STEP, DESC_HI,
                                                       TILE_IDESC, accumulate | uint32(k > 0))
                            ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2TMA, stage), PAIR)
                        accumulate = uint32(1)
                        stage, phase = pipeline.advance(stage, phase, DEPTH)
                    if ptx.elect_sync():
                        ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), PAIR)
                    more, t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, done)
                    done = uint32(done + uint32(1))
        elif warp < 4:
            # step 8's writeback, over this CTA's 128 rows x 256 columns; stores past D's edges are clipped
            ptx.set_warp_role(ROLE_WRITEBACK)
            if tid == 0:  # the thread that issues the stores acquires the D tensor map
                ptx.fence_proxy_tensormap_acquire(tmap_d)
                ptx.prefetch_tensormap(tmap_d)
            base = ptx.warp_uniform(base)  # step 7: the store's operands stay in uniform registers
            staging = base + D_STAGING
            chunks = subtile_row_chunks(subtile_row(staging, tid))  # this thread's row, buffer 0
            lanes = tmem + ((32 * warp) << 16)
            done = uint32(0)  # tiles done: the accumulator and the CLC slot follow from it
            more, t = schedule.clc_first(cluster)
            while more:
                acc, acc_phase = pipeline.ring_slot(done, TILE_ACC_STAGES)
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                col0 = ptx.warp_uniform(n_idx * TILE_N)  # the tile's store coordinates, once per tile
                row0 = ptx.warp_uniform(m_idx * CLUSTER_M + rank * CTA_M)
                # a whole tile's MMAs: sleep
                ptx.mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD, acc), acc_phase)
                ptx.tcgen05_fence_after()
                # step 8's writeback; the accumulator goes back to the leader CTA's barrier
                leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA, acc), 0)
                subtiled_writeback(tmap_d, lanes + acc * TILE_ACC_COLS, chunks, staging, tid, col0, row0,
                                   leader_ld2mma, True, WRITEBACK_BARRIER, 128, TILE_SUBTILES, SUBTILES_PER_GROUP,
                                   STAGING_BUFFERS)
                more, t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, done)
                done = uint32(done + uint32(1))
            if tid == 0:
                ptx.bulk_wait_group_read0()  # the last stores have read their buffers before the CTA exits

        elif warp == SCHEDULER_WARP:
            if rank == 0:  # asks the chip for the next tile, one response ahead of the roles
                ptx.set_warp_role(ROLE_SCHEDULER)
                peer_clc_full0 = ptx.mapa(base + CLC_FULL, 1)
                more = uint32(1)
                asked = uint32(0)
                while more:
                    schedule.clc_request(base + CLC_RESP, base + CLC_FULL, peer_clc_full0, base + CLC_EMPTY, asked)
                    more, _t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, asked)
                    asked = uint32(asked + uint32(1))

        ptx.tcgen05_fence_before()
        ptx.cluster_arrive()  # neither CTA frees TMEM while the pair still uses it
        ptx.cluster_wait()
        if warp == 0:
            ptx.tcgen05_fence_after()
            ptx.tmem_relinquish_cg2()
            ptx.tmem_dealloc_cg2(tmem, TMEM_COLS)

    return gemm_v10_kernel, plan


gemm_v10_kernel, plan = make_kernel(DEFAULT_DEPTH)
SIGNATURE = "void(uint64, uint64, uint64, int32, int32, int32, uint64, uint64)"
LIMITS = "any M, N >= 1, K a multiple of 8 (the TMA's 16-byte row rule); clusters of 2 CTAs"


D_PITCH_MULTIPLE = 64  # elements: a multiple of the store box's SUBTILE_COLS, 128-byte rows


def padded_pitch(n):
    """D's row pitch in elements: N rounded up to 64. A TMA store of a box that crosses column N
    writes at least the columns below N; how much more it writes is not promised by the PTX ISA
    (an H200 wrote to the end of the 16-byte chunk holding column N - 1; CUTLASS's TMA epilogue
    avoids the question by asking for N % 8 == 0). With rows a multiple of the box's width apart,
    even a store that wrote its whole box would stay inside the row's own padding."""
    return -(-n // D_PITCH_MULTIPLE) * D_PITCH_MULTIPLE


def check_shape(a, b):
    """Step 10's shape rules, checked before anything launches: fp16, 2-D, the same K, M and N of
    at least 1, K a positive multiple of 8. Returns (M, N, K)."""
    from .host import check_operands

    m, n, k = check_operands(a, b, chapter=10, tile_m=None, tile_n=None, tile_k=None)
    for name, v in (("M", m), ("N", n)):
        if v < 1:
            raise ValueError(f"chapter 10 needs {name} >= 1; got {name}={v}")
    if k <= 0 or k % K_MULTIPLE:
        raise ValueError(f"chapter 10 needs K to be a positive multiple of {K_MULTIPLE}; got K={k}. The TMA reads "
                         f"A and B row by row and every row must start 16-byte aligned ({K_MULTIPLE} fp16 values): "
                         f"pad K with zero columns in both A and B up to {-(-max(k, 1) // K_MULTIPLE) * K_MULTIPLE}")
    return m, n, k


#: the configuration the book's figures and the performance model describe (gemm_v10 chooses the
#: width and depth by shape when it is not given: choose_tile_n, DEPTH_FOR_TILE_N)
CONFIG_DEFAULTS = {"tile_n": CLUSTER_N, "pipe_depth": DEFAULT_DEPTH}
B200_PAIRS = 74  # SM pairs of a B200 (148 SMs): one cluster of two CTAs each at a time


def choose_tile_n(m, n, pairs=B200_PAIRS):
    """The cluster tile's width for an M x N product on ``pairs`` SM pairs, chosen on the host before
    launch. Every pair runs whole tiles, so the busiest pair takes ceil(tiles / pairs) of them, and
    the product takes as long as that pair's work: ceil(tiles / pairs) x the tile's width (all tiles
    are 256 rows tall). The narrower tile wins only where it leaves less of the last wave idle; on a
    tie the wider tile, which loads fewer bytes per FLOP, is kept."""
    def busiest(tile_n):
        tiles = -(-m // CLUSTER_M) * -(-n // tile_n)
        return -(-tiles // pairs) * tile_n

    return min(TILE_NS, key=lambda tn: (busiest(tn), -tn))


def gemm_v10(a, b, *, backend=None, policy="lazy", seed=0, trace=False, pipe_depth=None, group=GROUP,
             num_clusters=None, out=None, tile_n=None):
    """D = A @ B.T for any M x K by N x K fp16 matrices with K a multiple of 8 (256 x ``tile_n`` cluster
    tiles, edge tiles through the TMA's zero fill and clipping). ``tile_n``: 256 or 128, by default
    what ``choose_tile_n`` picks for the shape on a B200's 74 pairs (the emulator runs the kernel a
    B200 would). ``pipe_depth``: by default the deepest ring that fits (6 stages for 256, 8 for 128).
    ``out``: an M x N fp16 array to write D into (rows 16-byte aligned, e.g. a view of a wider
    array); by default D is allocated with a padded pitch and its M x N view returned."""
    from .host import check_pipeline_config, choose_backend, persistent_size

    m, n, k = check_shape(a, b)
    if tile_n is not None and tile_n not in TILE_NS:
        raise ValueError(f"tile_n must be one of {TILE_NS} (the cluster tile is 256 x tile_n); got {tile_n!r}")
    if pipe_depth is not None:
        check_pipeline_config(pipe_depth, group)
    out = _check_out(out, m, n)
    backend = choose_backend(backend, 10)
    if tile_n is None:  # for the chip it runs on; the emulator runs what a B200 would
        tile_n = choose_tile_n(m, n, B200_PAIRS if backend == "emulator" else persistent_size(backend, None, 1, 2))
    if pipe_depth is None:
        pipe_depth = DEPTH_FOR_TILE_N[tile_n]
    check_pipeline_config(pipe_depth, group)
    num_m, num_n = -(-m // CLUSTER_M), -(-n // tile_n)
    num_clusters = persistent_size(backend, num_clusters, EMULATOR_CLUSTERS, 2)
    kernel, kplan = make_kernel(pipe_depth, group, tile_n)
    tiles = num_m * num_n  # a cluster per tile; on the emulator num_clusters of them run at once
    return tma_launch(kernel, (2 * tiles, 1), a, b, m, n, k, backend, policy, seed,
                      trace, plan=kplan, threads=THREADS, cluster=(2, 1, 1),
                      boxes=((CTA_M, BLOCK_K), (tile_n // 2, BLOCK_K), (CTA_M, SUBTILE_COLS, SUBTILE_SWIZZLE)),
                      extra=scheduler_args(num_m, num_n, group), k_tiles=-(-k // BLOCK_K),
                      d_pitch=padded_pitch(n), out=out, resident=min(num_clusters, tiles))


def _check_out(out, m, n):
    import numpy as np

    if out is None:
        return None
    if not isinstance(out, np.ndarray) or out.dtype != np.float16 or out.shape != (m, n):
        raise ValueError(f"out must be a numpy float16 array of shape ({m}, {n})")
    if out.strides[1] != 2 or out.strides[0] % 16 or out.ctypes.data % 16:
        raise ValueError(f"out must have contiguous rows that each start 16-byte aligned (row stride "
                         f"{out.strides[0]} B, column stride {out.strides[1]} B, address offset "
                         f"{out.ctypes.data % 16}): the TMA stores D row by row")
    return out
