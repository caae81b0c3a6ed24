"""Every figure the package draws shows no text under 10 pt at the size the book displays it
(``timeline.DISPLAY_PX``, the content column of a 1280-px window): a PNG wider than that is
scaled down, its text with it (issue 21: ~9 pt timelines, 5.6-7.3 pt benchmarking figures)."""
import matplotlib

matplotlib.use("Agg")  # tests only

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_kernels import bench, structure, timeline, trace_view  # noqa: E402
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
    yield "side by side", timeline.side_by_side([trace, trace], ["a", "b"])
    yield "structure", structure.draw_structure(structure.handoffs(trace, log), title="t")
    yield "bench", bench.figure(_report())
    yield "ladder", perf_book.ladder_figure()


def test_every_figure_is_legible_as_displayed(step5):
    small = []
    for name, fig in _figures(step5):
        pt, text = timeline.smallest_displayed_text(fig)
        if pt < MIN_DISPLAYED_PT - 1e-6:
            small.append(f"{name}: {text!r} shows at {pt:.1f} pt")
        plt.close(fig)
    assert not small, small


def test_the_measure_can_fail():
    """A 10-inch figure at 100 dpi with 7-pt text (the old benchmarking figure) is too small."""
    fig = plt.figure(figsize=(10, 4), dpi=100)
    fig.text(0.1, 0.5, "tiny", fontsize=7)
    assert timeline.smallest_displayed_text(fig)[0] < MIN_DISPLAYED_PT
    plt.close(fig)
