"""The model's steady-state extrapolation gives the full run's figures. A share is a fill, identical
tiles and a drain, and each tile a fill, identical ring turns and an epilogue: the model runs one
short K at 1 and 2 tiles, takes each further tile as the difference of the two, and each further
k-block as the steady k-block cadence read from the run's last ring turns. On the emulator's
virtual clock the ring's turns repeat exactly, so the extrapolation agrees with the full run to
within TOLERANCE (float rounding of the cycle sums). Small chips (``sm_count``) give several tiles
per SM at small shapes, which keeps the full runs short."""
import pytest

from gemm_kernels.perf import params
from gemm_kernels.perf.model import predict

#: relative: the extrapolation is exact in exact arithmetic; 0.1% is far below any effect the
#: model reports, and far above float rounding (a k-block counted wrong, as a ragged K's last
#: partial k-block once was, misses by 0.4% at the chapter-10 point)
TOLERANCE = 1e-3
#: the pair chapters at the calibrated TMA latency (800 cycles): the extrapolation comes out 0.21%
#: short of the full run (exact at 600 cycles, 0.78% short at 1000). The gap is 142 cycles per 64
#: extrapolated k-blocks in both pair cases (chapter 10 here, chapter 8 in SLOW_CASES): the steady
#: cadence read off the short run's last ring turns is about 2 cycles per k-block faster than the full
#: run's. Not yet explained (the issue 29 report; extrapolating from accumulator-reusing tiles did not
#: change it); far below the model's range, so tolerated here, and this test fails if it grows
PAIR_TOLERANCE = 3e-3

CASES = [  # chapter, (M, N, K), depth, SMs
    (5, (256, 256, 1536), 2, 148),  # one tile per CTA: extrapolated in K alone
    (7, (1024, 256, 1536), 4, 4),  # persistent: in tiles and in K, a ring of 4 with an uneven turn
    (10, (300, 300, 2040), None, 2),  # ragged M, N and K (the last k-block partial); a CTA pair
]
SLOW_CASES = [  # the other pair chapters, longer full runs
    (8, (1024, 1024, 2048), 6, 4),
    (9, (2048, 512, 2048), 4, 4),
]


def _check(chapter, shape, depth, sms):
    tol = PAIR_TOLERANCE if chapter >= 8 else TOLERANCE
    values = params.NOMINAL.with_(sm_count=sms)
    fast = predict(chapter, *shape, depth, values=values, with_range=False, exact=False)
    full = predict(chapter, *shape, depth, values=values, with_range=False, exact=True)
    assert fast.tiles_per_unit >= (3 if chapter >= 6 else 1)
    assert fast.share_span_cycles == pytest.approx(full.share_span_cycles, rel=tol)
    assert fast.tflops == pytest.approx(full.tflops, rel=tol)
    for util in ("util_tensor_core", "util_tma", "util_smem"):
        assert getattr(fast, util) == pytest.approx(getattr(full, util), rel=tol), util


@pytest.mark.parametrize("chapter,shape,depth,sms", CASES, ids=[f"ch{c[0]}-depth{c[2]}" for c in CASES])
def test_extrapolation_matches_the_full_run(chapter, shape, depth, sms):
    _check(chapter, shape, depth, sms)


@pytest.mark.slow
@pytest.mark.parametrize("chapter,shape,depth,sms", SLOW_CASES, ids=[f"ch{c[0]}-depth{c[2]}" for c in SLOW_CASES])
def test_extrapolation_matches_the_full_run_of_the_pair_chapters(chapter, shape, depth, sms):
    _check(chapter, shape, depth, sms)
