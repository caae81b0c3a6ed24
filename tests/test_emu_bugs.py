"""The bug catalogue: for every diagnostic the emulator raises (gemm_kernels/emu/errors.py), a small
kernel (tests/emu_kernels.py) that commits exactly that bug, a test that the emulator names it (the
class, and the barrier / buffer / threads in the message), and the corrected kernel, which must pass
silently and give the right answer under every policy (eager, lazy, random with two seeds).

Some bugs are races: they show only when the asynchronous unit is still busy at the wrong moment.
The eager policy completes TMA copies and MMAs the moment they are issued, so a buffer reused too
early is never caught there (and the answer is even right, as it may be on a GPU); the lazy policy
completes them as late as possible, which is where such a diagnostic must appear. Each test says
under which policies its diagnostic is guaranteed; the random policy may or may not expose it.
"""
import re
import time
from pathlib import Path

import numpy as np
import pytest

from gemm_kernels import layouts
from gemm_kernels.emu import errors as E
from tests import emu_kernels as K

ALL = [("eager", 0), ("lazy", 0), ("random", 1), ("random", 2)]
ROOT = Path(__file__).resolve().parents[1]


def _fp16(shape, seed):
    return (np.random.default_rng(seed).standard_normal(shape) * 0.5).astype(np.float16)


def _ref(a, b):
    return a.astype(np.float32) @ b.astype(np.float32).T


def _raises(exc, fn, *needles):
    """fn() raises exactly ``exc`` (not a subclass of another diagnostic) and the message contains
    every needle; returns the message."""
    with pytest.raises(E.EmulatorError) as ei:
        fn()
    assert type(ei.value) is exc, f"expected {exc.__name__}, got {type(ei.value).__name__}: {ei.value}"
    msg = str(ei.value)
    for n in needles:
        assert n in msg, f"{n!r} not in the message:\n{msg}"
    return msg


# ---------------------------------------------------------------------------------------------------
# runners (bug = 0 is the corrected kernel)
# ---------------------------------------------------------------------------------------------------
def ring(bug, policy="lazy", seed=0, rounds=6, stages=2):
    out = np.zeros(32 * rounds, dtype=np.uint32)
    K.run(K.k_ring, (out, rounds, stages, bug), block=64, policy=policy, seed=seed, names=K.RING_NAMES)
    return out


def arrivals(count, bug, policy="lazy", seed=0):
    out = np.zeros(4, dtype=np.uint32)
    K.run(K.k_arrivals, (out, count, bug), block=64, policy=policy, seed=seed, names=K.bar_names("ready"))
    return out


def tma_load(nbytes, c0=0, policy="lazy", seed=0):
    arr = np.arange(256 * 128, dtype=np.uint16).reshape(256, 128)
    out = np.zeros(K.BOX_BYTES // 4, dtype=np.uint32)
    K.run(K.k_tma_load, (out, c0, 0, nbytes, 0, 64), block=128, policy=policy, seed=seed,
          names=K.bar_names("tma_bar"), maps=K.tmaps((K.TMAP_A, arr, 128, 64)))
    return out


def stale(bug, policy="lazy", seed=0):
    arr = np.arange(128 * 128, dtype=np.uint16).reshape(128, 128)
    out = np.zeros(2, dtype=np.uint32)
    K.run(K.k_stale, (out, bug), block=32, policy=policy, seed=seed, names=K.bar_names("tma_bar"),
          maps=K.tmaps((K.TMAP_A, arr, 128, 64)))
    return out


AB = _fp16((128, 128), 1), _fp16((128, 128), 2)


def _on_ab(kernel, out_shape, bug, block, names, policy, seed):
    """Run ``kernel(out, bug)`` with tensor maps over the operands AB (128 x 64 boxes); return out."""
    a, b = AB
    out = np.zeros(out_shape, dtype=np.float32)
    K.run(kernel, (out, bug), block=block, policy=policy, seed=seed, names=names,
          maps=K.tmaps((K.TMAP_A, a, 128, 64), (K.TMAP_B, b, 128, 64)))
    return out


def mma_reuse(bug, policy="lazy", seed=0):
    return _on_ab(K.k_mma_reuse, (128, 128), bug, 128, K.REUSE_NAMES, policy, seed)


def acc_reuse(bug, policy="lazy", seed=0):
    return _on_ab(K.k_acc_reuse, (2, 128, 128), bug, 160, K.ACC_NAMES, policy, seed)


def drain(bug, policy="lazy", seed=0):
    return _on_ab(K.k_drain, (128, 128), bug, 128, K.DRAIN_NAMES, policy, seed)


def proxy_fence(bug, policy="lazy", seed=0):
    a, b = AB[0][:, :64].copy(), AB[1][:, :64].copy()
    d = np.zeros((128, 128), dtype=np.float32)
    K.run(K.k_proxy_fence, (a, b, d, bug), block=128, policy=policy, seed=seed, names=K.bar_names("mma_done"))
    return d


def tma_store(bug, policy="lazy", seed=0):
    src = np.arange(128 * 128, dtype=np.uint16).reshape(128, 128)
    d1, d2 = np.zeros_like(src), np.zeros_like(src)
    o = np.zeros(128, np.uint32)
    K.run(K.k_tma_store, (o, o.copy(), 0, 0, 64, 0, K.BOX_BYTES, bug), block=128, policy=policy, seed=seed,
          names=K.bar_names("tma_bar"),
          maps=K.tmaps((K.TMAP_A, src, 128, 64), (K.TMAP_B, d1, 128, 64), (K.TMAP_C, d2, 128, 64)))
    return src, d1, d2


TMEM_SENTINEL = 0xDEADBEEF  # not a TMEM address: a thread that never wrote its slot shows it


def tmem_life(bug, policy="lazy", seed=0):
    out = np.full(64, TMEM_SENTINEL, dtype=np.uint32)
    K.run(K.k_tmem_life, (out, bug), block=64, policy=policy, seed=seed)
    return out


def collectives(bug, policy="lazy", seed=0):
    out = np.zeros(128, dtype=np.uint32)
    K.run(K.k_collectives, (out, bug), block=64, policy=policy, seed=seed)
    return out


def named(bug, policy="lazy", seed=0, rounds=3):
    out = np.zeros(64 * rounds + 4, dtype=np.uint32)
    K.run(K.k_named, (out, rounds, bug), block=256, policy=policy, seed=seed)
    return out


def mma(idesc=None, desc_clear=0, quarter_bug=0, block=128, policy="lazy", seed=0):
    a, b = AB[0][:, :64].copy(), AB[1][:, :64].copy()
    out = np.zeros((128, 128), dtype=np.float32)
    idesc = layouts.make_instr_desc(128, 128) if idesc is None else idesc
    K.run(K.k_mma, (out, idesc, 128, 4, 1, 0, desc_clear, quarter_bug), block=block, policy=policy, seed=seed,
          names=K.MMA_NAMES, maps=K.tmaps((K.TMAP_A, a, 128, 64), (K.TMAP_B, b, 128, 64)))
    return out


# ---------------------------------------------------------------------------------------------------
# Deadlock
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", ALL)
def test_deadlock_producer_waits_consumer_parity(policy, seed):
    """The producer waits on 'empty' with parity 0 on a fresh barrier (the consumer's parity): it
    blocks, so 'full' never completes. Reported at once, naming both barriers, phases, parities and
    the waiting threads."""
    t0 = time.perf_counter()
    msg = _raises(E.Deadlock, lambda: ring(1, policy, seed),
                  "threads 0 (warps 0) wait on mbarrier empty[0]", "threads 32-63 (warps 1) wait on mbarrier full[0]",
                  "phase 0 (parity 0) has 0 of 32 arrivals", "waiting for parity 0", "threads 1-31 have exited")
    assert time.perf_counter() - t0 < 5.0, "a deadlock must be reported at once, not after a timeout (5 s allows a loaded CI machine)"
    assert "no asynchronous work is in flight" in msg


@pytest.mark.parametrize("policy,seed", ALL)
def test_deadlock_fixed_ring(policy, seed):
    np.testing.assert_array_equal(ring(0, policy, seed), np.repeat(7 * np.arange(6) + 1, 32))


@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_deadlock_expect_tx_too_many_announced(policy):
    """expect_tx announces two boxes, one TMA load comes: the phase never completes; the report shows
    the bytes still outstanding on the named barrier."""
    t0 = time.perf_counter()
    _raises(E.Deadlock, lambda: tma_load(2 * K.BOX_BYTES, policy=policy),
            "mbarrier tma_bar", "1 of 1 arrivals, tx-count 16384", "threads 0-127 (warps 0-3)")
    assert time.perf_counter() - t0 < 5.0


def test_lapped_waiter_is_a_stale_phase_wait():
    """All 32 lanes of the producer warp wait on 'empty'; only lane 0 produces. Nothing keeps lanes 1-31
    in step: under the random policy (seed 1) some lanes fall two phases behind lane 0, and their next
    wait's parity names both the phase they mean and a later, already completed one: on a GPU such a
    wait returns early or hangs, depending on timing. The emulator names the skipped phases at the wait
    (before the hang that would follow). (Lazy/eager run the lanes in step: no report, right answer.)"""
    _raises(E.StalePhaseWait, lambda: ring(2, "random", 1, rounds=40, stages=1), "mbarrier empty[0]",
            "counting its waits on this barrier in order", "had already completed phases up to", "emu_kernels.py:")
    np.testing.assert_array_equal(ring(2, "lazy", 0, rounds=40, stages=1), np.repeat(7 * np.arange(40) + 1, 32))


# ---------------------------------------------------------------------------------------------------
# StalePhaseWait
# ---------------------------------------------------------------------------------------------------
def test_stale_phase_wait_lazy():
    """The phase bit is not flipped after the first chunk: the second wait (parity 0 again) passes at
    once on the phase the thread already consumed, while its second TMA load is still in flight.
    Guaranteed under lazy (the load is still pending at the wait)."""
    _raises(E.StalePhaseWait, lambda: stale(1, "lazy"), "thread 0 (warp 0, lane 0)", "mbarrier tma_bar",
            "with parity 0", "already consumed", "phase 1")


def test_stale_phase_eager_hangs_and_is_named_stale():
    """Under eager the second load lands at issue: phase 1 completes, parity 0 now names the NEXT
    phase and the wait blocks forever. The hang's root wait skipped phase 1, so the report has the
    bug's class under every order (StalePhaseWait, issue 27), with the deadlock's chain and dump."""
    _raises(E.StalePhaseWait, lambda: stale(1, "eager"), "deadlock in cluster 0", "mbarrier tma_bar",
            "phase 2 (parity 0)", "completed unseen", "waiting for parity 0")


@pytest.mark.parametrize("policy,seed", [("random", 1), ("random", 2)])
def test_stale_phase_random_is_stale_or_deadlock(policy, seed):
    with pytest.raises((E.StalePhaseWait, E.Deadlock)) as ei:
        stale(1, policy, seed)
    assert "tma_bar" in str(ei.value)


@pytest.mark.parametrize("policy,seed", ALL)
def test_stale_phase_fixed(policy, seed):
    out = stale(0, policy, seed)
    assert out.tolist() == [(1 << 16) | 0, (65 << 16) | 64]  # first words of chunks 0 and 1 (row 0)


# ---------------------------------------------------------------------------------------------------
# ArrivalMismatch
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", ALL)
def test_arrival_mismatch_whole_warp_arrives_on_count_1(policy, seed):
    """All 32 lanes of warp 1 arrive on a barrier initialised for one arrival: on an H200 this failed
    the launch (3 of 3 runs); the report names the source line and the missing wait as the other cause."""
    _raises(E.ArrivalMismatch, lambda: arrivals(1, 1, policy, seed), "mbarrier ready", "expects 1 arrival(s)",
            "of warp 1 of CTA (0,0,0)", "back to back", "emu_kernels.py:", "On an H200 this failed the launch",
            "is missing between them")


def test_arrival_mismatch_init_count_zero():
    _raises(E.ArrivalMismatch, lambda: arrivals(0, 0), "mbarrier ready", "init count 0")


@pytest.mark.parametrize("policy,seed", ALL)
def test_arrival_fixed(policy, seed):
    assert arrivals(32, 0, policy, seed)[:2].tolist() == [1, 1]


def test_reinit_live_barrier_without_inval():
    """mbarrier.init over a barrier that completed a phase, without mbarrier.inval (the base class:
    no more specific diagnostic applies)."""
    _raises(E.EmulatorError, lambda: arrivals(32, 2), "mbarrier.init of live mbarrier ready", "thread 0",
            "invalidate it first")


# ---------------------------------------------------------------------------------------------------
# ExpectTxMismatch
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", ALL)
def test_expect_tx_too_many_bytes_arrive(policy, seed):
    """expect_tx announces half a box; the whole box (16384 bytes) lands."""
    _raises(E.ExpectTxMismatch, lambda: tma_load(K.BOX_BYTES // 2, policy=policy, seed=seed), "mbarrier tma_bar",
            "delivered 16384 bytes", "announced: 8192 B by thread 0", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_expect_tx_fixed(policy, seed):
    out = tma_load(K.BOX_BYTES, policy=policy, seed=seed)
    assert out[0] == (1 << 16)  # elements (0, 0) and (0, 1)


# ---------------------------------------------------------------------------------------------------
# SharedMemoryHazard
# ---------------------------------------------------------------------------------------------------
def test_hazard_tma_into_buffer_mma_reads():
    """The second chunk's TMA loads go into A/B while chunk 0's MMAs still read them (no wait on
    'empty'). Guaranteed under lazy (MMAs pending at the TMA issue)."""
    _raises(E.SharedMemoryHazard, lambda: mma_reuse(1, "lazy"), "thread 0 (warp 0, lane 0)",
            "issued a TMA load at tests/emu_kernels.py:", "into A tile", "while MMA M=128 N=128", "(issued at tests/emu_kernels.py:",
            "still reads those bytes", "tcgen05.commit at tests/emu_kernels.py:", "'empty' barrier")


def test_hazard_mma_reads_buffer_tma_writes():
    """The MMAs of chunk 0 are issued without waiting on 'full'. Guaranteed under lazy."""
    _raises(E.SharedMemoryHazard, lambda: mma_reuse(2, "lazy"), "issued an MMA reading operand A at A tile",
            "while TMA load", "is still writing it")


@pytest.mark.parametrize("policy,seed", [("eager", 0), ("random", 1), ("random", 2)])
def test_hazards_reported_in_every_order(policy, seed):
    """Under eager every async op completes at issue, so the buffer races resolve in the kernel's favour
    (the answer is right, as it may be on a GPU). Happens-before still names them: no barrier orders
    the TMA load after the MMA's read (bug 1), the MMA's read after the TMA load (bug 2), or the
    staging rewrite after the TMA store's read (tma_store bug 1)."""
    _raises(E.SharedMemoryHazard, lambda: mma_reuse(1, policy, seed), "A tile", "TMA load", "MMA")
    _raises(E.SharedMemoryHazard, lambda: mma_reuse(2, policy, seed), "A tile", "TMA load", "MMA")
    _raises(E.SharedMemoryHazard, lambda: tma_store(1, policy, seed), "staging", "TMA store")


def test_hazard_staging_overwritten_before_tma_store_read_it():
    """The staging box is rewritten (ordinary stores, fenced) before cp.async.bulk.wait_group.read:
    the first TMA store may not have read it yet. Happens-before names both lines."""
    _raises(E.SharedMemoryHazard, lambda: tma_store(1, "lazy"), "staging", "the read by the TMA stores issued by "
            "warp 0", "emu_kernels.py:", "nothing orders them")


@pytest.mark.parametrize("policy,seed", ALL)
def test_hazards_fixed(policy, seed):
    a, b = AB
    np.testing.assert_allclose(mma_reuse(0, policy, seed), _ref(a, b), rtol=1e-5, atol=1e-3)
    src, d1, d2 = tma_store(0, policy, seed)
    np.testing.assert_array_equal(d1[:, 64:], src[:, :64])
    np.testing.assert_array_equal(d2[:, 64:], src[:, :64] + 1)


# ---------------------------------------------------------------------------------------------------
# MissingProxyFence
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", [("eager", 0), ("lazy", 0), ("random", 1)])
def test_missing_proxy_fence_before_mma(policy, seed):
    """Step 1's ordinary stores into A and B, a CTA barrier, no fence.proxy.async: the MMA (async
    proxy) reads them. Caught at issue under every policy."""
    _raises(E.MissingProxyFence, lambda: proxy_fence(1, policy, seed), "the MMA issued by thread 0",
            "(A tile)", "with an ordinary store", "fence.proxy.async")


@pytest.mark.parametrize("policy,seed", ALL)
def test_missing_proxy_fence_before_tma_store(policy, seed):
    _raises(E.MissingProxyFence, lambda: tma_store(2, policy, seed), "the TMA store issued by thread 0",
            "(staging)", "with an ordinary store", "fence.proxy.async")


@pytest.mark.parametrize("policy,seed", ALL)
def test_proxy_fence_fixed(policy, seed):
    a, b = AB[0][:, :64], AB[1][:, :64]
    np.testing.assert_allclose(proxy_fence(0, policy, seed), _ref(a, b), rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------------------------------
# TmemHazard
# ---------------------------------------------------------------------------------------------------
def test_tmem_hazard_ld_while_mma_writes():
    """The epilogue waits with __syncthreads() instead of on 'mma_done' and reads TMEM while the
    MMAs still write it. Guaranteed under lazy."""
    _raises(E.TmemHazard, lambda: mma_reuse(3, "lazy"), "loads TMEM columns 0..31",
            "while MMA M=128 N=128 K=16 into TMEM columns 0..127", "has not completed")


@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_tmem_hazard_mma_while_ld_outstanding(policy):
    """The epilogue hands the accumulator back (arrive on 'acc_empty', then a named barrier) before
    tcgen05.wait::ld: the next tile's MMA is issued over columns with loads outstanding. Guaranteed
    under eager and lazy (the race is between threads, not with an async unit)."""
    _raises(E.TmemHazard, lambda: acc_reuse(1, policy), "thread 128 (warp 4, lane 0)",
            "issued an MMA at tests/emu_kernels.py:", "into TMEM columns 0..127", "has a tcgen05.ld of columns",
            "(at tests/emu_kernels.py:", "outstanding")


@pytest.mark.parametrize("policy,seed", ALL)
def test_tmem_hazards_fixed(policy, seed):
    a, b = AB
    out = acc_reuse(0, policy, seed)
    for t in range(2):
        np.testing.assert_allclose(out[t], _ref(a[:, 64 * t:64 * t + 64], b[:, 64 * t:64 * t + 64]),
                                   rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------------------------------
# TmemLifecycleError
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_tmem_leak(policy):
    _raises(E.TmemLifecycleError, lambda: tmem_life(1, policy), "CTA (0,0,0) exited with TMEM columns still "
            "allocated: 0..63 (by warp 0 of CTA (0,0,0))")


def test_tmem_dealloc_by_another_warp():
    _raises(E.TmemLifecycleError, lambda: tmem_life(2), "TMEM columns 0..63 allocated by warp 0 of CTA (0,0,0) "
            "are freed by warp 1 of CTA (0,0,0)")


def test_tmem_missing_relinquish():
    _raises(E.TmemLifecycleError, lambda: tmem_life(3), "never executed tcgen05.relinquish_alloc_permit")


def test_tmem_dealloc_while_mma_writes():
    """Warp 0 frees the accumulator right after the last commit. Guaranteed under lazy."""
    _raises(E.TmemLifecycleError, lambda: mma_reuse(4, "lazy"), "warp 0 of CTA (0,0,0) freed TMEM columns 0..127",
            "while MMA M=128 N=128", "still writes them")


@pytest.mark.parametrize("policy,seed", ALL)
def test_tmem_lifecycle_fixed(policy, seed):
    out = tmem_life(0, policy, seed)
    assert (out != TMEM_SENTINEL).all()  # every thread wrote what it read
    assert (out == 0).all()  # the first allocation of a CTA: lane 0, column 0 (the emulator allocates from 0)


# ---------------------------------------------------------------------------------------------------
# LaneQuarterViolation
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_lane_quarter_violation(policy):
    """8 warps, lane base 32*warp instead of 32*(warp % 4): warp 4 reads lane 128."""
    _raises(E.LaneQuarterViolation, lambda: mma(quarter_bug=1, block=256, policy=policy),
            "warp 4 of CTA (0,0,0) executed tcgen05.ld.32x32b at TMEM lane 128", "lanes 0..31", "warp id % 4 = 0")


# ---------------------------------------------------------------------------------------------------
# DivergentCollective
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", ALL)
def test_divergent_elect_reached_by_part_of_a_warp(policy, seed):
    _raises(E.DivergentCollective, lambda: collectives(1, policy, seed), "warp 1 of CTA (0,0,0)", "elect.sync",
            "exited")


@pytest.mark.parametrize("policy,seed", ALL)
def test_divergent_lanes_at_different_collectives(policy, seed):
    msg = _raises(E.DivergentCollective, lambda: collectives(2, policy, seed), "warp 1 of CTA (0,0,0)",
                  "elect.sync", "syncwarp")
    if policy == "random":  # whichever lanes got there first
        assert re.search(r"lanes [\d,-]+ wait at (elect.sync|syncwarp) while lane \d+ reached", msg), msg
    else:
        assert "lanes 0-15 wait at elect.sync while lane 16 reached syncwarp" in msg, msg


@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_divergent_operands_to_tmem_ld(policy):
    _raises(E.DivergentCollective, lambda: collectives(3, policy), "warp 0 of CTA (0,0,0)",
            "lanes gave different operands to tcgen05.ld.32x32b.x8", "lane 1: 1")


@pytest.mark.parametrize("policy,seed", ALL)
def test_divergent_partial_warp_alloc(policy, seed):
    """Lanes 0-15 execute tcgen05.alloc; lanes 16-31 go on to __syncthreads (also .aligned)."""
    msg = _raises(E.DivergentCollective, lambda: tmem_life(5, policy, seed), "warp 0 of CTA (0,0,0)",
                  "tcgen05.alloc.cta_group::1")
    assert "bar 0" in msg or "named barrier 0" in msg, msg


@pytest.mark.parametrize("policy,seed", ALL)
def test_collectives_fixed(policy, seed):
    out = collectives(0, policy, seed)
    assert out[0] == 1 and out[32] == 1 and out[:64].sum() == 2  # one elected lane per warp


# ---------------------------------------------------------------------------------------------------
# NamedBarrierMismatch
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", ALL)
def test_named_barrier_two_counts(policy, seed):
    msg = _raises(E.NamedBarrierMismatch, lambda: named(1, policy, seed), "named barrier 1 of CTA (0,0,0)",
                  "while this generation began with count")
    assert (("uses thread count 96" in msg and "count 64" in msg)
            or ("uses thread count 64" in msg and "count 96" in msg)), msg


@pytest.mark.parametrize("policy,seed", ALL)
def test_named_barrier_two_groups_share_an_id(policy, seed):
    _raises(E.NamedBarrierMismatch, lambda: named(2, policy, seed), "named barrier 3 of CTA (0,0,0)",
            "two groups share this barrier ID")


@pytest.mark.parametrize("policy,seed", ALL)
def test_named_barriers_fixed(policy, seed):
    out = named(0, policy, seed)
    for r in range(3):
        np.testing.assert_array_equal(out[64 * r:64 * r + 64], 3 * np.arange(64) + r)
    assert (out[192:] == 3).all()


# ---------------------------------------------------------------------------------------------------
# CtaGroupMix, DescriptorError, MemoryFault
# ---------------------------------------------------------------------------------------------------
def test_cta_group_mix():
    _raises(E.CtaGroupMix, lambda: tmem_life(4), "warp 0", "tcgen05.relinquish_alloc_permit with .cta_group::2",
            "already used .cta_group::1")


@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_descriptor_missing_bit_46(policy):
    _raises(E.DescriptorError, lambda: mma(desc_clear=1 << 46, policy=policy), "A descriptor 0x", "bits 46-48",
            "sm_90 wgmma descriptor")


@pytest.mark.parametrize("m,n,needle", [(96, 128, "M=96"), (128, 264, "N=264"), (256, 128, "M=256")])
def test_descriptor_bad_shape(m, n, needle):
    idesc = int(layouts.instr_desc_raw(m, n, 0, 0, 1, 0, 0))
    _raises(E.DescriptorError, lambda: mma(idesc=idesc), needle, "cta_group::1 kind::f16 needs M in {64, 128}")


@pytest.mark.parametrize("policy,seed", ALL)
def test_descriptor_lane_quarter_fixed(policy, seed):
    a, b = AB[0][:, :64], AB[1][:, :64]
    np.testing.assert_allclose(mma(block=256, policy=policy, seed=seed), _ref(a, b), rtol=1e-5, atol=1e-4)


def test_memory_fault_wait_on_uninitialised_barrier():
    out = np.zeros(1, np.uint32)
    _raises(E.MemoryFault, lambda: K.run(K.k_no_init, (out,), block=32), "mbarrier.try_wait.parity",
            "no initialised mbarrier at shared offset 0x418", "mbarrier.init must come first")


def test_memory_fault_tma_box_not_16_byte_aligned():
    _raises(E.MemoryFault, lambda: tma_load(K.BOX_BYTES, c0=4), "TMA load issued by thread 0",
            "the box starts 8 bytes into a row, not a multiple of 16")


# ---------------------------------------------------------------------------------------------------
# the catalogue is complete
# ---------------------------------------------------------------------------------------------------
#: every diagnostic class -> the tests above that provoke it
CATALOGUE = {
    "Deadlock": ["test_deadlock_producer_waits_consumer_parity", "test_deadlock_expect_tx_too_many_announced"],
    "StalePhaseWait": ["test_stale_phase_wait_lazy", "test_lapped_waiter_is_a_stale_phase_wait",
                       "test_stale_phase_eager_hangs_and_is_named_stale"],
    "ArrivalMismatch": ["test_arrival_mismatch_whole_warp_arrives_on_count_1", "test_arrival_mismatch_init_count_zero"],
    "ExpectTxMismatch": ["test_expect_tx_too_many_bytes_arrive"],
    "SharedMemoryHazard": ["test_hazard_tma_into_buffer_mma_reads", "test_hazard_mma_reads_buffer_tma_writes",
                           "test_hazard_staging_overwritten_before_tma_store_read_it",
                           "test_hazards_reported_in_every_order"],
    "MissingProxyFence": ["test_missing_proxy_fence_before_mma", "test_missing_proxy_fence_before_tma_store"],
    "TmemHazard": ["test_tmem_hazard_ld_while_mma_writes", "test_tmem_hazard_mma_while_ld_outstanding",
                   "test_tmem_registers_used_before_wait_ld"],
    "TmemLifecycleError": ["test_tmem_leak", "test_tmem_dealloc_by_another_warp", "test_tmem_missing_relinquish",
                           "test_tmem_dealloc_while_mma_writes", "test_tmem_dealloc_not_ordered_after_other_warps_loads"],
    "UndrainedArrival": ["test_exit_with_a_commit_arrival_not_drained", "test_exit_with_a_tma_arrival_not_drained",
                         "test_exit_of_the_peer_before_a_pair_commit_arrives"],
    "LaneQuarterViolation": ["test_lane_quarter_violation"],
    "DivergentCollective": ["test_divergent_elect_reached_by_part_of_a_warp",
                            "test_divergent_lanes_at_different_collectives", "test_divergent_operands_to_tmem_ld",
                            "test_divergent_partial_warp_alloc"],
    "NamedBarrierMismatch": ["test_named_barrier_two_counts", "test_named_barrier_two_groups_share_an_id"],
    "CtaGroupMix": ["test_cta_group_mix"],
    "DescriptorError": ["test_descriptor_missing_bit_46", "test_descriptor_bad_shape"],
    "MemoryFault": ["test_memory_fault_wait_on_uninitialised_barrier", "test_memory_fault_tma_box_not_16_byte_aligned",
                    "test_memory_fault_out_of_bounds_is_named_not_an_index_error",
                    "test_memory_fault_store_over_live_barrier", "test_memory_fault_mbarrier_op_where_no_barrier_lives",
                    "test_memory_fault_store_runs_from_one_region_into_the_next", "test_exit_with_tma_store_in_flight",
                    "test_dsmem_store_and_arrival_into_a_cta_that_may_have_exited",
                    "test_memory_fault_global_index_out_of_range",
                    "test_memory_fault_barrier_used_by_tma_without_fence_mbarrier_init"],
    "UninitializedRead": ["test_uninitialized_shared_read", "test_uninitialized_tmem_accumulate_and_load",
                          "test_uninitialized_mma_operand", "test_tmem_address_read_before_the_allocating_warp_wrote_it"],
    "DataRace": ["test_data_race_between_warps"],
    "MissingTcgen05Fence": ["test_missing_tcgen05_fence_after_thread_sync",
                            "test_missing_tcgen05_fence_after_the_wait_on_a_tma_filled_stage",
                            "test_missing_tcgen05_fence_before_thread_sync"],
    "EmulatorError": ["test_reinit_live_barrier_without_inval"],
    "PeerNotRunning": ["test_dsmem_store_before_the_cluster_barrier",
                       "test_peer_barrier_used_before_its_init_was_published"],
    "WaitScopeMismatch": ["test_cta_scope_wait_on_a_peer_arrival"],
    "MissingWarpSync": ["test_elected_arrive_without_a_warp_barrier"],
    "RelaxedWaitNoAcquire": ["test_relaxed_wait_then_an_ordinary_load"],
}

# ---------------------------------------------------------------------------------------------------
# the sanitizer: bounds and barrier storage (MemoryFault), initialisation (UninitializedRead), races
# (DataRace, SharedMemoryHazard), tcgen05 ordering (MissingTcgen05Fence, TmemHazard), lifetimes
# ---------------------------------------------------------------------------------------------------
def bounds(bug, policy="lazy", seed=0):
    out = np.zeros(64, dtype=np.uint32)
    K.run(K.k_bounds, (out, bug), block=64, policy=policy, seed=seed, names=K.bar_names("ready"))
    return out


def init(bug, policy="lazy", seed=0):
    out = np.zeros(64, dtype=np.uint32)
    K.run(K.k_init, (out, bug), block=64, policy=policy, seed=seed)
    return out


def race(bug, policy="lazy", seed=0):
    out = np.zeros(64, dtype=np.uint32)
    K.run(K.k_race, (out, bug), block=64, policy=policy, seed=seed, names=K.bar_names("ready"),
          maps=K.tmaps((K.TMAP_A, AB[0], 128, 64)))
    return out


def peer(bug, policy="lazy", seed=0):
    out = np.zeros(64, dtype=np.uint32)
    K.run(K.k_peer, (out, bug), block=64, grid=2, cluster=2, policy=policy, seed=seed, names=K.bar_names("mailbox"))
    return out


@pytest.mark.parametrize("policy,seed", ALL)
def test_memory_fault_out_of_bounds_is_named_not_an_index_error(policy, seed):
    for bug in (1, 2):
        _raises(E.MemoryFault, lambda bug=bug: bounds(bug, policy, seed), "shared-memory index", "emu_kernels.py:",
                f"this launch has {K.SHARED_BYTES} bytes of dynamic shared memory")


@pytest.mark.parametrize("policy,seed", ALL)
def test_memory_fault_global_index_out_of_range(policy, seed):
    _raises(E.MemoryFault, lambda: bounds(6, policy, seed), "indexed an array out of range", "emu_kernels.py:",
            "out of bounds")
    _raises(E.MemoryFault, lambda: bounds(7, policy, seed), "a negative index", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_memory_fault_barrier_used_by_tma_without_fence_mbarrier_init(policy, seed):
    _raises(E.MemoryFault, lambda: acc_reuse(8, policy, seed), "mbarrier full", "without fence.mbarrier_init",
            "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_memory_fault_store_over_live_barrier(policy, seed):
    _raises(E.MemoryFault, lambda: bounds(3, policy, seed), "live mbarrier ready", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_memory_fault_mbarrier_op_where_no_barrier_lives(policy, seed):
    _raises(E.MemoryFault, lambda: bounds(4, policy, seed), "no initialised mbarrier", "(data)", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_memory_fault_store_runs_from_one_region_into_the_next(policy, seed):
    _raises(E.MemoryFault, lambda: bounds(5, policy, seed), "starts in data", "runs into A tile")


@pytest.mark.parametrize("policy,seed", ALL)
def test_bounds_fixed(policy, seed):
    assert (bounds(0, policy, seed) == (np.arange(64) + 1) % 64).all()


@pytest.mark.parametrize("policy,seed", ALL)
def test_uninitialized_shared_read(policy, seed):
    _raises(E.UninitializedRead, lambda: init(1, policy, seed), "an ordinary load by thread", "(data)",
            "emu_kernels.py:", "nothing wrote before")


@pytest.mark.parametrize("policy,seed", ALL)
def test_tmem_address_read_before_the_allocating_warp_wrote_it(policy, seed):
    """Warp 1 reads the TMEM address slot before the barrier: uninitialised if it runs first, a race
    with the allocating warp's write otherwise; reported in every order."""
    with pytest.raises((E.UninitializedRead, E.DataRace)) as ei:
        init(2, policy, seed)
    assert "TMEM slot" in str(ei.value)


@pytest.mark.parametrize("policy,seed", ALL)
def test_uninitialized_tmem_accumulate_and_load(policy, seed):
    _raises(E.UninitializedRead, lambda: acc_reuse(2, policy, seed), "accumulates (enable-input-d = 1)",
            "which no earlier MMA", "emu_kernels.py:")
    _raises(E.UninitializedRead, lambda: collectives(4, policy, seed), "tcgen05.ld of TMEM", "never written")


@pytest.mark.parametrize("policy,seed", ALL)
def test_uninitialized_mma_operand(policy, seed):
    _raises(E.UninitializedRead, lambda: acc_reuse(7, policy, seed), "the MMA issued by", "operand B")


@pytest.mark.parametrize("policy,seed", ALL)
def test_init_fixed(policy, seed):
    assert (init(0, policy, seed) == 42).all()


@pytest.mark.parametrize("policy,seed", ALL + [("random", s) for s in (3, 4, 5)])
def test_data_race_between_warps(policy, seed):
    for bug in (1, 2, 3):  # 3: a write after a TMA issue is not ordered by the TMA's completion
        _raises(E.DataRace, lambda bug=bug: race(bug, policy, seed), "warp 0 of CTA (0,0,0)", "warp 1 of CTA (0,0,0)",
                "(data)", "emu_kernels.py:", "nothing orders them")


@pytest.mark.parametrize("policy,seed", ALL)
def test_race_fixed(policy, seed):
    assert (race(0, policy, seed)[32:] == 2).all()


def vector_race(bug, policy="lazy", seed=0):
    out = np.zeros(64, dtype=np.uint32)
    K.run(K.k_vector_race, (out, bug), block=64, policy=policy, seed=seed)
    return out


@pytest.mark.parametrize("policy,seed", ALL)
def test_data_race_in_the_middle_of_a_vector_store(policy, seed):
    """Every byte of an ordinary access is checked, not only its first and last."""
    _raises(E.DataRace, lambda: vector_race(1, policy, seed), "warp 0 of CTA (0,0,0)", "warp 1 of CTA (0,0,0)",
            "emu_kernels.py:", "nothing orders them")
    assert list(vector_race(0, policy, seed)[:4]) == [1, 2, 3, 4]


@pytest.mark.parametrize("policy,seed", ALL)
def test_missing_tcgen05_fence_after_thread_sync(policy, seed):
    _raises(E.MissingTcgen05Fence, lambda: acc_reuse(3, policy, seed), "tcgen05.ld", "after the wait on mbarrier "
            "acc_full", "without tcgen05.fence::after_thread_sync", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_missing_tcgen05_fence_before_thread_sync(policy, seed):
    _raises(E.MissingTcgen05Fence, lambda: acc_reuse(4, policy, seed), "tcgen05.mma", "mbarrier acc_empty",
            "without tcgen05.fence::before_thread_sync", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_tmem_registers_used_before_wait_ld(policy, seed):
    _raises(E.TmemHazard, lambda: acc_reuse(5, policy, seed), "used a register of the tcgen05.ld",
            "before tcgen05.wait::ld", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_tmem_dealloc_not_ordered_after_other_warps_loads(policy, seed):
    _raises(E.TmemLifecycleError, lambda: acc_reuse(6, policy, seed), "freed", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_exit_with_tma_store_in_flight(policy, seed):
    _raises(E.MemoryFault, lambda: tma_store(3, policy, seed), "exited while TMA store", "wait_group.read 0")


@pytest.mark.parametrize("policy,seed", ALL)
def test_dsmem_store_and_arrival_into_a_cta_that_may_have_exited(policy, seed):
    _raises(E.MemoryFault, lambda: peer(1, policy, seed), "into CTA (1,0,0) [cluster 0 rank 1]", "emu_kernels.py:",
            "exit")


@pytest.mark.parametrize("policy,seed", ALL)
def test_exit_with_a_commit_arrival_not_drained(policy, seed):
    """The producer tail is missing: the wait on 'acc_full' (the later commit) does not order the
    arrival of the commit on 'empty' before the exit, whichever order the run took."""
    _raises(E.UndrainedArrival, lambda: drain(1, policy, seed), "CTA (0,0,0) exited", "tcgen05.commit issued by "
            "thread 0 (warp 0, lane 0)", "emu_kernels.py:", "on mbarrier empty", "phase 0", "pipeline.producer_tail")


@pytest.mark.parametrize("policy,seed", ALL)
def test_exit_with_a_tma_arrival_not_drained(policy, seed):
    _raises(E.UndrainedArrival, lambda: drain(2, policy, seed), "complete_tx of the TMA load issued by thread 0",
            "on mbarrier spare", "emu_kernels.py:")


def mma_pair(bug, policy="lazy", seed=0):
    a, b = _fp16((256, 64), 15), _fp16((256, 64), 16)
    out = np.full((256, 256), np.nan, dtype=np.float32)
    K.run(K.k_mma_cg2, (out, layouts.make_instr_desc(256, 256, cta_group=2), 256, bug), block=128, grid=2,
          cluster=2, policy=policy, seed=seed, names=K.bar_names("tma_bar", "mma_done", "spare", "late", "bye"),
          maps=K.tmaps((K.TMAP_A, a, 128, 64), (K.TMAP_B, b, 128, 64)))
    return out, _ref(a, b)


@pytest.mark.parametrize("policy,seed", ALL)
def test_exit_of_the_peer_before_a_pair_commit_arrives(policy, seed):
    """A cta_group::2 commit into the even CTA's barrier only: the odd CTA's exit must be ordered after
    its arrival too (the even CTA's wait on it comes after the last cluster barrier here)."""
    for bug in (1, 2):  # 2: what the odd CTA learns comes from before the even CTA's wait, not after it
        _raises(E.UndrainedArrival, lambda bug=bug: mma_pair(bug, policy, seed), "CTA (1,0,0) [cluster 0 rank 1] "
                "exited", "on mbarrier spare of CTA (0,0,0) [cluster 0 rank 0]", "both CTAs of the pair",
                "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_drain_fixed(policy, seed):
    a, b = AB
    np.testing.assert_allclose(drain(0, policy, seed), _ref(a[:, :64], b[:, :64]), rtol=1e-5, atol=1e-4)
    out, want = mma_pair(0, policy, seed)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("policy,seed", ALL)
def test_peer_barrier_used_before_its_init_was_published(policy, seed):
    """No barrier at all after the set-up: the first access into the peer (a DSMEM store) is reported as
    made before anything showed the peer running; where the peer's own threads reach the barrier first,
    their wait before its initialisation is."""
    with pytest.raises((E.PeerNotRunning, E.MemoryFault)) as ei:
        peer(2, policy, seed)
    msg = str(ei.value)
    assert "CTA (1,0,0) [cluster 0 rank 1]" in msg
    assert ("st.shared.v4" in msg and "cluster_arrive" in msg) if type(ei.value) is E.PeerNotRunning \
        else "mbarrier" in msg, msg


@pytest.mark.parametrize("policy,seed", ALL)
def test_missing_tcgen05_fence_after_the_wait_on_a_tma_filled_stage(policy, seed):
    """Chapter 7 without tcgen05.fence::after_thread_sync after the MMA warp's wait on a full stage: by the
    ISA the MMA is ordered after the wait (and so after the TMA bytes) only through that fence."""
    from gemm_kernels import book_helpers
    from gemm_kernels.check import random_operands

    no_fence = book_helpers.variant(7, {"pipeline.wait(base + TMA2MMA, stage, phase)  # the stage is full\n"
                                        "                    ptx.tcgen05_fence_after()\n":
                                        "pipeline.wait(base + TMA2MMA, stage, phase)  # the stage is full\n"})
    _raises(E.MissingTcgen05Fence, lambda: no_fence.entry(*random_operands(128, 128, 64), backend="emulator",
                                                          policy=policy, seed=seed),
            "tcgen05.mma", "the wait on mbarrier tma2mma[0]", "the TMA loads whose bytes completed its phase")


@pytest.mark.parametrize("policy,seed", ALL)
def test_elected_arrive_without_a_warp_barrier(policy, seed):
    """Chapter 7 without the warp barrier before the elected lane's ld2mma arrive: the other lanes'
    tcgen05.ld are not ordered before it by the ISA (elect.sync orders no memory)."""
    from gemm_kernels import book_helpers
    from gemm_kernels.check import random_operands

    line = "            cuda.syncwarp()  # every lane's tcgen05.wait::ld is ordered before the elected lane's arrive\n"
    no_sync = book_helpers.variant(7, {line: ""})  # a line of the shared writeback (epilogue.py)
    arrive = book_helpers.kernel_line(no_sync, "arrive_ld2mma(ld2mma, cluster_arrive)")
    _raises(E.MissingWarpSync, lambda: no_sync.entry(*random_operands(128, 128, 64), backend="emulator",
                                                     policy=policy, seed=seed),
            "arrived on mbarrier ld2mma[0]", f"epilogue.py>:{arrive}", "tcgen05.ld at", "epilogue.py:",
            "cuda.syncwarp()")


@pytest.mark.parametrize("policy,seed", ALL)
def test_dsmem_store_before_the_cluster_barrier(policy, seed):
    from tests.test_emu_peer_running import k_dsmem

    _raises(E.PeerNotRunning, lambda: K.run(k_dsmem, (np.zeros(1, np.uint32), 1), block=32, grid=2, cluster=2,
                                             policy=policy, seed=seed),
            "st.shared.v4 by thread 0", "CTA (1,0,0) [cluster 0 rank 1]", "cluster_arrive")


@pytest.mark.parametrize("policy,seed", ALL)
def test_cta_scope_wait_on_a_peer_arrival(policy, seed):
    from tests.test_emu_peer_running import k_scope

    _raises(E.WaitScopeMismatch, lambda: K.run(k_scope, (np.zeros(1, np.uint32), 0), block=32, grid=2, cluster=2,
                                                policy=policy, seed=seed), "with CTA scope", "of another CTA")


@pytest.mark.parametrize("policy,seed", ALL)
def test_peer_fixed(policy, seed):
    out = peer(0, policy, seed)
    assert (out == 7).all()


#: declared in errors.py but raised nowhere: a 1-bit parity always names the current phase or the one
#: before it, so "neither" cannot be observed at a single wait; a thread that fell two phases behind
#: shows as a Deadlock (see test_deadlock_hint_lapped_waiter).
NEVER_RAISED = set()


def test_catalogue_covers_every_raised_diagnostic():
    declared = set(re.findall(r"^class (\w+)\(", (ROOT / "gemm_kernels/emu/errors.py").read_text(), re.M))
    src = "\n".join(p.read_text() for d in ("gemm_kernels/emu", "gemm_kernels/ptx")
                    for p in (ROOT / d).glob("*.py") if p.name != "errors.py")
    raised = {c for c in declared if re.search(rf"\b{c}\(", src)}
    assert raised == set(CATALOGUE), (raised ^ set(CATALOGUE))
    assert declared - raised == NEVER_RAISED
    names = set(globals())
    for cls, tests in CATALOGUE.items():
        for t in tests:
            assert t in names, f"{cls}: no test {t}"


def test_relaxed_wait_then_an_ordinary_load():
    """A .relaxed wait orders no memory: the load after it of the word another warp published is named
    (tests/test_emu_memory_model.py has the rule under every order)."""
    from gemm_kernels.emu.errors import RelaxedWaitNoAcquire
    from tests.test_emu_memory_model import RELAXED, k_publish

    with pytest.raises(RelaxedWaitNoAcquire, match=r"^the wait at tests/test_emu_memory_model.py:\d+ \(k_publish\) "
                                                   r"is relaxed"):
        K.run(k_publish, (np.zeros(32, np.uint32), RELAXED), block=64)
