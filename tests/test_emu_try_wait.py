"""try_wait's time limit (issue 20, item 4): on the chip mbarrier.try_wait returns false after a time
limit while the phase is incomplete. The emulator's twin may return 0 then (always for a thread's first
such wait under lazy and eager, with probability 1/2 per seed otherwise): a retry loop stays correct, a
thread that spins on a phase that never completes ends in a Deadlock report, and a kernel that ignores
the result reads the buffer before the copy landed and is reported."""
import numpy as np
import pytest
from numba import cuda, uint32

from gemm_kernels import ptx
from gemm_kernels.emu import Deadlock, EmulatorError

from tests.emu_kernels import A_BUF, BAR, BOX_BYTES, TMAP_A, run, tmaps

ORDERS = [("lazy", 0), ("eager", 0), ("random", 1), ("random", 2), ("random", 3)]


def k_copy(out, mode):
    """Thread 0 loads a 128 x 64 fp16 box and reads its first word. mode 0: a retry loop around
    try_wait; 1: one try_wait whose result is ignored; 2: a retry loop on a phase nothing completes."""
    smem = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem)
    bar = base + BAR(0)
    if cuda.threadIdx.x == 0:
        ptx.mbarrier_init(bar, 1)
        ptx.mbarrier_init(base + BAR(1), 1)
        ptx.fence_mbarrier_init()
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        ptx.mbarrier_arrive_expect_tx(bar, BOX_BYTES)
        ptx.tma_load_2d(base + A_BUF, TMAP_A, 0, 0, bar)
        if mode == 0:
            while ptx.mbarrier_try_wait(bar, 0) == 0:
                pass
        elif mode == 1:
            ptx.mbarrier_try_wait(bar, 0)  # the result is ignored
        else:
            while ptx.mbarrier_try_wait(base + BAR(1), 0) == 0:  # nothing arrives on it
                pass
        out[0] = smem[A_BUF // 4]


def _run(mode, policy, seed):
    a = (np.arange(128 * 64) % 251).astype(np.float16).reshape(128, 64)
    out = np.zeros(1, np.uint32)
    run(k_copy, (out, mode), block=32, policy=policy, seed=seed, maps=tmaps((TMAP_A, a, 128, 64, "none")))
    return out[0], int(a.view(np.uint32).reshape(-1)[0])


@pytest.mark.parametrize("policy,seed", ORDERS)
def test_retry_loop_is_correct(policy, seed):
    got, want = _run(0, policy, seed)
    assert got == want


def test_ignored_result_is_reported():
    """Lazy: the copy lands only when no thread can run, so the first try_wait times out and the read
    comes first. Under random orders the timeout happens for some seeds, deterministically per seed."""
    with pytest.raises(EmulatorError, match=r"A tile.*nothing orders them"):
        _run(1, "lazy", 0)
    reported = 0
    for seed in range(1, 9):
        try:
            _run(1, "random", seed)
        except EmulatorError:
            reported += 1
    assert 0 < reported < 8


def test_spinning_on_a_phase_that_never_completes_is_a_deadlock():
    """The retry loop on a barrier nothing arrives on: a hang on the chip, a Deadlock here."""
    for policy, seed in ORDERS:
        with pytest.raises(Deadlock):
            _run(2, policy, seed)
