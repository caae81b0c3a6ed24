"""Ground truth: the emulator's model of the units Hopper shares with Blackwell (mbarrier, TMA and its
swizzles, clusters and DSMEM, named barriers, elect.sync), checked byte for byte against a real GPU.

The micro-kernels in tests/hopper/micro_kernels.py ran on an H200 (tests/hopper/record.py); their
outputs are in tests/data/h200_ground_truth.json with the GPU's name, driver and the date. Here:

* in CI (no GPU): every recorded case is replayed on the emulator, under two completion policies, with
  the same inputs, and every output byte must equal the H200's;
* with ``-m hopper`` on any GPU of compute capability >= 9.0: the same comparison live (GPU run now
  against the emulator), skipped elsewhere.

What the emulator models differently by design is listed in the JSON's ``by_design_differences``
and is not compared (``gpu_only`` outputs): try_wait on an incomplete phase returns 0 on the GPU;
the emulator's try_wait blocks instead.
"""
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from gemm_kernels.runtime import ensure_numpy_compat  # noqa: E402
from gemm_kernels.runtime.device import gpu_info  # noqa: E402
from tests.hopper.micro_kernels import (CASE_BY_NAME, CASES, check_emulator, decode_output,  # noqa: E402
                                        encode_outputs)

ensure_numpy_compat()

DATA = os.path.join(ROOT, "tests", "data", "h200_ground_truth.json")

with open(DATA) as _f:
    DOC = json.load(_f)

REPLAYED = [c.name for c in CASES if set(c.gpu_only) != {"obs"}]


def test_recording_names_its_gpu_driver_and_date():
    gpu = DOC["gpu"]
    assert gpu and tuple(gpu["compute_capability"]) >= (9, 0), gpu
    assert "H200" in gpu["name"], gpu
    assert DOC["nvidia_smi"] and DOC["date_utc"], DOC
    assert set(DOC["cases"]) == {c.name for c in CASES}, "re-record: tests/hopper/record.py"


@pytest.mark.parametrize("name, policy", [(n, p) for n in REPLAYED for p in CASE_BY_NAME[n].policies])
def test_emulator_replays_h200(name, policy):
    """Same bytes as the H200; an EmulatorError exactly where the H200 faulted."""
    case = CASE_BY_NAME[name]
    rec = DOC["cases"][name]
    assert "outputs" in rec or case.isolate, f"the H200 run of {name} failed: {rec.get('error')}"
    problems = check_emulator(case, rec, policy)
    assert not problems, f"the emulator differs from the H200 ({case.what}):\n{problems}"


def test_recording_faults_are_the_documented_ones():
    """Which probe launches the H200 refused (CUDA_ERROR_ILLEGAL_INSTRUCTION): the rules the emulator's
    TensorMapModel.check_box_start states."""
    faulted = {n for n, r in DOC["cases"].items() if "error" in r}
    for n in faulted:
        assert "ILLEGAL_INSTRUCTION" in DOC["cases"][n]["error"], (n, DOC["cases"][n]["error"])
    assert {c.name for c in CASES if not c.isolate} & faulted == set(), faulted


def test_recording_plain_tma_does_not_signal_a_peer_barrier():
    """The regression behind the emulator's refusal of a plain TMA load whose barrier is in another CTA."""
    rec = DOC["cases"]["cluster_tma_peer_barrier"]
    obs = decode_output(rec["outputs"]["obs"])
    assert obs[0, 0] == 0 and obs[2, 0] == 0, obs  # rank 0 of each cluster: never signalled
    dump = decode_output(rec["outputs"]["tma_dump"])
    assert dump[1].any() and dump[3].any() and not dump[0].any(), "the bytes land in the issuing CTA"


def test_recording_try_wait_on_incomplete_phase_returns_false():
    """What the emulator does not model (its try_wait blocks): recorded for the book's statement."""
    obs = decode_output(DOC["cases"]["gpu_only_try_wait"]["outputs"]["obs"])
    assert obs[0] == 0 and obs[1] == 1 and obs[3] == 1 and obs[4] == 0, obs


def test_recording_facts_the_emulator_relies_on():
    """The few numbers the emulator's design states, read straight from the recording."""
    mb = decode_output(DOC["cases"]["mbarrier"]["outputs"]["obs"])
    assert list(mb[:19]) == [0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 1], list(mb[:19])
    cl = decode_output(DOC["cases"]["cluster"]["outputs"]["obs"])
    for b in range(cl.shape[0]):
        rank = b % 2
        assert cl[b, 0] == rank and cl[b, 1] == 2
        assert cl[b, 2] >> 24 == rank, hex(cl[b, 2])  # shared addresses carry the rank from bit 24
        assert cl[b, 3] >> 24 == 0 and cl[b, 4] >> 24 == 1
    warp = decode_output(DOC["cases"]["warp"]["outputs"]["obs"])
    assert [int(warp[32 * w]) for w in range(4)] == [1] * 4 and warp[:128].sum() == 4  # lane 0 wins


# -- live, on a Hopper or newer GPU ---------------------------------------------------------------

_info = gpu_info()
_no_gpu = _info is None or _info.compute_capability < (9, 0)


@pytest.mark.hopper
@pytest.mark.skipif(_no_gpu, reason="needs a CUDA GPU of compute capability >= 9.0 (an H200 will do); none found")
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_live_gpu_matches_emulator(name):
    """The whole comparison, live: run on this GPU now (cases that may fault in a process of their own)
    and replay the emulator against what it did."""
    from tests.hopper.record import run_isolated

    case = CASE_BY_NAME[name]
    rec = run_isolated(name) if case.isolate else {"outputs": encode_outputs(case.run("gpu"))}
    if set(case.gpu_only) == {"obs"}:
        obs = decode_output(rec["outputs"]["obs"])
        assert obs[0] == 0 and obs[1] == 1 and obs[3] == 1 and obs[4] == 0, obs
        return
    problems = check_emulator(case, rec)
    assert not problems, f"the emulator differs from this GPU ({_info.name}):\n{problems}"


# -- regression tests for what the H200 proved wrong in the emulator (no recording needed) ---------

def test_emulator_refuses_tma_box_starts_the_h200_faults_on():
    """The H200 raised CUDA_ERROR_ILLEGAL_INSTRUCTION for a box whose first column is not 16-byte
    aligned (load or store) and for a TMA store that starts at a negative row or column; the emulator
    used to run all of them."""
    from gemm_kernels.emu import TensorMapModel
    from gemm_kernels.emu.errors import MemoryFault

    tm = TensorMapModel(np.zeros((80, 200), np.uint16), 16, 64, "128B", name="T")
    for c0, c1 in [(4, 0), (42, 30), (-4, -2), (190, 75)]:
        with pytest.raises(MemoryFault, match="multiple of 16"):
            tm.check_box_start(c0, c1, "TMA load")
    for c0, c1 in [(-32, 50), (0, -8)]:
        with pytest.raises(MemoryFault, match="negative"):
            tm.check_box_start(c0, c1, "TMA store")
    for c0, c1 in [(-8, -2), (-64, -16), (208, 0), (160, 72)]:  # all ran on the H200
        tm.check_box_start(c0, c1, "TMA load")
    for c0, c1 in [(208, 0), (160, 72), (8, 50)]:
        tm.check_box_start(c0, c1, "TMA store")
    t32 = TensorMapModel(np.zeros((40, 100), np.uint32), 8, 16, "64B", name="T32")
    t32.check_box_start(92, 35, "TMA load")  # 368 B
    with pytest.raises(MemoryFault):
        t32.check_box_start(90, 35, "TMA load")  # 360 B


def test_emulator_refuses_plain_tma_load_signalling_another_ctas_barrier():
    """On the H200 the plain form counted the bytes on the destination CTA's barrier at that offset and
    never signalled the named (peer) barrier; the emulator used to complete the peer's barrier."""
    from gemm_kernels.emu.errors import MemoryFault

    with pytest.raises(MemoryFault, match="destination CTA"):
        CASE_BY_NAME["cluster_tma_peer_barrier"].run("emulator")
    CASE_BY_NAME["cluster"].run("emulator")  # destination and barrier both in the peer: still fine
