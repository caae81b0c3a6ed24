import pytest


def _has_gpu(min_major):
    try:
        from gemm_kernels.runtime.device import gpu_info

        info = gpu_info()
    except Exception:
        return None
    if info is None or info.compute_capability[0] < min_major:
        return None
    return info


def pytest_collection_modifyitems(config, items):
    b200 = _has_gpu(10)
    for item in items:
        if "blackwell" in item.keywords and (b200 is None or b200.compute_capability[0] != 10):
            item.add_marker(pytest.mark.skip(reason="needs a B200 (compute capability 10.0); none found"))


@pytest.fixture
def fake_b200(monkeypatch):
    """A fake B200 in place of the CUDA surface (tests/fake_gpu): B200-only host code runs here,
    against the driver's rules, and every launch is recorded."""
    from tests.fake_gpu import FakeGpu

    gpu = FakeGpu().install(monkeypatch)
    yield gpu
    FakeGpu.reset_caches()
