"""Execution-structure diagrams drawn from a kernel's own run: who hands what to whom, through
which barrier, with arrival counts and bytes on the arrows.

``handoffs(trace, log)`` reads an emulator trace and its mbarrier log (``trace_view.run_traced``)
for one CTA: every mbarrier with its arrival count per phase (from ``mbarrier.init``), the lanes
that arrive on it (an ``mbarrier.arrive``, with the bytes it announces; a ``tcgen05.commit``,
whose arrival the tensor core makes when the MMAs are done; a TMA load, with the bytes it delivers)
and the lanes that wait on it; and the epilogue's TMA stores, which complete in a bulk group rather
than on an mbarrier. ``draw_structure(handoffs)`` draws them: arriving lanes on the left, barriers
in the middle, waiting lanes on the right.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from . import timeline


@dataclass
class Barrier:
    name: str
    count: int  # arrivals per phase
    phases: int  # phases completed in the run
    arrivals: dict = field(default_factory=dict)  # (lane, how) -> (arrivals, bytes) per phase
    waiters: dict = field(default_factory=dict)  # lane -> waits per phase
    stages: int = 1  # barriers of a ring drawn as this one


#: the node for the TMA stores of the epilogue (they complete in a bulk group, not on an mbarrier)
STORE_NODE = "TMA store of D"


def _group(name):
    """Ring barriers ``x[0]``, ``x[1]``, ... are one node ``x[s]``."""
    return re.sub(r"\[\d+\]$", "[s]", name)


def handoffs(trace, log, cta=0, *, only=None):
    """The barriers of CTA ``cta`` and their handoffs, in order of first use; the barriers of a
    ring (``tma2mma[0]``, ``tma2mma[1]``, ...) are one entry ``tma2mma[s]``, counted per phase of
    one stage. ``only``: keep the barriers whose name contains one of these strings."""
    from .trace_view import barrier_states

    final = barrier_states(log)[-1][1]
    counts, phases, members = {}, defaultdict(int), defaultdict(set)
    for (c, name), st in final.items():
        if c == cta:
            counts[_group(name)] = st.expected
            phases[_group(name)] += st.phase
            members[_group(name)].add(name)
    tally = defaultdict(lambda: [0, 0])  # (barrier, lane, how) -> [events, bytes]
    waits = defaultdict(int)
    order = []
    for e in sorted(trace.events, key=lambda e: e.start):
        if e.cta != cta or not e.barrier or _group(e.barrier) not in counts:
            continue
        name = _group(e.barrier)
        lane = timeline._display_name(timeline.lane_name(e.lane), True)
        if name not in order:
            order.append(name)
        if e.op == "arrive":
            t = tally[(name, lane, "arrive + expect_tx" if e.nbytes else "arrive")]
        elif e.op == "commit":
            t = tally[(name, "tensor core", f"commit by {lane}")]
        elif e.op == "tma.load":
            t = tally[(name, lane, "TMA load")]
        elif e.op == "wait":
            waits[(name, lane)] += 1
            continue
        else:
            continue
        t[0] += 1
        t[1] += e.nbytes
    stores = [e for e in trace.events if e.cta == cta and e.op == "tma.store"]
    if stores:  # the epilogue's hand-off to the TMA engine: a bulk group, not an mbarrier
        order.append(STORE_NODE)
        counts[STORE_NODE] = 0
        phases[STORE_NODE] = 1
        tally[(STORE_NODE, "TMA", "TMA store")] = [len(stores), sum(e.nbytes for e in stores)]
    out = []
    for name in order:
        if only and not any(o in name for o in only):
            continue
        n = max(phases[name], 1)
        b = Barrier(name, counts[name], phases[name], stages=len(members[name]))
        for (bar, lane, how), (events, nbytes) in tally.items():
            if bar != name:
                continue
            merged = next((k for k in b.arrivals if k[0] == lane and k[1].startswith("commit by ")
                           and how.startswith("commit by ")), None)
            if merged:  # one arrow for the tensor core's commits, naming every committing role
                ev, nb = b.arrivals.pop(merged)
                b.arrivals[(lane, merged[1] + ", " + how[len("commit by "):])] = (ev + events / n, nb + nbytes / n)
            else:
                b.arrivals[(lane, how)] = (events / n, nbytes / n)
        for (bar, lane), w in waits.items():
            if bar == name:
                b.waiters[lane] = w / n
        out.append(b)
    return out


def _num(x):
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.2f}"


def draw_structure(barriers, title=""):
    """Arriving lanes (left) -> barriers (middle) -> waiting lanes (right); return the figure."""
    left = []
    right = []
    for b in barriers:
        for lane, _ in b.arrivals:
            if lane not in left:
                left.append(lane)
        for lane in b.waiters:
            if lane not in right:
                right.append(lane)
    # each lane beside the barriers it feeds or waits on, to keep arrows short and apart
    rank = {b.name: i for i, b in enumerate(barriers)}
    left.sort(key=lambda lane: sum(rank[b.name] for b in barriers if any(k[0] == lane for k in b.arrivals))
              / max(1, sum(1 for b in barriers if any(k[0] == lane for k in b.arrivals))))
    right.sort(key=lambda lane: sum(rank[b.name] for b in barriers if lane in b.waiters)
               / max(1, sum(1 for b in barriers if lane in b.waiters)))
    rows = max(len(left), len(right), len(barriers), 1)
    fig, ax = plt.subplots(figsize=(timeline.WIDTH_IN, 0.9 + 0.85 * rows), dpi=timeline.DPI, layout="constrained")
    ax.set_xlim(0, 11.3)
    ax.set_ylim(rows - 0.4, -0.8)
    ax.axis("off")
    fs = timeline.MIN_FONT

    def ys(n):
        return [(rows - 1) * (i + 0.5) / n for i in range(n)] if n else []

    pos_l = dict(zip(left, ys(len(left))))
    pos_r = dict(zip(right, ys(len(right))))
    pos_b = dict(zip((b.name for b in barriers), ys(len(barriers))))
    for lane, y in pos_l.items():
        ax.add_patch(FancyBboxPatch((0.05, y - 0.22), 1.9, 0.44, boxstyle="round,pad=0.02", fc="#E8F1FA", ec="#0072B2"))
        ax.text(1.0, y, lane, ha="center", va="center", fontsize=fs)
    for lane, y in pos_r.items():
        ax.add_patch(FancyBboxPatch((9.35, y - 0.22), 1.9, 0.44, boxstyle="round,pad=0.02", fc="#E8F1FA", ec="#0072B2"))
        ax.text(10.3, y, lane, ha="center", va="center", fontsize=fs)
    # arrows leave a box at distinct heights, so that each label sits at its own arrow's start
    outs = defaultdict(list)
    for b in barriers:
        for key in b.arrivals:
            outs[key[0]].append((pos_b[b.name], b.name, key))
    start = {}
    for lane, items in outs.items():
        items.sort()
        for i, (_, name, key) in enumerate(items):
            start[(name, key)] = pos_l[lane] + (0.36 * (i / (len(items) - 1) - 0.5) if len(items) > 1 else 0.0)
    # and arrive at a waiting box at distinct heights, each labelled at its end
    ins = defaultdict(list)
    for b in barriers:
        for lane in b.waiters:
            ins[lane].append((pos_b[b.name], b.name))
    end = {}
    for lane, items in ins.items():
        items.sort()
        for i, (_, name) in enumerate(items):
            end[(name, lane)] = pos_r[lane] + (0.36 * (i / (len(items) - 1) - 0.5) if len(items) > 1 else 0.0)
    for b in barriers:
        y = pos_b[b.name]
        ax.add_patch(FancyBboxPatch((5.0, y - 0.27), 2.9, 0.54, boxstyle="round,pad=0.02", fc="#FFF3E0", ec="#D55E00"))
        ax.text(6.45, y - 0.07, b.name, ha="center", va="center", fontsize=fs, weight="bold")
        ring = f", {b.stages} stages" if b.stages > 1 else ""
        sub = (f"{b.count} arrival{'s' if b.count != 1 else ''} per phase{ring}" if b.count
               else "a bulk group, no mbarrier (whole run)")
        ax.text(6.45, y + 0.15, sub, ha="center", va="center", fontsize=fs)
        waiters = sorted(b.waiters.items(), key=lambda kv: pos_r[kv[0]])

        for (lane, how), (events, nbytes) in b.arrivals.items():
            y0 = start[(b.name, (lane, how))]
            if how in ("TMA load", "TMA store"):
                label = f"{_num(events)} {how}{'s' if events != 1 else ''}"
            elif how == "arrive" and b.count > 1:
                label = f"arrive ({_num(events)} warp{'s' if events != 1 else ''})"
            else:
                label = how
            if nbytes:
                label += f", {_num(nbytes)} B"
            ax.annotate("", xy=(5.0, y), xytext=(1.95, y0),
                        arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 1.0, "shrinkA": 0})
            ax.text(2.0, y0 - 0.03, label, ha="left", va="bottom", fontsize=fs, color="#333333")
        for i, (lane, w) in enumerate(waiters):
            y1 = end[(b.name, lane)]
            ys0 = y + (0.3 * (i / (len(waiters) - 1) - 0.5) if len(waiters) > 1 else 0.0)
            ax.annotate("", xy=(9.35, y1), xytext=(7.9, ys0),
                        arrowprops={"arrowstyle": "->", "color": "#777777", "lw": 1.0, "ls": "--", "shrinkA": 0})
            ax.text(9.3, y1 - 0.03, "wait" + (f" ({_num(w)} warps)" if w > 1 else ""), ha="right",
                    va="bottom", fontsize=fs, color="#333333")
    ax.text(1.0, -0.6, "arrives / delivers", ha="center", fontsize=fs, style="italic")
    ax.text(6.45, -0.6, "mbarrier (per phase)", ha="center", fontsize=fs, style="italic")
    ax.text(10.3, -0.6, "waits", ha="center", fontsize=fs, style="italic")
    if title:
        ax.set_title(title, fontsize=fs + 1, loc="left")
    return fig


def structure_of(chapter, a, b, *, title="", cta=0, only=None, **config):
    """Run chapter ``chapter`` on the emulator and draw its execution structure (CTA ``cta``)."""
    from .trace_view import run_traced

    trace, log = run_traced(chapter, a, b, **config)
    return draw_structure(handoffs(trace, log, cta, only=only), title=title)
