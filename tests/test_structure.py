"""Execution-structure diagrams read from a real emulator run: barriers with their arrival counts,
who arrives (with the bytes), who waits, and the epilogue's TMA stores."""
import matplotlib

matplotlib.use("Agg")  # tests only

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from gemm_kernels import structure, timeline, trace_view  # noqa: E402
from gemm_kernels.check import random_operands  # noqa: E402


def test_step5_handoffs_and_figure():
    trace, log = trace_view.run_traced(5, *random_operands(128, 128, 256), pipe_depth=2)
    bars = {b.name: b for b in structure.handoffs(trace, log)}
    assert set(bars) == {"tma2mma[s]", "mma2tma", "mma2ld", structure.STORE_NODE}
    full = bars["tma2mma[s]"]
    assert (full.count, full.stages) == (1, 2)
    assert full.arrivals[("warp 0", "arrive + expect_tx")] == (1, 32768)
    assert full.arrivals[("TMA", "TMA load")] == (2, 32768)
    assert full.waiters == {"warp 0": 1}
    assert bars["mma2tma"].arrivals == {("tensor core", "commit by warp 0"): (1, 0)}
    assert set(bars["mma2ld"].waiters) == {"warp 0", "warp 1", "warp 2", "warp 3"}
    assert bars[structure.STORE_NODE].arrivals[("TMA", "TMA store")] == (2, 32768)
    only = structure.handoffs(trace, log, only=("mma2tma",))
    assert [b.name for b in only] == ["mma2tma"]
    fig = structure.draw_structure(list(bars.values()), title="t")
    assert fig.dpi >= timeline.DPI
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip()]
    assert min(sizes) >= timeline.MIN_FONT
    texts = " ".join(t.get_text() for t in fig.findobj(Text))
    assert "2 TMA loads, 32768 B" in texts and "arrive + expect_tx, 32768 B" in texts
    plt.close(fig)
