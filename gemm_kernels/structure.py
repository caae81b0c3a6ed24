"""Execution-structure diagrams drawn from a kernel's own run: who hands what to whom, through
which barrier, with whole counts on the arrows.

``handoffs(trace, log)`` reads an emulator trace and its mbarrier log (``trace_view.run_traced``)
for the CTAs drawn (CTA 0, and the CTAs it exchanges arrivals with: both CTAs of a pair). Each
barrier (an mbarrier, a named barrier of ``bar.sync``/``bar.arrive``, the cluster barrier, and the
epilogue's bulk group of TMA stores) gets its arrivals per phase (from ``mbarrier.init`` or the
barrier instruction's thread count) and its phases; each arriving lane gets an arrow whose label
counts what it brings per phase in whole numbers: the warps that arrive (never an average of
events), the TMA loads of each phase and their bytes (replayed phase by phase from the mbarrier
log), the commits of the tensor core named by the warp that issued them. An arrival from another
CTA of the cluster (a remote arrive through ``mapa``, a multicast commit, a peer's TMA load that
signals the leader's barrier) is drawn in red and says so. Each waiting lane gets an arrow with the
number of its warps that wait.

Barriers of a ring (``tma2mma[0]``, ``tma2mma[1]``, ...) are one node ``tma2mma[s]`` when every
stage has the same arrivals and waiters; members that differ (chapter 9's ``ld2mma[0]`` and
``ld2mma[1]``, one per consumer) stay apart.

``draw_structure(barriers)`` lays them out in slots (one slot per arrow label, so that no label
overlaps another or a box): arriving lanes left, barriers in the middle, waiting lanes right.
"""
from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from . import timeline

#: the node for the TMA stores of the epilogue (they complete in a bulk group, not on an mbarrier)
STORE_NODE = "TMA store of D"
REMOTE = "#C0392B"  # arrows that cross CTAs


@dataclass
class Arrival:
    source: str  # the box it comes from: a lane, or a unit ("TMA", "tensor core")
    how: str  # "arrive", "arrive + expect_tx", "TMA load", "commit by MMA issuer", "bar.sync", ...
    warps: int = 0  # distinct warps that arrive this way (0: a unit's arrivals)
    per_phase: tuple = ()  # the distinct numbers of this arrival per phase (units)
    nbytes: tuple = ()  # the distinct byte counts per phase (or per arrive.expect_tx)
    remote: bool = False  # from another CTA of the cluster
    threads: int = 0  # threads per warp that count (named and cluster barriers count threads)

    def label(self):
        if self.how in ("TMA load", "TMA store"):
            n = " or ".join(map(str, self.per_phase))
            text = f"{n} {self.how}{'' if self.per_phase == (1,) else 's'}"
            if self.how == "TMA store":  # a bulk group has no phases: the count is the run's
                text += " (whole run)"
        elif self.warps:
            text = f"{self.how} ({_warps(self.warps)})"
        else:
            text = self.how
        if self.nbytes and any(self.nbytes):
            text += ", " + " or ".join(f"{b}\u00a0B" for b in self.nbytes)  # (no line break inside)
        if self.remote:
            text += " (remote)"
        return text


@dataclass
class Barrier:
    name: str
    count: int  # arrivals (an mbarrier) or threads (a named or cluster barrier) per phase
    phases: int  # phases completed in the run (of one stage for a ring)
    cta: int | None = 0  # the CTA that holds it (None: the cluster barrier)
    kind: str = "mbarrier"  # "mbarrier", "named", "cluster", "bulk"
    stages: int = 1  # barriers of a ring drawn as this one
    members: list = field(default_factory=list)  # the barriers' own names ("tma2mma[0]", ...)
    arrivals: list = field(default_factory=list)  # Arrival
    waiters: dict = field(default_factory=dict)  # lane -> warps that wait on it

    def arrival(self, source, how):
        return next(a for a in self.arrivals if a.source == source and a.how == how)

    def subtitle(self):
        ring = f", {self.stages} stages" if self.stages > 1 else ""
        if self.kind == "bulk":
            return "bulk group"
        if self.kind in ("named", "cluster"):
            uses = f", {self.phases} uses" if self.name.endswith("between") else ""
            return f"{self.count} threads{uses}"
        return f"{self.count} arrival{'s' if self.count != 1 else ''}{ring}"


def _warps(n):
    return f"{n} warp{'s' if n != 1 else ''}"


def _group(name):
    """Ring barriers ``x[0]``, ``x[1]``, ... are one node ``x[s]``."""
    return re.sub(r"\[\d+\]$", "[s]", name)


def _prefix(lane):
    m = timeline._CTA_PREFIX.match(lane)
    return lane[:m.end()] if m else ""


def _completions(log):
    """{(cta, name): [virtual time of each completed phase]}, replayed from the mbarrier log."""
    out = defaultdict(list)
    state, expected = {}, {}
    for ns, _, key, what, value in sorted(log.changes, key=lambda c: (c[0], c[1])):
        if what == "init":
            state[key] = [value, 0]  # pending arrivals, tx
            expected[key] = value
            continue
        st = state.setdefault(key, [1, 0])
        if what == "arrive":
            st[0] -= value
        elif what == "expect_tx":
            st[1] += value
        elif what == "complete_tx":
            st[1] -= value
        if st[0] <= 0 and st[1] == 0:
            out[key].append(ns)
            state[key] = [expected.get(key, 1), 0]
    return out


def _linked_ctas(trace, cta):
    """CTA ``cta`` and the CTAs whose arrivals cross to or from it (the other CTA of a pair)."""
    linked = {cta}
    for e in trace.events:
        targets = e.extra.get("bar_ctas") or ([e.extra["bar_cta"]] if "bar_cta" in e.extra else [])
        if e.cta == cta or cta in targets:
            linked |= {e.cta, *targets}
    return sorted(linked)


def handoffs(trace, log, cta=0, *, ctas=None, only=None):
    """The barriers of the CTAs drawn and their handoffs, in order of first use. ``ctas``: the CTAs
    to draw (default: ``cta`` and the CTAs it exchanges arrivals with). ``only``: keep the
    barriers whose name contains one of these strings."""
    from .trace_view import barrier_states

    ctas = list(ctas) if ctas is not None else _linked_ctas(trace, cta)
    many = len(ctas) > 1

    def show(lane):
        return timeline._display_name(timeline.lane_name(lane), not many)

    final = barrier_states(log)[-1][1] if log.changes else {}
    done = _completions(log)
    # one record per mbarrier: its arrivals and waiters, keyed by (source, how)
    arrivals = defaultdict(lambda: defaultdict(lambda: {"warps": set(), "nbytes": set(), "remote": False}))
    waiters = defaultdict(lambda: defaultdict(set))
    order = []
    for e in sorted(trace.events, key=lambda e: e.start):
        if not e.barrier or e.op not in ("arrive", "commit", "tma.load", "wait"):
            continue
        targets = e.extra.get("bar_ctas") or [e.extra.get("bar_cta", e.cta)]
        for target in targets:
            key = (target, e.barrier)
            if target not in ctas or key not in final:
                continue
            if key not in order:
                order.append(key)
            lane = show(e.lane)
            if e.op == "wait":
                waiters[key][lane].add((e.cta, e.warp))
                continue
            if e.op == "arrive":
                rec = arrivals[key][(lane, "arrive + expect_tx" if e.nbytes else "arrive")]
                rec["warps"].add((e.cta, e.warp))
                rec["nbytes"].add(e.nbytes)
            elif e.op == "commit":
                role = timeline._display_name(e.lane, True).replace(" ", "\u00a0")
                rec = arrivals[key][(show(_prefix(e.lane) + "tensor core"), f"commit by {role}")]
                rec["warps"].add((e.cta, e.warp))
            else:  # a TMA load: counted in the phase its bytes complete
                rec = arrivals[key][(lane, "TMA load")]
                phase = bisect.bisect_left(done.get(key, []), e.end - 1e-6)
                rec.setdefault("phases", defaultdict(lambda: [0, 0]))
                rec["phases"][phase][0] += 1
                rec["phases"][phase][1] += e.nbytes
            rec["remote"] |= e.cta != target
    members = []
    for key in order:
        c, name = key
        st = final[key]
        arr = []
        for (source, how), rec in arrivals[key].items():
            if how == "TMA load":
                loads = rec["phases"].values()
                arr.append(Arrival(source, how, per_phase=tuple(sorted({n for n, _ in loads})),
                                   nbytes=tuple(sorted({b for _, b in loads})), remote=rec["remote"]))
            elif how.startswith("commit"):
                arr.append(Arrival(source, how, remote=rec["remote"]))
            else:
                arr.append(Arrival(source, how, warps=len(rec["warps"]), nbytes=tuple(sorted(rec["nbytes"])),
                                   remote=rec["remote"]))
        wait = {lane: len(w) for lane, w in waiters[key].items()}
        sig = (tuple(sorted((a.source, a.how, a.warps, a.per_phase, a.nbytes, a.remote) for a in arr)),
               tuple(sorted(wait.items())))
        members.append((c, name, st, arr, wait, sig))
    # ring members with the same handoffs are one node; members that differ stay apart
    groups = defaultdict(list)
    for m in members:
        groups[(m[0], _group(m[1]))].append(m)
    out = []
    for (c, g), ms in groups.items():
        if len({m[5] for m in ms}) == 1:
            c, name, st, arr, wait, _ = ms[0]
            out.append(Barrier(g, st.expected, min(m[2].phase for m in ms), cta=c, stages=len(ms),
                               arrivals=arr, waiters=wait, members=[m[1] for m in ms]))
        else:
            out += [Barrier(name, st.expected, st.phase, cta=c, arrivals=arr, waiters=wait, members=[name])
                    for c, name, st, arr, wait, _ in ms]
    for b in out:
        b.waiters = _all_warps(b.waiters, trace, ctas, many)
    out += _syncs(trace, ctas, show, many)
    for c in ctas:
        stores = [e for e in trace.events if e.cta == c and e.op == "tma.store"]
        if stores:  # the epilogue's hand-off to the TMA engine: a bulk group, not an mbarrier
            b = Barrier(STORE_NODE, 0, 1, cta=c, kind="bulk")
            b.arrivals.append(Arrival(show(timeline.lane_name(stores[0].lane)), "TMA store",
                                      per_phase=(len(stores),), nbytes=(sum(e.nbytes for e in stores),)))
            out.append(b)
    if only:
        out = [b for b in out if any(o in b.name for o in only)]
    return out


def _syncs(trace, ctas, show, many):
    """The named barriers (per CTA) and the cluster barrier, from the trace's ``syncs``. The CTA
    barrier (``bar.sync 0``) is drawn per use, as the chapters' tables list it: its first use, the
    uses in between, its last use."""
    syncs = [e for e in getattr(trace, "syncs", []) if e.cta in ctas]
    uses, seen = defaultdict(int), defaultdict(int)
    for e in syncs:
        if e.detail == "named barrier 0" and e.op == "bar.sync":
            uses[(e.cta, e.warp)] += 1
    total = max(uses.values(), default=0)
    by = defaultdict(lambda: defaultdict(lambda: defaultdict(set)))
    threads, rounds, syncname = {}, defaultdict(lambda: defaultdict(int)), {}
    for e in syncs:
        cluster = e.detail == "cluster barrier"
        name = e.detail.replace("named barrier", "named bar")
        if e.detail == "named barrier 0":
            k = seen[(e.cta, e.warp)]
            seen[(e.cta, e.warp)] += 1
            name = ("CTA barrier, first use" if k == 0 else
                    f"CTA barrier, {'second' if total == 2 else 'last'} use" if k == total - 1 else
                    "CTA barrier, between")
        key = (None if cluster else e.cta, name)
        syncname[key] = e.detail
        threads[key] = e.extra["threads"]
        rounds[key][(e.cta, e.warp)] += e.op.endswith(("sync", "wait"))
        everyone = cluster or e.extra["threads"] == _threads_of(trace, e.cta)
        lane = (timeline._display_name(f"CTA {e.cta} all warps", not many) if everyone else show(e.lane))
        if e.op in ("bar.sync", "bar.arrive", "cluster.arrive"):
            by[key]["arrive"][lane].add((e.cta, e.warp))
        if e.op in ("bar.sync", "cluster.wait"):
            by[key]["wait"][lane].add((e.cta, e.warp))
    out = []
    for key, parts in by.items():
        c, name = key
        b = Barrier(name, threads[key], max(rounds[key].values(), default=0), cta=c,
                    kind="cluster" if c is None else "named", members=[syncname[key]])
        for lane, warps in parts["arrive"].items():
            b.arrivals.append(Arrival(lane, "arrive", warps=len(warps)))
        b.waiters = {lane: len(w) for lane, w in parts["wait"].items()}
        out.append(b)
    return out


def _all_warps(waiters, trace, ctas, many):
    """Lanes ``warp 0`` .. ``warp n-1`` of a CTA that all wait, as one lane ``all warps``."""
    out = dict(waiters)
    for c in ctas:
        pre = f"CTA {c} " if many else ""
        warps = {e.warp for e in getattr(trace, "syncs", []) if e.cta == c}
        names = {f"{pre}warp {w}" for w in warps}
        if len(names) > 1 and names <= set(out):
            for n in names:
                del out[n]
            out[f"{pre}all warps"] = len(names)
    return out


def _threads_of(trace, cta):
    """Threads of CTA ``cta`` that use barriers (all its warps seen in the trace's syncs), x 32."""
    return 32 * len({e.warp for e in getattr(trace, "syncs", []) if e.cta == cta})


# -- drawing -----------------------------------------------------------------------------------

SLOT = 0.26  # inches per line of text
#: column edges in axis units (the axis spans ``X["r1"]`` units across the figure's width)
X = {"l0": 0.0, "l1": 1.85, "b0": 4.95, "b1": 7.95, "r0": 10.3, "r1": 12.2}
GAP = 0.9  # lines between two boxes of a column
LABEL_CHARS = 19  # an arrow label longer than this wraps at its commas


def _lines(text):
    return text.count("\n") + 1


def _wrap_label(text, width=LABEL_CHARS):
    out, line = [], ""
    for part in text.split(" "):
        if line and len(line) + 1 + len(part) > width:
            out.append(line)
            line = part
        else:
            line = f"{line} {part}" if line else part
    return "\n".join(out + [line])


def _order(left, right, barriers, outs, ins):
    """Barriers in order of first use, then lanes and barriers each moved to the mean position of
    what they connect to (two passes), which keeps most arrows short and uncrossed."""
    pos = {id(b): i for i, b in enumerate(barriers)}
    for _ in range(2):
        lp = {lane: sum(pos[id(b)] for b, _ in outs[lane]) / len(outs[lane]) for lane in left}
        rp = {lane: sum(pos[id(b)] for b in ins[lane]) / len(ins[lane]) for lane in right}
        left = sorted(left, key=lp.get)
        right = sorted(right, key=rp.get)
        li = {lane: i * len(barriers) / max(1, len(left)) for i, lane in enumerate(left)}
        ri = {lane: i * len(barriers) / max(1, len(right)) for i, lane in enumerate(right)}

        def centre(b, i):
            ys = [li[a.source] for a in b.arrivals] + [ri[lane] for lane in b.waiters]
            return (sum(ys) / len(ys) if ys else i) + 0.01 * i

        barriers = sorted(barriers, key=lambda b: centre(b, pos[id(b)]))
        pos = {id(b): i for i, b in enumerate(barriers)}
    return left, right, barriers


def _stack(items, heights, rows):
    """Top of each box of a column, the column centred in ``rows`` lines."""
    tops, y = {}, 0.0
    for item, h in zip(items, heights):
        tops[item] = y
        y += h + GAP
    shift = (rows - (y - GAP)) / 2
    return {k: v + shift for k, v in tops.items()}


def draw_structure(barriers, title=""):
    """Arriving lanes (left) -> barriers (middle) -> waiting lanes (right); return the figure.
    Every arrow label has rows of its own beside the box it leaves or enters, so no label overlaps
    another label or a box (``tests/test_structure.py`` checks the rendered text boxes)."""
    many = len({b.cta for b in barriers if b.cta is not None}) > 1
    left, right = [], []
    for b in barriers:
        for a in b.arrivals:
            if a.source not in left:
                left.append(a.source)
        for lane in b.waiters:
            if lane not in right:
                right.append(lane)
    outs = {lane: [(b, a) for b in barriers for a in b.arrivals if a.source == lane] for lane in left}
    ins = {lane: [b for b in barriers if lane in b.waiters] for lane in right}
    left, right, barriers = _order(left, right, barriers, outs, ins)
    bpos = {id(b): i for i, b in enumerate(barriers)}
    for lane in outs:
        outs[lane].sort(key=lambda ba: bpos[id(ba[0])])
    for lane in ins:
        ins[lane].sort(key=lambda b: bpos[id(b)])
    labels = {(lane, i): _wrap_label(a.label()) for lane in left for i, (_, a) in enumerate(outs[lane])}
    lh = {lane: max(2.0, sum(_lines(labels[(lane, i)]) + 0.3 for i in range(len(outs[lane])))) for lane in left}
    rh = {lane: max(2.0, 1.3 * len(ins[lane])) for lane in right}
    bh = {id(b): 1.9 + len(b.subtitle().split(", ")) + b.name.count(", ") for b in barriers}
    rows = max(sum(lh.values()) + GAP * (len(left) - 1), sum(rh.values()) + GAP * (len(right) - 1),
               sum(bh.values()) + GAP * (len(barriers) - 1), 2.0)
    top_l = _stack(left, [lh[lane] for lane in left], rows)
    top_r = _stack(right, [rh[lane] for lane in right], rows)
    top_b = _stack([id(b) for b in barriers], [bh[id(b)] for b in barriers], rows)
    fs = timeline.MIN_FONT
    head = 2.2 + (1.2 if title else 0)
    fig, ax = plt.subplots(figsize=(timeline.WIDTH_IN, SLOT * (rows + head + 0.3)), dpi=timeline.DPI)
    fig.subplots_adjust(0, 0, 1, 1)
    ax.set_xlim(X["l0"], X["r1"])
    ax.set_ylim(rows + 0.3, -head)
    ax.axis("off")

    def box(x0, x1, y0, h, fc, ec):
        ax.add_patch(FancyBboxPatch((x0 + 0.05, y0), x1 - x0 - 0.1, h, boxstyle="round,pad=0.02", fc=fc, ec=ec))

    for lane in left:
        box(X["l0"], X["l1"], top_l[lane], lh[lane], "#E8F1FA", "#0072B2")
        ax.text((X["l0"] + X["l1"]) / 2, top_l[lane] + lh[lane] / 2, _wrap(lane), ha="center", va="center",
                fontsize=fs, linespacing=1.3)
    for lane in right:
        box(X["r0"], X["r1"], top_r[lane], rh[lane], "#E8F1FA", "#0072B2")
        ax.text((X["r0"] + X["r1"]) / 2, top_r[lane] + rh[lane] / 2, _wrap(lane), ha="center", va="center",
                fontsize=fs, linespacing=1.3)
    centre = {}
    for b in barriers:
        y0 = top_b[id(b)]
        box(X["b0"], X["b1"], y0, bh[id(b)], "#FFF3E0", "#D55E00")
        pre = f"CTA {b.cta}: " if many and b.cta is not None else ""
        name, *more = b.name.split(", ")
        sub = b.subtitle().split(", ")
        lines = more + [pre + sub[0]] + sub[1:]
        ax.text((X["b0"] + X["b1"]) / 2, y0 + 0.9, name, ha="center", va="center", fontsize=fs, weight="bold")
        for i, line in enumerate(lines):
            ax.text((X["b0"] + X["b1"]) / 2, y0 + 1.9 + i, line, ha="center", va="center", fontsize=fs)
        centre[id(b)] = y0 + bh[id(b)] / 2
    turn_l, turn_r = X["b0"] - 0.2, X["b1"] + 0.2
    for lane in left:
        y = top_l[lane] + (lh[lane] - sum(_lines(labels[(lane, i)]) + 0.3 for i in range(len(outs[lane])))) / 2
        for i, (b, a) in enumerate(outs[lane]):
            y += _lines(labels[(lane, i)]) + 0.3
            colour = REMOTE if a.remote else "#555555"
            ax.plot([X["l1"] - 0.05, turn_l], [y - 0.15, y - 0.15], color=colour, lw=1.0)
            ax.annotate("", xy=(X["b0"] + 0.03, centre[id(b)]), xytext=(turn_l, y - 0.15),
                        arrowprops={"arrowstyle": "->", "color": colour, "lw": 1.0, "shrinkA": 0, "shrinkB": 0})
            ax.text(X["l1"] + 0.05, y - 0.3, labels[(lane, i)], ha="left", va="bottom", fontsize=fs,
                    color=REMOTE if a.remote else "#333333", linespacing=1.1)
    for lane in right:
        y = top_r[lane] + (rh[lane] - 1.3 * len(ins[lane])) / 2
        for b in ins[lane]:
            y += 1.3
            ax.plot([X["b1"] - 0.03, turn_r], [centre[id(b)], y - 0.15], color="#777777", lw=1.0, ls="--")
            ax.annotate("", xy=(X["r0"] + 0.05, y - 0.15), xytext=(turn_r, y - 0.15),
                        arrowprops={"arrowstyle": "->", "color": "#777777", "lw": 1.0, "ls": "--",
                                    "shrinkA": 0, "shrinkB": 0})
            ax.text(X["r0"] - 0.05, y - 0.3, f"wait ({_warps(b.waiters[lane])})", ha="right", va="bottom",
                    fontsize=fs, color="#333333")
    ax.text((X["l0"] + X["l1"]) / 2, -0.8, "arrives", ha="center", fontsize=fs, style="italic")
    ax.text((X["b0"] + X["b1"]) / 2, -0.8, "barrier: count per phase", ha="center", fontsize=fs, style="italic")
    ax.text((X["r0"] + X["r1"]) / 2, -0.8, "waits", ha="center", fontsize=fs, style="italic")
    if title:
        ax.text(X["l0"], -head + 0.2, title, ha="left", va="top", fontsize=fs + 1)
    fig.structure_barriers = barriers
    fig.structure_boxes = {id(b): (X["b0"], top_b[id(b)], X["b1"], top_b[id(b)] + bh[id(b)]) for b in barriers}
    fig.structure_axes = ax
    return fig


def barrier_boxes(fig):
    """[(cta or None, member names, (left, top, right, bottom) as fractions of the figure)] of each
    barrier node of a figure from ``draw_structure`` (the trace view highlights them)."""
    ax = fig.structure_axes
    fig.canvas.draw()
    w, h = fig.canvas.get_width_height()
    out = []
    for b in fig.structure_barriers:
        x0, y0, x1, y1 = fig.structure_boxes[id(b)]
        (px0, py0), (px1, py1) = ax.transData.transform([(x0, y0), (x1, y1)])
        out.append((b.cta, list(b.members), (px0 / w, 1 - py0 / h, px1 / w, 1 - py1 / h)))
    return out


def _wrap(lane):
    """A lane name on two lines when it carries a CTA prefix (boxes stay narrow)."""
    m = timeline._CTA_PREFIX.match(lane)
    return f"{lane[:m.end()].strip()}\n{lane[m.end():]}" if m else lane


def structure_of(chapter, a, b, *, title="", cta=0, ctas=None, only=None, **config):
    """Run chapter ``chapter`` on the emulator and draw its execution structure (CTA ``cta`` and
    the CTAs it exchanges arrivals with)."""
    from .trace_view import run_traced

    trace, log = run_traced(chapter, a, b, **config)
    return draw_structure(handoffs(trace, log, cta, ctas=ctas, only=only), title=title)


#: The parts a pair kernel's structure is drawn in (chapters 8-10): the whole structure in one
#: diagram is over 2000 px tall and its wait arrows merge into a comb (issue 31); each part keeps
#: the handoffs of one exchange together, small enough to follow at the page's width.
PARTS = (
    ("the operand ring, TMA to MMA and back", ("tma2mma", "mma2tma")),
    ("the accumulators, MMA to writeback and back", ("mma2ld", "ld2mma")),
    ("the tile scheduler's responses", ("clc_",)),
    ("the writeback's named barriers and the stores of D", ("named bar", STORE_NODE)),
    ("the start and the end: the CTA and cluster barriers", ("CTA barrier", "cluster barrier")),
)


def structure_parts(chapter, a, b, *, title="", cta=0, ctas=None, parts=PARTS, **config):
    """One run of chapter ``chapter`` on the emulator, drawn as one diagram per part of ``parts``
    ((name, barrier name fragments)) that has barriers; returns the figures. Every barrier of the
    run is in exactly one part (a ValueError names one that is in none)."""
    from .trace_view import run_traced

    trace, log = run_traced(chapter, a, b, **config)
    every = handoffs(trace, log, cta, ctas=ctas)
    placed = {(x.name, x.cta) for _, only in parts for x in every if any(o in x.name for o in only)}
    missing = [x.name for x in every if (x.name, x.cta) not in placed]
    if missing:
        raise ValueError(f"barriers in no part of the structure: {missing}; add them to structure.PARTS")
    figs = []
    for name, only in parts:
        chosen = [x for x in every if any(o in x.name for o in only)]
        if chosen:
            figs.append(draw_structure(chosen, title=f"{title}: {name}" if title else name))
    return figs

