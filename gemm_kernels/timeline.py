"""Timelines drawn from a ``gemm_kernels.trace.Trace``: one row per lane (a unit such as the TMA
engine or the tensor core, or a warp / warp role), one mark per event.

Every event kind the emulator or the on-chip instrumentation records has its own colour, its own
legend entry and one way of being drawn (``KINDS``):

* bars, however short: ordinary global loads/stores, TMA loads (hatched by ring stage when the
  event has one), MMAs, TMEM loads (``tcgen05.ld``), TMA stores; a bar narrower than
  ``MIN_BAR`` of the panel's span is widened to it so that it stays visible;
* thin lines: time a warp spends blocked in an mbarrier wait, ending in a dot when it is released;
* ticks: instantaneous events (an arrive, an arrive that announces bytes, a commit, a TMA issue);
  the kind of an event is read from the event (``kind_key``), never assumed from its op alone.

An event of a kind not in ``KINDS`` is refused (no silent black fallback). Lane names are the same
in every chapter: the emulator's single-CTA ``"TMA unit"`` is shown as ``"TMA"``, like the
per-CTA lanes, and a trace of one CTA drops the ``"CTA n "`` prefix.

The x axis is in nanoseconds. For emulator traces it is labelled as the emulator's virtual clock,
which is a cost model (``gemm_kernels.emu.costmodel``), not a measurement.

``draw_timeline(trace, ...)`` draws one trace; ``side_by_side(traces, titles)`` stacks several on
one time scale (previous chapter vs this one). Figures are made at ``DPI`` dots per inch with no
text smaller than ``MIN_FONT`` points.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

DPI = 150
MIN_FONT = 10
#: a page-wide figure: drawn this wide, it is shown at ``DISPLAY_PX`` with its text at the size it
#: was set in (10 pt stays 10 pt); a wider figure would be scaled down, and its text with it
WIDTH_IN = 7.0
#: the width (CSS px) at which the book shows a page-wide figure: a code cell's output in a 1280-px
#: window (sphinx-book-theme, measured in headless Chromium); a figure wider than this in pixels is
#: scaled down to it
DISPLAY_PX = 676
#: the narrowest bar drawn, as a share of the panel's time span
MIN_BAR = 0.004


@dataclass(frozen=True)
class Kind:
    colour: str
    label: str
    style: str  # "bar", "wait" or "tick"


#: every event kind, in legend order; colours from the Okabe-Ito colour-blind-safe set and darker
#: shades of it for the ticks
KINDS = {
    "ld/st global": Kind("#999999", "ordinary global loads/stores", "bar"),
    "tma.load": Kind("#E69F00", "TMA load", "bar"),
    "mma": Kind("#0072B2", "tcgen05.mma (tensor core)", "bar"),
    "tmem.ld": Kind("#009E73", "tcgen05.ld (TMEM -> registers)", "bar"),
    "tma.store": Kind("#CC79A7", "TMA store", "bar"),
    "wait": Kind("#777777", "blocked in mbarrier wait", "wait"),
    "tmem.alloc": Kind("#B2182B", "blocked in tcgen05.alloc (TMEM full)", "wait"),
    "arrive": Kind("#D55E00", "mbarrier.arrive", "tick"),
    "arrive.expect_tx": Kind("#6A3D9A", "mbarrier.arrive.expect_tx (arrive + announce bytes)", "tick"),
    "commit": Kind("#00365A", "tcgen05.commit", "tick"),
    "tma.issue": Kind("#56B4E9", "TMA issued", "tick"),
    "clc.try_cancel": Kind("#F0E442", "clusterlaunchcontrol.try_cancel (its response lands on the barrier)", "tick"),
}
#: TMA loads of ring stage s are hatched STAGE_HATCHES[s % len]
STAGE_HATCHES = ("", "////", "\\\\\\\\", "xxx")

_CTA_PREFIX = re.compile(r"^CTA (\d+) ")
#: lane names as shown: the same unit has the same name in every chapter
LANE_NAMES = {"TMA unit": "TMA"}


def lane_name(lane):
    """The canonical name of a lane (``"TMA unit"`` -> ``"TMA"``, ``"CTA 1 TMA unit"`` -> ``"CTA 1 TMA"``)."""
    m = _CTA_PREFIX.match(lane)
    prefix, rest = (lane[:m.end()], lane[m.end():]) if m else ("", lane)
    return prefix + LANE_NAMES.get(rest, rest)


def kind_of(op):
    """The ``Kind`` of an event op; a ``ValueError`` names an op nobody gave a colour."""
    try:
        return KINDS[op]
    except KeyError:
        raise ValueError(f"event kind {op!r} has no colour in gemm_kernels.timeline.KINDS; add it there "
                         f"(known: {', '.join(KINDS)})") from None


def kind_key(e):
    """The ``KINDS`` key an event is drawn, labelled and hovered as, read from the event itself: its
    op, except that an arrive which announces bytes (``e.nbytes``, ``mbarrier.arrive.expect_tx``) is
    not a plain ``mbarrier.arrive``."""
    if e.op == "arrive" and e.nbytes:
        return "arrive.expect_tx"
    return e.op


def instruction(e):
    """What the event's hover names: the instruction the emulator recorded for it (``e.extra["ptx"]``,
    e.g. ``mbarrier.arrive (remote)``), else its kind's label."""
    return e.extra.get("ptx") or KINDS[kind_key(e)].label


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
        if "TMA" == rest:
            kind = 0
        elif "tensor core" in rest:
            kind = 1
        else:
            kind = 2
        nums = [int(x) for x in re.findall(r"\d+", rest)]
        return (cta, kind, nums, rest)

    return sorted(lanes, key=key)


def _select(trace, lanes, max_ctas):
    """(events shown, lane names top to bottom); every event's lane is given by ``lane_name``."""
    events = [e for e in trace.events if max_ctas is None or e.cta < max_ctas]
    present = []
    for e in events:
        name = lane_name(e.lane)
        if name not in present:
            present.append(name)
    if lanes is None:
        lanes = _lane_order(present)
    else:
        lanes = [lane_name(lane) for lane in lanes]
        missing = [lane for lane in lanes if lane not in present]
        if missing:
            raise ValueError(f"lanes {missing} are not in the trace; it has {present}")
    wanted = set(lanes)
    return [e for e in events if lane_name(e.lane) in wanted], list(lanes)


def displayed_points(fig, size_pt, dpi=None):
    """The size at which a page shows text of ``size_pt`` points in ``fig`` saved at ``dpi`` (the
    figure's own by default, as the notebook's inline backend saves it): the PNG is scaled down to
    ``DISPLAY_PX`` when it is wider, and a CSS point is 96/72 px."""
    dpi = dpi or fig.dpi
    natural = fig.get_figwidth() * dpi
    return size_pt * dpi / 96 * min(1.0, DISPLAY_PX / natural)


def smallest_displayed_text(fig, dpi=None):
    """(points as displayed, text) of the smallest visible text in ``fig``."""
    from matplotlib.text import Text

    texts = [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]
    return min(((displayed_points(fig, t.get_fontsize(), dpi), t.get_text()) for t in texts), default=(99, ""))


def _display_name(lane, strip_cta):
    return _CTA_PREFIX.sub("", lane) if strip_cta else lane


def _new_figure(width, height, **kw):
    return plt.subplots(figsize=(width, height), dpi=DPI, layout="constrained", **kw)


def draw_timeline(trace, ax=None, title=None, lanes=None, max_ctas=1, *, t0=None, legend=True):
    """Draw ``trace`` on ``ax`` (a new figure when None); return the axes.

    ``lanes``: the lanes to show, top to bottom (default: every lane of the first ``max_ctas``
    CTAs, units first). ``max_ctas``: only events of CTAs 0 .. max_ctas-1 (None: all).
    ``t0``: time shown as 0 (default: the first event shown). The kinds drawn are left in
    ``ax.timeline_ops`` (``side_by_side`` builds one legend for all panels from them)."""
    events, lanes = _select(trace, lanes, max_ctas)
    if ax is None:
        _, ax = _new_figure(WIDTH_IN, max(2.6, 1.5 + 0.32 * len(lanes)))
    ax.timeline_ops = set()
    if not events:
        ax.text(0.5, 0.5, "no events", ha="center", va="center", transform=ax.transAxes, fontsize=MIN_FONT)
        return ax
    for e in events:
        kind_of(e.op)  # refuse an unknown kind before drawing anything
    strip_cta = len({e.cta for e in events}) == 1
    row = {lane: i for i, lane in enumerate(lanes)}
    if t0 is None:
        t0 = min(e.start for e in events)
    span = max(e.end for e in events) - t0 or 1.0
    used = ax.timeline_ops
    for e in events:
        kind = KINDS[kind_key(e)]
        y = row[lane_name(e.lane)]
        start, width = e.start - t0, e.end - e.start
        used.add(kind_key(e))
        if kind.style == "wait":
            ax.plot([start, start + width], [y, y], color=kind.colour, lw=1.2, solid_capstyle="butt", zorder=2)
            ax.plot([start + width], [y], marker="o", ms=3.5, color=kind.colour, zorder=3)
        elif kind.style == "tick":
            ax.plot([start, start], [y - 0.32, y + 0.32], color=kind.colour, lw=1.4, zorder=4)
        else:
            hatch = STAGE_HATCHES[e.stage % len(STAGE_HATCHES)] if e.op == "tma.load" and e.stage >= 0 else ""
            if hatch:
                used.add("staged")
            ax.broken_barh([(start, max(width, MIN_BAR * span))], (y - 0.3, 0.6), facecolors=kind.colour,
                           edgecolors="white", linewidth=0.4, hatch=hatch or None, zorder=3)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([_display_name(lane, strip_cta) for lane in lanes], fontsize=MIN_FONT)
    ax.set_ylim(len(lanes) - 0.4, -0.6)
    ax.set_xlim(0, span * 1.01)
    ax.set_xlabel(time_label(trace), fontsize=MIN_FONT)
    ax.tick_params(axis="both", labelsize=MIN_FONT)
    ax.grid(axis="x", color="#dddddd", lw=0.5, zorder=0)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(title, fontsize=MIN_FONT + 1, loc="left")
    if legend:
        handles = legend_handles(used)
        ax.legend(handles=handles, fontsize=MIN_FONT, loc="upper center",
                  bbox_to_anchor=(0.5, -0.22 - 0.4 / len(lanes)), ncol=min(2, len(handles)), frameon=False)
    return ax


def legend_handles(used):
    """One legend entry per event kind in ``used`` (TMA loads: one entry, saying what the hatching
    means when stages were drawn)."""
    handles = []
    for op, kind in KINDS.items():
        if op not in used:
            continue
        if kind.style == "bar":
            label = kind.label + (" (hatching: ring stage)" if op == "tma.load" and "staged" in used else "")
            handles.append(Patch(facecolor=kind.colour, edgecolor="white",
                                 hatch="////" if op == "tma.load" and "staged" in used else None, label=label))
        elif kind.style == "wait":
            handles.append(Line2D([0], [0], color=kind.colour, lw=1.2, marker="o", ms=3.5, label=kind.label))
        else:
            handles.append(Line2D([0], [0], color=kind.colour, lw=1.4, marker="|", ms=9, ls="none",
                                  label=kind.label))
    return handles


def side_by_side(traces, titles, *, lanes=None, max_ctas=1, sharex=True):
    """Several traces stacked on one time scale, one panel each; return the figure."""
    if len(traces) != len(titles):
        raise ValueError("one title per trace")
    counts = []
    for tr in traces:
        _, shown = _select(tr, lanes, max_ctas)
        counts.append(len(shown))
    ratios = [0.7 + 0.32 * c for c in counts]
    fig, axes = _new_figure(WIDTH_IN, sum(ratios) + 1.2, nrows=len(traces), ncols=1, sharex=sharex,
                            height_ratios=ratios)
    if len(traces) == 1:
        axes = [axes]
    used = set()
    for i, (ax, tr, title) in enumerate(zip(axes, traces, titles)):
        draw_timeline(tr, ax=ax, title=title, lanes=lanes, max_ctas=max_ctas, legend=False)
        used |= ax.timeline_ops
        if sharex and i < len(traces) - 1:
            ax.set_xlabel("")
    handles = legend_handles(used)
    if handles:
        fig.legend(handles=handles, fontsize=MIN_FONT, loc="outside lower center", ncol=min(2, len(handles)),
                   frameon=False)
    if sharex:
        right = max(max(e.end for e in tr.events if max_ctas is None or e.cta < max_ctas)
                    - min(e.start for e in tr.events if max_ctas is None or e.cta < max_ctas) for tr in traces)
        axes[-1].set_xlim(0, right * 1.01)
    return fig
