"""An interactive view of a trace, for the book's pages and for live notebooks (plotly.js).

* ``run_traced(chapter, a, b, **config)``: run a chapter's kernel on the emulator with its trace on
  and every mbarrier's state changes recorded (init, arrivals, expect_tx, bytes landed), on the
  same virtual clock as the trace.
* ``barrier_states(log)``: every mbarrier's (phase, pending arrivals, tx-count) after each change,
  replayed in virtual-time order.
* ``TraceView(trace, log, ...)``: zoom and pan; hovering an event shows its unit, CTA, warp,
  barrier and phase, bytes or TMEM columns; a slider moves a time cursor and lists every mbarrier's
  state at that instant. In the built book the page loads plotly.js once from ``_static``
  (``book_sphinx``); the element has the class ``gk-interactive``. In JupyterLab the plotly
  renderer shows the same figure.

Colours, legend labels and lane names are the static timelines' (``timeline.KINDS``,
``timeline.lane_name``). Times are the emulator's virtual clock: a model, not a measurement.
"""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass, field

from . import timeline

#: the most slider positions a view offers (evenly chosen among the barrier changes)
MAX_STEPS = 120


@dataclass
class BarrierLog:
    """mbarrier state changes of one run: (ns, sequence, (cta, name), what, value)."""

    changes: list = field(default_factory=list)

    def add(self, cycles, bar, what, value):
        from .emu import costmodel

        self.changes.append((costmodel.of(bar.cta).cycles_to_ns(cycles), len(self.changes), (bar.cta.linear, bar.name),
                             what, int(value)))


@contextmanager
def recording_barriers():
    """Record every mbarrier state change while the block runs (an observer of the emulator's
    mbarriers, ``emu.mbarrier.observing``)."""
    from .emu.mbarrier import observing

    log = BarrierLog()
    with observing(lambda bar, what, cycles, value: log.add(cycles, bar, what, value)):
        yield log


def run_traced(chapter, a, b, **config):
    """(trace, barrier log) of chapter ``chapter`` on the emulator (TMA loads marked by stage)."""
    from .book_helpers import emulator_trace

    with recording_barriers() as log:
        trace = emulator_trace(chapter, a, b, **config)
    return trace, log


@dataclass
class BarrierState:
    phase: int  # completed phases so far: the current phase's number
    pending: int  # arrivals still missing in the current phase
    expected: int  # arrivals per phase
    tx: int  # transaction bytes announced and not yet landed

    def text(self):
        return (f"phase {self.phase} (parity {self.phase & 1}), {self.pending} of {self.expected} arrivals "
                f"pending, tx-count {self.tx}")


def barrier_states(log):
    """[(ns, {(cta, name): BarrierState})] after each change, in virtual-time order."""
    states, out = {}, []
    for ns, _, key, what, value in sorted(log.changes, key=lambda c: (c[0], c[1])):
        st = states.get(key)
        if what == "init" or st is None:
            states[key] = st = BarrierState(0, value if what == "init" else 1, value if what == "init" else 1, 0)
            if what == "init":
                out.append((ns, {k: BarrierState(**vars(v)) for k, v in states.items()}))
                continue
        if what == "arrive":
            st.pending -= value
        elif what == "expect_tx":
            st.tx += value
        elif what == "complete_tx":
            st.tx -= value
        if st.pending <= 0 and st.tx == 0:
            st.phase += 1
            st.pending = st.expected
        out.append((ns, {k: BarrierState(**vars(v)) for k, v in states.items()}))
    return out


def _hover(e, lane):
    parts = [f"<b>{timeline.KINDS[e.op].label}</b>", f"unit / lane: {lane}", f"CTA {e.cta}"]
    if e.warp >= 0:
        parts.append(f"warp {e.warp} (threads {32 * e.warp}..{32 * e.warp + 31})")
    if e.barrier:
        parts.append(f"barrier {e.barrier}" + (f", phase {e.phase}" if e.phase >= 0 else ""))
    if e.stage >= 0:
        parts.append(f"ring stage {e.stage}")
    if e.nbytes:
        parts.append(f"{e.nbytes} bytes")
    if e.detail:
        parts.append(e.detail.replace("cols", "TMEM columns"))
    parts.append(f"{e.start:.0f} .. {e.end:.0f} ns")
    return "<br>".join(parts)


class TraceView:
    """A trace as an interactive plotly figure with a barrier-state time cursor."""

    def __init__(self, trace, log=None, *, title="", max_ctas=1, lanes=None):
        events, lanes = timeline._select(trace, lanes, max_ctas)
        for e in events:
            timeline.kind_of(e.op)
        self.title, self.source = title, timeline.time_label(trace)
        self.lanes = lanes
        self.t0 = min(e.start for e in events)
        self.span = max(e.end for e in events) - self.t0 or 1.0
        strip = len({e.cta for e in events}) == 1
        self.names = {lane: timeline._display_name(lane, strip) for lane in lanes}
        self.events = events
        ctas = {e.cta for e in events}
        self.steps = self._steps(log, ctas) if log is not None else []

    def _steps(self, log, ctas):
        states = [(ns, {k: v for k, v in st.items() if k[0] in ctas}) for ns, st in barrier_states(log)]
        states = [(max(0.0, ns - self.t0), st) for ns, st in states if st]
        everyone = max((len(st) for _, st in states), default=0)
        states = [(ns, st) for ns, st in states if len(st) == everyone]  # from the last init on
        if len(states) > MAX_STEPS:
            pick = sorted({round(i * (len(states) - 1) / (MAX_STEPS - 1)) for i in range(MAX_STEPS)})
            states = [states[i] for i in pick]
        steps = []
        for ns, st in states:
            width = max(len(name) for _, name in st)
            lines = [f"{'CTA %d ' % cta if len(ctas) > 1 else ''}{name:<{width}}  {s.text()}"
                     for (cta, name), s in sorted(st.items())]
            steps.append((ns, f"<b>mbarriers at {ns:.0f} ns</b><br>" + "<br>".join(lines), len(lines)))
        return steps

    def figure(self):
        """The plotly figure as a dict: {"data", "layout", "config"}."""
        data = []
        y_of = {lane: self.names[lane] for lane in self.lanes}
        for op, kind in timeline.KINDS.items():
            evs = [e for e in self.events if e.op == op]
            if not evs:
                continue
            ys = [y_of[timeline.lane_name(e.lane)] for e in evs]
            hover = [_hover(e, y_of[timeline.lane_name(e.lane)]) for e in evs]
            starts = [round(e.start - self.t0, 1) for e in evs]
            if kind.style == "tick":
                data.append({"type": "scatter", "mode": "markers", "name": kind.label, "x": starts, "y": ys,
                             "marker": {"symbol": "line-ns-open", "size": 14, "color": kind.colour,
                                        "line": {"width": 2, "color": kind.colour}},
                             "hovertext": hover, "hoverinfo": "text"})
                continue
            widths = [round(max(e.end - e.start, timeline.MIN_BAR * self.span), 1) for e in evs]
            data.append({"type": "bar", "orientation": "h", "name": kind.label, "y": ys, "x": widths,
                         "base": starts, "width": 0.15 if kind.style == "wait" else 0.6,
                         "marker": {"color": kind.colour, "line": {"width": 0.5, "color": "white"}},
                         "hovertext": hover, "hoverinfo": "text"})
        rows = len(self.lanes)
        plot = 34 * rows + 20
        layout = {
            "title": {"text": self.title, "x": 0, "xanchor": "left", "y": 0.995, "yanchor": "top",
                      "font": {"size": 14}},
            "barmode": "overlay", "height": plot + 110 + 60, "margin": {"l": 130, "r": 20, "t": 110, "b": 60},
            "xaxis": {"title": {"text": self.source}, "range": [0, self.span * 1.01], "zeroline": False},
            "yaxis": {"type": "category", "categoryorder": "array",
                      "categoryarray": [y_of[lane] for lane in self.lanes], "autorange": "reversed"},
            "legend": {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom", "font": {"size": 12}},
            "hovermode": "closest", "font": {"size": 12}, "dragmode": "zoom",
        }
        if self.steps:
            lines = max(n for _, _, n in self.steps) + 1
            box = 17 * lines + 20
            layout["height"] += 90 + box
            layout["margin"]["b"] = 60 + 90 + box
            first_ns, first_text, _ = self.steps[0]
            layout["shapes"] = [{"type": "line", "xref": "x", "yref": "paper", "x0": first_ns, "x1": first_ns,
                                 "y0": 0, "y1": 1, "line": {"color": "#CC0000", "width": 1.5}}]
            layout["annotations"] = [{"xref": "paper", "yref": "paper", "x": 0, "y": 0, "yshift": -150,
                                      "xanchor": "left", "yanchor": "top", "align": "left", "showarrow": False,
                                      "text": first_text, "font": {"family": "monospace", "size": 11}}]
            layout["sliders"] = [{
                "active": 0, "y": 0, "yanchor": "top", "pad": {"t": 55}, "len": 1.0, "ticklen": 0,
                "tickcolor": "rgba(0,0,0,0)", "font": {"color": "rgba(0,0,0,0)"},
                "currentvalue": {"prefix": "time cursor (red line): ", "suffix": " ns",
                                 "font": {"size": 12, "color": "#333333"}},
                "steps": [{"label": f"{ns:.0f}", "method": "relayout",
                           "args": [{"shapes[0].x0": ns, "shapes[0].x1": ns, "annotations[0].text": text}]}
                          for ns, text, _ in self.steps]}]
        config = {"displaylogo": False, "responsive": True, "scrollZoom": False}
        return {"data": data, "layout": layout, "config": config}

    def _repr_html_(self):
        fig = self.figure()
        payload = json.dumps(fig, separators=(",", ":"))
        ident = "gk-tv-" + hashlib.sha1(payload.encode()).hexdigest()[:12]
        return (f'<div class="gk-interactive" id="{ident}" style="width:100%;min-height:'
                f'{fig["layout"]["height"]}px"></div>\n'
                "<script>(function(){var f=" + payload + ";"
                f"function draw(){{var el=document.getElementById('{ident}');"
                "if(!window.Plotly){el.textContent='This interactive view needs plotly.js, which the built book "
                "loads from _static (in a notebook: the plotly renderer).';return;}"
                "Plotly.newPlot(el,f.data,f.layout,f.config);}"
                "if(document.readyState==='loading'){document.addEventListener('DOMContentLoaded',draw);}"
                "else{draw();}})();</script>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"application/vnd.plotly.v1+json": self.figure(), "text/html": self._repr_html_()}


def explore(chapter, a, b, *, title="", max_ctas=1, **config):
    """The interactive view of chapter ``chapter``'s kernel on ``a``, ``b`` (always the emulator:
    the barrier states come from its model of the mbarriers)."""
    trace, log = run_traced(chapter, a, b, **config)
    return TraceView(trace, log, title=title, max_ctas=max_ctas)
