"""Bad input is refused with a clear error before anything launches."""
import numpy as np
import pytest

from gemm_kernels import CHAPTERS, gemm_v1, gemm_v2, gemm_v3


def ops(m, n, k, dtype=np.float16):
    return np.zeros((m, k), dtype), np.zeros((n, k), dtype)


@pytest.mark.parametrize("ch", sorted(CHAPTERS))
def test_dtype(ch):
    a, b = ops(128, 128, 64, np.float32)
    with pytest.raises(TypeError, match="fp16"):
        CHAPTERS[ch].entry(a, b, backend="emulator")


@pytest.mark.parametrize("ch", sorted(CHAPTERS))
def test_not_2d_and_contiguity_and_k_mismatch(ch):
    a, b = ops(128, 128, 64)
    with pytest.raises(ValueError, match="2-D"):
        CHAPTERS[ch].entry(a[None], b, backend="emulator")
    big = np.zeros((128, 128), np.float16)
    with pytest.raises(ValueError, match="C-contiguous"):
        CHAPTERS[ch].entry(big[:, ::2], b, backend="emulator")
    with pytest.raises(ValueError, match="same K"):
        CHAPTERS[ch].entry(a, np.zeros((128, 128), np.float16), backend="emulator")


def test_tiling_rules():
    with pytest.raises(ValueError, match="exactly one tile"):
        gemm_v1(*ops(128, 128, 128), backend="emulator")
    with pytest.raises(ValueError, match="exactly one tile"):
        gemm_v2(*ops(256, 128, 64), backend="emulator")
    with pytest.raises(ValueError, match="multiple of 64"):
        gemm_v2(*ops(128, 128, 96), backend="emulator")
    with pytest.raises(ValueError, match="M to be a positive multiple of 128"):
        gemm_v3(*ops(200, 128, 64), backend="emulator")
    for ch in (4, 5, 6):
        with pytest.raises(ValueError, match="N to be a positive multiple of 128"):
            CHAPTERS[ch].entry(*ops(128, 192, 64), backend="emulator")


def test_pipeline_depth_that_does_not_fit():
    with pytest.raises(ValueError, match="227|232448"):
        CHAPTERS[5].entry(*ops(128, 128, 64), backend="emulator", pipe_depth=7)


def test_backend_blackwell_without_b200():
    from gemm_kernels.runtime.device import gpu_info

    info = gpu_info()
    if info is not None and info.compute_capability[0] == 10:
        pytest.skip("a B200 is present")
    with pytest.raises(RuntimeError, match="B200|compute capability 10"):
        gemm_v1(*ops(128, 128, 64), backend="blackwell")


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend"):
        gemm_v1(*ops(128, 128, 64), backend="cpu")


@pytest.mark.parametrize("ch", [5, 6, 7, 8, 9])
@pytest.mark.parametrize("bad", [{"pipe_depth": 0}, {"pipe_depth": 2.5}, {"pipe_depth": True}])
def test_pipeline_knobs(ch, bad):
    m, n, k = CHAPTERS[ch].tile
    with pytest.raises(ValueError, match="pipe_depth must be a positive int"):
        CHAPTERS[ch].entry(*ops(m, n, k), backend="emulator", **bad)


@pytest.mark.parametrize("ch,knob", [(6, "num_ctas"), (7, "num_ctas"), (8, "num_clusters"), (9, "num_clusters")])
def test_persistent_size(ch, knob):
    m, n, k = CHAPTERS[ch].tile
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="positive int"):
            CHAPTERS[ch].entry(*ops(m, n, k), backend="emulator", **{knob: bad})
    with pytest.raises(ValueError, match="group must be a positive int"):
        CHAPTERS[ch].entry(*ops(m, n, k), backend="emulator", group=0)


def test_cluster_tiles_and_k_rule():
    from gemm_kernels import gemm_v4, gemm_v7, gemm_v8, gemm_v9

    with pytest.raises(ValueError, match="M to be a positive multiple of 256"):
        gemm_v8(*ops(128, 256, 64), backend="emulator")
    with pytest.raises(ValueError, match="M to be a positive multiple of 512"):
        gemm_v9(*ops(256, 256, 64), backend="emulator")
    with pytest.raises(ValueError, match="K to be a positive multiple of 64"):
        gemm_v4(*ops(128, 128, 96), backend="emulator")
    with pytest.raises(ValueError, match="acc_stages must be"):
        gemm_v7(*ops(128, 128, 64), backend="emulator", acc_stages=3)
    with pytest.raises(ValueError, match="acc_stages must be"):
        gemm_v8(*ops(256, 256, 64), backend="emulator", acc_stages=4)
    with pytest.raises(ValueError, match="policy must be one of"):
        gemm_v4(*ops(128, 128, 64), backend="emulator", policy="lazzy")


@pytest.mark.parametrize("ch", [5, 6, 7, 8, 9])
def test_too_deep_a_pipeline(ch):
    m, n, k = CHAPTERS[ch].tile
    with pytest.raises(ValueError, match="232448"):
        CHAPTERS[ch].entry(*ops(m, n, k), backend="emulator", pipe_depth=9)
