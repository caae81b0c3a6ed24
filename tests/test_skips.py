"""The GPU probe tells "no GPU" (skip) from "GPU present but broken" (fail), and a full CI run
(GEMM_KERNELS_FULL_CI=1) allows no skip but the blackwell and hopper ones."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cuda.bindings import driver as drv

from gemm_kernels.runtime import device
from tests.conftest import gpu_verdict, unexpected_outcomes
from tests.fake_gpu import FakeGpu
from tests.fake_gpu.spec import H200

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clear_probe():
    device.probe_gpu.cache_clear()
    device.gpu_info.cache_clear()
    yield
    device.probe_gpu.cache_clear()
    device.gpu_info.cache_clear()


def test_no_driver_library_is_no_gpu(monkeypatch, clear_probe):
    from cuda.pathfinder import DynamicLibNotFoundError

    def missing(flags):
        raise DynamicLibNotFoundError('"cuda" is an NVIDIA driver library and can only be found via system search')

    monkeypatch.setattr(drv, "cuInit", missing)
    assert device.probe_gpu() is None and device.gpu_info() is None


def test_no_device_is_no_gpu(monkeypatch, clear_probe):
    monkeypatch.setattr(drv, "cuInit", lambda flags: (drv.CUresult.CUDA_ERROR_NO_DEVICE,))
    assert device.probe_gpu() is None


def test_a_failing_driver_is_an_error_with_its_message(monkeypatch, clear_probe):
    monkeypatch.setattr(drv, "cuInit", lambda flags: (drv.CUresult.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,))
    monkeypatch.setattr(drv, "cuGetErrorString", lambda err: (drv.CUresult.CUDA_SUCCESS,
                                                               b"system has unsupported display driver / cuda driver combination"))
    with pytest.raises(device.GpuProbeError, match="cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH "
                                                   r"\(system has unsupported display driver"):
        device.probe_gpu()
    assert device.gpu_info() is None  # the quiet form still answers "no usable GPU"


def test_a_failing_attribute_query_is_an_error(monkeypatch, clear_probe):
    gpu = FakeGpu().install(monkeypatch)
    monkeypatch.setattr(drv, "cuDeviceGetAttribute", lambda a, d: (drv.CUresult.CUDA_ERROR_UNKNOWN, 0))
    with pytest.raises(device.GpuProbeError, match="cuDeviceGetAttribute failed: CUDA_ERROR_UNKNOWN"):
        device.probe_gpu()
    assert gpu.calls[0] == ("cuInit",)


def test_verdicts():
    b200 = FakeGpu().spec
    info_b200 = device.GpuInfo(0, b200.name, (10, 0), 148, 232448, 1, 13000)
    info_h200 = device.GpuInfo(0, H200.name, (9, 0), 132, 232448, 1, 13000)
    assert gpu_verdict({"slow"}, None, None) is None
    assert gpu_verdict({"blackwell"}, None, None)[0] == "skip"
    assert gpu_verdict({"blackwell"}, info_h200, None)[0] == "skip"
    assert gpu_verdict({"blackwell"}, info_b200, None) is None
    assert gpu_verdict({"hopper"}, info_h200, None) is None and gpu_verdict({"hopper"}, info_b200, None) is None
    assert gpu_verdict({"hopper"}, None, None)[0] == "skip"
    action, why = gpu_verdict({"blackwell"}, None, "cuInit failed: CUDA_ERROR_UNKNOWN")
    assert action == "fail" and "CUDA_ERROR_UNKNOWN" in why


def test_unexpected_outcomes():
    log = [("a", "skipped", {"blackwell"}, "needs a B200"), ("b", "passed", set(), ""),
           ("c", "skipped", set(), "CUTLASS headers not found"), ("d", "passed", {"hopper"}, ""),
           ("e", "xfailed", set(), "")]
    assert unexpected_outcomes(log, gpu_present=True) == ["c: skipped (CUTLASS headers not found)"]
    assert unexpected_outcomes(log, gpu_present=False) == ["c: skipped (CUTLASS headers not found)",
                                                          "d: marked hopper but passed without a GPU"]
    assert unexpected_outcomes(log[:2], gpu_present=False) == []


_PROBE = '''
import pytest

@pytest.mark.hopper
def test_gpu():
    pass

def test_plain():
    {body}
'''


@pytest.mark.parametrize("body, full_ci, rc, says", [
    ("pass", "1", 0, None),
    ("pytest.skip('headers missing')", "1", 1, "test_plain: skipped (headers missing)"),
    ("pytest.skip('headers missing')", "", 0, None),  # outside the full CI run a skip is a skip
])
@pytest.mark.parametrize("module_skip", [False, True])
def test_full_ci_run_fails_on_an_unexpected_skip(tmp_path, body, full_ci, rc, says, module_skip):
    """The real conftest hooks, in a pytest run of their own on a two-test file (this machine has
    no GPU; if it had one the hopper test would run, which the conftest also checks)."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "__init__.py").write_text("")
    (tests / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tests / "test_probe.py").write_text(_PROBE.format(body=body))
    if module_skip:  # a second module skipped whole while it is imported (e.g. a missing data file)
        (tests / "test_module.py").write_text("import pytest\npytest.skip('data missing', allow_module_level=True)\n")
        rc = 1 if full_ci == "1" else rc
        says = "test_module.py: skipped (data missing)" if full_ci == "1" else says
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    hopper: an sm_90+ GPU\n    blackwell: a B200\n")
    env = dict(os.environ, GEMM_KERNELS_FULL_CI=full_ci, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    if device.gpu_info() is not None:
        pytest.skip("this machine has a GPU: the hopper probe test would run")  # never in CI (no GPU)
    assert res.returncode == rc, res.stdout + res.stderr
    if says:
        assert says in res.stdout
