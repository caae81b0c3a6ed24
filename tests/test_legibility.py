"""Every figure the package draws shows no text under 10 pt at the size the book displays it
(``timeline.DISPLAY_PX``, the content column of a 1280-px window): a PNG wider than that is
scaled down, its text with it (issue 21: ~9 pt timelines, 5.6-7.3 pt benchmarking figures)."""
import matplotlib

matplotlib.use("Agg")  # tests only

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_kernels import bench, emu, structure, timeline, trace_view  # noqa: E402
from gemm_kernels import book_helpers as bh  # noqa: E402
from gemm_kernels.check import random_operands  # noqa: E402

MIN_DISPLAYED_PT = 10


@pytest.fixture(scope="module")
def step5():
    return trace_view.run_traced(5, *random_operands(128, 128, 256), pipe_depth=2)


def _report():
    rows = [bench.Result(f"step {c}", c, s, s, s, 100.0 * c) for c in (1, 5, 9) for s in (4096, 8192)]
    return bench.Report("model", "model", rows)


def _figures(step5):
    trace, log = step5
    from gemm_kernels.perf import book as perf_book

    yield "timeline", timeline.draw_timeline(trace, title="t").figure
    with emu.on_sms(1):  # every event kind at once, with the widest legend labels
        sm = bh.trace_of(3, *random_operands(640, 128, 64))
    yield "timeline of CTAs sharing an SM", timeline.draw_timeline(bh.mark_stages(sm), max_ctas=None).figure
    yield "side by side", timeline.side_by_side([trace, trace], ["a", "b"])
    yield "structure", structure.draw_structure(structure.handoffs(trace, log), title="t")
    yield "bench", bench.figure(_report())
    yield "ladder", perf_book.ladder_figure()


def _clipped(fig):
    """Texts that reach outside the figure (a legend too wide for a page-wide figure)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    w, h = fig.canvas.get_width_height()
    from matplotlib.text import Text

    hidden = set()  # labels of ticks outside an axis's view limits: matplotlib does not draw them
    for ax in fig.axes:
        for axis, (lo, hi) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            for tick in axis.get_major_ticks():
                if not lo - 1e-9 <= tick.get_loc() <= hi + 1e-9:
                    hidden |= {id(tick.label1), id(tick.label2)}
    return [t.get_text() for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible() and id(t) not in hidden
            and (lambda e: e.x0 < -1 < e.x1 or e.x0 < w + 1 < e.x1 or e.y0 < -1 < e.y1 or e.y0 < h + 1 < e.y1)(
                t.get_window_extent(r))]  # (a tick label wholly outside is not drawn: not clipped)


def test_every_figure_is_legible_as_displayed(step5):
    small = []
    for name, fig in _figures(step5):
        pt, text = timeline.smallest_displayed_text(fig)
        if pt < MIN_DISPLAYED_PT - 1e-6:
            small.append(f"{name}: {text!r} shows at {pt:.1f} pt")
        small += [f"{name}: {text!r} is cut off at the figure's edge" for text in _clipped(fig)]
        plt.close(fig)
    assert not small, small


def test_the_measure_can_fail():
    """A 10-inch figure at 100 dpi with 7-pt text (the old benchmarking figure) is too small."""
    fig = plt.figure(figsize=(10, 4), dpi=100)
    fig.text(0.1, 0.5, "tiny", fontsize=7)
    assert timeline.smallest_displayed_text(fig)[0] < MIN_DISPLAYED_PT
    plt.close(fig)
