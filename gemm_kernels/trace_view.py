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
import uuid
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from . import timeline


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


def _hover(e, lane, t0=0.0):
    """An event's hover text; its times on the axis's clock (ns after ``t0``, the view's first event)."""
    parts = [f"<b>{timeline.instruction(e)}</b>", f"unit / lane: {lane}", f"CTA {e.cta}"]
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
    parts.append(f"{e.start - t0:.0f} .. {e.end - t0:.0f} ns")
    return "<br>".join(parts)


#: where the page's JavaScript finds plotly: the book loads it once from _static (``book_sphinx``
#: sets this variable for the kernels that execute the pages); in a live notebook each view
#: carries it inline
BOOK_BUILD_ENV = "GEMM_KERNELS_BOOK_BUILD"

#: warp states the cursor shows for an event that covers it (tick events: "issuing")
_DOING = {"wait": "waiting on {barrier} (parity {parity})", "tma.load": "copying into {region}",
          "mma": "computing an MMA", "tmem.ld": "tcgen05.ld, {detail}", "tma.store": "storing {nbytes} B",
          "ld/st global": "ordinary global loads/stores", "arrive": "issuing an mbarrier.arrive on {barrier}",
          "arrive.expect_tx": "issuing an mbarrier.arrive.expect_tx of {nbytes} B on {barrier}",
          "commit": "issuing tcgen05.commit to {barrier}", "tma.issue": "issuing a TMA load ({barrier})",
          "bar.sync": "waiting at {detail}", "tmem.alloc": "blocked in tcgen05.alloc of {detail}", "cluster.wait": "waiting at the cluster barrier",
          "bar.arrive": "arriving at {detail}", "cluster.arrive": "arriving at the cluster barrier",
          "clc.try_cancel": "asking the chip for a tile (clusterlaunchcontrol.try_cancel)"}


class TraceView:
    """A trace as an interactive debugger: the plotly timeline with a time cursor that goes to any
    instant (a slider, a time field, a click on the plot; the arrow keys step to the previous or
    next event), and at the cursor every warp's and unit's state beside every mbarrier's phase,
    pending arrivals and tx-count; a warp picked in the list highlights the barrier it waits on in
    the run's structure diagram."""

    def __init__(self, trace, log=None, *, title="", max_ctas=1, lanes=None, structure_fig=None):
        events, lanes = timeline._select(trace, lanes, max_ctas)
        for e in events:
            timeline.kind_of(e.op)
        self.title, self.source = title, timeline.time_label(trace)
        self.lanes = lanes
        strip = len({e.cta for e in events}) == 1
        self.names = {lane: timeline._display_name(lane, strip) for lane in lanes}
        self.events = events
        self.ctas = sorted({e.cta for e in events})
        self.syncs = [e for e in getattr(trace, "syncs", []) if e.cta in self.ctas
                      and timeline.lane_name(e.lane) in self.names]
        # the axis, the slider, the hover and the state table share one clock and one span: a CTA
        # barrier wait that starts before the first drawn event or ends after the last is inside it
        self.t0 = min(e.start for e in events + self.syncs)
        self.span = max(e.end for e in events + self.syncs) - self.t0 or 1.0
        self.log = log
        self.strip = strip
        self.structure_fig = structure_fig
        self.steps = self._steps(log, set(self.ctas)) if log is not None else []
        self.tour = []  # guided stops: (time from t0, lane label, sentence), see add_stop

    # -- a guided walk-through ----------------------------------------------------------------------
    def add_stop(self, where, text, *, lane=None, nth=0, at="start", state=None):
        """Add a stop to the view's walk-through: the cursor goes to the ``nth`` (from 0) drawn event,
        in time order, that ``where(event)`` accepts (its start, or its end with ``at="end"``), the event's lane is
        picked (its barrier lit in the structure diagram) and ``text`` is shown. ``state``: words
        that the picked lane's state must contain at that instant (checked here, so a sentence
        that no longer describes the trace fails the page); ``lane``: only events of the lane with
        this label (as the plot names it, e.g. "CTA 1 writeback"). Returns the view, for chaining."""
        if at not in ("start", "end"):
            raise ValueError(f'at must be "start" or "end", got {at!r}')
        matches = [e for e in sorted(self.events, key=lambda e: e.start)
                   if where(e) and (lane is None or self._label(e.lane) == lane)]
        event = matches[nth] if len(matches) > nth else None
        if event is None:
            raise ValueError(f"no drawn event matches the stop {text!r}: change its selector or the run")
        t = round((event.start if at == "start" else event.end) - self.t0, 2)
        lane = self._label(event.lane)  # picked at the stop
        if state is not None:
            now = self.state_at(lane, t)
            if state not in now:
                raise AssertionError(f"the stop {text!r} expects {lane} to be {state!r} at {t} ns; "
                                     f"the trace says {now!r}")
        self.tour.append((t, lane, text))
        return self

    def state_at(self, lane, t):
        """What the state table says of ``lane`` at ``t`` ns (the page's script, in Python: a wait
        wins over an operation running at the same instant)."""
        eps, found = 1e-6, ""
        for label, start, end, text, _ in self._state_rows():
            if label == lane and start - eps <= t and (t < end - eps or (end - start < 1.01 and abs(t - start) < eps)):
                if not found or text.startswith("waiting"):
                    found = text
        return found or "no traced operation (idle or computing)"

    def _steps(self, log, ctas):
        """[(ns, text, lines)]: every mbarrier's state after each change (the same replay the page's
        script does, kept for tests and for a reader of the figure without JavaScript)."""
        states = [(ns, {k: v for k, v in st.items() if k[0] in ctas}) for ns, st in barrier_states(log)]
        states = [(max(0.0, ns - self.t0), st) for ns, st in states if st]
        everyone = max((len(st) for _, st in states), default=0)
        states = [(ns, st) for ns, st in states if len(st) == everyone]  # from the last init on
        steps = []
        for ns, st in states:
            lines = [f"{'CTA %d ' % cta if len(ctas) > 1 else ''}{name}  {s.text()}"
                     for (cta, name), s in sorted(st.items())]
            steps.append((ns, "<br>".join(lines), len(lines)))
        return steps

    # -- what the cursor knows --------------------------------------------------------------------
    def _label(self, lane):
        return self.names[timeline.lane_name(lane)]

    def _state_rows(self):
        """[lane, start, end, state text, barrier key or ""] for every traced operation shown."""
        rows = []
        for e in self.events + self.syncs:
            fields = {"barrier": e.barrier, "parity": e.extra.get("parity", (e.phase + 1) & 1),
                      "region": e.extra.get("region", "shared memory"), "detail": e.detail.replace("cols", "columns"),
                      "nbytes": e.nbytes}
            text = _DOING[timeline.kind_key(e)].format(**fields)
            key = ""
            if e.op == "wait":
                key = self._bar_key(e.cta, e.barrier)
            elif e.op in ("bar.sync", "cluster.wait"):
                key = self._bar_key(e.cta, e.detail) if e.op == "bar.sync" else "cluster barrier"
            rows.append([self._label(e.lane), round(e.start - self.t0, 2), round(e.end - self.t0, 2), text, key])
        return rows

    def _bar_key(self, cta, name):
        return name if self.strip else f"CTA {cta} {name}"

    def debugger_data(self):
        """What the page's script needs: the events as state rows, the mbarrier log, the event
        boundaries the arrow keys step through, the structure diagram's barrier boxes."""
        changes = []
        logged = sorted(self.log.changes, key=lambda c: (c[0], c[1])) if self.log is not None else []
        logged = [c for c in logged if c[2][0] in self.ctas]
        # barriers listed by CTA, then name, ring stages in order (tma2mma[2] before tma2mma[10])
        order = sorted({c[2] for c in logged}, key=lambda k: (k[0], re.sub(r"\[(\d+)\]$", "", k[1]),
                                                               int(re.search(r"(\d+)\]$", k[1]).group(1))
                                                               if re.search(r"\[\d+\]$", k[1]) else -1))
        index = {k: i for i, k in enumerate(order)}
        keys = [self._bar_key(cta, name) for cta, name in order]
        for ns, _, key, what, value in logged:
            changes.append([round(max(0.0, ns - self.t0), 2), index[key], what, value])
        rows = self._state_rows()
        times = sorted({r[1] for r in rows} | {r[2] for r in rows} | {c[0] for c in changes})
        lanes = [self.names[lane] for lane in self.lanes]
        data = {"span": round(self.span, 2), "lanes": lanes, "rows": rows, "keys": keys, "changes": changes,
                "times": times, "tour": [list(stop) for stop in self.tour]}
        if self.structure_fig is not None:
            import base64
            import io

            from .structure import barrier_boxes

            buf = io.BytesIO()
            self.structure_fig.savefig(buf, format="png")
            boxes = []
            for cta, members, box in barrier_boxes(self.structure_fig):
                names = [("cluster barrier" if cta is None else self._bar_key(cta, m)) for m in members]
                boxes.append([names, [round(v, 4) for v in box]])
            data["structure"] = {"png": base64.b64encode(buf.getvalue()).decode(), "boxes": boxes}
        return data

    def figure(self):
        """The plotly figure as a dict: {"data", "layout", "config"} (the time cursor is shape 0)."""
        data = []
        y_of = {lane: self.names[lane] for lane in self.lanes}
        for op, kind in timeline.KINDS.items():
            evs = [e for e in self.events if timeline.kind_key(e) == op]
            if not evs:
                continue
            ys = [y_of[timeline.lane_name(e.lane)] for e in evs]
            hover = [_hover(e, y_of[timeline.lane_name(e.lane)], self.t0) for e in evs]
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
                      "font": {"size": 15}},
            "barmode": "overlay", "height": plot + 120 + 60, "margin": {"l": 150, "r": 20, "t": 120, "b": 60},
            "xaxis": {"title": {"text": self.source}, "range": [0, self.span * 1.01], "zeroline": False},
            "yaxis": {"type": "category", "categoryorder": "array",
                      "categoryarray": [y_of[lane] for lane in self.lanes], "autorange": "reversed"},
            "legend": {"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom", "font": {"size": 13}},
            "hovermode": "closest", "font": {"size": 13}, "dragmode": "zoom", "autosize": True,
            "shapes": [{"type": "line", "xref": "x", "yref": "paper", "x0": 0, "x1": 0, "y0": 0, "y1": 1,
                        "line": {"color": "#CC0000", "width": 1.5}}],
        }
        config = {"displaylogo": False, "responsive": True, "scrollZoom": False}
        return {"data": data, "layout": layout, "config": config}

    def _repr_html_(self):
        import os

        fig = self.figure()
        payload = json.dumps({"fig": fig, "dbg": self.debugger_data()}, separators=(",", ":"))
        # unique per rendering: a re-run cell, or the same view in two open notebooks, must not
        # find another view's element (JupyterLab keeps every open notebook in one document)
        ident = "gk-tv-" + hashlib.sha1(payload.encode()).hexdigest()[:8] + "-" + uuid.uuid4().hex[:8]
        library = ""
        if not os.environ.get(BOOK_BUILD_ENV):
            # a live notebook has no copy of plotly.js on the page: each view carries it, inline
            # (offline; a view re-run alone after the notebook is reopened still draws)
            from .book_sphinx import plotly_js_path

            library = "<script>" + plotly_js_path().read_text() + "</script>\n"
        height = fig["layout"]["height"]
        return (library + _HTML.replace("IDENT", ident).replace("HEIGHT", str(height))
                + "<script>(function(){var P=" + payload + ";var ID='" + ident + "';" + _JS + "})();</script>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        # HTML only, on the page and in JupyterLab alike: the cursor and the state lists are the
        # page's own script, and plotly's JupyterLab renderer (which resized the view to 29 px when
        # the cursor moved) is not involved
        return {"text/html": self._repr_html_()}


_HTML = """<div class="gk-interactive gk-debugger" id="IDENT" tabindex="0" style="width:100%;font-size:14px;outline:none">
<p class="gk-fallback" style="color:#555;font-style:italic">The interactive trace view is drawn by its own script,
which has not run here: in a saved notebook, trust it or run this cell again.</p>
<div class="gk-plot" style="width:100%;height:HEIGHTpx"></div>
<div class="gk-tour" style="display:none;align-items:center;gap:8px;margin:6px 0;padding:6px 8px;background:#F4F7FB;border-left:4px solid #3A6EA5;font-size:14px">
<button class="gk-tour-prev" title="previous stop of the walk-through">&#9664; stop</button>
<button class="gk-tour-next" title="next stop of the walk-through">stop &#9654;</button>
<span class="gk-tour-text" style="flex:1">A guided walk-through: press "stop &#9654;".</span>
</div>
<div class="gk-controls" style="display:flex;align-items:center;gap:8px;margin:6px 0;font-size:14px">
<button class="gk-prev" title="previous event (left arrow)">&#9664; event</button>
<input class="gk-cursor" type="range" min="0" step="any" style="flex:1" aria-label="time cursor">
<button class="gk-next" title="next event (right arrow)">event &#9654;</button>
<label>t = <input class="gk-time" type="number" step="any" style="width:7em;font-size:14px"> ns</label>
</div>
<div style="font-size:13px;color:#555">Time cursor (red line): drag the slider, type a time, click the plot,
or use the arrow keys (previous / next event). Pick a warp to highlight the barrier it waits on.</div>
<div style="display:flex;flex-wrap:wrap;align-items:flex-start;gap:16px;font-size:14px">
<table class="gk-warps" style="flex:1 1 380px;border-collapse:collapse"></table>
<table class="gk-bars" style="flex:1 1 420px;border-collapse:collapse;font-family:monospace"></table>
</div>
<div class="gk-structure" style="position:relative;width:100%;max-width:720px;margin-top:8px"></div>
</div>
"""

_JS = r"""
var root=document.getElementById(ID),D=P.dbg,plot=root.querySelector('.gk-plot');
root.querySelector('.gk-fallback').style.display='none';
var cur=root.querySelector('.gk-cursor'),num=root.querySelector('.gk-time');
var picked=null,t=0;
cur.max=D.span;root.dataset.times=JSON.stringify(D.times);
if(!window.Plotly){plot.textContent='This interactive view needs plotly.js, which the built book loads from _static.';}
else{Plotly.newPlot(plot,P.fig.data,P.fig.layout,P.fig.config);
 plot.on('plotly_click',function(ev){if(ev.points&&ev.points.length){var p=ev.points[0];
  go(p.base!==undefined?Number(p.base):Number(p.x));}});}
var img=null,hl=null,sdiv=root.querySelector('.gk-structure');
if(D.structure){img=document.createElement('img');img.src='data:image/png;base64,'+D.structure.png;
 img.style.width='100%';img.alt='structure diagram';sdiv.appendChild(img);
 hl=document.createElement('div');hl.className='gk-highlight';
 hl.style.cssText='position:absolute;border:3px solid #CC0000;border-radius:6px;display:none;pointer-events:none';
 sdiv.appendChild(hl);}
function bars(at){var st={},i,c,s;for(i=0;i<D.changes.length;i++){c=D.changes[i];if(c[0]>at)break;
 s=st[c[1]];if(c[2]==='init'||!s){s=st[c[1]]={phase:0,pending:c[2]==='init'?c[3]:1,expected:c[2]==='init'?c[3]:1,tx:0};
  if(c[2]==='init')continue;}
 if(c[2]==='arrive')s.pending-=c[3];else if(c[2]==='expect_tx')s.tx+=c[3];else if(c[2]==='complete_tx')s.tx-=c[3];
 if(s.pending<=0&&s.tx===0){s.phase+=1;s.pending=s.expected;}}return st;}
function warps(at){var out={},i,r,eps=1e-6;D.lanes.forEach(function(l){out[l]=null;});
 for(i=0;i<D.rows.length;i++){r=D.rows[i];
  if(r[1]-eps<=at&&(at<r[2]-eps||(r[2]-r[1]<1.01&&Math.abs(at-r[1])<eps))){
   if(!out[r[0]]||r[3].indexOf('waiting')===0)out[r[0]]=r;}}return out;}
function esc(x){return String(x).replace(/&/g,'&amp;').replace(/</g,'&lt;');}
function render(){var w=warps(t),st=bars(t),h='<tr><th style="text-align:left">lane at '+t.toFixed(1)+' ns</th><th style="text-align:left">state</th></tr>';
 D.lanes.forEach(function(l){var r=w[l],sel=(l===picked);
  h+='<tr data-lane="'+esc(l)+'" style="cursor:pointer;'+(sel?'background:#FFE9E9':'')+'"><td style="padding:2px 8px;text-align:left">'+esc(l)+
   '</td><td style="padding:2px 8px;text-align:left">'+(r?esc(r[3]):'<span style="color:#777">no traced operation (idle or computing)</span>')+'</td></tr>';});
 root.querySelector('.gk-warps').innerHTML=h;
 var waited=(picked&&w[picked])?w[picked][4]:'';
 var b='<tr><th style="text-align:left">mbarrier</th><th>phase (parity)</th><th>pending / expected</th><th>tx-count</th></tr>';
 D.keys.forEach(function(k,i){var s=st[i];if(!s)return;
  b+='<tr class="gk-bar" data-key="'+esc(k)+'" style="'+(k===waited?'background:#FFE9E9;font-weight:bold':'')+'"><td style="padding:2px 8px;text-align:left">'+esc(k)+
   '</td><td style="text-align:center">'+s.phase+' ('+(s.phase&1)+')</td><td style="text-align:center">'+s.pending+' / '+s.expected+
   '</td><td style="text-align:center">'+s.tx+'</td></tr>';});
 root.querySelector('.gk-bars').innerHTML=b;
 root.querySelectorAll('.gk-warps tr[data-lane]').forEach(function(tr){tr.onclick=function(){
  picked=(picked===tr.dataset.lane)?null:tr.dataset.lane;render();};});
 if(hl){var box=null;if(waited){D.structure.boxes.forEach(function(bx){if(bx[0].indexOf(waited)>=0)box=bx[1];});}
  if(box){hl.style.display='block';hl.style.left=(100*box[0])+'%';hl.style.top=(100*box[1])+'%';
   hl.style.width=(100*(box[2]-box[0]))+'%';hl.style.height=(100*(box[3]-box[1]))+'%';}else hl.style.display='none';}
 root.dataset.cursor=t;root.dataset.waited=waited;}
function go(x){t=Math.max(0,Math.min(D.span,Number(x)||0));cur.value=t;num.value=t.toFixed(1);
 if(window.Plotly&&plot.layout)Plotly.relayout(plot,{'shapes[0].x0':t,'shapes[0].x1':t});render();}
function step(dir){var T=D.times,i;if(dir>0){for(i=0;i<T.length;i++)if(T[i]>t+1e-6)return go(T[i]);}
 else{for(i=T.length-1;i>=0;i--)if(T[i]<t-1e-6)return go(T[i]);}}
cur.addEventListener('input',function(){go(cur.value);});
num.addEventListener('change',function(){go(num.value);});
root.querySelector('.gk-prev').onclick=function(){step(-1);};
root.querySelector('.gk-next').onclick=function(){step(1);};
root.addEventListener('keydown',function(ev){if(ev.target===num)return;
 if(ev.key==='ArrowRight'){step(1);ev.preventDefault();}else if(ev.key==='ArrowLeft'){step(-1);ev.preventDefault();}});
root.gkGo=go;root.gkStep=step;root.gkPick=function(l){picked=l;render();};
var stop=-1,tour=root.querySelector('.gk-tour');
function tourGo(i){if(!D.tour.length)return;stop=Math.max(0,Math.min(D.tour.length-1,i));var s=D.tour[stop];
 picked=s[1];go(s[0]);root.querySelector('.gk-tour-text').textContent='Stop '+(stop+1)+' of '+D.tour.length+' ('+s[0].toFixed(1)+' ns, '+s[1]+'): '+s[2];
 root.dataset.stop=stop;}
if(D.tour&&D.tour.length){tour.style.display='flex';
 root.querySelector('.gk-tour-prev').onclick=function(){tourGo(stop-1);};
 root.querySelector('.gk-tour-next').onclick=function(){tourGo(stop+1);};}
root.gkTour=tourGo;
go(0);
"""


def explore(chapter, a, b, *, title="", max_ctas=1, structure=True, **config):
    """The interactive view of chapter ``chapter``'s kernel on ``a``, ``b`` (always the emulator:
    the barrier states come from its model of the mbarriers), with the run's structure diagram
    (``structure=False``: without). ``view.add_stop(...)`` adds a guided walk-through."""
    trace, log = run_traced(chapter, a, b, **config)
    fig = None
    if structure:
        import matplotlib.pyplot as plt

        from . import structure as st

        fig = st.draw_structure(st.handoffs(trace, log, ctas=list(range(max_ctas))))
        plt.close(fig)
    return TraceView(trace, log, title=title, max_ctas=max_ctas, structure_fig=fig)
