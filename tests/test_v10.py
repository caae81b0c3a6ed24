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
        d = gemm_v10(a, b, backend="blackwell", tile_n=256)  # the wide tile: 2 x 3 clusters
    finally:
        FakeGpu.reset_caches()
    res = compare(d, a, b)
    assert res.ok, res.report()
    assert d.shape == (300, 517)
    (launch,) = gpu.kernel_launches()
    assert launch.grid[0] == 2 * 6 and launch.cluster[0] == 2, "a cluster (of 2 CTAs) per tile"
    clc = seen["launch"].clc
    assert clc.resident == 2 and clc.cancelled == {2, 3, 4, 5} and clc.started == {0, 1}


# -- the tile's width (choose_tile_n) -----------------------------------------------------------------

def test_choose_tile_n_takes_the_narrow_tile_only_where_the_busiest_pair_gains():
    assert v10.choose_tile_n(4096, 4096) == 128  # 256 wide tiles: the busiest of 74 pairs takes 4 (3.46)
    assert v10.choose_tile_n(8192, 8192) == 256  # a tie (14 wide or 28 narrow): the wide tile stays
    assert v10.choose_tile_n(4000, 3000) == 256  # a tie too
    assert v10.choose_tile_n(300, 256, pairs=1) == 256  # one pair: the same work either way
    assert v10.choose_tile_n(300, 260, pairs=1) == 128  # ... unless the wide tile pads more columns
    for m, n, pairs in ((4096, 4096, 74), (768, 512, 74), (2000, 3000, 74), (512, 512, 2)):
        work = {tn: -(-(-(-m // 256) * -(-n // tn)) // pairs) * tn for tn in v10.TILE_NS}
        assert work[v10.choose_tile_n(m, n, pairs)] == min(work.values())


@pytest.mark.parametrize("policy", POLICIES)
def test_narrow_tile_ragged_in_m_n_and_k(policy):
    """256 x 128 tiles with edges in M, N and K, five tiles on the emulator's 2 clusters, so that a
    cluster takes three and the accumulator ring (four of 128 columns) is stepped past its start."""
    a, b = random_operands(300, 530, 72, seed=8)
    res = compare(gemm_v10(a, b, backend="emulator", policy=policy, seed=9, tile_n=128), a, b)
    assert res.ok, res.report()


def test_default_tile_is_the_chosen_one(monkeypatch):
    chosen = {}
    real = v10.make_kernel

    def spy(depth, group, tile_n):
        chosen["tile_n"], chosen["depth"] = tile_n, depth
        return real(depth, group, tile_n)

    monkeypatch.setattr(v10, "make_kernel", spy)
    a, b = random_operands(*ONE_K_BLOCK, seed=1)
    assert compare(gemm_v10(a, b, backend="emulator"), a, b).ok
    assert chosen == {"tile_n": v10.choose_tile_n(*ONE_K_BLOCK[:2]), "depth": v10.DEPTH_FOR_TILE_N[chosen["tile_n"]]}


def test_bad_tile_n(no_launch):
    a = np.zeros((8, 16), np.float16)
    with pytest.raises(ValueError, match="tile_n must be one of"):
        gemm_v10(a, a, backend="emulator", tile_n=64)


def test_choose_tile_n_agrees_with_the_performance_model():
    """The host's rule (the busiest pair's work) picks the width the model predicts faster, wherever
    the model's two figures differ by more than 2% (closer than that, the model cannot tell them
    apart). Both widths as the kernel builds them: 256 x 256 with two accumulators and 6 stages,
    256 x 128 with four and 8."""
    from gemm_kernels.perf.choose import best, step10_variants

    variants = step10_variants()
    widths = {256: variants["as written (256 x 256)"],
              128: variants["256 x 128 pair tile"].with_(accumulators=v10.TMEM_COLS // 128,
                                                          stages=v10.DEPTH_FOR_TILE_N[128])}
    assert widths[256].stages == v10.DEPTH_FOR_TILE_N[256] and widths[256].accumulators == v10.TMEM_COLS // 256
    decided = 0
    for m, n, k in [(s, s, s) for s in (1024, 1536, 2048, 3072, 4096, 6144, 8192)] + [
            (4000, 3000, 4096), (2000, 3000, 4096), (8192, 4096, 4096), (5120, 5120, 1024)]:
        _, _, table = best(widths, m, n, k)
        fast, slow = sorted(table.values(), key=lambda p: -p.tflops)
        if fast.tflops < 1.02 * slow.tflops:
            continue
        decided += 1
        model_pick = max(table, key=lambda w: table[w].tflops)
        assert v10.choose_tile_n(m, n) == model_pick, (m, n, k, {w: round(p.tflops) for w, p in table.items()})
    assert decided >= 8
