"""The chapters' exercises that edit a kernel or change a knob, with the shape each runs at and the
outcome its worked solution describes. ``tests/test_exercises.py`` runs every one on the emulator
and checks that outcome, so a solution in the book cannot go stale silently.

An exercise numbered 100 + n is a second case of exercise n (another shape or a further edit).
An outcome is the name of the emulator diagnostic expected (``"SharedMemoryHazard"``, ...),
``"ok"`` (no diagnostic and the result matches numpy) or ``"wrong"`` (no diagnostic, and numpy
finds elements out of tolerance).
"""
from __future__ import annotations

from dataclasses import dataclass, field

PAD16 = " " * 16

#: Chapter 6's planted bug: reset the ring position and the phases at the start of every tile, as a
#: first persistent kernel often does (step 5's initialisation copied into the tile loop). Applied
#: with ``book_helpers.variant(6, RESET_PHASES)``; only thread 0 uses these variables.
RESET_PHASES = {
    "            n0 = n_idx * BLOCK_N\n":
    "            n0 = n_idx * BLOCK_N\n"
    "            stage = uint32(0)  # planted bug: the ring restarts\n"
    "            tma_phase = uint32(0)\n"
    "            mma_phase = uint32(0)\n",
}


#: Chapter 5's wait for the MMAs to release the stage, and the refill it guards (exercise 5.2 swaps them).
_V5_RELEASE_WAIT = (PAD16 + "ptx.mbarrier_wait(mma2tma, mma_phase)  # stage `stage` has been read\n"
                    + PAD16 + "mma_phase ^= 1\n")
_V5_REFILL = (PAD16 + "nxt = kc + DEPTH\n"
              + PAD16 + "if nxt < k_tiles:  # refill this stage with chunk kc + DEPTH\n"
              + PAD16 + "    tma2mma = pipeline.expect_tx(base + TMA2MMA, stage, 2 * TILE_BYTES)\n"
              + PAD16 + "    ptx.tma_load_2d(a_stage, tmap_a, nxt * BLOCK_K, m0, tma2mma)\n"
              + PAD16 + "    ptx.tma_load_2d(b_stage, tmap_b, nxt * BLOCK_K, n0, tma2mma)\n")


@dataclass(frozen=True)
class Exercise:
    chapter: int
    number: int
    shape: tuple  # (M, N, K) on the emulator
    outcome: str
    replace: dict = field(default_factory=dict)  # old -> new, applied with book_helpers.variant
    config: dict = field(default_factory=dict)  # keyword arguments of the chapter's entry

    def run(self):
        """Run on the emulator; return the outcome as defined above."""
        from .book_helpers import variant
        from .chapters import CHAPTERS
        from .check import compare, random_operands
        from .emu import EmulatorError

        a, b = random_operands(*self.shape)
        entry = variant(self.chapter, self.replace).entry if self.replace else CHAPTERS[self.chapter].entry
        config = {"policy": "lazy", **self.config}
        try:
            d = entry(a, b, backend="emulator", **config)
        except (EmulatorError, IndexError) as exc:  # IndexError: a read outside a global array
            return type(exc).__name__
        return "ok" if compare(d, a, b).ok else "wrong"


EXERCISES = [
    # chapter 1
    Exercise(1, 1, (128, 128, 64), "ok", config={"policy": "random", "seed": 3}),
    Exercise(1, 2, (128, 128, 64), "UninitializedRead", replace={"IDESC, k)": "IDESC, 1)"}),
    Exercise(1, 3, (128, 128, 64), "DataRace",
             replace={"    ptx.fence_proxy_async()\n    cuda.syncthreads()\n    tmem = ":
                      "    ptx.fence_proxy_async()\n    tmem = "}),
    # chapter 2
    Exercise(2, 1, (128, 128, 192), "StalePhaseWait", replace={"        phase ^= 1\n": ""},
             config={"policy": "eager"}),
    Exercise(2, 2, (128, 128, 192), "wrong", replace={"IDESC, kc + k)": "IDESC, k)"}),
    Exercise(2, 3, (128, 128, 192), "SharedMemoryHazard",
             replace={"        ptx.mbarrier_wait(mma_done, phase)\n        phase ^= 1\n":
                      "        phase ^= 1\n        ptx.mbarrier_wait(mma_done, phase)\n"}),
    # chapter 3
    Exercise(3, 1, (256, 256, 128), "ok",
             replace={"cuda.blockIdx.x * BLOCK_M": "cuda.blockIdx.y * BLOCK_M",
                      "cuda.blockIdx.y * BLOCK_N": "cuda.blockIdx.x * BLOCK_N"}),
    Exercise(3, 101, (256, 128, 128), "MemoryFault",
             replace={"cuda.blockIdx.x * BLOCK_M": "cuda.blockIdx.y * BLOCK_M",
                      "cuda.blockIdx.y * BLOCK_N": "cuda.blockIdx.x * BLOCK_N"}),
    # chapter 4
    Exercise(4, 1, (128, 128, 128), "ExpectTxMismatch", replace={"ptx.mbarrier_arrive_expect_tx(tma2mma, 2 * TILE_BYTES)":
                                                  "ptx.mbarrier_arrive_expect_tx(tma2mma, TILE_BYTES)"}),
    Exercise(4, 2, (128, 128, 128), "MissingProxyFence",
             replace={"    tmem_rows_to_staging(base + D_STAGING, tmem, warp, tid % 32, 0, BLOCK_N)\n"
                      "    ptx.fence_proxy_async()\n":
                      "    tmem_rows_to_staging(base + D_STAGING, tmem, warp, tid % 32, 0, BLOCK_N)\n"}),
    Exercise(4, 3, (128, 128, 128), "UninitializedRead",
             replace={"    if tid == 0:\n        ptx.tcgen05_commit(mma2ld)\n": "",
                      "ptx.mbarrier_wait(mma2ld, 0)": "ptx.mbarrier_wait(mma2tma, (k_tiles - 1) % 2)"},
             config={"policy": "random", "seed": 0}),
    # chapter 5
    Exercise(5, 1, (128, 128, 320), "ok", config={"pipe_depth": 1}),
    Exercise(5, 2, (128, 128, 320), "SharedMemoryHazard",
             replace={_V5_RELEASE_WAIT + _V5_REFILL: _V5_REFILL + _V5_RELEASE_WAIT}),
    # chapter 6
    Exercise(6, 1, (512, 384, 192), "ok", config={"num_ctas": 1}),
    Exercise(6, 2, (512, 384, 192), "StalePhaseWait", replace=RESET_PHASES, config={"pipe_depth": 3}),
    Exercise(6, 102, (512, 384, 384), "ok", replace=RESET_PHASES, config={"pipe_depth": 3}),
    # chapter 7
    Exercise(7, 1, (256, 256, 192), "MissingTcgen05Fence",
             replace={"ptx.named_barrier_sync(barrier_id, barrier_threads)  # ... which the other threads learn here":
                      "cuda.syncthreads()  # ... which the other threads learn here"}),
    Exercise(7, 101, (256, 256, 192), "Deadlock",
             replace={"ptx.named_barrier_sync(barrier_id, barrier_threads)  # ... which the other threads learn here":
                      "cuda.syncthreads()  # ... which the other threads learn here\n"
                      + " " * 12 + "ptx.tcgen05_fence_after()"}),
    Exercise(7, 2, (256, 256, 192), "ok", config={"acc_stages": 1}),
    # chapter 8
    Exercise(8, 1, (256, 512, 128), "Deadlock",
             replace={"ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), PAIR)":
                      "ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), 0b01)"}),
    Exercise(8, 2, (256, 512, 128), "TmemLifecycleError",
             replace={"        ptx.cluster_arrive()  # neither CTA frees TMEM while the pair still uses it\n"
                      "        ptx.cluster_wait()\n": "",
                      "            ptx.tmem_dealloc_cg2(tmem, TMEM_COLS)\n":
                      "            ptx.tmem_dealloc_cg2(tmem, TMEM_COLS)\n"
                      "        ptx.cluster_arrive()\n        ptx.cluster_wait()\n"}),
    Exercise(8, 3, (256, 512, 128), "ok",
             replace={"                ptx.mbarrier_init(pipeline.barrier(base + TMA2MMA, s), 1)\n":
                      "                if rank == 0:\n                    ptx.mbarrier_init(pipeline.barrier(base + TMA2MMA, s), 1)\n"}),
    # chapter 9
    Exercise(9, 1, (512, 256, 512), "SharedMemoryHazard",
             replace={"ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), CONSUMERS)":
                      "ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 1)"}),
    # chapter 10
    Exercise(10, 2, (512, 512, 128), "ok", config={"num_clusters": 4, "tile_n": 256}),
    Exercise(10, 4, (512, 512, 128), "ClcRuleError",
             replace={"more, _t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, asked)":
                      "_more, _t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, asked)"}),
    Exercise(10, 5, (512, 512, 128), "Deadlock",
             replace={"pipeline.wait_cluster(base + LD2MMA, acc, acc_phase ^ uint32(1))":
                      "pipeline.wait_cluster(base + LD2MMA, acc, acc_phase)"}),
]


def exercise(chapter, number):
    """The exercise ``number`` of chapter ``chapter``."""
    for ex in EXERCISES:
        if (ex.chapter, ex.number) == (chapter, number):
            return ex
    raise KeyError(f"chapter {chapter} has no exercise {number} in gemm_kernels.exercises")
