"""The H200 recording of two mbarrier misuses (tests/hopper/h200_sanitizer_cases.json, made by
tests/hopper/sanitizer_h200.py) and the emulator's reports for the same bugs.

The recorded kernels are CUDA C (they run without this project's dependencies); the emulator runs
the same pattern written with gemm_kernels.ptx (tests/emu_kernels.py): a whole warp arriving on a
barrier initialised for one arrival, and an expect_tx smaller than the bytes a copy delivers (a 2D
TMA box here, a 1D bulk copy there: the same complete_tx accounting)."""
import json
from pathlib import Path

import pytest

from gemm_kernels.emu import errors as E
from tests import emu_kernels as K
from tests import test_emu_bugs as B

REC = json.loads((Path(__file__).resolve().parent / "hopper" / "h200_sanitizer_cases.json").read_text())


def test_recording_names_the_gpu():
    assert "H200" in REC["nvidia_smi"] and REC["date_utc"]


def test_over_arrival_failed_every_h200_launch():
    runs = REC["cases"]["over_arrival"]
    assert runs and all(r.get("sync") == "CUDA_ERROR_LAUNCH_FAILED" for r in runs), runs


def test_small_expect_tx_was_wrong_on_the_h200():
    """What every run of this case shows, whatever the mix of outcomes: the launch and the
    synchronisation succeed (the hardware reports nothing), and each lane's two bounded waits see
    one phase complete, not two: phase 0 completed early (before all bytes landed) or never (its
    wait gives up, and the wait on the other parity passes). Which of the two happens depends on
    timing: recordings gave 2 early and 1 never, in different orders, and 3 early is possible, so the
    test asserts no count of either."""
    runs = REC["cases"]["small_expect_tx"]
    assert runs
    for r in runs:
        assert r.get("launch") == r.get("sync") == "CUDA_SUCCESS", r
        assert (r["phase0_waits_passed"], r["phase1_waits_passed"]) in ((32, 0), (0, 32)), r


@pytest.mark.parametrize("policy,seed", B.ALL)
def test_emulator_reports_the_over_arrival_as_the_launch_failure(policy, seed):
    B._raises(E.ArrivalMismatch, lambda: B.arrivals(1, 1, policy, seed), "On an H200 this failed the launch")


@pytest.mark.parametrize("policy,seed", B.ALL)
def test_emulator_reports_the_small_expect_tx(policy, seed):
    B._raises(E.ExpectTxMismatch, lambda: B.tma_load(K.BOX_BYTES // 2, policy=policy, seed=seed),
              "announced fewer", "tests/hopper/h200_sanitizer_cases.json")
