"""The peers' published figures travel with their provenance, and what the book derives from them
(the cuBLAS spread, the CMU ladder) is computed from them."""
from gemm_kernels.perf import book, calibration, peers


def test_every_peer_figure_says_where_when_shape_and_method():
    for p in peers.PEERS:
        for field in ("url", "date", "shape", "method", "gpu", "dtype"):
            assert getattr(p, field).strip(), f"{p.name}: empty {field}"
        assert p.url.startswith("https://") or p.url == peers.NOT_CONFIRMED, p.url


def test_cublas_spread_is_computed_from_the_b200_figures():
    low, high, spread = peers.cublas_range("B200")
    figs = [p.cublas for p in peers.PEERS if p.gpu == "B200" and p.cublas is not None]
    assert (low, high) == (min(figs), max(figs))
    assert abs(spread - high / low) < 1e-12
    assert spread < 1.2, "the published B200 cuBLAS figures differ by about 10%, not 1.5x"


def test_mlsys_figure_is_its_published_time():
    mlsys = peers.PEERS[0]
    assert peers.MLSYS_SECONDS_4096 == 0.0941e-3  # the published time per call, 0.0941 ms (regression lock)
    assert round(mlsys.tflops) == round(2 * 4096**3 / 0.0941e-3 / 1e12) == 1461


def test_cmu_ladder_is_the_calibration_set_and_the_held_out_column():
    rows = peers.ladder_rows()
    assert [r[4] for r in rows] == [p.tflops for p in calibration.CALIBRATION if p.size == 4096]
    assert {(r[2], 8192): r[5] for r in rows if r[5] is not None} == book.HELD_OUT
    cmu = next(p for p in peers.PEERS if p.url == peers.CMU_URL)
    assert cmu.tflops == book.HELD_OUT[(9, 8192)]
