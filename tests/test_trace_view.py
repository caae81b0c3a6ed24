"""The interactive trace view: mbarrier states replayed from a real emulator run, the plotly
figure the book pages carry (hover fields, one trace per event kind, the time cursor), and the
debugger around it, driven in headless Chromium: the cursor goes to any time, the arrow keys step
from event to event, every warp's state and every mbarrier's state at the cursor, the barrier a
picked warp waits on highlighted in the structure diagram, and a view that keeps its size."""
import json
import os

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
    assert set(names) == {timeline.KINDS[timeline.kind_key(e)].label for e in trace.events if e.cta == 0}
    loads = next(d for d in fig["data"] if d["name"] == timeline.KINDS["tma.load"].label)
    assert all(c == timeline.KINDS["tma.load"].colour for c in [loads["marker"]["color"]])
    hover = loads["hovertext"][0]
    for field in ("unit / lane: TMA", "CTA 0", "barrier", "bytes", "ring stage"):
        assert field in hover, hover
    tmem = next(d for d in fig["data"] if d["name"] == timeline.KINDS["tmem.ld"].label)
    assert "TMEM columns" in tmem["hovertext"][0] and "warp" in tmem["hovertext"][0]
    assert fig["layout"]["font"]["size"] >= 13 and fig["layout"]["legend"]["font"]["size"] >= 13


def test_debugger_data_lists_states_and_every_event_time(step5):
    trace, log = step5
    view = trace_view.TraceView(trace, log)
    data = view.debugger_data()
    # the cursor stops at every event's start and end, not only where a barrier changes
    starts = {round(e.start - view.t0, 2) for e in view.events}
    assert starts <= set(data["times"]) and len(data["times"]) > 2 * len(view.steps) // 3
    waits = [r for r in data["rows"] if r[3].startswith("waiting on")]
    assert waits and all("(parity " in r[3] and r[4] for r in waits)
    assert set(data["keys"]) == {"tma2mma[0]", "tma2mma[1]", "mma2tma", "mma2ld"}
    assert any(r[3].startswith("waiting at named barrier 0") for r in data["rows"])  # bar.sync is a state too
    for step in view.steps:
        assert step[1].count("tx-count") == 4, step  # two stage barriers, mma2tma, mma2ld


def test_html_carries_plotly_only_outside_the_book(step5, monkeypatch):
    trace, log = step5
    view = trace_view.TraceView(trace, log)
    monkeypatch.setenv(trace_view.BOOK_BUILD_ENV, "1")
    html = view._repr_html_()
    assert 'class="gk-interactive gk-debugger"' in html and "Plotly.newPlot" in html
    assert "plotly.min.js" not in html and "cdn" not in html  # the page loads the library, once
    json.loads(html[html.index("var P=") + 6:html.index(";var ID=")])
    assert set(view._repr_mimebundle_()) == {"text/html"}  # JupyterLab shows the same view
    monkeypatch.delenv(trace_view.BOOK_BUILD_ENV)
    assert len(view._repr_html_()) > len(html) + 1_000_000  # a live notebook gets plotly.js inline


def _chromium():
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    import chromium_page

    if chromium_page.chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (apt-get install -y chromium) for this test")
        pytest.skip("no chromium on PATH (Debian: apt-get install -y chromium)")
    return chromium_page


PROBE = """(function(){var el=document.querySelector('.gk-debugger'),pl=el.querySelector('.gk-plot');
var h0=pl.getBoundingClientRect().height,w0=el.getBoundingClientRect().width,T=JSON.parse(el.dataset.times);
el.gkGo(T[5]+0.3);var at=Number(el.dataset.cursor);
el.dispatchEvent(new KeyboardEvent('keydown',{key:'ArrowRight',bubbles:true}));var right=Number(el.dataset.cursor);
el.dispatchEvent(new KeyboardEvent('keydown',{key:'ArrowLeft',bubbles:true}));var left=Number(el.dataset.cursor);
var lanes=[].slice.call(el.querySelectorAll('.gk-warps tr[data-lane]'));
var k,waiting=null;for(k=0;k<T.length&&!waiting;k++){el.gkGo(T[k]);
 waiting=[].slice.call(el.querySelectorAll('.gk-warps tr[data-lane]')).filter(function(r){return r.innerText.indexOf('waiting on')>=0;})[0];}
el.gkPick(waiting.dataset.lane);var hl=el.querySelector('.gk-highlight');
var bold=el.querySelector('.gk-bars tr[data-key="'+el.dataset.waited+'"]');
var sizes=[].slice.call(el.querySelectorAll('td,th,button,label,.gk-plot text')).map(function(n){return parseFloat(getComputedStyle(n).fontSize);});
var inited=[].slice.call(document.querySelectorAll('.gk-debugger')).filter(function(e){return e.dataset.cursor!==undefined;}).length;
return JSON.stringify({inited:inited,views:document.querySelectorAll('.gk-debugger').length,h0:h0,h1:pl.getBoundingClientRect().height,w0:w0,page:document.body.clientWidth,at:at,T:T.slice(0,8),
 right:right,left:left,lanes:lanes.length,waited:el.dataset.waited,hl:hl.style.display,bold:!!bold,
 bars:el.querySelectorAll('.gk-bars tr.gk-bar').length,svg:el.querySelectorAll('.main-svg').length,
 minfont:Math.min.apply(null,sizes),fallback:getComputedStyle(el.querySelector('.gk-fallback')).display});})()"""


@pytest.mark.slow
def test_debugger_in_headless_chromium(step5, tmp_path, monkeypatch):
    """The notebook route (plotly.js inline), as JupyterLab runs it: drawn at once, the cursor goes
    anywhere and the arrow keys step to the neighbouring events, the view keeps its height while
    the cursor moves (it collapsed from 589 to 29 px in JupyterLab), a picked warp's barrier is
    highlighted in the structure diagram, and no text is under 13 px."""
    chromium_page = _chromium()
    import matplotlib

    matplotlib.use("Agg")
    from gemm_kernels import structure

    trace, log = step5
    monkeypatch.delenv(trace_view.BOOK_BUILD_ENV, raising=False)
    fig = structure.draw_structure(structure.handoffs(trace, log))
    view = trace_view.TraceView(trace, log, title="step 5", structure_fig=fig)
    view.add_stop(lambda e: e.op == "wait", "the first wait", state="waiting on")
    page = tmp_path / "view.html"
    # the same view twice (a re-run cell, or two open notebooks in JupyterLab's one document): each
    # rendering finds its own element
    page.write_text("<html><body>" + view._repr_html_() + view._repr_html_() + "</body></html>")
    report = chromium_page.load(page.as_uri(), [PROBE, TOUR_PROBE])
    assert not report.errors and not report.requests, (report.errors, report.requests)
    got = json.loads(report.values[PROBE])
    times = view.debugger_data()["times"]
    assert got["views"] == got["inited"] == 2, got
    assert got["svg"] and got["h0"] > 200 and got["h1"] == got["h0"], got
    assert got["w0"] >= 0.95 * got["page"], got  # full width
    assert abs(got["at"] - (times[5] + 0.3)) < 1e-6  # any time, not only an event's
    assert got["right"] == times[6] and got["left"] == times[5], got
    assert got["lanes"] == len(view.lanes) and got["bars"] == 4
    assert got["waited"] and got["hl"] == "block" and got["bold"], got
    assert got["minfont"] >= 13, got
    assert got["fallback"] == "none", got  # the "script has not run" note goes once the view draws
    tour = json.loads(report.values[TOUR_PROBE])  # the walk-through's first stop: cursor, lane, sentence
    (t_stop, lane_stop, _), = view.tour
    assert tour["shown"] == "flex" and abs(tour["at"] - t_stop) < 1e-6 and tour["picked"] == lane_stop, tour
    assert "Stop 1 of 1" in tour["text"] and "the first wait" in tour["text"] and tour["waited"], tour


TOUR_PROBE = """(function(){var el=document.querySelector('.gk-debugger');
el.querySelector('.gk-tour-next').click();
var row=el.querySelector('.gk-warps tr[data-lane][style*="FFE9E9"]');
return JSON.stringify({shown:getComputedStyle(el.querySelector('.gk-tour')).display,at:Number(el.dataset.cursor),
 picked:row?row.dataset.lane:null,text:el.querySelector('.gk-tour-text').textContent,waited:el.dataset.waited});})()"""


def test_every_event_kind_has_a_debugger_state():
    """The debugger says what a warp is doing for every event kind the timeline draws (chapter 10's
    clc.try_cancel was missing: its page's view raised a KeyError)."""
    missing = set(timeline.KINDS) - set(trace_view._DOING)
    assert not missing, f"add these event kinds to trace_view._DOING: {sorted(missing)}"


def test_a_walk_through_stops_at_the_events_it_names(step5):
    """add_stop finds its event in the trace, picks its lane and checks the sentence's state against
    the state table: a stop whose event is gone, or whose state is not what the trace says, fails."""
    trace, log = step5
    view = trace_view.TraceView(trace, log)
    view.add_stop(lambda e: e.op == "mma", "the first MMA", state="computing an MMA")
    view.add_stop(lambda e: e.op == "wait", "a wait, at its end", nth=1, at="end")
    mma = min((e for e in view.events if e.op == "mma"), key=lambda e: e.start)
    waits = sorted((e for e in view.events if e.op == "wait"), key=lambda e: e.start)
    assert view.tour[0] == (round(mma.start - view.t0, 2), view._label(mma.lane), "the first MMA")
    assert view.tour[1][0] == round(waits[1].end - view.t0, 2)
    assert view.debugger_data()["tour"] == [list(stop) for stop in view.tour]
    with pytest.raises(ValueError, match="no drawn event matches"):
        view.add_stop(lambda e: e.op == "clc.try_cancel", "step 5 has no scheduler")
    with pytest.raises(AssertionError, match="expects"):
        view.add_stop(lambda e: e.op == "mma", "the tensor core waits", state="waiting on")
    with pytest.raises(ValueError, match="at must be"):
        view.add_stop(lambda e: True, "x", at="middle")
