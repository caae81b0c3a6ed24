"""A deadlock's first line names the root wait, found by following the wait-for chain from the
barrier most threads wait on (gemm_kernels/emu/deadlock.py): the barrier, its phase, what it lacks,
and the party that was expected to provide it, in every completion order."""
import pytest

from gemm_kernels.emu import errors as E
from tests import emu_kernels as K
from tests.test_emu_bugs import ring, tma_load

POLICIES = [("eager", 0), ("lazy", 0), ("random", 1)]


def _first_line(fn):
    with pytest.raises(E.Deadlock) as ei:
        fn()
    return str(ei.value).splitlines()


@pytest.mark.parametrize("policy,seed", POLICIES)
def test_producer_wrong_parity_names_the_producers_wait(policy, seed):
    """The consumers (32 threads) starve on full[0]; the root is the producer's parity-0 wait on the
    fresh empty[0], which only the consumers could complete: a cycle."""
    lines = _first_line(lambda: ring(1, policy, seed))
    first = lines[0]
    assert first.startswith("deadlock in cluster 0: thread 0 (warp 0) of CTA (0,0,0) waits on mbarrier empty[0]"), first
    for needle in ("for phase 0 (parity 0) at tests/emu_kernels.py:", "which lacks 32 of 32 arrivals (count 32, set at",
                   "threads 32-63, warps 1",
                   "now wait on mbarrier full[0]", "wait with parity 1"):
        assert needle in first, (needle, first)
    assert "wait-for chain" in lines[1] and "mbarrier full[0] phase 0 <- mbarrier empty[0] phase 0" in lines[1], lines[1]


@pytest.mark.parametrize("policy,seed", POLICIES)
def test_consumer_missing_arrival_names_the_lane_that_did_not_arrive(policy, seed):
    """Lane 31 of the consumer warp stops arriving on empty: the root is the producer's wait on
    empty[0] phase 1 (31 of 32 arrivals), expected from thread 63, which waits on full[0]."""
    first = _first_line(lambda: ring(3, policy, seed))[0]
    assert first.startswith("deadlock in cluster 0: thread 0 (warp 0) of CTA (0,0,0) waits on mbarrier empty[0]"), first
    for needle in ("for phase 1 (parity 1) at tests/emu_kernels.py:", "which lacks 1 of 32 arrivals", "come from thread 63 (warp 1)",
                   "they arrived on it, or issued a copy or commit to it, in earlier phases", "now waits on mbarrier full[0]"):
        assert needle in first, (needle, first)


@pytest.mark.parametrize("policy,seed", POLICIES)
def test_expect_tx_too_large_names_the_announcement(policy, seed):
    """Two boxes announced, one delivered: the root is tma_bar phase 0 itself, lacking 16384 bytes,
    with the announcing line and thread; no copy is in flight."""
    first = _first_line(lambda: tma_load(2 * K.BOX_BYTES, policy=policy, seed=seed))[0]
    for needle in ("wait on mbarrier tma_bar", "for phase 0 (parity 0) at tests/emu_kernels.py:", "which lacks 16384 transaction bytes",
                   "announced 32768 B", "by thread 0 (warp 0, lane 0)", "emu_kernels.py:",
                   "the copies delivered 16384 B and no copy to it is in flight"):
        assert needle in first, (needle, first)


@pytest.mark.parametrize("policy,seed", POLICIES)
def test_chapter7_producer_at_phase_0_names_the_producers_wait(policy, seed):
    """Chapter 7's real kernel, with idle warps (6-7) parked at the final CTA barrier: the producer
    starts at phase 0. The writeback (most threads) starves on mma2ld[0]; the root is the producer's
    wait on the fresh mma2tma[0], at its kernel line, which the MMA issuer would signal but waits on
    tma2mma[0]. The idle warps are not blamed."""
    from gemm_kernels.book_helpers import variant
    from gemm_kernels.check import random_operands

    broken = variant(7, {"phase = uint32(1)  # the producer's first pass finds every stage empty":
                         "phase = uint32(0)  # the producer's first pass finds every stage empty"})
    wait_line = broken.first_line + broken.edited[:broken.edited.index(
        "pipeline.wait(base + MMA2TMA, stage, phase)  # the stage is empty")].count("\n")
    a, b = random_operands(128, 128, 128)
    with pytest.raises(E.Deadlock) as ei:
        broken.entry(a, b, backend="emulator", policy=policy, seed=seed)
    first = str(ei.value).splitlines()[0]
    assert first.startswith("deadlock in cluster 0: 32 threads (threads 128-159, warps 4) of CTA (0,0,0) wait on "
                            "mbarrier mma2tma[0]"), first
    for needle in (f"v7_warp_specialized.py>:{wait_line} (gemm_v7_kernel)", "for phase 0 (parity 0)",
                   "threads 160-191, warps 5", "the MMA issuer signals it", "now wait on mbarrier tma2mma[0]",
                   "wait with parity 1"):
        assert needle in first, (needle, first)
    assert "warps 6-7" not in first, first


def _v8_deadlock(edit, policy, seed):
    from gemm_kernels.book_helpers import kernel_line, variant
    from gemm_kernels.check import random_operands

    broken = variant(8, edit)
    a, b = random_operands(256, 768, 128)
    with pytest.raises(E.Deadlock) as ei:
        broken.entry(a, b, backend="emulator", policy=policy, seed=seed, num_clusters=1)
    return broken, kernel_line, str(ei.value).splitlines()[0]


@pytest.mark.parametrize("policy,seed", [("lazy", 0), ("random", 1)])
def test_chapter8_elected_arrivals_missing_are_the_peer_ctas_warps(policy, seed):
    """Chapter 8 with the writeback's hand-back mapped to its own CTA instead of the leader's: the
    leader's ld2mma lacks the peer's arrivals. One elected lane arrives per warp, so the missing party
    is the peer CTA's writeback warps (not "the other lanes of the warps that arrived"), and the report
    names where they arrive instead, at the kernel line."""
    broken, kernel_line, first = _v8_deadlock(
        {"leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA, acc), 0)":
         "leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA, acc), rank)"}, policy, seed)
    call = "subtiled_writeback(tmap_d, lanes + acc * ACC_COLS"  # the arrive runs in the shared writeback
    for needle in ("wait on mbarrier ld2mma[0] [CTA (0,0,0)", "lacks 4 of 8 arrivals", "(count 8, set at",
                   "threads 0-127, warps 0-3) of CTA (1,0,0)", "one elected lane per warp arrives",
                   f"v8_two_cta.py>:{kernel_line(broken, call)} (gemm_v8_kernel)", "(mapa)"):
        assert needle in first, (needle, first)
    assert "the other lanes of the warps that arrived" not in first, first


@pytest.mark.parametrize("policy,seed", [("lazy", 0), ("random", 1)])
def test_chapter8_commit_to_one_cta_names_the_commit(policy, seed):
    """Exercise 8.1: the accumulator's commit multicasts to the leader only. The peer's writeback starves
    on its mma2ld; the report names the commit that signalled the leader's barrier, at its line."""
    commit = "ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), 0b01)"
    broken, kernel_line, first = _v8_deadlock(
        {"ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), PAIR)": commit}, policy, seed)
    for needle in ("of CTA (1,0,0)", "wait on mbarrier mma2ld[0] [CTA (1,0,0)", "they arrived on the same barrier of CTA (0,0,0)",
                   f"v8_two_cta.py>:{kernel_line(broken, commit)} (gemm_v8_kernel)"):
        assert needle in first, (needle, first)
