"""Physical sanity of the B200 model: the tensor core never beats its peak, more pipeline depth is
never slower (beyond the model's resolution), a CTA pair halves each SM's operand bytes per FLOP,
and bad input is refused before anything runs."""
import pytest

from gemm_kernels.perf import chip, params
from gemm_kernels.perf.model import predict
from gemm_kernels.perf.share import run_share

PEAK_TFLOPS = params.value("sm_count") * params.value("mma_flop_per_cycle_sm") * params.value("clock_ghz") / 1e3
RESOLUTION = 0.01  # relative: the model's time is a sum of cycle counts; 1% covers its rounding and fill


@pytest.mark.parametrize("chapter,depth", [(4, None), (6, 2), (7, 4), (8, None), (9, None)])
def test_tensor_core_never_above_peak(chapter, depth):
    p = predict(chapter, 2048, 2048, 2048, depth, keep_trace=True)
    assert 0 < p.tflops <= PEAK_TFLOPS
    assert 0 < p.util_tensor_core <= 1.0
    per_cycle = params.value("mma_flop_per_cycle_sm")
    ctas = 2 if chapter >= 8 else 1
    for e in p.share.trace.filter(op="mma"):  # every MMA takes at least its FLOPs at the SM's peak rate
        cycles = (e.end - e.start) * params.value("clock_ghz")
        assert cycles >= e.flops / ctas / per_cycle - 1e-6


@pytest.mark.parametrize("chapter,size", [(5, 1024), (6, 1024), (7, 2048), (8, 1024)])
def test_more_depth_is_never_slower(chapter, size):
    """At the same number of resident CTAs per SM (at 1024^3 chapter 5 has one CTA per SM at any
    depth; 6-8 are persistent). Where a deeper ring costs a resident CTA, depth may lose: chapter 5
    at 4096^3, which its Performance section shows."""
    t = {d: predict(chapter, size, size, size, d).time_us for d in (2, 3, 4)}
    assert t[3] <= t[2] * (1 + RESOLUTION)
    assert t[4] <= t[3] * (1 + RESOLUTION)


def test_a_cta_pair_halves_each_sms_operand_bytes():
    """Per FLOP, an SM of chapter 8's pair loads half the bytes that a chapter-7 SM loads (A: its own
    128 rows; B: half of the 256 columns, the other half arriving in the peer SM)."""
    one = run_share(7, 512, 512, 256, sm_count=1, pipe_depth=4)
    pair = run_share(8, 512, 512, 256, sm_count=2, pipe_depth=4)
    assert one.mma_flops > 0 and pair.mma_flops > 0
    assert pair.load_bytes / pair.mma_flops == pytest.approx(0.5 * one.load_bytes / one.mma_flops)


@pytest.mark.parametrize("m,n,ctas", [(128, 128, 1), (256, 256, 2)])
def test_shared_memory_never_limits_the_books_mmas(m, n, ctas):
    """Why the clock has no shared-memory term: each SM's operand bytes of one K=16 MMA (its own
    M/ctas rows of A, N/ctas rows of B, fp16) arrive at 128 B/cycle no slower than the MMA computes."""
    k = 16
    flops_per_sm = 2 * m * n * k / ctas
    operand_bytes_per_sm = (m // ctas + n // ctas) * k * 2
    compute = flops_per_sm / params.value("mma_flop_per_cycle_sm")
    assert operand_bytes_per_sm / params.value("smem_operand_bytes_per_cycle") <= compute


def test_l2_model_counts_each_panel_once_when_everything_fits():
    geo = chip.Geometry(128, 128, 1, True, 8)
    order = chip.tile_order(geo, 1024, 1024)
    t = chip.l2_traffic(order, geo, 1024, 148)
    assert t.hbm_read_bytes == 2 * 1024 * 1024 * 2  # A and B once
    assert t.l2_read_bytes == 64 * 2 * 128 * 1024 * 2  # every tile loads its panels
    small = chip.l2_traffic(order, geo, 1024, 8, capacity=4 * 128 * 1024 * 2)
    assert small.hbm_read_bytes > t.hbm_read_bytes  # a cache too small for a round re-reads panels


def test_bad_input_is_refused_before_running():
    with pytest.raises(ValueError, match="multiple of"):
        predict(8, 1000, 1000, 1000)
    with pytest.raises(ValueError, match="pipe_depth"):
        predict(7, 1024, 1024, 1024, 0)
