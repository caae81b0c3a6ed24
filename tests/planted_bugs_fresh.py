"""A fresh set of planted bugs (issue 27 item 5): realistic slips in the chapter kernels (steps 4-10)
and in the shared helpers (``epilogue.subtiled_writeback``, ``schedule.clc_request``/``clc_next``,
``pipeline.py``), written by someone who did not write the emulator's reports and did not read them,
to measure those reports on bugs their author never saw.

Same format as ``tests/planted_bugs.py`` (``PlantedBug``: ``expect`` = the right report classes,
the first the one that names the cause, ``"wrong"`` = only numpy can see it, ``"ok"`` = harmless;
``culprit`` = snippets of the defective lines in the edited source). Every expectation was fixed from
the PTX ISA's semantics before the set was first run (the commit that added this file is the freeze).

``pipeline.py``'s device functions are not editable through ``book_helpers.variant``; ``variant``
here extends it: an ``old`` text found in a pipeline function is applied to a copy of the pipeline
module that only the variant's kernel sees (every device function re-made in the copy, so that an
edited ``advance`` is the one the copy's ``producer_tail`` calls), and its culprit lines are given as
``("pipeline", line)``.

    PYTHONPATH=$PWD python tools/fresh_bugs_report.py [--json out.json]
"""
from __future__ import annotations

import inspect
import textwrap
import types

from tests.planted_bugs import (CONFIGS, SHAPES, Outcome, PlantedBug,  # noqa: F401 (re-exported for the tools)
                                culprit_lines, first_paragraph, names_line)

#: the three orders the fresh set runs under (CPU is scarce: lazy, eager and one random seed)
POLICIES = (("lazy", 0), ("eager", 0), ("random", 0))

#: pipeline.py's device functions a fresh bug may edit (all are re-made in the variant's copy)
PIPELINE_FUNCTIONS = ("barrier", "stage_buffer", "wait", "wait_cluster", "wait_acquire_cluster", "expect_tx",
                      "release", "arrive", "advance", "ring_slot", "producer_tail", "producer_tail_cluster")

B = PlantedBug

# the shared writeback's lines (epilogue.subtiled_writeback, dedented: its body is 4 spaces in)
_WB_FENCE = "            ptx.fence_proxy_async()  # the rows, before the TMA (async proxy) reads them\n"
_WB_PUBLISH = "            ptx.named_barrier_sync(barrier_id, barrier_threads)  # the group is published\n"
_WB_FREE = "            ptx.named_barrier_sync(barrier_id, barrier_threads)  # ... which the other threads learn here\n"
_WB_HANDBACK = ("            ptx.tcgen05_fence_before()\n"
                "            cuda.syncwarp()  # every lane's tcgen05.wait::ld is ordered before the elected lane's arrive\n"
                "            if ptx.elect_sync():  # one arrival per warp: the whole warp's loads have completed\n"
                "                arrive_ld2mma(ld2mma, cluster_arrive)\n")
# schedule.clc_next's hand-back of a response slot (its comment above it differs between branches: not used)
_CLC_ARRIVE = "        ptx.mbarrier_arrive_remote(pipeline.barrier(leader_empty0, stage))\n"

BUGS = [
    # == chapter kernel files ==========================================================================
    # -- step 4 ----------------------------------------------------------------------------------------
    B("f4-b-loaded-into-a-tile", 4, "stage",
      {"ptx.tma_load_2d(base + B_TILE, tmap_b": "ptx.tma_load_2d(base + A_TILE, tmap_b"},
      ("UninitializedRead", "SharedMemoryHazard", "wrong"), ("ptx.tma_load_2d(base + A_TILE, tmap_b",),
      why="copy-paste: B's load lands in the A tile; the MMAs read a B tile nothing wrote"),
    B("f4-loads-before-expect-tx", 4, "count",
      {"            ptx.mbarrier_arrive_expect_tx(tma2mma, 2 * TILE_BYTES)\n"
       "            ptx.tma_load_2d(base + A_TILE, tmap_a, kc * BLOCK_K, m0, tma2mma)\n"
       "            ptx.tma_load_2d(base + B_TILE, tmap_b, kc * BLOCK_K, n0, tma2mma)\n":
       "            ptx.tma_load_2d(base + A_TILE, tmap_a, kc * BLOCK_K, m0, tma2mma)\n"
       "            ptx.tma_load_2d(base + B_TILE, tmap_b, kc * BLOCK_K, n0, tma2mma)\n"
       "            ptx.mbarrier_arrive_expect_tx(tma2mma, 2 * TILE_BYTES)\n"},
      ("ok",), ("ptx.mbarrier_arrive_expect_tx(tma2mma, 2 * TILE_BYTES)",),
      why="harmless: the copies may complete bytes before the announcement (the tx-count goes negative); the "
          "phase cannot complete before the producer's one arrival, which carries the expect_tx"),
    B("f4-proxy-fence-after-barrier", 4, "fence",
      {"    ptx.fence_proxy_async()\n    ptx.tcgen05_fence_before()\n    cuda.syncthreads()\n":
       "    ptx.tcgen05_fence_before()\n    cuda.syncthreads()\n    ptx.fence_proxy_async()\n"},
      ("MissingProxyFence",), ("ptx.fence_proxy_async()",
                               "tmem_rows_to_staging(base + D_STAGING, tmem, warp, tid % 32, 0, BLOCK_N)"),
      why="each writer fences after the CTA barrier: thread 0's TMA store is not ordered after the other "
          "threads' fences"),
    # -- step 5 ----------------------------------------------------------------------------------------
    B("f5-release-wait-on-mma2ld", 5, "barrier",
      {"ptx.mbarrier_wait(mma2tma, mma_phase)  # stage `stage` has been read":
       "ptx.mbarrier_wait(mma2ld, mma_phase)  # stage `stage` has been read"},
      ("Deadlock",), ("ptx.mbarrier_wait(mma2ld, mma_phase)",),
      why="the wait for the stage's MMAs names the accumulator's barrier, committed only after the k-loop"),
    # -- step 6 ----------------------------------------------------------------------------------------
    B("f6-prologue-stages-from-zero", 6, "stage",
      {"s = (stage + i) % DEPTH": "s = i % DEPTH"},
      ("ok",), ("s = i % DEPTH",),
      why="harmless: each tile's prologue fills stages 0.. instead of the ring position on; the loop then reads "
          "the k-blocks in another order, and the sum is the same"),
    B("f6-mma-phase-stepped-as-depth", 6, "parity",
      {"_, mma_phase = pipeline.advance(0, mma_phase, 1)": "_, mma_phase = pipeline.advance(0, mma_phase, DEPTH)"},
      ("StalePhaseWait", "SharedMemoryHazard"), ("_, mma_phase = pipeline.advance(0, mma_phase, DEPTH)",),
      why="the one mma2tma barrier stepped as a ring of DEPTH: its parity never flips, the second wait passes "
          "on the first phase"),
    B("f6-no-tcgen05-fence-before-sync", 6, "fence",
      {"            ptx.fence_proxy_async()\n            ptx.tcgen05_fence_before()\n":
       "            ptx.fence_proxy_async()\n"},
      ("MissingTcgen05Fence",), ("ptx.fence_proxy_async()",),
      why="the tcgen05.ld of the accumulator are published to thread 0 (next tile's MMAs) by bar.sync without "
          "tcgen05.fence::before_thread_sync"),
    # -- step 7 ----------------------------------------------------------------------------------------
    B("f7-ld2mma-count-of-a-pair", 7, "count",
      {"ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)":
       "ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 2 * 4)"},
      ("Deadlock", "ArrivalMismatch"), ("ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 2 * 4)",),
      why="step 8's count (both CTAs) in a one-CTA kernel: the third tile waits for 8 arrivals, 4 come"),
    B("f7-writeback-acc-not-advanced", 7, "parity",
      {"                acc, acc_phase = pipeline.advance(acc, acc_phase, ACC)\n"
       "                more, t = schedule.static_next(t, cuda.gridDim.x, num_tiles)\n            if tid == 0:":
       "                more, t = schedule.static_next(t, cuda.gridDim.x, num_tiles)\n            if tid == 0:"},
      ("StalePhaseWait", "TmemHazard", "Deadlock"),
      ("more, t = schedule.static_next(t, cuda.gridDim.x, num_tiles)\n            if tid == 0:",),
      why="the writeback never steps its accumulator ring: the second tile's wait names mma2ld[0]'s consumed "
          "phase"),
    B("f7-release-by-every-lane", 7, "lane",
      {"                        pipeline.release(base + MMA2TMA, stage)  # stage free once these MMAs are done\n":
       "                    pipeline.release(base + MMA2TMA, stage)  # stage free once these MMAs are done\n"},
      ("ArrivalMismatch", "SharedMemoryHazard"), ("pipeline.release(base + MMA2TMA, stage)",),
      why="the commit dedented out of the elected lane's block: 32 commits on a count-1 barrier, 31 of them by "
          "lanes with no MMA, so they arrive at once and free the stage early"),
    B("f7-lane-quarter-not-scaled", 7, "lane",
      {"lanes = tmem + ((32 * warp) << 16)  # this warp's TMEM lane quarter":
       "lanes = tmem + (warp << 16)  # this warp's TMEM lane quarter"},
      ("LaneQuarterViolation",), ("lanes = tmem + (warp << 16)",),
      why="the lane field is the warp index, not 32 x it: warps 1-3 read outside their lane quarter"),
    # -- step 8 ----------------------------------------------------------------------------------------
    B("f8-a-rows-without-rank", 8, "cta",
      {"a_row = m_idx * CLUSTER_M + rank * CTA_M  # this CTA's rows of the tile":
       "a_row = m_idx * CLUSTER_M  # this CTA's rows of the tile"},
      ("wrong",), ("a_row = m_idx * CLUSTER_M  # this CTA's rows",),
      why="both CTAs load the tile's first 128 rows of A: the second half of D is the first half again"),
    B("f8-loads-complete-on-own-tma2mma", 8, "cta",
      {"leader_tma2mma0 = ptx.mapa(base + TMA2MMA, 0)": "leader_tma2mma0 = ptx.mapa(base + TMA2MMA, rank)"},
      ("ExpectTxMismatch", "Deadlock"), ("leader_tma2mma0 = ptx.mapa(base + TMA2MMA, rank)",),
      why="mapa to the CTA's own rank: the peer's halves complete bytes on the peer's barrier, the leader's "
          "announced 64 KiB never all arrive"),
    B("f8-pair-alloc-before-cluster-sync", 8, "cta",
      {"        ptx.cluster_arrive()  # barriers initialised in both CTAs, and both CTAs are running\n"
       "        ptx.cluster_wait()\n"
       "        if warp == 0:  # the pair's allocation writes into the peer CTA: only now that it is known to run\n"
       "            ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)\n":
       "        if warp == 0:  # the pair's allocation writes into the peer CTA: only now that it is known to run\n"
       "            ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)\n"
       "        ptx.cluster_arrive()  # barriers initialised in both CTAs, and both CTAs are running\n"
       "        ptx.cluster_wait()\n"},
      ("PeerNotRunning",), ("ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)",),
      why="the pair's TMEM allocation (it writes the address into the peer's shared memory) before the cluster "
          "barrier that shows the peer is running"),
    # -- step 9 ----------------------------------------------------------------------------------------
    B("f9-expect-tx-one-cta", 9, "count",
      {"pipeline.expect_tx(base + TMA2MMA, stage, 2 * STAGE_TILES * TILE_BYTES)":
       "pipeline.expect_tx(base + TMA2MMA, stage, STAGE_TILES * TILE_BYTES)"},
      ("ExpectTxMismatch",), ("pipeline.expect_tx(base + TMA2MMA, stage, STAGE_TILES * TILE_BYTES)",),
      why="the leader announces its own three blocks, not the peer's too"),
    B("f9-writebacks-share-barrier-id", 9, "barrier",
      {"ptx.named_barrier_sync(WRITEBACK_BARRIER0 + c, 128)": "ptx.named_barrier_sync(WRITEBACK_BARRIER0, 128)"},
      ("NamedBarrierMismatch", "DataRace", "SharedMemoryHazard"),
      ("ptx.named_barrier_sync(WRITEBACK_BARRIER0, 128)  # staging",
       "ptx.named_barrier_sync(WRITEBACK_BARRIER0, 128)  # ... which"),
      why="both writeback warpgroups sync on ID 1 with 128 threads: a generation can be four warps of each"),
    B("f9-no-fence-before-teardown", 9, "fence",
      {"        ptx.tcgen05_fence_before()\n        ptx.cluster_arrive()  # neither CTA frees TMEM":
       "        ptx.cluster_arrive()  # neither CTA frees TMEM"},
      ("MissingTcgen05Fence",), ("ptx.cluster_arrive()  # neither CTA frees TMEM",),
      why="the teardown's cluster barrier publishes the warps' tcgen05 work without fence::before_thread_sync"),
    B("f9-mma-acc-phase-not-flipped", 9, "parity",
      {"                    _, acc_phase = pipeline.advance(0, acc_phase, 1)\n": ""},
      ("StalePhaseWait", "TmemHazard", "Deadlock"),
      ("ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD0, c), PAIR)",),
      why="the MMA warp never flips its accumulator's parity: the second tile's wait on ld2mma passes on the "
          "first tile's phase and overwrites the accumulator being written back (or, where the writeback "
          "already drained it, waits for a phase that needs its own next tile: a hang)"),
    # -- step 10 ---------------------------------------------------------------------------------------
    B("f10-clc-empty-count-forgets-leader", 10, "count",
      {"ptx.mbarrier_init(pipeline.barrier(base + CLC_EMPTY, s), CLC_READERS)":
       "ptx.mbarrier_init(pipeline.barrier(base + CLC_EMPTY, s), 2 * (1 + 4))"},
      ("ArrivalMismatch", "DataRace", "SharedMemoryHazard", "Deadlock"),
      ("ptx.mbarrier_init(pipeline.barrier(base + CLC_EMPTY, s), 2 * (1 + 4))",),
      why="the count leaves out the leader's MMA warp and scheduler: a slot is handed back after 10 of its 12 "
          "readers, and the next response may overwrite it while two still read it (a role that then reads the "
          "wrong response leaves a tile's handoffs short: a hang)"),
    B("f10-ld2mma-wait-parity-unflipped", 10, "parity",
      {"pipeline.wait_cluster(base + LD2MMA, acc, acc_phase ^ uint32(1))":
       "pipeline.wait_cluster(base + LD2MMA, acc, acc_phase)"},
      ("Deadlock",), ("pipeline.wait_cluster(base + LD2MMA, acc, acc_phase)",),
      why="the issuer waits for a fresh accumulator's parity 0: nothing has drained it"),
    B("f10-writeback-no-fence-after-wait", 10, "fence",
      {"                ptx.mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD, acc), acc_phase)\n"
       "                ptx.tcgen05_fence_after()\n":
       "                ptx.mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD, acc), acc_phase)\n"},
      ("MissingTcgen05Fence", "TmemHazard"),
      ("ptx.mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD, acc), acc_phase)",),
      why="the tcgen05.ld of the accumulator are not ordered after the wait on mma2ld"),
    B("f10-clc-handback-to-own-cta", 10, "cta",
      {"leader_clc_empty0 = ptx.mapa(base + CLC_EMPTY, 0)": "leader_clc_empty0 = ptx.mapa(base + CLC_EMPTY, rank)"},
      ("Deadlock",), ("leader_clc_empty0 = ptx.mapa(base + CLC_EMPTY, rank)",),
      why="the peer's readers hand slots back on the peer's clc_empty: the leader's gets 7 of 12, the third "
          "request waits forever"),

    # == shared helpers: epilogue.subtiled_writeback ====================================================
    B("fwb-proxy-fence-after-publish", 7, "fence",
      {_WB_FENCE + _WB_PUBLISH: _WB_PUBLISH + _WB_FENCE},
      ("MissingProxyFence",), ("ptx.fence_proxy_async()  # the rows",),
      why="each thread fences its staged rows after the named barrier: row 0's TMA store is not ordered after "
          "the other threads' fences"),
    B("fwb-no-free-barrier", 8, "barrier",
      {_WB_FREE: ""},
      ("SharedMemoryHazard", "DataRace"), ("per_group, buffers // per_group)",),
      why="only row 0 waits for the oldest group's read: the others refill its buffers while the store reads"),
    B("fwb-wait-group-one-too-many", 10, "wait",
      {"per_group, buffers // per_group)": "per_group, buffers // per_group + 1)"},
      ("SharedMemoryHazard",), ("per_group, buffers // per_group + 1)",),
      why="wait_group.read 2 with two groups in the ring: the buffers filled next may still be read"),
    B("fwb-handback-one-subtile-early", 7, "stage",
      {"if sub == subtiles - 1:  # every column read": "if sub == subtiles - 2:  # every column read"},
      ("TmemHazard", "wrong"), ("if sub == subtiles - 2:",),
      why="the accumulator is handed back before its last subtile is loaded"),
    B("fwb-fence-before-after-arrive", 8, "fence",
      {_WB_HANDBACK: _WB_HANDBACK.replace("            ptx.tcgen05_fence_before()\n", "")
       + "            ptx.tcgen05_fence_before()\n"},
      ("MissingTcgen05Fence", "TmemHazard"), ("arrive_ld2mma(ld2mma, cluster_arrive)",),
      why="tcgen05.fence::before_thread_sync after the arrive that publishes the loads, not before it"),
    B("fwb-buffer-index-mod-group", 10, "stage",
      {"        buf = sub % buffers\n": "        buf = sub % per_group\n"},
      ("SharedMemoryHazard", "UninitializedRead", "wrong"), ("buf = sub % per_group",),
      why="the staging index wraps at the group size: rows go to buffers 0-1 only, while the stores read "
          "buffers 0-3"),
    B("fwb-subtile-column-not-scaled", 7, "stage",
      {"packed = tmem_load_subtile(taddr + sub * SUBTILE_COLS)": "packed = tmem_load_subtile(taddr + sub)"},
      ("wrong",), ("packed = tmem_load_subtile(taddr + sub)",),
      why="subtile s loads TMEM columns s..s+31 instead of 32 s..: every load lies inside the accumulator"),

    # == shared helpers: schedule.clc_request / clc_next (step 10) =======================================
    B("fclc-empty-wait-parity-unflipped", 10, "parity",
      {"pipeline.wait_acquire_cluster(empty0, stage, phase ^ uint32(1))":
       "pipeline.wait_acquire_cluster(empty0, stage, phase)"},
      ("Deadlock",), ("pipeline.wait_acquire_cluster(empty0, stage, phase)",),
      why="the first request waits for a fresh slot's parity 0: only readers of a response complete it"),
    B("fclc-announce-words-not-bytes", 10, "count",
      {"ptx.mbarrier_arrive_expect_tx(pipeline.barrier(full0, stage), RESPONSE_BYTES)":
       "ptx.mbarrier_arrive_expect_tx(pipeline.barrier(full0, stage), RESPONSE_BYTES // 4)"},
      ("ExpectTxMismatch", "Deadlock"), ("RESPONSE_BYTES // 4)",),
      why="the leader's clc_full announces the response in 32-bit words: 4 of its 16 bytes (the tx-count "
          "passes zero without stopping there: the leader's readers may hang)"),
    B("fclc-peer-announce-on-own-barrier", 10, "cta",
      {"ptx.mbarrier_arrive_expect_tx_cluster(pipeline.barrier(peer_full0, stage), RESPONSE_BYTES)":
       "ptx.mbarrier_arrive_expect_tx_cluster(pipeline.barrier(full0, stage), RESPONSE_BYTES)"},
      ("ArrivalMismatch", "ExpectTxMismatch", "Deadlock"),
      ("ptx.mbarrier_arrive_expect_tx_cluster(pipeline.barrier(full0, stage), RESPONSE_BYTES)",),
      why="the peer's announcement goes to the leader's clc_full: two arrivals on a count-1 barrier, and the "
          "peer's response lands unannounced"),
    B("fclc-every-lane-hands-back", 10, "lane",
      {_CLC_ARRIVE: "        pass\n" + _CLC_ARRIVE[4:]},
      ("ArrivalMismatch",), ("ptx.mbarrier_arrive_remote(pipeline.barrier(leader_empty0, stage))",),
      why="the hand-back dedented out of the elected lane: 32 arrivals per warp on clc_empty"),
    B("fclc-full-wait-parity-flipped", 10, "parity",
      {"pipeline.wait_acquire_cluster(full0, stage, phase)":
       "pipeline.wait_acquire_cluster(full0, stage, phase ^ uint32(1))"},
      ("UninitializedRead", "StalePhaseWait", "ClcRuleError"),
      ("pipeline.wait_acquire_cluster(full0, stage, phase ^ uint32(1))",),
      why="the reader waits for parity 1 of a fresh clc_full, which passes at once: it decodes a slot no "
          "response has written"),
    B("fclc-proxy-fence-after-handback", 10, "fence",
      {"    ptx.fence_proxy_async()\n    if ptx.elect_sync():\n": "    if ptx.elect_sync():\n",
       _CLC_ARRIVE: _CLC_ARRIVE + "    ptx.fence_proxy_async()\n"},
      ("MissingProxyFence",), ("ptx.fence_proxy_async()", "ptx.mbarrier_arrive_remote("),
      why="the proxy fence after the hand-back: the next try_cancel's write is not ordered after the read"),

    # == shared helpers: pipeline.py (this file's harness) ================================================
    B("fpipe-advance-wrap-keeps-phase", 5, "parity",
      {"        return uint32(0), uint32(uint32(phase) ^ uint32(1))\n": "        return uint32(0), uint32(phase)\n"},
      ("StalePhaseWait", "SharedMemoryHazard", "Deadlock"), ("return uint32(0), uint32(phase)",),
      why="advance wraps the stage without flipping the phase: the second pass waits on the first pass's parity"),
    B("fpipe-expect-tx-plain-arrive", 6, "count",
      {"    ptx.mbarrier_arrive_expect_tx(bar, nbytes)\n": "    ptx.mbarrier_arrive(bar)\n"},
      ("ExpectTxMismatch", "UninitializedRead", "SharedMemoryHazard"), ("ptx.mbarrier_arrive(bar)",),
      why="expect_tx arrives without announcing the bytes: the phase completes before the copies land"),
    B("fpipe-tail-cluster-one-short", 8, "tail",
      {"    for _ in range(depth):\n        wait_cluster(empty0, stage, phase)\n":
       "    for _ in range(depth - 1):\n        wait_cluster(empty0, stage, phase)\n"},
      ("UndrainedArrival",), ("for _ in range(depth - 1):",),
      why="the pair's producer tail drains one stage fewer than the ring: its last release may land after exit"),
    B("fpipe-wait-cluster-cta-scope", 9, "wait",
      {"    ptx.mbarrier_wait_relaxed_cluster(barrier(bar0, stage), phase)\n":
       "    ptx.mbarrier_wait(barrier(bar0, stage), phase)\n"},
      ("WaitScopeMismatch",), ("ptx.mbarrier_wait(barrier(bar0, stage), phase)",),
      why="wait_cluster with the CTA-scope form: it does not synchronise with the peer's arrivals"),
]


def bug(name):
    for b in BUGS:
        if b.name == name:
            return b
    raise KeyError(name)


# -- the harness: book_helpers.variant, plus pipeline.py ---------------------------------------------
def _pipeline_sources():
    from gemm_kernels import pipeline

    return {fn: (textwrap.dedent(inspect.getsource(inspect.unwrap(getattr(pipeline, fn).py_func))),
                 inspect.getsourcelines(getattr(pipeline, fn).py_func)[1]) for fn in PIPELINE_FUNCTIONS}


def variant(chapter, replace):
    """``book_helpers.variant(chapter, replace)`` for the edits it knows; an ``old`` found in a function of
    pipeline.py is applied to a copy of the pipeline module that only this variant's kernel sees. Returns
    (variant, {function: (edited source, first line)} of the edited pipeline functions)."""
    from gemm_kernels import pipeline
    from gemm_kernels.book_helpers import _package_path
    from gemm_kernels.book_helpers import variant as bh_variant

    srcs = _pipeline_sources()
    pipe = {old: new for old, new in replace.items() if any(old in s for s, _ in srcs.values())}
    v = bh_variant(chapter, {old: new for old, new in replace.items() if old not in pipe})
    if not pipe:
        return v, {}
    edited = {}
    copy = types.ModuleType(pipeline.__name__)
    copy.__dict__.update(pipeline.__dict__)
    name = f"<variant of {_package_path(pipeline.__file__)}>"
    for fn, (src, line) in srcs.items():  # every device function re-made: each calls the copy's others
        new = src
        for old, rep in pipe.items():
            new = new.replace(old, rep)
        exec(compile("\n" * (line - 1) + new, name, "exec"), copy.__dict__)  # noqa: S102
        if new != src:
            edited[fn] = (new, line)
    if "pipeline" not in v.entry.__globals__:
        raise ValueError(f"chapter {chapter}'s kernel does not use pipeline.py")
    v.entry.__globals__["pipeline"] = copy
    return v, edited


def fresh_culprit_lines(v, pipe_edited, snippets):
    """culprit_lines, with a snippet of an edited pipeline function given as ("pipeline", line)."""
    lines, rest = [], []
    for snip in snippets:
        hit = [(src, first) for src, first in pipe_edited.values() if snip in src]
        if hit:
            src, first = hit[0]
            lines.append(("pipeline", first + src.count("\n", 0, src.find(snip))))
        else:
            rest.append(snip)
    return tuple(lines) + (culprit_lines(v, rest) if rest else ())


def run(b, policy="lazy", seed=0, twin=False):
    """Run fresh bug ``b`` (or its correct twin, the unedited kernel) under one policy: as
    tests/planted_bugs.run."""
    import os

    from gemm_kernels.chapters import CHAPTERS
    from gemm_kernels.check import compare, random_operands
    from gemm_kernels.emu import EmulatorError

    ch = CHAPTERS[b.chapter]
    module = os.path.splitext(os.path.basename(ch._mod().__file__))[0]
    a, bm = random_operands(*b.shape)
    if twin:
        entry, lines = ch.entry, ()
    else:
        v, pipe_edited = variant(b.chapter, b.replace)
        entry, lines = v.entry, fresh_culprit_lines(v, pipe_edited, b.culprit)
    try:
        d = entry(a, bm, backend="emulator", policy=policy, seed=seed, **b.kwargs)
    except (EmulatorError, IndexError) as exc:
        text = str(exc)
        return Outcome(type(exc).__name__, text, names_line(first_paragraph(text), module, lines), lines)
    return Outcome("ok" if compare(d, a, bm).ok else "wrong", "", False, lines)
