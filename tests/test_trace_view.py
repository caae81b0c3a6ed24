"""The interactive trace view: mbarrier states replayed from a real emulator run, and the plotly
figure the book pages carry (hover fields, one trace per event kind, the time cursor)."""
import json

import pytest

from gemm_kernels import timeline, trace_view
from gemm_kernels.check import random_operands


@pytest.fixture(scope="module")
def step5():
    a, b = random_operands(128, 128, 192)
    return trace_view.run_traced(5, a, b, pipe_depth=2)


def test_barrier_states_follow_the_kernel(step5):
    trace, log = step5
    final_ns, final = trace_view.barrier_states(log)[-1]
    names = {name for _, name in final}
    assert names == {"tma2mma[0]", "tma2mma[1]", "mma2tma", "mma2ld"}, names
    # three chunks on a ring of two stages: stage 0 completes twice, stage 1 once; nothing is left
    # pending, no byte is still expected
    stage = sorted((name, st) for (_, name), st in final.items() if name.endswith(("[0]", "[1]")))
    assert [st.phase for _, st in stage] == [2, 1], stage
    assert all(st.tx == 0 and st.pending == st.expected for st in final.values())
    # the tx-count of a stage rises to 32768 when thread 0 announces it, then falls as the bytes land
    txs = [st[key].tx for _, st in trace_view.barrier_states(log) for key in st if key[1] == stage[0][0]]
    assert max(txs) == 2 * 128 * 64 * 2


def test_recording_leaves_the_emulator_as_it_was(step5):
    from gemm_kernels.emu.mbarrier import OBSERVERS

    assert OBSERVERS == []  # the recording's observer is gone once the run is over
    with pytest.raises(ValueError), trace_view.recording_barriers():
        raise ValueError  # ... also when the run fails
    assert OBSERVERS == []


def test_figure_has_every_kind_once_with_hover_fields(step5):
    trace, log = step5
    fig = trace_view.TraceView(trace, log, title="t").figure()
    names = [d["name"] for d in fig["data"]]
    assert len(names) == len(set(names))
    assert set(names) == {timeline.KINDS[e.op].label for e in trace.events if e.cta == 0}
    loads = next(d for d in fig["data"] if d["name"] == timeline.KINDS["tma.load"].label)
    assert all(c == timeline.KINDS["tma.load"].colour for c in [loads["marker"]["color"]])
    hover = loads["hovertext"][0]
    for field in ("unit / lane: TMA", "CTA 0", "barrier", "bytes", "ring stage"):
        assert field in hover, hover
    tmem = next(d for d in fig["data"] if d["name"] == timeline.KINDS["tmem.ld"].label)
    assert "TMEM columns" in tmem["hovertext"][0] and "warp" in tmem["hovertext"][0]


def test_time_cursor_lists_every_barrier(step5):
    trace, log = step5
    view = trace_view.TraceView(trace, log)
    fig = view.figure()
    steps = fig["layout"]["sliders"][0]["steps"]
    assert 2 <= len(steps) <= trace_view.MAX_STEPS
    for step in steps:
        text = step["args"][0]["annotations[0].text"]
        assert text.count("tx-count") == 4, text  # two stage barriers, mma2tma, mma2ld
    html = view._repr_html_()
    assert 'class="gk-interactive"' in html and "Plotly.newPlot" in html
    assert "plotly.min.js" not in html and "cdn" not in html  # the page loads the library, once
    json.loads(html[html.index("var f=") + 6:html.index(";function draw")])
