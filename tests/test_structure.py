"""Execution-structure diagrams read from a real emulator run: barriers with whole arrival counts
(never an average), every mbarrier, named and cluster barrier, both CTAs of a pair with the
arrivals that cross between them, and labels that overlap neither a box nor each other."""
import matplotlib

matplotlib.use("Agg")  # tests only

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from gemm_kernels import structure, timeline, trace_view  # noqa: E402
from gemm_kernels.check import random_operands  # noqa: E402


def _run(chapter, shape, **config):
    return trace_view.run_traced(chapter, *random_operands(*shape), **config)


@pytest.fixture(scope="module")
def step5():
    return _run(5, (128, 128, 256), pipe_depth=2)


@pytest.fixture(scope="module")
def step8():
    return _run(8, (256, 512, 256), num_clusters=1)


@pytest.fixture(scope="module")
def step9():
    return _run(9, (512, 256, 256), num_clusters=1)


def _labels(fig):
    return [t.get_text() for t in fig.findobj(Text) if t.get_text().strip()]


def overlaps(fig):
    """Pairs (text, text or box) whose rendered extents intersect (matplotlib's renderer)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = [(t.get_text(), t.get_window_extent(r)) for t in fig.findobj(Text) if t.get_text().strip()]
    boxes = [p.get_window_extent(r) for p in fig.findobj(FancyBboxPatch)]
    bad = []
    for i, (a, ea) in enumerate(texts):
        for b, eb in texts[i + 1:]:
            if ea.overlaps(eb):
                bad.append((a, b))
        inside = [bx for bx in boxes if bx.contains(ea.x0 + 1, ea.y0 + 1) and bx.contains(ea.x1 - 1, ea.y1 - 1)]
        for bx in boxes:  # a text either lies wholly inside one box or touches none
            if bx.overlaps(ea) and not inside:
                bad.append((a, "a box"))
    return bad


def test_step5_handoffs_and_figure(step5):
    trace, log = step5
    bars = {b.name: b for b in structure.handoffs(trace, log)}
    assert set(bars) == {"tma2mma[s]", "mma2tma", "mma2ld", structure.STORE_NODE, "CTA barrier, first use",
                         "CTA barrier, second use"}, set(bars)
    full = bars["tma2mma[s]"]
    assert (full.count, full.stages) == (1, 2)
    assert full.arrival("warp 0", "arrive + expect_tx").label() == "arrive + expect_tx (1 warp), 32768\u00a0B"
    assert full.arrival("TMA", "TMA load").label() == "2 TMA loads, 32768\u00a0B"  # per phase, counted per phase
    assert full.waiters == {"warp 0": 1}
    assert [a.how for a in bars["mma2tma"].arrivals] == ["commit by warp\u00a00"]
    assert bars["mma2ld"].waiters == {"all warps": 4}
    assert bars[structure.STORE_NODE].arrival("TMA", "TMA store").label() == "2 TMA stores (whole run), 32768\u00a0B"
    only = structure.handoffs(trace, log, only=("mma2tma",))
    assert [b.name for b in only] == ["mma2tma"]
    fig = structure.draw_structure(list(bars.values()), title="t")
    assert fig.dpi >= timeline.DPI
    assert not overlaps(fig), overlaps(fig)
    plt.close(fig)


def test_counts_are_whole_numbers_of_warps(step8):
    """A wait by the one producer warp is "1 warp" (issue 21: "wait (1.38 warps)" came from
    dividing waits by phases); every arrow's count is an integer."""
    trace, log = step8
    bars = structure.handoffs(trace, log)
    producer = [b for b in bars if "TMA producer" in " ".join(b.waiters)]
    assert producer and all(w == 1 for b in producer for lane, w in b.waiters.items() if "TMA producer" in lane)
    for b in bars:
        assert all(isinstance(w, int) for w in b.waiters.values()), b
        assert all(isinstance(a.warps, int) and all(isinstance(n, int) for n in a.per_phase) for a in b.arrivals)
    fig = structure.draw_structure(bars)
    assert not any("." in t.split("(")[-1] for t in _labels(fig) if "warp" in t), _labels(fig)


def test_pair_draws_both_ctas_and_the_arrivals_that_cross(step8):
    trace, log = step8
    bars = structure.handoffs(trace, log)
    assert {b.cta for b in bars} == {0, 1, None}  # both CTAs, and the cluster barrier of the pair
    assert any(b.kind == "cluster" and b.count == 512 for b in bars)
    # the writeback's named barrier, and the CTA barrier that publishes the TMEM address after the
    # pair's allocation (issue 20: the allocation follows the set-up cluster barrier)
    assert {b.name for b in bars if b.kind == "named"} == {"named bar 1", "CTA barrier, first use"}
    ld2mma = next(b for b in bars if b.name.startswith("ld2mma"))
    assert ld2mma.cta == 0 and ld2mma.count == 8
    # the leader's ld2mma counts four warps of each CTA; the peer's are remote arrivals
    assert {(a.source, a.warps, a.remote) for a in ld2mma.arrivals} == {("CTA 0 writeback", 4, False),
                                                                       ("CTA 1 writeback", 4, True)}
    # the peer's stage barrier is signalled by the leader's multicast commit
    peer = next(b for b in bars if b.cta == 1 and b.name.startswith("mma2tma"))
    assert [(a.source, a.remote) for a in peer.arrivals] == [("CTA 0 tensor core", True)]
    # the peer's TMA loads complete on the leader's barrier
    full = next(b for b in bars if b.cta == 0 and b.name.startswith("tma2mma"))
    assert full.arrival("CTA 1 TMA", "TMA load").remote
    fig = structure.draw_structure(bars)
    assert "(remote)" in " ".join(_labels(fig))
    assert not overlaps(fig), overlaps(fig)
    plt.close(fig)


def test_step9_has_one_ld2mma_per_consumer(step9):
    """Issue 21: chapter 9 drew both writebacks feeding one averaged ld2mma; each consumer has its
    own, with 8 arrivals per phase (four warps of each CTA)."""
    trace, log = step9
    bars = structure.handoffs(trace, log)
    ld = sorted((b for b in bars if b.name.startswith("ld2mma")), key=lambda b: b.name)
    assert [b.name for b in ld] == ["ld2mma[0]", "ld2mma[1]"]
    assert [b.count for b in ld] == [8, 8]
    assert [sorted((a.source, a.warps) for a in b.arrivals) for b in ld] == [
        [("CTA 0 writeback", 4), ("CTA 1 writeback", 4)], [("CTA 0 writeback 1", 4), ("CTA 1 writeback 1", 4)]]
    assert [b.waiters for b in ld] == [{"CTA 0 MMA issuer": 1}, {"CTA 0 MMA issuer 1": 1}]
    fig = structure.draw_structure(bars)
    assert not overlaps(fig), overlaps(fig)
    plt.close(fig)


@pytest.mark.parametrize("chapter, shape, config", [(1, (128, 128, 64), {}), (3, (256, 256, 128), {})])
def test_early_chapters_draw_their_tables_rows(chapter, shape, config):
    """Chapters 1-3 list mma_done and the CTA barrier's uses; the picture draws each of them."""
    trace, log = _run(chapter, shape, **config)
    names = [b.name for b in structure.handoffs(trace, log)]
    want = {"mma_done barrier", "CTA barrier, first use"}
    want |= {"CTA barrier, second use"} if chapter == 1 else {"CTA barrier, between", "CTA barrier, last use"}
    assert set(names) == want, names
    fig = structure.draw_structure(structure.handoffs(trace, log))
    assert not overlaps(fig), overlaps(fig)
    plt.close(fig)


def test_overlap_check_can_fail():
    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "one label")
    ax.text(0.5, 0.5, "another label")
    assert overlaps(fig)
    plt.close(fig)


def test_pair_picture_from_the_trace(step8):
    """Chapter 8's pair picture: CTA r holds rows 128 r .. 128 r + 127 of A and of B, each CTA's
    TMEM holds its half of D in both accumulators, and the crossings are the remote arrivals."""
    from gemm_kernels import pair_view
    from gemm_kernels.kernels import v8_two_cta as v8

    trace, log = step8
    lay = pair_view.pair_layout(trace, log)
    assert lay.rows == {(r, op): (v8.CTA_M * r, v8.CTA_M) for r in (0, 1) for op in "AB"}
    assert (lay.m, lay.n, lay.issuer) == (v8.CLUSTER_M, v8.CLUSTER_N, 0)
    assert lay.accumulators == [v8.ACC_COLS * a for a in range(v8.DEFAULT_ACC_STAGES)]
    assert {(s, d, t.split(" -> ")[1]) for s, d, t in lay.crossing} == {
        (1, 0, "tma2mma[s]"), (1, 0, "ld2mma[s]"), (0, 1, "mma2tma[s]"), (0, 1, "mma2ld[s]")}
    fig = pair_view.draw_pair(lay, title="t")
    assert not overlaps(fig), overlaps(fig)
    assert timeline.smallest_displayed_text(fig)[0] >= 10
    plt.close(fig)
    with pytest.raises(ValueError, match="cta_group::2"):
        pair_view.pair_layout(*_run(5, (128, 128, 64), pipe_depth=2))


def test_pair_structures_are_drawn_in_parts_legible_at_page_width():
    """Chapters 8-10 draw their structure in parts (issue 31: one diagram was 1,700-2,100 px tall and
    its wait arrows merged into a comb): every barrier lands in exactly one part, each part is under
    1300 px tall at the book's DPI."""
    figs = structure.structure_parts(10, *random_operands(512, 512, 128), num_clusters=1)
    drawn = [(b.name, b.cta) for f in figs for b in f.structure_barriers]
    assert len(drawn) == len(set(drawn)) and {"clc_full[s]", "tma2mma[s]", "ld2mma[s]"} <= {n for n, _ in drawn}
    assert all(f.get_size_inches()[1] * f.dpi < 1300 for f in figs), [f.get_size_inches() for f in figs]
    for f in figs:
        plt.close(f)
    with pytest.raises(ValueError, match="in no part"):
        structure.structure_parts(10, *random_operands(512, 512, 128), num_clusters=1, parts=structure.PARTS[:2])
