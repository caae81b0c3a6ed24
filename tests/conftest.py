"""Which GPU tests can run here, and (in the full CI run) which skips are allowed.

* ``blackwell`` tests need a B200 and ``hopper`` tests an sm_90+ GPU: without one (no driver, no
  device) they are skipped. A driver that is present but fails is not "no GPU": those tests then
  FAIL with the driver's message (a broken B200 must not pass CI by skipping everything).
* With ``GEMM_KERNELS_FULL_CI=1`` (set by .ci/run), the session fails if any test was skipped that
  is not a ``blackwell`` or ``hopper`` test (the CUTLASS cross-check, say), or if on a machine
  without a GPU one of those ran instead of skipping (a mis-marked test).
"""
import os

import pytest

GPU_MARKERS = ("blackwell", "hopper")
FULL_CI = "GEMM_KERNELS_FULL_CI"


def _probe():
    """(GpuInfo or None, the driver's error message or None)."""
    from gemm_kernels.runtime.device import GpuProbeError, probe_gpu

    try:
        return probe_gpu(), None
    except GpuProbeError as e:
        return None, str(e)


def gpu_verdict(markers, info, problem):
    """What to do with a test carrying ``markers`` here: None (run it), ("skip", why) or ("fail", why)."""
    wanted = [m for m in GPU_MARKERS if m in markers]
    if not wanted:
        return None
    if problem:
        return "fail", f"a CUDA driver is present but fails, so this {wanted[0]} test cannot run: {problem}"
    if "blackwell" in wanted and (info is None or tuple(info.compute_capability) != (10, 0)):
        found = "no CUDA GPU" if info is None else f"{info.name} (compute capability {info.compute_capability})"
        return "skip", f"needs a B200 (compute capability 10.0); found {found}"
    if "hopper" in wanted and (info is None or tuple(info.compute_capability) < (9, 0)):
        return "skip", "needs a GPU of compute capability >= 9.0; none found"
    return None


def pytest_configure(config):
    config._gpu_probe = _probe()
    config._skip_log = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    verdict = gpu_verdict({m.name for m in item.iter_markers()}, *item.config._gpu_probe)
    if verdict is None:
        return
    action, why = verdict
    if action == "fail":
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


_SKIP_LOG = []  # (nodeid, outcome, GPU markers, skip reason) of every test that ran or skipped


def pytest_runtest_logreport(report):
    if not (report.when == "call" or report.skipped):
        return
    outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
    reason = report.longrepr[2] if outcome == "skipped" and isinstance(report.longrepr, tuple) else ""
    reason = reason.removeprefix("Skipped: ")
    _SKIP_LOG.append((report.nodeid, outcome, {m for m in GPU_MARKERS if m in report.keywords}, reason))


def pytest_collectreport(report):
    """A whole module skipped while it is imported (``allow_module_level``, ``importorskip``) never
    reaches pytest_runtest_logreport: log it here, so a full CI run sees it too."""
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIP_LOG.append((report.nodeid, "skipped", set(), reason.removeprefix("Skipped: ")))


def unexpected_outcomes(log, gpu_present):
    """The skips a full CI run does not allow: every skip must be of a blackwell/hopper test, and
    without a GPU every blackwell/hopper test must have skipped. ``log``: (nodeid, outcome, markers,
    reason) of each test."""
    bad = [f"{node}: skipped ({reason})" for node, outcome, markers, reason in log
           if outcome == "skipped" and not markers]
    if not gpu_present:
        bad += [f"{node}: marked {'/'.join(sorted(markers))} but {outcome} without a GPU"
                for node, outcome, markers, _ in log if markers and outcome != "skipped"]
    return bad


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get(FULL_CI) != "1":
        return
    info, problem = session.config._gpu_probe
    bad = unexpected_outcomes(_SKIP_LOG, gpu_present=info is not None or problem is not None)
    if bad:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"{FULL_CI}=1: only blackwell and hopper tests may skip, and without a GPU they must:"] + \
            [f"  {b}" for b in bad]
        if tr is not None:
            tr.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def fake_b200(monkeypatch):
    """A fake B200 in place of the CUDA surface (tests/fake_gpu): B200-only host code runs here,
    against the driver's rules, and every launch is recorded."""
    from tests.fake_gpu import FakeGpu

    gpu = FakeGpu().install(monkeypatch)
    yield gpu
    FakeGpu.reset_caches()
