"""The book's static timelines: every event kind drawn in its own colour with one legend entry,
short work (TMEM loads, stores) drawn as bars, the same lane names in every chapter, figures at
150 dpi or more with no text under 10 pt."""
import matplotlib

matplotlib.use("Agg")  # tests only: the book's notebooks keep their inline backend

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from gemm_kernels import book_helpers as bh  # noqa: E402
from gemm_kernels import timeline  # noqa: E402
from gemm_kernels.check import random_operands  # noqa: E402
from gemm_kernels.trace import Trace  # noqa: E402


@pytest.fixture(scope="module")
def step6_trace():
    a, b = random_operands(256, 256, 128)
    return bh.trace_of(6, a, b, num_ctas=1)


@pytest.fixture(scope="module")
def step5_trace():
    a, b = random_operands(128, 128, 256)
    return bh.trace_of(5, a, b, pipe_depth=2)


def _bar_colours(ax):
    out = []
    for coll in ax.collections:
        if isinstance(coll, PolyCollection):
            out += [mcolors.to_hex(c) for c in coll.get_facecolors()]
    return out


def test_every_kind_has_a_colour_and_no_black():
    colours = [k.colour.lower() for k in timeline.KINDS.values()]
    assert len(set(colours)) == len(colours), "two event kinds share a colour"
    assert "#000000" not in colours
    with pytest.raises(ValueError, match="has no colour"):
        tr = Trace()
        tr.add(lane="warp 0", op="mystery", start=0, end=1)
        timeline.draw_timeline(tr)


def test_tmem_loads_and_stores_are_bars_with_their_colour(step6_trace):
    ax = timeline.draw_timeline(step6_trace)
    bars = set(_bar_colours(ax))
    assert timeline.KINDS["tmem.ld"].colour.lower() in bars
    assert timeline.KINDS["tma.store"].colour.lower() in bars
    assert "#000000" not in bars
    lines = {mcolors.to_hex(line.get_color()) for line in ax.lines}
    assert "#000000" not in lines
    plt.close(ax.figure)


def test_one_legend_entry_per_kind(step5_trace):
    fig = timeline.side_by_side([step5_trace, step5_trace], ["a", "b"])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(labels) == len(set(labels)), labels
    assert sum("TMA load" in lab for lab in labels) == 1, labels
    assert "TMA load (hatching: ring stage)" in labels
    plt.close(fig)


def test_lane_names_are_the_same_for_one_and_many_ctas(step6_trace):
    one = [t.get_text() for t in timeline.draw_timeline(step6_trace).get_yticklabels()]
    assert one[0] == "TMA" and "TMA unit" not in one
    a, b = random_operands(256, 256, 128)
    two_ctas = bh.trace_of(6, a, b, num_ctas=2)  # the same kernel on two CTAs: lanes "CTA 0 TMA", ...
    assert any(e.lane.startswith("CTA 0 ") for e in two_ctas.events), "not a multi-CTA trace"
    many = [t.get_text() for t in timeline.draw_timeline(two_ctas).get_yticklabels()]
    assert many == one
    plt.close("all")


def test_resolution_and_text_size(step6_trace):
    fig = timeline.side_by_side([step6_trace], ["one"])
    assert fig.dpi >= 150
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip()]
    assert sizes and min(sizes) >= 10, min(sizes)
    plt.close(fig)
