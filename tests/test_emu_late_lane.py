"""A wait acquires the phase it observed (issue 20, item 4): a thread woken by the completion of phase p
may run again only after phases p + 1 and p + 2 completed as well (same parity as p); it must acquire
phase p, not the latest one, or the releases of the later phases would order its (and its warp's) reads
and hide a race. Here warp 0 waits for phase 0 and then reads a word that the producer writes only
before phase 1: a real race, which the emulator names whatever order it runs the threads in."""
import numpy as np
import pytest
from numba import cuda, uint32

from gemm_kernels import ptx
from gemm_kernels.emu import DataRace

from tests.emu_kernels import BAR, DATA, run

POLICIES = [("lazy", 0), ("eager", 0)]  # warp 0 waits before the producer runs: woken by phase 0, runs after 2


def k_late(out, bug):
    """Warp 1 (the producer) writes word 0, arrives (phase 0), writes word 1, arrives (phase 1), writes
    word 2, arrives (phase 2). Warp 0 waits for phase 0 and reads word 0 (ordered), or word 1 with
    ``bug`` (written before phase 1's arrive: not ordered by the phase-0 wait)."""
    smem = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem)
    tid = cuda.threadIdx.x
    bar = base + BAR(0)
    if tid == 0:
        ptx.mbarrier_init(bar, 1)
    cuda.syncthreads()
    if tid < 32:
        ptx.mbarrier_wait(bar, 0)
        out[tid] = smem[DATA // 4 + (1 if bug else 0)]
    elif tid == 32:
        for i in range(3):
            smem[DATA // 4 + i] = 10 + i
            ptx.mbarrier_arrive(bar)


@pytest.mark.parametrize("policy,seed", POLICIES)
def test_late_waiter_acquires_the_phase_it_saw(policy, seed):
    out = np.zeros(32, np.uint32)
    run(k_late, (out, 0), block=64, policy=policy, seed=seed)
    assert (out == 10).all()
    with pytest.raises(DataRace, match=r"smem 0x|data"):
        run(k_late, (np.zeros(32, np.uint32), 1), block=64, policy=policy, seed=seed)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_orders_name_a_defect(seed):
    """Under random thread orders some lanes of warp 0 start waiting only after phase 2 completed (the
    producer never waits for the consumers): then their wait's parity names phase 2 as well, which is
    reported as a stale (skipping) wait; otherwise the race. Either names a real defect."""
    from gemm_kernels.emu import StalePhaseWait

    with pytest.raises((DataRace, StalePhaseWait)):
        run(k_late, (np.zeros(32, np.uint32), 1), block=64, policy="random", seed=seed)
