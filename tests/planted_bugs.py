"""A corpus of planted bugs in the chapter kernels (steps 4-10): the slips a learner makes when
writing such a kernel, each a ``book_helpers.variant`` edit of the chapter's own kernel, with the
report the emulator should give and the kernel line it should blame.

Each bug names:

* ``expect``: the report classes that are right for it, the first the one that names the cause
  (``"wrong"``: the emulator cannot know, numpy finds the result wrong; ``"ok"``: harmless). A
  stale parity whose wait blocks in some orders (the eager one) hangs on the chip too: there
  ``Deadlock`` is right, and its first line must name the wait;
* ``culprit``: text snippets of the kernel lines that are the defect (any one will do), found in
  the *edited* source, so that the corpus survives edits elsewhere in the kernel. A report names
  the culprit when a ``module:line`` of its first paragraph lies within two lines of one of them. For
  a deleted line the snippet is its neighbour: the place where the line belongs.

Every bug's correct twin is the chapter's unedited kernel, run at the same shape, configuration
and policy (it must pass silently). ``tools/planted_bugs_report.py`` runs the corpus under every
policy and prints the per-class table; ``tests/test_planted_bugs.py`` checks it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from gemm_kernels.exercises import _V5_REFILL, _V5_RELEASE_WAIT

#: the small shape each chapter's bugs run at (M, N, K), and the chapter's configuration: a few
#: k-blocks, and where the chapter is persistent more tiles per CTA (or cluster) than accumulators, so
#: that every barrier of the accumulator ring is waited on again
SHAPES = {4: (128, 128, 192), 5: (128, 128, 320), 6: (384, 256, 192), 7: (256, 256, 192),
          8: (256, 768, 128), 9: (512, 512, 128), 10: (256, 768, 64)}
CONFIGS = {7: {"num_ctas": 1}, 8: {"num_clusters": 1}, 9: {"num_clusters": 1}, 10: {"num_clusters": 1}}

#: (policy, seed): the completion orders every bug runs under
POLICIES = (("eager", 0), ("lazy", 0), ("random", 0), ("random", 1))

CATEGORIES = ("count", "parity", "stage", "fence", "barrier", "wait", "tail", "lane", "cta")

P8, P12, P16, P20, P24 = (" " * n for n in (8, 12, 16, 20, 24))


@dataclass(frozen=True)
class PlantedBug:
    name: str
    chapter: int
    category: str
    replace: dict
    expect: tuple
    culprit: tuple
    config: dict = field(default_factory=dict)
    why: str = ""

    @property
    def shape(self):
        return SHAPES[self.chapter]

    @property
    def kwargs(self):
        """The chapter entry's configuration for this bug."""
        return {**CONFIGS.get(self.chapter, {}), **self.config}


B = PlantedBug

BUGS = [
    # -- chapter 4: one stage, one thread drives the TMA and the MMAs ------------------------------------
    B("v4-expect-one-tile", 4, "count",
      {"ptx.mbarrier_arrive_expect_tx(tma2mma, 2 * TILE_BYTES)": "ptx.mbarrier_arrive_expect_tx(tma2mma, TILE_BYTES)"},
      ("ExpectTxMismatch", "SharedMemoryHazard"), ("ptx.mbarrier_arrive_expect_tx(tma2mma, TILE_BYTES)",),
      why="the announcement counts one tile of the two loaded"),
    B("v4-tma-wait-parity-0", 4, "parity",
      {"ptx.mbarrier_wait(tma2mma, phase)": "ptx.mbarrier_wait(tma2mma, 0)"},
      ("StalePhaseWait", "Deadlock"), ("ptx.mbarrier_wait(tma2mma, 0)",)),
    B("v4-no-phase-flip", 4, "parity",
      {"            phase ^= 1\n": ""},
      ("StalePhaseWait", "Deadlock"), ("ptx.mbarrier_wait(mma2tma, phase)  # the tiles are free again",
                            "ptx.mbarrier_wait(tma2mma, phase)")),
    B("v4-no-release-wait", 4, "wait",
      {"            ptx.mbarrier_wait(mma2tma, phase)  # the tiles are free again\n": ""},
      ("SharedMemoryHazard", "UndrainedArrival"), ("ptx.tcgen05_commit(mma2tma)",)),
    B("v4-no-proxy-fence", 4, "fence",
      {"    ptx.fence_proxy_async()\n    ptx.tcgen05_fence_before()\n": "    ptx.tcgen05_fence_before()\n"},
      ("MissingProxyFence",), ("tmem_rows_to_staging(base + D_STAGING, tmem, warp, tid % 32, 0, BLOCK_N)",)),
    B("v4-no-syncthreads-before-store", 4, "barrier",
      {"    ptx.tcgen05_fence_before()\n    cuda.syncthreads()\n    if tid == 0:\n":
       "    ptx.tcgen05_fence_before()\n    if tid == 0:\n"},
      ("SharedMemoryHazard", "DataRace"), ("store_staging(tmap_d, base + D_STAGING, m0, n0, BLOCK_N)",),
      why="the TMA store reads rows that nothing orders after the other warps' stores"),
    B("v4-no-fence-after-acc-wait", 4, "fence",
      {"    ptx.mbarrier_wait(mma2ld, 0)\n    ptx.tcgen05_fence_after()\n": "    ptx.mbarrier_wait(mma2ld, 0)\n"},
      ("MissingTcgen05Fence",), ("ptx.mbarrier_wait(mma2ld, 0)",)),
    B("v4-tma-barrier-count-2", 4, "count",
      {"ptx.mbarrier_init(tma2mma, 1)": "ptx.mbarrier_init(tma2mma, 2)"},
      ("Deadlock",), ("ptx.mbarrier_init(tma2mma, 2)",)),
    B("v4-acc-barrier-count-128", 4, "count",
      {"ptx.mbarrier_init(mma2ld, 1)": "ptx.mbarrier_init(mma2ld, 128)"},
      ("Deadlock",), ("ptx.mbarrier_init(mma2ld, 128)",)),
    B("v4-commit-from-other-lane", 4, "lane",
      {"    if tid == 0:\n        ptx.tcgen05_commit(mma2ld)\n": "    if tid == 32:\n        ptx.tcgen05_commit(mma2ld)\n"},
      ("TmemHazard", "UninitializedRead"), ("ptx.tcgen05_commit(mma2ld)",),
      why="a commit tracks the MMAs of its own thread: thread 32 issued none, so mma2ld completes at once"),
    B("v4-no-acc-commit", 4, "tail",
      {"    if tid == 0:\n        ptx.tcgen05_commit(mma2ld)\n": ""},
      ("Deadlock",), ("ptx.mbarrier_wait(mma2ld, 0)",)),

    # -- chapter 5: a ring of stages, one thread ------------------------------------------------------
    B("v5-flip-tma-parity-every-chunk", 5, "parity",
      {P16 + "stage, tma_phase = pipeline.advance(stage, tma_phase, DEPTH)\n":
       P16 + "stage = (stage + 1) % DEPTH\n" + P16 + "tma_phase ^= 1\n"},
      ("Deadlock", "StalePhaseWait"), ("tma_phase ^= 1",), why="the chapter's Break-it"),
    B("v5-wait-stage-0", 5, "stage",
      {"pipeline.wait(base + TMA2MMA, stage, tma_phase)": "pipeline.wait(base + TMA2MMA, 0, tma_phase)"},
      ("StalePhaseWait", "Deadlock"), ("pipeline.wait(base + TMA2MMA, 0, tma_phase)",)),
    B("v5-refill-stage-0", 5, "stage",
      {"ptx.tma_load_2d(a_stage, tmap_a, nxt * BLOCK_K, m0, tma2mma)":
       "ptx.tma_load_2d(pipeline.stage_buffer(base + A0, 0, TILE_BYTES), tmap_a, nxt * BLOCK_K, m0, tma2mma)"},
      ("SharedMemoryHazard", "DataRace"), ("pipeline.stage_buffer(base + A0, 0, TILE_BYTES), tmap_a, nxt",)),
    B("v5-no-mma-phase-flip", 5, "parity",
      {P16 + "mma_phase ^= 1\n": ""},
      ("StalePhaseWait", "Deadlock"), ("ptx.mbarrier_wait(mma2tma, mma_phase)",)),
    B("v5-release-count-2", 5, "count",
      {"ptx.mbarrier_init(mma2tma, 1)": "ptx.mbarrier_init(mma2tma, 2)"},
      ("Deadlock",), ("ptx.mbarrier_init(mma2tma, 2)",)),
    B("v5-refill-before-release-wait", 5, "wait",
      {_V5_RELEASE_WAIT + _V5_REFILL: _V5_REFILL + _V5_RELEASE_WAIT},
      ("SharedMemoryHazard",), ("ptx.tma_load_2d(a_stage, tmap_a, nxt * BLOCK_K, m0, tma2mma)",
                                "ptx.tcgen05_commit(mma2tma)"), why="exercise 5.2"),
    B("v5-prologue-one-short", 5, "count",
      {"for s in range(min(DEPTH, k_tiles)):": "for s in range(min(DEPTH, k_tiles) - 1):"},
      ("Deadlock",), ("for s in range(min(DEPTH, k_tiles) - 1):",)),
    B("v5-no-fence-after-acc-wait", 5, "fence",
      {P8 + "ptx.mbarrier_wait(mma2ld, 0)\n" + P8 + "ptx.tcgen05_fence_after()\n": P8 + "ptx.mbarrier_wait(mma2ld, 0)\n"},
      ("MissingTcgen05Fence",), ("ptx.mbarrier_wait(mma2ld, 0)",)),
    B("v5-refill-chunk-off-by-one", 5, "stage",
      {"nxt = kc + DEPTH\n": "nxt = kc + DEPTH - 1\n"},
      ("wrong", "UndrainedArrival", "StalePhaseWait"), ("nxt = kc + DEPTH - 1",),
      why="the refill loads a chunk already in the ring: the emulator cannot know which chunk was meant"),

    # -- chapter 6: persistent, one thread drives each CTA's tiles ---------------------------------------
    B("v6-reset-phases-per-tile", 6, "parity",
      {P12 + "n0 = n_idx * BLOCK_N\n": P12 + "n0 = n_idx * BLOCK_N\n" + P12 + "stage = uint32(0)\n"
       + P12 + "tma_phase = uint32(0)\n" + P12 + "mma_phase = uint32(0)\n"},
      ("StalePhaseWait", "Deadlock"), ("tma_phase = uint32(0)\n" + P12 + "mma_phase", "pipeline.wait(base + TMA2MMA, stage, tma_phase)"),
      config={"pipe_depth": 3}, why="the chapter's Break-it (exercise 6.2)"),
    B("v6-no-acc-phase-flip", 6, "parity",
      {P12 + "_, acc_phase = pipeline.advance(0, acc_phase, 1)  # one accumulator: a ring of depth 1\n": ""},
      ("StalePhaseWait", "Deadlock"), ("ptx.mbarrier_wait(mma2ld, acc_phase)",)),
    B("v6-acc-wait-parity-0", 6, "parity",
      {"ptx.mbarrier_wait(mma2ld, acc_phase)": "ptx.mbarrier_wait(mma2ld, 0)"},
      ("StalePhaseWait", "Deadlock"), ("ptx.mbarrier_wait(mma2ld, 0)",)),
    B("v6-refill-signals-next-stage", 6, "stage",
      {"tma2mma = pipeline.expect_tx(base + TMA2MMA, stage, 2 * TILE_BYTES)":
       "tma2mma = pipeline.expect_tx(base + TMA2MMA, (stage + 1) % DEPTH, 2 * TILE_BYTES)"},
      ("StalePhaseWait", "ExpectTxMismatch", "SharedMemoryHazard", "Deadlock"),
      ("pipeline.expect_tx(base + TMA2MMA, (stage + 1) % DEPTH, 2 * TILE_BYTES)",),
      why="the refill's copies complete on the next stage's barrier"),
    B("v6-no-sync-before-store", 6, "barrier",
      {P12 + "ptx.tcgen05_fence_before()\n" + P12 + "cuda.syncthreads()\n" + P12 + "if tid == 0:\n":
       P12 + "ptx.tcgen05_fence_before()\n" + P12 + "if tid == 0:\n"},
      ("SharedMemoryHazard", "DataRace"), ("store_staging(tmap_d, base + D_STAGING, m0, n0, BLOCK_N)",),
      why="the TMA store reads rows that nothing orders after the other warps' stores"),
    B("v6-no-fence-before-sync", 6, "fence",
      {P12 + "ptx.tcgen05_fence_before()\n" + P12 + "cuda.syncthreads()\n" + P12 + "if tid == 0:\n":
       P12 + "cuda.syncthreads()\n" + P12 + "if tid == 0:\n"},
      ("MissingTcgen05Fence",), ("cuda.syncthreads()\n" + P12 + "if tid == 0:",),
      why="the writeback's tcgen05.ld, then a CTA barrier without the fence: the next tile's MMAs overwrite TMEM"),
    B("v6-release-wait-parity", 6, "parity",
      {"ptx.mbarrier_wait(mma2tma, mma_phase)": "ptx.mbarrier_wait(mma2tma, 0)"},
      ("StalePhaseWait", "Deadlock"), ("ptx.mbarrier_wait(mma2tma, 0)",)),

    # -- chapter 7: warp-specialized (producer warp 4, MMA warp 5, writeback warps 0-3) ---------------------
    B("v7-producer-phase-0", 7, "parity",
      {"phase = uint32(1)  # the producer's first pass finds every stage empty":
       "phase = uint32(0)  # the producer's first pass finds every stage empty"},
      ("Deadlock",), ("pipeline.wait(base + MMA2TMA, stage, phase)  # the stage is empty",
                      "phase = uint32(0)  # the producer's first pass"), why="the chapter's Break-it"),
    B("v7-no-producer-tail", 7, "tail",
      {"pipeline.producer_tail(base + MMA2TMA, stage, phase, DEPTH)": "pass"},
      ("UndrainedArrival",), ("            pass\n",), why="the chapter's second Break-it"),
    B("v7-ld2mma-count-1", 7, "count",
      {"ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)": "ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 1)"},
      ("ArrivalMismatch", "TmemHazard"), ("ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 1)",)),
    B("v7-ld2mma-count-128", 7, "count",
      {"ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)": "ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 128)"},
      ("Deadlock",), ("ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 128)",),
      why="one arrival per thread was meant, but only one elected lane per warp arrives"),
    B("v7-mma2tma-count-2", 7, "count",
      {"ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 1)": "ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 2)"},
      ("Deadlock",), ("ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 2)",)),
    B("v7-mma-acc-phase-0", 7, "parity",
      {"acc_phase = uint32(1)  # the accumulators start free": "acc_phase = uint32(0)  # the accumulators start free"},
      ("Deadlock",), ("pipeline.wait(base + LD2MMA, acc, acc_phase)", "acc_phase = uint32(0)  # the accumulators")),
    B("v7-writeback-acc-parity", 7, "parity",
      {"ptx.mbarrier_wait_sleep(pipeline.barrier(base + MMA2LD, acc), acc_phase)":
       "ptx.mbarrier_wait_sleep(pipeline.barrier(base + MMA2LD, acc), acc_phase ^ uint32(1))"},
      ("StalePhaseWait", "TmemHazard", "UninitializedRead"), ("acc_phase ^ uint32(1))",)),
    B("v7-no-fence-before-ld2mma", 7, "fence",
      {P12 + "ptx.tcgen05_fence_before()\n" + P12 + "cuda.syncwarp()": P12 + "cuda.syncwarp()"},
      ("MissingTcgen05Fence",), ("cuda.syncwarp()  # every lane", "arrive_ld2mma(ld2mma, cluster_arrive)")),
    B("v7-every-lane-arrives", 7, "lane",
      {"if ptx.elect_sync():  # one arrival per warp": "if True:  # one arrival per warp"},
      ("ArrivalMismatch", "TmemHazard"), ("if True:  # one arrival per warp",)),
    B("v7-no-proxy-fence-staging", 7, "fence",
      {P12 + "ptx.fence_proxy_async()  # the rows, before": P12 + "pass  # the rows, before"},
      ("MissingProxyFence",), ("pass  # the rows, before", "stage_subtile_row(chunks, buf, packed)"),
      why="the fence belongs after the stores, before the barrier"),
    B("v7-no-publish-barrier", 7, "barrier",
      {"ptx.named_barrier_sync(barrier_id, barrier_threads)  # the group is published": "pass  # the group is published"},
      ("DataRace", "SharedMemoryHazard"), ("pass  # the group is published",)),
    B("v7-no-reuse-barrier", 7, "barrier",
      {"ptx.named_barrier_sync(barrier_id, barrier_threads)  # ... which the other threads learn here":
       "pass  # ... which the other threads learn here"},
      ("DataRace", "SharedMemoryHazard"), ("pass  # ... which the other threads learn here",)),
    B("v7-named-barrier-count-96", 7, "count",
      {"ptx.named_barrier_sync(barrier_id, barrier_threads)  # the group is published":
       "ptx.named_barrier_sync(barrier_id, 96)  # the group is published"},
      ("NamedBarrierMismatch",), ("ptx.named_barrier_sync(barrier_id, 96)",)),
    B("v7-release-stage-0", 7, "stage",
      {"pipeline.release(base + MMA2TMA, stage)": "pipeline.release(base + MMA2TMA, 0)"},
      ("Deadlock", "StalePhaseWait"), ("pipeline.release(base + MMA2TMA, 0)",)),
    B("v7-ld2mma-arrive-acc-0", 7, "stage",
      {"pipeline.barrier(base + LD2MMA, acc), False": "pipeline.barrier(base + LD2MMA, 0), False"},
      ("Deadlock", "ArrivalMismatch"), ("pipeline.barrier(base + LD2MMA, 0), False",)),
    B("v7-store-from-other-lane", 7, "lane",
      {"if row == 0:  # the group's TMA stores": "if row == 32:  # the group's TMA stores"},
      ("UndrainedArrival", "MemoryFault", "SharedMemoryHazard"), ("ptx.bulk_wait_group_read0()  # the last stores",),
      why="thread 32 stores, thread 0 waits for the stores before exit: it has none"),
    B("v7-no-final-store-wait", 7, "tail",
      {"ptx.bulk_wait_group_read0()  # the last stores have read": "pass  # the last stores have read"},
      ("MemoryFault", "SharedMemoryHazard", "UndrainedArrival"), ("pass  # the last stores have read",)),
    B("v7-no-fence-after-acc-wait", 7, "fence",
      {"acc_phase)  # a whole tile's MMAs: sleep\n" + P16 + "ptx.tcgen05_fence_after()\n":
       "acc_phase)  # a whole tile's MMAs: sleep\n"},
      ("MissingTcgen05Fence",), ("acc_phase)  # a whole tile's MMAs: sleep",)),

    # -- chapter 8: CTA pairs, cta_group::2 --------------------------------------------------------------
    B("v8-leader-announces-own-bytes", 8, "count",
      {"2 * 2 * TILE_BYTES": "2 * TILE_BYTES"},
      ("ExpectTxMismatch", "SharedMemoryHazard", "Deadlock"), ("pipeline.expect_tx(base + TMA2MMA, stage, 2 * TILE_BYTES)",),
      why="the chapter's Break-it"),
    B("v8-acc-commit-to-leader-only", 8, "cta",
      {"ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), PAIR)":
       "ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), 0b01)"},
      ("Deadlock",), ("pipeline.barrier(base + MMA2LD, acc), 0b01)",), why="exercise 8.1"),
    B("v8-release-to-leader-only", 8, "cta",
      {"ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2TMA, stage), PAIR)":
       "ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2TMA, stage), 0b01)"},
      ("Deadlock",), ("pipeline.barrier(base + MMA2TMA, stage), 0b01)",)),
    B("v8-ld2mma-count-4", 8, "count",
      {"ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 2 * 4)": "ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)"},
      ("ArrivalMismatch", "TmemHazard"), ("ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)",)),
    B("v8-ld2mma-arrive-own-cta", 8, "cta",
      {"leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA, acc), 0)":
       "leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA, acc), rank)"},
      ("Deadlock",), ("pipeline.barrier(base + LD2MMA, acc), rank)",)),
    B("v8-copies-complete-on-own-barrier", 8, "cta",
      {"leader_tma2mma = pipeline.barrier(leader_tma2mma0, stage)": "leader_tma2mma = pipeline.barrier(base + TMA2MMA, stage)"},
      ("Deadlock", "ExpectTxMismatch"), ("leader_tma2mma = pipeline.barrier(base + TMA2MMA, stage)",)),
    B("v8-producer-phase-0", 8, "parity",
      {P12 + "phase = uint32(1)\n" + P12 + "k_end": P12 + "phase = uint32(0)\n" + P12 + "k_end"},
      ("Deadlock",), ("pipeline.wait_cluster(base + MMA2TMA, stage, phase)  # the stage is empty",
                      P12 + "phase = uint32(0)\n" + P12 + "k_end")),
    B("v8-no-producer-tail", 8, "tail",
      {"pipeline.producer_tail_cluster(base + MMA2TMA, stage, phase, DEPTH)": "pass"},
      ("UndrainedArrival",), ("            pass\n",)),
    B("v8-tma-wait-stale-parity", 8, "parity",
      {"pipeline.wait_cluster(base + TMA2MMA, stage, phase)  # the stage is full":
       "pipeline.wait_cluster(base + TMA2MMA, stage, phase ^ uint32(1))  # the stage is full"},
      ("StalePhaseWait",), ("pipeline.wait_cluster(base + TMA2MMA, stage, phase ^ uint32(1))",)),
    B("v8-alloc-before-cluster-barrier", 8, "cta",
      {P8 + "ptx.cluster_arrive()  # barriers initialised in both CTAs, and both CTAs are running\n" + P8
       + "ptx.cluster_wait()\n" + P8 + "if warp == 0:  # the pair's allocation writes into the peer CTA: only now "
       "that it is known to run\n" + P12 + "ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)\n":
       P8 + "if warp == 0:  # the pair's allocation\n" + P12 + "ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)\n"
       + P8 + "ptx.cluster_arrive()  # barriers initialised and TMEM allocated in both CTAs\n" + P8 + "ptx.cluster_wait()\n"},
      ("PeerNotRunning",), ("ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)",),
      why="step 7's order (allocate, then the barrier): the pair's allocation writes into a peer not known to run"),
    B("v8-cta-scope-wait-on-peer-arrivals", 8, "wait",
      {"pipeline.wait_cluster(base + LD2MMA, acc, acc_phase)": "pipeline.wait(base + LD2MMA, acc, acc_phase)"},
      ("WaitScopeMismatch",), ("pipeline.wait(base + LD2MMA, acc, acc_phase)",),
      why="step 7's wait kept: a CTA-scope acquire does not synchronise with the peer's remote arrivals"),
    B("v8-no-proxy-fence-staging", 8, "fence",
      {P12 + "ptx.fence_proxy_async()  # the rows, before": P12 + "pass  # the rows, before"},
      ("MissingProxyFence",), ("pass  # the rows, before", "stage_subtile_row(chunks, buf, packed)"),
      why="the fence belongs after the stores, before the barrier"),

    # -- chapter 9: two MMA consumers per stage ------------------------------------------------------------
    B("v9-release-count-1", 9, "count",
      {"ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), CONSUMERS)": "ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 1)"},
      ("ArrivalMismatch", "SharedMemoryHazard"), ("ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 1)",),
      why="exercise 9.1"),
    B("v9-one-named-barrier", 9, "barrier",
      {"WRITEBACK_BARRIER0 + c, 128)  # staging complete": "WRITEBACK_BARRIER0, 128)  # staging complete",
       "WRITEBACK_BARRIER0 + c, 128)  # ... which the others": "WRITEBACK_BARRIER0, 128)  # ... which the others"},
      ("NamedBarrierMismatch",), ("WRITEBACK_BARRIER0, 128)  # staging complete", "WRITEBACK_BARRIER0, 128)  # ... which"),
      why="the chapter's Break-it"),
    B("v9-shared-accumulator", 9, "lane",
      {"d_tmem = tmem + CONSUMER_N * c": "d_tmem = tmem"},
      ("TmemHazard", "wrong"), ("d_tmem = tmem\n",)),
    B("v9-no-writeback-phase-flip", 9, "parity",
      {"learn here\n" + P16 + "_, acc_phase = pipeline.advance(0, acc_phase, 1)\n": "learn here\n"},
      ("StalePhaseWait",), ("mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD0, c), acc_phase)",)),
    B("v9-store-only-warpgroup-0", 9, "lane",
      {"if row == 0:  # its TMA store": "if tid == 0:  # its TMA store"},
      ("wrong",), ("if tid == 0:  # its TMA store",), why="consumer 1's rows are never stored"),
    B("v9-no-proxy-fence", 9, "fence",
      {P20 + "ptx.fence_proxy_async()\n" + P20 + "ptx.named_barrier_sync(": P20 + "ptx.named_barrier_sync("},
      ("MissingProxyFence",), ("stage_subtile_row(chunks, buf, packed)",)),
    B("v9-ld2mma-count-4", 9, "count",
      {"ptx.mbarrier_init(pipeline.barrier(base + LD2MMA0, c), 2 * 4)": "ptx.mbarrier_init(pipeline.barrier(base + LD2MMA0, c), 4)"},
      ("ArrivalMismatch", "TmemHazard"), ("ptx.mbarrier_init(pipeline.barrier(base + LD2MMA0, c), 4)",)),
    B("v9-ld2mma-arrive-own-cta", 9, "cta",
      {"leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA0, c), 0)": "leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA0, c), rank)"},
      ("Deadlock",), ("leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA0, c), rank)",)),
    B("v9-no-reuse-barrier", 9, "barrier",
      {"ptx.named_barrier_sync(WRITEBACK_BARRIER0 + c, 128)  # ... which the others learn here":
       "pass  # ... which the others learn here"},
      ("DataRace", "SharedMemoryHazard"), ("pass  # ... which the others learn here",)),
    B("v9-consumer-no-acc-phase-flip", 9, "parity",
      {"PAIR)\n" + P20 + "_, acc_phase = pipeline.advance(0, acc_phase, 1)\n": "PAIR)\n"},
      ("StalePhaseWait", "TmemHazard"), ("pipeline.wait_cluster(base + LD2MMA0, c, acc_phase)",)),
    B("v9-no-warp-barrier-before-ld2mma", 9, "lane",
      {P24 + "cuda.syncwarp()  # every lane's tcgen05.wait::ld is ordered before the elected lane's arrive\n": ""},
      ("MissingWarpSync",), ("ptx.mbarrier_arrive_relaxed_cluster(leader_ld2mma)",),
      why="elect.sync orders no memory: the other lanes' tcgen05.ld are not ordered before the elected lane's arrive"),
    B("v9-cta-scope-writeback-wait", 9, "wait",
      {"ptx.mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD0, c), acc_phase)":
       "ptx.mbarrier_wait_sleep(pipeline.barrier(base + MMA2LD0, c), acc_phase)"},
      ("WaitScopeMismatch",), ("ptx.mbarrier_wait_sleep(pipeline.barrier(base + MMA2LD0, c), acc_phase)",),
      why="step 7's wait kept: in the peer CTA the leader's multicast commit completes this barrier, and a "
          "CTA-scope acquire does not synchronise with another CTA's arrive"),
    # -- chapter 10: cluster launch control (the scheduler's helpers in schedule.py) -------------------------
    B("v10-clc-relaxed-wait", 10, "wait",
      {"pipeline.wait_acquire_cluster(full0, stage, phase)": "pipeline.wait_cluster(full0, stage, phase)"},
      ("RelaxedWaitNoAcquire",), ("pipeline.wait_cluster(full0, stage, phase)",),
      why="issue 27's hang: a relaxed wait orders no memory, so the ordinary load of the response may come first"),
    B("v10-clc-no-proxy-fence", 10, "fence",
      {"before it\n    ptx.fence_proxy_async()\n": "before it\n"},
      ("MissingProxyFence",), ("ok, first_x = ptx.clc_query_cancel(",),
      why="the generic read of a response, then the next try_cancel's async write of the slot, with no "
          "fence.proxy.async in between"),
]


def bug(name):
    for b in BUGS:
        if b.name == name:
            return b
    raise KeyError(name)


# -- running one bug --------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What one run gave: the report class (or "ok" / "wrong"), the report text, and whether its first
    paragraph names a culprit line."""
    kind: str
    text: str
    culprit_named: bool
    culprit_lines: tuple

    @property
    def first_paragraph(self):
        return first_paragraph(self.text)


def first_paragraph(text):
    """A report's first paragraph: its first line (a deadlock's chain and its dump of every blocked
    thread follow on indented lines)."""
    return text.split("\n", 1)[0]


def culprit_lines(variant, snippets):
    """The file line numbers of the lines of ``variant``'s edited source that contain a snippet: a
    line of the chapter's kernel as an int, a line of the edited shared writeback (steps 7-10's
    ``epilogue.subtiled_writeback``) as ``("epilogue", line)``."""
    lines = []
    for snip in snippets:
        i = variant.edited.find(snip)
        j = variant.helper_edited.find(snip)
        sched = [(src, first) for src, first in variant.schedule_edited.values() if snip in src]
        if i < 0 and j < 0 and not sched:
            raise ValueError(f"culprit snippet {snip!r} is not in the edited source")
        if i >= 0:
            lines.append(variant.first_line + variant.edited.count("\n", 0, i))
        elif j >= 0:
            lines.append(("epilogue", variant.helper_first_line + variant.helper_edited.count("\n", 0, j)))
        else:  # a line of an edited scheduler helper (schedule.py, step 10)
            src, first = sched[0]
            lines.append(("schedule", first + src.count("\n", 0, src.find(snip))))
    return tuple(lines)


_SITE = re.compile(r"(?:<variant of )?gemm_kernels/(?:kernels/)?(v\d+_\w+|epilogue|schedule|pipeline)\.py>?:(\d+)")


def names_line(paragraph, module, lines, slack=2, span=12):
    """Whether ``paragraph`` names a line of kernel ``module`` within ``slack`` lines of one of ``lines``,
    or names two lines at most ``span`` apart that enclose one of them (a report of a missing barrier,
    fence or wait names the two operations it should order: the defect's place lies between them).
    A line given as ``("epilogue", n)`` is one of epilogue.py, the shared writeback's file."""
    sites = _SITE.findall(paragraph)
    for c in lines:
        mod, c = c if isinstance(c, tuple) else (module, c)
        named = sorted({int(ln) for m, ln in sites if m == mod})
        if any(abs(n - c) <= slack for n in named):
            return True
        if any(lo < c < hi and hi - lo <= span for lo in named for hi in named):
            return True
    return False


def run(b, policy="lazy", seed=0, twin=False):
    """Run bug ``b`` (or its correct twin, the unedited kernel) under one policy."""
    import os

    from gemm_kernels.book_helpers import variant
    from gemm_kernels.chapters import CHAPTERS
    from gemm_kernels.check import compare, random_operands
    from gemm_kernels.emu import EmulatorError

    ch = CHAPTERS[b.chapter]
    module = os.path.splitext(os.path.basename(ch._mod().__file__))[0]
    a, bm = random_operands(*b.shape)
    if twin:
        entry, lines = ch.entry, ()
    else:
        v = variant(b.chapter, b.replace)
        entry, lines = v.entry, culprit_lines(v, b.culprit)
    try:
        d = entry(a, bm, backend="emulator", policy=policy, seed=seed, **b.kwargs)
    except (EmulatorError, IndexError) as exc:
        text = str(exc)
        return Outcome(type(exc).__name__, text, names_line(first_paragraph(text), module, lines), lines)
    return Outcome("ok" if compare(d, a, bm).ok else "wrong", "", False, lines)
