"""Chapter 8's pair picture, read from a run of a cta_group::2 kernel on the emulator: which CTA
(and so which SM) holds which rows of A and B, where each half of the accumulator lands in which
CTA's TMEM, and which arrivals cross from one CTA to the other.

``pair_layout(trace, log)`` collects it from the trace (TMA loads carry their tensor map, box and
destination CTA; MMAs the CTAs they read and their TMEM columns; ``structure.handoffs`` the
remote arrivals); ``draw_pair(layout)`` draws the tile on the left (A's and B's halves and D's
halves coloured by CTA) and each CTA's shared memory and TMEM on the right.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

from . import structure, timeline

COLOURS = ("#0072B2", "#E69F00")  # CTA 0, CTA 1 (Okabe-Ito)


@dataclass
class PairLayout:
    rows: dict = field(default_factory=dict)  # (cta, "A" or "B") -> (first row, rows) of the tile
    box_cols: int = 0  # K columns per TMA box (one stage)
    regions: dict = field(default_factory=dict)  # (cta, "A" or "B") -> smem region of stage 0
    m: int = 0  # MMA shape
    n: int = 0
    issuer: int = 0  # the CTA whose warp issues the MMAs
    accumulators: list = field(default_factory=list)  # TMEM first columns, one per accumulator
    crossing: list = field(default_factory=list)  # (from CTA, to CTA, text)


def pair_layout(trace, log, cluster=(0, 1)):
    lay = PairLayout()
    loads = sorted((e for e in trace.events if e.op == "tma.load" and e.cta in cluster), key=lambda e: e.start)
    for e in loads:  # the first tile's first chunk: the lowest row each CTA loads of each operand
        x = e.extra
        key = (x["into"], x["map"])
        if key not in lay.rows:
            lay.rows[key] = (x["row"], x["box"][0])
            lay.regions[key] = x["region"].split("+")[0]
            lay.box_cols = x["box"][1]
    mmas = [e for e in trace.events if e.op == "mma" and e.cta in cluster]
    if not mmas or len(mmas[0].extra["ctas"]) != 2:
        raise ValueError("the trace has no cta_group::2 MMA: the pair picture needs a kernel of a CTA pair")
    lay.m, lay.n, lay.issuer = mmas[0].extra["m"], mmas[0].extra["n"], mmas[0].cta
    lay.accumulators = sorted({e.extra["d_col"] for e in mmas})
    for b in structure.handoffs(trace, log, ctas=list(cluster)):
        for a in b.arrivals:
            if a.remote:
                src = int(a.source.split()[1])
                how = a.how.replace(chr(160), " ").replace("commit by", "multicast commit by")
                lay.crossing.append((src, b.cta, f"{how} -> {b.name}"))
    return lay


def draw_pair(lay, title=""):
    fs = timeline.MIN_FONT
    fig, ax = plt.subplots(figsize=(timeline.WIDTH_IN, 5.6), dpi=timeline.DPI)
    fig.subplots_adjust(0, 0, 1, 1)
    ax.set_xlim(0, 14)
    ax.axis("off")
    if title:
        ax.text(0, -0.6, title, fontsize=fs + 1, va="top")
    # the tile: A (M x K) left of D (M x N), B (N x K) drawn transposed above D
    m, n = lay.m, lay.n
    ax0, dx0, top, h, w = 0.2, 1.9, 2.6, 5.0, 4.0
    ax.text(ax0 + 0.75, top - 0.25, "A", ha="center", fontsize=fs, weight="bold")
    ax.text(dx0 + w / 2, 0.1, "B (K-major: one row per column of D)", ha="center", fontsize=fs)
    for cta in (0, 1):
        c = COLOURS[cta]
        r0, nr = lay.rows[(cta, "A")]
        y = top + h * r0 / m
        ax.add_patch(Rectangle((ax0, y), 1.5, h * nr / m, fc=c, alpha=0.35, ec=c))
        ax.text(ax0 + 0.75, y + h * nr / m / 2, f"rows\n{r0}-{r0 + nr - 1}", ha="center", va="center",
                fontsize=fs)
        b0, nb = lay.rows[(cta, "B")]
        x = dx0 + w * b0 / n
        ax.add_patch(Rectangle((x, 0.4), w * nb / n, 1.8, fc=c, alpha=0.35, ec=c))
        ax.text(x + w * nb / n / 2, 1.3, f"rows\n{b0}-{b0 + nb - 1}", ha="center", va="center", fontsize=fs)
        half = m // 2
        ax.add_patch(Rectangle((dx0, top + h * cta / 2), w, h / 2, fc=c, alpha=0.2, ec=c))
        ax.text(dx0 + w / 2, top + h * cta / 2 + h / 4,
                f"D rows {cta * half}-{cta * half + half - 1}\nin CTA {cta}'s TMEM", ha="center", va="center",
                fontsize=fs)
    ax.text(dx0 + w / 2, top + h + 0.5, f"D: one {m} x {n} tile,\nMMAs issued by CTA {lay.issuer}",
            ha="center", va="top", fontsize=fs)
    # each CTA (one SM each): its shared memory and TMEM
    x0, bw, bh = 6.6, 7.3, 4.1
    half = m // 2
    for cta in (0, 1):
        c = COLOURS[cta]
        y0 = cta * (bh + 1.3)
        ax.add_patch(Rectangle((x0, y0), bw, bh, fc="white", ec=c, lw=2))
        ax.text(x0 + 0.15, y0 + 0.45, f"CTA {cta} (its own SM)", fontsize=fs, weight="bold", color=c)
        lines = []
        for op in ("A", "B"):
            r0, nr = lay.rows[(cta, op)]
            lines.append(f"smem {lay.regions[(cta, op)].split('[')[0]}[s]: {op} rows {r0}-{r0 + nr - 1}")
        for i, col in enumerate(lay.accumulators):
            lines.append(f"TMEM acc {i}: columns {col}-{col + n - 1}")
        lines.append(f"(TMEM lanes 0-{half - 1} = D rows {cta * half}-{cta * half + half - 1})")
        for i, line in enumerate(lines):
            ax.text(x0 + 0.15, y0 + 1.15 + 0.6 * i, line, fontsize=fs, va="center")
    for x, (y_from, y_to) in ((x0 + 1.0, (bh + 0.05, bh + 1.25)), (x0 + bw - 1.0, (bh + 1.25, bh + 0.05))):
        ax.add_patch(FancyArrowPatch((x, y_from), (x, y_to), arrowstyle="-|>", mutation_scale=12,
                                     color=structure.REMOTE, lw=1.5))
    ax.text(x0 + bw / 2, bh + 0.65, "crossings (below)", ha="center", va="center", fontsize=fs,
            color=structure.REMOTE)
    down = sorted({t for s_, d, t in lay.crossing if s_ == lay.issuer and d != lay.issuer})
    up = sorted({t for s_, d, t in lay.crossing if s_ != lay.issuer and d == lay.issuer})
    peer = 1 - lay.issuer
    rows = [f"CTA {lay.issuer} -> CTA {peer}: its MMAs read CTA {peer}'s A and B halves and write "
            f"CTA {peer}'s TMEM"]
    rows += [f"CTA {lay.issuer} -> CTA {peer}: {t}" for t in down]
    rows += [f"CTA {peer} -> CTA {lay.issuer}: {t}" for t in up]
    y = 2 * bh + 1.9
    for i, t in enumerate(rows):
        ax.text(0.2, y + 0.55 * i, t, fontsize=fs, color=structure.REMOTE, va="center")
    ax.set_ylim(y + 0.55 * len(rows), -0.9 if title else -0.2)
    fig.set_figheight(0.4 * (y + 0.55 * len(rows) + (0.9 if title else 0.2)))
    fig.pair_layout = lay
    return fig


def pair_of(chapter, a, b, *, title="", **config):
    """Run chapter ``chapter`` (a kernel of CTA pairs) on the emulator and draw its pair picture."""
    from .trace_view import run_traced

    trace, log = run_traced(chapter, a, b, **config)
    return draw_pair(pair_layout(trace, log), title=title)
