"""Correct variants of the chapter kernels that a reader may write (issue 20, item 3): each is a
``book_helpers.variant`` edit of a chapter's kernel that is still correct on the chip, so the
emulator must stay silent on it under every completion order (tests/test_correct_variants.py).

VARIANTS: name -> (chapter, {old: new}, (M, N, K), config, why it is correct). The shapes make every ring
of barriers wrap several times (a lane that waits only in the tail meets a barrier many phases on).
"""

# chapter 7's producer loop, as in the package
_V7_PRODUCER_WAIT = (
    "                    pipeline.wait(base + MMA2TMA, stage, phase)  # the stage is empty (all 32 lanes wait)\n"
    "                    if ptx.elect_sync():  # one arrival per stage: the barrier counts 1\n")
_V8_PRODUCER_WAIT = (
    "                    pipeline.wait_cluster(base + MMA2TMA, stage, phase)  # the stage is empty\n"
    "                    if ptx.elect_sync():\n")
def _elected_full_wait(wait, more, indent=20):
    """The MMA warp's wait on a full stage made by the elected lane alone, right before it issues."""
    pad, pad4 = " " * indent, " " * (indent + 4)
    return {
        f"{pad}pipeline.{wait}(base + TMA2MMA, stage, phase)  # the stage is full{more}\n"
        f"{pad}ptx.tcgen05_fence_after()\n": "",
        f"{pad}if ptx.elect_sync():\n{pad4}for k in range(BLOCK_K // MMA_K):\n":
        f"{pad}if ptx.elect_sync():\n{pad4}pipeline.{wait}(base + TMA2MMA, stage, phase)\n"
        f"{pad4}ptx.tcgen05_fence_after()\n{pad4}for k in range(BLOCK_K // MMA_K):\n",
    }


VARIANTS = {
    "ch7: CUTLASS's producer (only the elected lane waits on the empty stage; all lanes in the tail)": (
        7, {_V7_PRODUCER_WAIT: "                    if ptx.elect_sync():  # one arrival per stage\n"
                               "                        pipeline.wait(base + MMA2TMA, stage, phase)\n"},
        (128, 256, 512), {"pipe_depth": 2},
        "elect.sync reconverges the warp every k-block; the lanes that skip the wait issue nothing"),
    "ch7: CUTLASS's producer, with the tail in the elected lane too": (
        7, {_V7_PRODUCER_WAIT: "                    if ptx.elect_sync():  # one arrival per stage\n"
                               "                        pipeline.wait(base + MMA2TMA, stage, phase)\n",
            "            pipeline.producer_tail(base + MMA2TMA, stage, phase, DEPTH)\n":
            "            if ptx.elect_sync():\n"
            "                pipeline.producer_tail(base + MMA2TMA, stage, phase, DEPTH)\n"},
        (128, 256, 512), {"pipe_depth": 2},
        "the lane that issued every load waits for every commit before the CTA tears down"),
    "ch7: CUTLASS's consumer (only the elected MMA lane waits on the full stage)": (
        7, _elected_full_wait("wait", ""), (128, 256, 512), {"pipe_depth": 2},
        "the thread that waits is the one that fences and issues the MMAs"),
    "ch7: one thread waits on the accumulator for the whole warp, then a warp barrier": (
        7, {"                ptx.mbarrier_wait_sleep(pipeline.barrier(base + MMA2LD, acc), acc_phase)"
            "  # a whole tile's MMAs: sleep\n":
            "                if ptx.elect_sync():\n"
            "                    ptx.mbarrier_wait_sleep(pipeline.barrier(base + MMA2LD, acc), acc_phase)\n"
            "                cuda.syncwarp()  # the other lanes are ordered after the elected lane's wait\n"},
        (128, 256, 512), {"pipe_depth": 2},
        "the warp barrier orders every lane after the waiting lane; each lane fences before its tcgen05.ld"),
    "ch7: every writeback thread hands the accumulator back (count 128, no elect)": (
        7, {"ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)": "ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 128)",
            "            if ptx.elect_sync():  # one arrival per warp: the whole warp's loads have completed\n":
            "            if True:  # every thread arrives for its own loads\n"},
        (128, 256, 512), {"pipe_depth": 2},
        "each thread's arrive follows its own tcgen05.wait::ld and fence"),
    "ch7: only the elected MMA lane waits for the drained accumulator": (
        7, {"                pipeline.wait(base + LD2MMA, acc, acc_phase)  # drained by the writeback\n"
            "                ptx.tcgen05_fence_after()\n":
            "                if ptx.elect_sync():\n"
            "                    pipeline.wait(base + LD2MMA, acc, acc_phase)\n"
            "                    ptx.tcgen05_fence_after()\n"},
        (128, 256, 512), {"pipe_depth": 2},
        "the elected lane (the lowest, lane 0, every time) is the one that issues the MMAs"),
    "ch8: CUTLASS's producer in both CTAs of the pair": (
        8, {_V8_PRODUCER_WAIT: "                    if ptx.elect_sync():\n"
                               "                        pipeline.wait_cluster(base + MMA2TMA, stage, phase)\n"},
        (256, 256, 512), {"pipe_depth": 2},
        "as in chapter 7; the tail still waits for the leader's last multicast commits"),
    "ch8: CUTLASS's consumer (the elected lane of the leader's MMA warp waits)": (
        8, _elected_full_wait("wait_cluster", ", in both CTAs", 24), (256, 256, 512), {"pipe_depth": 2},
        "as in chapter 7"),
}
