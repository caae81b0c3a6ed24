"""Timelines drawn from real emulator traces, and the book helpers the chapters call."""
import matplotlib

matplotlib.use("Agg")  # tests only: the book's notebooks keep their inline backend

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gemm_kernels import book_helpers, gemm_v1, gemm_v4  # noqa: E402
from gemm_kernels.check import random_operands  # noqa: E402
from gemm_kernels.timeline import draw_timeline, side_by_side, time_label  # noqa: E402


def _trace(entry, m, n, k):
    a, b = random_operands(m, n, k)
    return entry(a, b, backend="emulator", trace=True).launch.trace


def _labels(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


def test_step1_timeline_png(tmp_path):
    trace = _trace(gemm_v1, 128, 128, 64)
    ax = draw_timeline(trace, title="step 1")
    assert _labels(ax) == ["tensor core", "warp 0", "warp 1", "warp 2", "warp 3"]
    assert "model, not a measurement" in ax.get_xlabel()
    out = tmp_path / "step1.png"
    ax.figure.savefig(out, dpi=80)
    assert out.stat().st_size > 5000
    plt.close(ax.figure)


def test_step4_lanes_one_cta_and_all(tmp_path):
    trace = _trace(gemm_v4, 256, 256, 128)
    ax = draw_timeline(trace)  # CTA 0 only, its prefix dropped
    assert _labels(ax) == ["TMA", "tensor core", "warp 0", "warp 1", "warp 2", "warp 3"]
    plt.close(ax.figure)
    ax = draw_timeline(trace, max_ctas=None)
    labels = _labels(ax)
    assert len(labels) == 4 * 6 and labels[0] == "CTA 0 TMA" and labels[-1] == "CTA 3 warp 3"
    plt.close(ax.figure)
    fig = side_by_side([trace, trace], ["a", "b"], lanes=["CTA 0 TMA", "CTA 0 tensor core"])
    assert len(fig.axes) == 2
    fig.savefig(tmp_path / "pair.png", dpi=80)
    plt.close(fig)


def test_unknown_lane_is_refused():
    trace = _trace(gemm_v1, 128, 128, 64)
    with pytest.raises(ValueError, match="not in the trace"):
        draw_timeline(trace, lanes=["TMA"])


def test_time_label_follows_the_source():
    class T:
        source = "B200 %globaltimer"

    assert time_label(T()) == "time, ns (B200 %globaltimer)"


def test_diff_is_generated_from_the_package():
    diff = book_helpers.kernel_diff(2)
    assert "+    for kc in range(a.shape[1] // BLOCK_K):" in diff
    assert diff.startswith("--- v1_one_tile.py:gemm_v1_kernel")


def test_variant_without_fence_is_named_by_the_emulator():
    from gemm_kernels.emu import MissingProxyFence

    v = book_helpers.variant(1, {"    ptx.fence_proxy_async()\n": ""})
    assert "-    ptx.fence_proxy_async()" in v.diff
    assert isinstance(v.run(128, 128, 64), MissingProxyFence)


def test_sass_lines_of_step1():
    lines = book_helpers.sass_lines(book_helpers.build_chapter(1), ("UTCHMMA",))
    assert len(lines) == 4 and all("UTCHMMA" in ins for _, ins in lines)
