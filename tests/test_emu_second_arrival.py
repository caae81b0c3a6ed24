"""ArrivalMismatch for a thread's second arrival in one phase (gemm_kernels/emu/mbarrier.py,
MBarrier._check_second_arrival): planted in tests/emu_kernels.k_ready_rounds, silent in its corrected
twin under every policy."""
import numpy as np
import pytest

from gemm_kernels.emu import errors as E
from tests import emu_kernels as K
from tests.test_emu_bugs import ALL, _raises


def ready_rounds(bug, policy="lazy", seed=0, rounds=6):
    out = np.zeros(rounds, dtype=np.uint32)
    K.run(K.k_ready_rounds, (out, rounds, bug), block=64, policy=policy, seed=seed, names=K.bar_names("ready", "go"))
    return out


@pytest.mark.parametrize("bug", [1, 2])
@pytest.mark.parametrize("policy,seed", ALL)
def test_second_arrival_in_one_phase(bug, policy, seed):
    _raises(E.ArrivalMismatch, lambda: ready_rounds(bug, policy, seed), "thread 37 (warp 1, lane 5)",
            "arrived on mbarrier ready", "a second time in phase", "one arrival from each of 32 threads",
            "a wait missing between", "emu_kernels.py:")


@pytest.mark.parametrize("policy,seed", ALL)
def test_one_arrival_per_phase_passes(policy, seed):
    np.testing.assert_array_equal(ready_rounds(0, policy, seed), np.arange(1, 7))
