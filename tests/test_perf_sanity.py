"""Physical sanity of the B200 model: no prediction above the tensor core's sustained peak, none
above the best published cuBLAS figure at its size, the two-CTA gain and the depth gain come from
the parameters the tests name, more depth is never slower, and bad input is refused before
anything runs."""
import pytest

from gemm_kernels.emu.costmodel import Costs
from gemm_kernels.perf import chip, params, peers, predictions
from gemm_kernels.perf.model import predict
from gemm_kernels.perf.share import run_share

RESOLUTION = 0.01  # relative: the model's time is a sum of cycle counts; 1% covers its rounding and fill


def test_no_stored_prediction_above_the_sustained_peak():
    """Each figure of predictions.json, and each end of its range, stays under the tensor core's
    peak at the clock of the same parameter setting."""
    for r in predictions.load()["results"]:
        assert r["tflops_low"] <= r["tflops"] <= r["tflops_high"], r
        assert r["tflops"] <= params.peak_tflops(params.NOMINAL), r
        assert r["tflops_low"] <= params.peak_tflops(params.PESSIMISTIC), r
        assert r["tflops_high"] <= params.peak_tflops(params.OPTIMISTIC), r


def test_no_clock_below_what_the_best_published_figure_needs():
    """Issue 29: the clock is no longer set so that the best published figure is the model's ceiling
    ("no design above cuBLAS" held by construction). What must hold instead: every clock of the
    range allows every published B200 figure (no published kernel or cuBLAS figure above the
    tensor core's peak at the range's low end)."""
    best = max(max(p.tflops, p.cublas or 0) for p in peers.PEERS if p.gpu == "B200")
    clock = params.PARAMS["clock_ghz"]
    assert params.peak_tflops(params.NOMINAL.with_(clock_ghz=clock.low)) > best


@pytest.mark.parametrize("chapter,depth", [(4, None), (6, 2), (7, 4), (8, None), (9, None)])
def test_tensor_core_never_above_peak(chapter, depth):
    p = predict(chapter, 2048, 2048, 2048, depth, keep_trace=True, with_range=False)
    assert 0 < p.tflops <= params.peak_tflops()
    assert 0 < p.util_tensor_core <= 1.0
    per_cycle = params.value("mma_flop_per_cycle_sm")
    ctas = 2 if chapter >= 8 else 1
    for e in p.share.trace.filter(op="mma"):  # every MMA takes at least its FLOPs at the SM's peak rate
        cycles = (e.end - e.start) * params.value("clock_ghz")
        assert cycles >= e.flops / ctas / per_cycle - 1e-6


@pytest.mark.slow
def test_the_two_cta_gain_comes_from_the_operand_feed():
    """Chapter 8 beats chapter 7 (both at depth 4) because each SM of a pair loads half the operand
    bytes per FLOP: the L2 share and shared memory (tma_port, l2_bytes_per_s, smem_bytes_per_cycle_sm)
    drive the gain. With those unlimited, the gain all but vanishes."""
    unlimited = params.NOMINAL.with_(tma_port_bytes_per_cycle_sm=1e4, l2_bytes_per_s=1e15, smem_bytes_per_cycle_sm=1e4)
    gain = {}
    for name, values in (("nominal", params.NOMINAL), ("unlimited", unlimited)):
        t7 = predict(7, 4096, 4096, 4096, 4, values=values, with_range=False).tflops
        t8 = predict(8, 4096, 4096, 4096, 4, values=values, with_range=False).tflops
        gain[name] = t8 / t7
    assert gain["nominal"] > 1.1
    assert gain["unlimited"] < 1 + (gain["nominal"] - 1) / 3


@pytest.mark.slow
def test_the_depth_gain_comes_from_the_tma_latency():
    """Chapter 7's step from depth 2 to 4 (the ladder's largest) hides the TMA's loaded latency:
    at the latency's low end the gain shrinks, at its high end it grows."""
    lat = params.PARAMS["tma_l2_latency_cycles"]
    gains = []
    for latency in (lat.low, lat.high):
        values = params.NOMINAL.with_(tma_l2_latency_cycles=latency)
        t2, t4 = (predict(7, 2048, 2048, 2048, d, values=values, with_range=False).tflops for d in (2, 4))
        gains.append(t4 / t2)
    assert 1 < gains[0] < gains[1]


def test_the_ladder_climbs_in_the_published_order():
    """At 8192^3 the model's figures rise along the published ladder's steps up to the two-CTA step:
    persistent (depth 2), warp-specialised depth 2, depth 4 (latency hidden: a bandwidth then
    limits), two CTAs (half the shared-memory and L2 bytes per FLOP: the tensor core limits). Step 9
    adds no unit the model can relieve: both pair steps keep the tensor core nearly busy, so the
    model puts them within a few percent of each other (the published ladder has step 9 ahead;
    the model does not reproduce that gain, and the book says so)."""
    data = predictions.load()
    steps = [(6, 2), (7, 2), (7, 4), (8, None)]
    rows = [predictions.lookup(data, c, 8192, d) for c, d in steps]
    figures = [r["tflops"] for r in rows]
    assert figures == sorted(figures), figures
    # depth 4 hides the latency and a bandwidth then limits (at the sourced clock the L2's share per
    # cycle is below shared memory's: either may be named); the pair step is the tensor core's
    assert rows[2]["bottleneck"] in ("shared memory", "L2", "TMA") and rows[3]["bottleneck"] == "tensor core"
    r9 = predictions.lookup(data, 9, 8192)
    assert r9["bottleneck"] == "tensor core" and abs(r9["tflops"] / rows[-1]["tflops"] - 1) < 0.05


@pytest.mark.parametrize("chapter,size", [(5, 1024), (6, 1024), (7, 2048), (8, 1024)])
def test_more_depth_is_never_slower(chapter, size):
    """At the same number of resident CTAs per SM (at 1024^3 chapter 5 has one CTA per SM at any
    depth; 6-8 are persistent)."""
    t = {d: predict(chapter, size, size, size, d, with_range=False).time_us for d in (2, 3, 4)}
    assert t[3] <= t[2] * (1 + RESOLUTION)
    assert t[4] <= t[3] * (1 + RESOLUTION)


def test_a_cta_pair_halves_each_sms_operand_bytes():
    """Per FLOP, an SM of chapter 8's pair loads half the bytes that a chapter-7 SM loads (A: its own
    128 rows; B: half of the 256 columns, the other half arriving in the peer SM)."""
    one = run_share(7, 512, 512, 256, sm_count=1, pipe_depth=4)
    pair = run_share(8, 512, 512, 256, sm_count=2, pipe_depth=4)
    assert one.mma_flops > 0 and pair.mma_flops > 0
    assert pair.load_bytes / pair.mma_flops == pytest.approx(0.5 * one.load_bytes / one.mma_flops)


@pytest.mark.parametrize("chapter,binds_at_low_end", [(7, True), (8, False), (9, False)])
def test_shared_memory_demand(chapter, binds_at_low_end):
    """Shared memory per SM at the tensor core's full rate: the TMA writes the operands it loads and
    the tensor core reads them. A 128 x 128 single-CTA tile needs 2 x 128 B/cycle, more than the
    port's low end (128) and as much as its high end; a pair's 256 x 256 MMA needs half of each."""
    geo = chip.geometry(chapter)
    load_per_flop = (geo.tile_m + geo.tile_n) * 2 / (2 * geo.tile_m * geo.tile_n)  # per SM: tile over its CTAs
    demand = (load_per_flop + geo.smem_read_bytes_per_flop) * params.value("mma_flop_per_cycle_sm")
    port = params.PARAMS["smem_bytes_per_cycle_sm"]
    assert (demand > port.low) == binds_at_low_end
    assert demand <= port.high


def test_tmem_load_cost_has_no_effect():
    """The TMEM load rate is no model parameter (no source was found): the writeback's loads overlap
    the next tile's MMAs, so a 32x faster or slower load leaves a persistent share's span unchanged."""
    spans = [run_share(7, 1024, 512, 1024, sm_count=8, pipe_depth=4, costs=Costs(tmem_ld_cycles_per_32_cols=c)).span_cycles
             for c in (0.5, 16)]
    assert spans[0] == pytest.approx(spans[1], rel=0.02)


def test_l2_model_counts_each_panel_once_when_everything_fits():
    geo = chip.Geometry(128, 128, 1, True, 8)
    order = chip.tile_order(geo, 1024, 1024)
    t = chip.l2_traffic(order, geo, 1024, 148)
    assert t.hbm_read_bytes == 2 * 1024 * 1024 * 2  # A and B once
    assert t.l2_read_bytes == 64 * 2 * 128 * 1024 * 2  # every tile loads its panels
    small = chip.l2_traffic(order, geo, 1024, 8, capacity=4 * 128 * 1024 * 2)
    assert small.hbm_read_bytes > t.hbm_read_bytes  # a cache too small for a round re-reads panels


def test_ragged_shapes_count_their_partial_tiles():
    """Chapter 10 at a ragged M x N schedules ceil(M/256) x ceil(N/256) tiles, each once: the
    partial tile row and column are tiles too (rounding down dropped them)."""
    geo = chip.geometry(10)
    assert (geo.tile_m, geo.tile_n, geo.ctas_per_unit, geo.persistent) == (256, 256, 2, True)
    order = chip.tile_order(geo, 4000, 3000)
    assert len(order) == 16 * 12 and sorted(order) == [(i, j) for i in range(16) for j in range(12)]
    assert len(chip.tile_order(geo, 8191, 8191)) == 32 * 32


def test_chapter_10_is_modelled_as_a_persistent_schedule_over_its_resident_clusters():
    """One cluster per tile, scheduled by CLC over min(74, tiles) resident pairs: the busiest pair
    takes ceil(tiles / 74) of them; the short runs of the extrapolation use the kernel's k-block
    (64), not chapter 10's shape rule (K a multiple of 8)."""
    from gemm_kernels.perf.model import steady_points

    p = predict(10, 4000, 3000, 4096, with_range=False)
    assert (p.units, p.tiles_per_unit) == (74, 3)  # 192 tiles
    assert predict(10, 512, 512, 512, with_range=False).units == 4
    ts, k1 = steady_points(10, 4096, 14, True, 6)
    assert ts == (1, 2) and k1 == 16 * 64


def test_a_shape_the_kernel_refuses_has_no_prediction():
    with pytest.raises(ValueError, match="K=8191"):
        predict(10, 8191, 8191, 8191)
    with pytest.raises(ValueError, match="M=4000"):
        predict(9, 4000, 3072, 4096)


def test_the_emulator_takes_costs_as_an_argument():
    """No global override: two runs with different costs, one after the other, each keep their own."""
    slow = run_share(7, 512, 512, 512, sm_count=4, pipe_depth=2, costs=Costs(tma_latency_cycles=2000))
    fast = run_share(7, 512, 512, 512, sm_count=4, pipe_depth=2, costs=Costs(tma_latency_cycles=200))
    again = run_share(7, 512, 512, 512, sm_count=4, pipe_depth=2, costs=Costs(tma_latency_cycles=2000), timing=False)
    assert fast.span_cycles < slow.span_cycles == again.span_cycles


def test_bad_input_is_refused_before_running():
    with pytest.raises(ValueError, match="multiple of"):
        predict(8, 1000, 1000, 1000)
    with pytest.raises(ValueError, match="pipe_depth"):
        predict(7, 1024, 1024, 1024, 0)
    with pytest.raises(ValueError, match="harness"):
        predict(7, 1024, 1024, 1024, harness="graph")


def test_the_emulator_imports_nothing_from_perf():
    """The layers run one way: perf builds the emulator's costs and passes them in."""
    import ast
    from pathlib import Path

    import gemm_kernels.emu as emu

    for f in Path(emu.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith("..perf") or n.startswith("gemm_kernels.perf") for n in names), (f.name, names)


def test_the_clock_rests_on_its_sources():
    """The clock is a measured B200 clock under back-to-back tensor-core load (flashinfer PR #2899:
    1965 MHz falling to about 1580 MHz near 1000 W), not a figure fitted to a GEMM result; its high end
    is the boost clock, and the H200 analogue at its power limit lies inside the range. Every
    parameter names its basis, and only the TMA's latency is calibrated."""
    clock = params.PARAMS["clock_ghz"]
    assert clock.basis == "sourced"
    assert "flashinfer" in clock.source and "1965 MHz" in clock.source and "1580 MHz" in clock.source
    assert clock.value == 1.58 and clock.high == 1.965
    assert clock.low <= 1500 / 1830 * 1.965 <= clock.high  # the H200 analogue's ratio applied to the boost
    assert clock.low <= clock.value <= clock.high
    assert {p.basis for p in params.PARAMS.values()} <= {"sourced", "derived", "calibrated"}
    assert [k for k, p in params.PARAMS.items() if p.basis == "calibrated"] == ["tma_l2_latency_cycles"]
