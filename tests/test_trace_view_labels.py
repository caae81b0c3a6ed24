"""Every chapter's interactive view (the run its page explores) labels each event from the event
itself and speaks one clock: a plain arrive is drawn, listed in the legend and hovered as
``mbarrier.arrive``, an arrive that announces bytes as ``mbarrier.arrive.expect_tx`` (issue 31:
chapter 7's plain ``ld2mma`` arrives and chapter 10's ``clc_empty`` arrives were all "expect_tx");
hover, axis and the cursor's state table give an event the same time."""
import re

import pytest

from gemm_kernels import timeline, trace_view
from gemm_kernels.check import random_operands

#: chapter -> (M, N, K, config, max_ctas): the runs the chapters' "Explore the trace" cells draw
PAGE_VIEWS = {
    1: (128, 128, 64, {}, 1), 2: (128, 128, 192, {}, 1), 3: (256, 256, 128, {}, 2),
    4: (256, 256, 192, {}, 1), 5: (128, 128, 320, {"pipe_depth": 2}, 1), 6: (512, 384, 192, {}, 1),
    7: (256, 256, 256, {"num_ctas": 1}, 1), 8: (256, 512, 256, {"num_clusters": 1}, 2),
    9: (512, 256, 256, {"num_clusters": 1}, 2), 10: (512, 512, 128, {"num_clusters": 1}, 2),
}


def _page_view(chapter):
    m, n, k, config, max_ctas = PAGE_VIEWS[chapter]
    a, b = random_operands(m, n, k)
    trace, log = trace_view.run_traced(chapter, a, b, **config)
    return trace_view.TraceView(trace, log, max_ctas=max_ctas)


def test_the_page_views_are_the_pages_runs():
    """PAGE_VIEWS follows the pages: each chapter's explore call runs the shape listed here."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "chapters"
    for chapter, (m, n, k, _, max_ctas) in PAGE_VIEWS.items():
        page = next(root.glob(f"{chapter:02d}-*.md")).read_text()
        cell = page[page.index(f"trace_view.explore({chapter},") - 200:page.index(f"trace_view.explore({chapter},")]
        assert f"random_operands({m}, {n}, {k})" in cell, chapter
        assert re.search(rf"trace_view\.explore\({chapter},[^)]*max_ctas=({max_ctas}|ctas_x)", page), chapter


@pytest.mark.parametrize("chapter", sorted(PAGE_VIEWS))
def test_labels_come_from_the_events_and_one_clock(chapter):
    view = _page_view(chapter)
    fig = view.figure()
    by_name = {d["name"]: d for d in fig["data"]}
    # the legend has one entry per kind the events are, and no other
    kinds = {timeline.kind_key(e) for e in view.events}
    assert set(by_name) == {timeline.KINDS[k].label for k in kinds}, chapter
    arrives = [e for e in view.events if e.op == "arrive"]
    for key, plain in (("arrive", True), ("arrive.expect_tx", False)):
        evs = [e for e in arrives if (e.nbytes == 0) == plain]
        label = timeline.KINDS[key].label
        assert (label in by_name) == bool(evs), (chapter, label)
        if evs:  # each hover names the instruction the kernel issued, with or without expect_tx
            hovers = by_name[label]["hovertext"]
            assert len(hovers) == len(evs)
            for h in hovers:
                head = re.match(r"<b>(.*?)</b>", h).group(1)
                assert head.startswith("mbarrier.arrive") and (".expect_tx" in head) == (not plain), (chapter, head)
    # one clock: every hover's start is the mark's x, and the state table's start the same
    for d in fig["data"]:
        for x, h in zip(d["base"] if d["type"] == "bar" else d["x"], d["hovertext"]):
            start = float(re.search(r"(-?[\d.]+) \.\. (-?[\d.]+) ns", h).group(1))
            assert abs(start - x) <= 0.6, (chapter, d["name"], x, h)
    rows = view._state_rows()
    assert min(r[1] for r in rows) >= 0 and max(r[2] for r in rows) <= view.span + 0.01
    assert 0 <= fig["layout"]["xaxis"]["range"][0] and fig["layout"]["xaxis"]["range"][1] >= view.span


def test_plain_and_expect_tx_arrives_both_occur_in_the_book():
    """Step 7's writeback arrives on ld2mma with no bytes; its producer's arrives announce bytes."""
    view = _page_view(7)
    ops = {(timeline.kind_key(e), e.barrier.split("[")[0]) for e in view.events if e.op == "arrive"}
    assert ("arrive", "ld2mma") in ops and ("arrive.expect_tx", "tma2mma") in ops, ops
