"""Step 10 (gemm_v10): any M, N >= 1 and K a multiple of 8 on the emulator against numpy, nothing
written outside D, bad input refused before anything launches, and the seam between tiles."""
import numpy as np
import pytest

from gemm_kernels import gemm_v10
from gemm_kernels.check import compare, random_operands
from gemm_kernels.emu.scheduler import POLICIES
from gemm_kernels.kernels import host
from gemm_kernels.kernels import v10_any_shape as v10

# (M, N, K): M and N not multiples of 8 with K of one k-block; K below a k-block (56 of its 64
# columns zero-filled); a last partial k-block and edge tiles in both M and N, 2 x 2 tiles on the
# emulator's 2 clusters (each cluster takes 2 tiles: both accumulators)
ONE_K_BLOCK = (5, 13, 64)
SHORT_K = (3, 9, 8)
TWO_BY_TWO = (300, 260, 72)


@pytest.mark.parametrize("policy", POLICIES)
def test_ragged_one_k_block(policy):
    a, b = random_operands(*ONE_K_BLOCK, seed=1)
    d = gemm_v10(a, b, backend="emulator", policy=policy, seed=2)
    assert d.shape == ONE_K_BLOCK[:2]
    res = compare(d, a, b)
    assert res.ok, res.report()


def test_k_below_one_k_block():
    a, b = random_operands(*SHORT_K, seed=3)
    res = compare(gemm_v10(a, b, backend="emulator"), a, b)
    assert res.ok, res.report()


@pytest.mark.parametrize("policy", [pytest.param(p, marks=pytest.mark.slow) if p == "random" else p
                                    for p in POLICIES])
def test_ragged_edges_in_m_n_and_k(policy):
    a, b = random_operands(*TWO_BY_TWO, seed=4)
    res = compare(gemm_v10(a, b, backend="emulator", policy=policy, seed=5), a, b)
    assert res.ok, res.report()


def test_padded_pitch_view():
    """N = 13: D is the M x 13 view of rows padded to 64 elements (a whole store box per row fits
    in the padding, whatever the TMA store's clipping granularity)."""
    a, b = random_operands(*ONE_K_BLOCK, seed=1)
    d = gemm_v10(a, b, backend="emulator")
    assert d.strides == (64 * 2, 2) and d.base is not None and d.base.shape == (5, 64)
    assert v10.padded_pitch(64) == 64 and v10.padded_pitch(65) == 128 and v10.padded_pitch(1) == 64
    assert v10.padded_pitch(1) % v10.SUBTILE_COLS == 0


def test_nothing_written_outside_d():
    """D as a view into a larger array filled with a sentinel: every element around D (the rows
    above and below, the columns left and right) keeps the sentinel. A TMA store of a ragged edge
    writes each row's last 16-byte chunk whole (recorded on an H200), which here would be columns
    21-23 of ``big``: so the kernel stores into a padded D of its own and the host copies the view."""
    m, n, k = 37, 13, 72
    guard, sentinel = 8, np.float16(-7.0)
    big = np.full((m + 2 * guard, 32), sentinel, dtype=np.float16)  # rows of 64 B: 16-byte aligned
    out = big[guard:guard + m, guard:guard + n]
    a, b = random_operands(m, n, k, seed=6)
    d = gemm_v10(a, b, backend="emulator", out=out)
    assert d is out
    res = compare(out, a, b)
    assert res.ok, res.report()
    band = np.ones(big.shape, bool)
    band[guard:guard + m, guard:guard + n] = False
    assert (big[band] == sentinel).all(), f"{(big[band] != sentinel).sum()} elements written outside D"


@pytest.fixture
def no_launch(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a launch happened before the bad input was refused")

    monkeypatch.setattr(host, "run_on_emulator", refuse)


@pytest.mark.parametrize("k", [12, 4, 0])
def test_k_not_a_multiple_of_8(k, no_launch):
    a = np.zeros((16, k), np.float16)
    with pytest.raises(ValueError, match="multiple of 8.*16-byte aligned"):
        gemm_v10(a, a, backend="emulator")


def test_bad_dtype_and_empty(no_launch):
    with pytest.raises(TypeError, match="fp16"):
        gemm_v10(np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32), backend="emulator")
    with pytest.raises(ValueError, match="M >= 1"):
        gemm_v10(np.zeros((0, 8), np.float16), np.zeros((8, 8), np.float16), backend="emulator")
    with pytest.raises(ValueError, match="same K"):
        gemm_v10(np.zeros((8, 8), np.float16), np.zeros((8, 16), np.float16), backend="emulator")


def test_bad_out(no_launch):
    a = np.zeros((8, 16), np.float16)
    with pytest.raises(ValueError, match="shape \\(8, 8\\)"):
        gemm_v10(a, a, backend="emulator", out=np.zeros((8, 9), np.float16))
    with pytest.raises(ValueError, match="16-byte aligned"):
        gemm_v10(a, a, backend="emulator", out=np.zeros((8, 12), np.float16)[:, :8])


@pytest.mark.slow
def test_no_seam_between_tiles():
    """Timing mode, one cluster, four tiles at K = 1024: in the steady state the tensor core waits
    less than 5% of a tile's MMA time between tiles; step 9 at the same K waits about a third
    (its single accumulator per consumer must drain first)."""
    from gemm_kernels.perf.share import run_share
    from gemm_kernels.seam import seams

    k = 1024
    v10 = seams(run_share(10, 512, 512, k, sm_count=2, keep_trace=True).trace, (k // 64) * 4)
    v9 = seams(run_share(9, 1024, 512, k, sm_count=2, keep_trace=True).trace, (k // 64) * 4 * 2)
    assert len(v10.mma_times) >= 4 and len(v9.mma_times) >= 4
    assert v10.steady_fraction() < 0.05, v10
    assert v9.steady_fraction() > 0.2, v9


def test_b200_path_cancels_clusters(monkeypatch):
    """The B200 host path on the fake GPU (tests/fake_gpu), its launch run on the emulator: the whole
    grid is launched (a cluster per tile, 2 x 3 here), and on a fake B200 of 4 SMs (2 pairs) the two
    resident clusters cancel the other four and compute their tiles."""
    import dataclasses

    from tests.fake_gpu import FakeGpu, execute
    from tests.fake_gpu.spec import B200

    seen = {}

    def emulated(gpu, launch, **opts):
        seen["grid"], seen["cluster"] = tuple(launch.grid), tuple(launch.cluster)
        seen["launch"] = execute.emulated(gpu, launch, **opts)

    gpu = FakeGpu(dataclasses.replace(B200, sm_count=4), executor=emulated).install(monkeypatch)
    try:
        a, b = random_operands(300, 517, 64, seed=7)
        d = gemm_v10(a, b, backend="blackwell")
    finally:
        FakeGpu.reset_caches()
    res = compare(d, a, b)
    assert res.ok, res.report()
    assert d.shape == (300, 517)
    (launch,) = gpu.kernel_launches()
    assert launch.grid[0] == 2 * 6 and launch.cluster[0] == 2, "a cluster (of 2 CTAs) per tile"
    clc = seen["launch"].clc
    assert clc.resident == 2 and clc.cancelled == {2, 3, 4, 5} and clc.started == {0, 1}
