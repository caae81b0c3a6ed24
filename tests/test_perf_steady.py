"""The model's steady-state extrapolation (a share's span is linear in its tiles and in K once the
ring is steady) gives the full run's figures, for a persistent chapter of each kind and for a
one-tile-per-CTA chapter. Small chips (``sm_count``) give several tiles per SM at small shapes."""
import pytest

from gemm_kernels.perf import params
from gemm_kernels.perf.model import predict

CASES = [  # chapter, (M, N, K), depth, SMs: each extrapolates in both tiles and K, or in K alone (4, 5)
    (4, (512, 512, 2048), None, 148),
    (5, (512, 512, 2048), 2, 148),
    (6, (1024, 512, 1536), 2, 8),
    (7, (1024, 512, 2048), 4, 8),
    (8, (1024, 1024, 2048), 4, 4),
    (8, (1024, 1024, 2048), 6, 4),
    (9, (2048, 512, 2048), 4, 4),
    (10, (1000, 1000, 2040), None, 4),  # ragged M, N and K: the full run's edge tiles cost full tiles
]


@pytest.mark.slow
@pytest.mark.parametrize("chapter,shape,depth,sms", CASES, ids=[f"ch{c[0]}-depth{c[2]}" for c in CASES])
def test_extrapolation_matches_the_full_run(chapter, shape, depth, sms):
    values = params.NOMINAL.with_(sm_count=sms)
    fast = predict(chapter, *shape, depth, values=values, with_range=False, exact=False)
    full = predict(chapter, *shape, depth, values=values, with_range=False, exact=True)
    assert fast.tiles_per_unit >= (3 if chapter >= 6 else 1)
    assert fast.share_span_cycles == pytest.approx(full.share_span_cycles, rel=2e-3)
    assert fast.tflops == pytest.approx(full.tflops, rel=2e-3)
