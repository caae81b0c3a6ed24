"""Timelines drawn from a ``gemm_kernels.trace.Trace``: one row per lane (a unit such as the TMA
engine or the tensor core, or a warp / warp role), one bar per event.

* bars: MMAs, TMA loads (shaded by pipeline stage when the event has one), TMA stores, TMEM loads;
* thin lines: time a warp spends blocked in an mbarrier wait, ending in a dot when it is released;
* ticks: instantaneous events (an arrive, expect_tx, a commit, a TMA issue).

The x axis is in nanoseconds. For emulator traces it is labelled as the emulator's virtual clock,
which is a cost model (``gemm_kernels.emu.costmodel``), not a measurement.

``draw_timeline(trace, ...)`` draws one trace; ``side_by_side(traces, titles)`` stacks several on
one time scale (previous chapter vs this one).
"""
from __future__ import annotations

import re

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

#: bar colours by op kind (colour-blind friendly: Okabe-Ito)
BAR_COLOURS = {
    "mma": "#0072B2",
    "tma.load": "#E69F00",
    "tma.store": "#CC79A7",
    "tmem.ld": "#009E73",
    "store": "#56B4E9",
    "copy": "#F0E442",
    "ld/st global": "#A0A0A0",
}
#: TMA loads of stage s use TMA_STAGE_COLOURS[s % len]
TMA_STAGE_COLOURS = ("#E69F00", "#D55E00", "#F0E442", "#8C6D31")
WAIT_COLOUR = "#777777"
TICK_COLOURS = {"arrive": "#D55E00", "commit": "#0072B2", "tma.issue": "#E69F00"}
LABELS = {
    "mma": "tcgen05.mma (tensor core)",
    "tma.load": "TMA load",
    "tma.store": "TMA store",
    "tmem.ld": "tcgen05.ld (TMEM -> registers)",
    "store": "store",
    "copy": "copy",
    "ld/st global": "ordinary global loads/stores",
    "wait": "blocked in mbarrier wait",
    "arrive": "arrive / expect_tx",
    "commit": "tcgen05.commit",
    "tma.issue": "TMA issued",
}
WAIT_OPS = ("wait",)
TICK_OPS = ("arrive", "commit", "tma.issue")

_CTA_PREFIX = re.compile(r"^CTA (\d+) ")


def time_label(trace):
    source = getattr(trace, "source", "") or ""
    if source.startswith("emulator"):
        return "emulator virtual time, ns (model, not a measurement)"
    return f"time, ns ({source})" if source else "time, ns"


def _lane_order(lanes):
    """Units first (TMA, tensor core), then warps and roles in natural order, CTA by CTA."""

    def key(lane):
        m = _CTA_PREFIX.match(lane)
        cta = int(m.group(1)) if m else 0
        rest = lane[m.end():] if m else lane
        if "TMA" in rest:
            kind = 0
        elif "tensor core" in rest:
            kind = 1
        else:
            kind = 2
        nums = [int(x) for x in re.findall(r"\d+", rest)]
        return (cta, kind, nums, rest)

    return sorted(lanes, key=key)


def _select(trace, lanes, max_ctas):
    events = [e for e in trace.events if max_ctas is None or e.cta < max_ctas]
    present = []
    for e in events:
        if e.lane not in present:
            present.append(e.lane)
    if lanes is None:
        lanes = _lane_order(present)
    else:
        missing = [lane for lane in lanes if lane not in present]
        if missing:
            raise ValueError(f"lanes {missing} are not in the trace; it has {present}")
    wanted = set(lanes)
    return [e for e in events if e.lane in wanted], list(lanes)


def _display_name(lane, strip_cta):
    return _CTA_PREFIX.sub("", lane) if strip_cta else lane


def draw_timeline(trace, ax=None, title=None, lanes=None, max_ctas=1, *, t0=None, legend=True):
    """Draw ``trace`` on ``ax`` (a new (10, 3) figure when None); return the axes.

    ``lanes``: the lanes to show, top to bottom (default: every lane of the first ``max_ctas``
    CTAs, units first). ``max_ctas``: only events of CTAs 0 .. max_ctas-1 (None: all).
    ``t0``: time shown as 0 (default: the first event shown)."""
    events, lanes = _select(trace, lanes, max_ctas)
    if ax is None:
        height = max(2.4, 1.4 + 0.3 * len(lanes))
        _, ax = plt.subplots(figsize=(10, height), layout="constrained")
    if not events:
        ax.text(0.5, 0.5, "no events", ha="center", va="center", transform=ax.transAxes)
        return ax
    strip_cta = len({e.cta for e in events}) == 1
    row = {lane: i for i, lane in enumerate(lanes)}
    if t0 is None:
        t0 = min(e.start for e in events)
    span = max(e.end for e in events) - t0
    used = set()
    for e in events:
        y = row[e.lane]
        start, width = e.start - t0, e.end - e.start
        if e.op in WAIT_OPS:
            ax.plot([start, start + width], [y, y], color=WAIT_COLOUR, lw=1.0, solid_capstyle="butt", zorder=2)
            ax.plot([start + width], [y], marker="o", ms=3.5, color=WAIT_COLOUR, zorder=3)
            used.add("wait")
        elif e.op in TICK_OPS or width <= 0.002 * span:
            colour = TICK_COLOURS.get(e.op, "black")
            ax.plot([start, start], [y - 0.32, y + 0.32], color=colour, lw=1.4, zorder=4)
            used.add(e.op if e.op in TICK_OPS else "arrive")
        else:
            if e.op == "tma.load" and e.stage >= 0:
                colour = TMA_STAGE_COLOURS[e.stage % len(TMA_STAGE_COLOURS)]
                used.add(("stage", e.stage % len(TMA_STAGE_COLOURS)))
            else:
                colour = BAR_COLOURS.get(e.op, "#999999")
                used.add(e.op)
            ax.broken_barh([(start, width)], (y - 0.3, 0.6), facecolors=colour, edgecolors="white",
                           linewidth=0.6, zorder=3)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([_display_name(lane, strip_cta) for lane in lanes], fontsize=10)
    ax.set_ylim(len(lanes) - 0.4, -0.6)
    ax.set_xlim(0, span * 1.01)
    ax.set_xlabel(time_label(trace), fontsize=10)
    ax.tick_params(axis="x", labelsize=10)
    ax.grid(axis="x", color="#dddddd", lw=0.5, zorder=0)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(title, fontsize=11, loc="left")
    ax.timeline_ops = used  # what was drawn: side_by_side builds one legend for all panels
    if legend:
        handles = _legend_handles(used)
        if handles:
            ax.legend(handles=handles, fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.22 - 0.4 / len(lanes)),
                      ncol=min(4, len(handles)), frameon=False)
    return ax


def _legend_handles(used):
    handles = []
    for op in ("ld/st global", "tma.load", "mma", "tmem.ld", "tma.store", "store", "copy"):
        if op in used:
            handles.append(Patch(facecolor=BAR_COLOURS[op], label=LABELS[op]))
    for item in sorted(u for u in used if isinstance(u, tuple)):
        handles.append(Patch(facecolor=TMA_STAGE_COLOURS[item[1]], label=f"TMA load, stage {item[1]}"))
    if "wait" in used:
        handles.append(Line2D([0], [0], color=WAIT_COLOUR, lw=1.0, marker="o", ms=3.5, label=LABELS["wait"]))
    for op in TICK_OPS:
        if op in used:
            handles.append(Line2D([0], [0], color=TICK_COLOURS[op], lw=1.4, marker="|", ms=8, ls="none",
                                  label=LABELS[op]))
    return handles


def side_by_side(traces, titles, *, lanes=None, max_ctas=1, sharex=True):
    """Several traces stacked on one time scale, one panel each; return the figure."""
    if len(traces) != len(titles):
        raise ValueError("one title per trace")
    counts = []
    for tr in traces:
        _, shown = _select(tr, lanes, max_ctas)
        counts.append(len(shown))
    height = sum(0.6 + 0.3 * c for c in counts) + 1.0
    fig, axes = plt.subplots(len(traces), 1, figsize=(10, height), sharex=sharex, layout="constrained",
                             height_ratios=[0.6 + 0.3 * c for c in counts])
    if len(traces) == 1:
        axes = [axes]
    used = set()
    for i, (ax, tr, title) in enumerate(zip(axes, traces, titles)):
        draw_timeline(tr, ax=ax, title=title, lanes=lanes, max_ctas=max_ctas, legend=False)
        used |= ax.timeline_ops
        if sharex and i < len(traces) - 1:
            ax.set_xlabel("")
    handles = _legend_handles(used)
    if handles:
        fig.legend(handles=handles, fontsize=9, loc="outside lower center", ncol=min(4, len(handles)),
                   frameon=False)
    if sharex:
        right = max(max(e.end for e in tr.events if max_ctas is None or e.cta < max_ctas)
                    - min(e.start for e in tr.events if max_ctas is None or e.cta < max_ctas) for tr in traces)
        axes[-1].set_xlim(0, right * 1.01)
    return fig
