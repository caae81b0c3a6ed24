"""What the chapters' Performance sections and book/benchmarking.md call: the model's stored
predictions (``predictions.json``, kept current by a test) beside the published measurement of
the same design, the model's account of what limits each step, and a steady-state window of a
full-size run on the virtual clock. Every figure printed here says MODEL or whose measurement it is,
and every model figure travels with its range (the parameters' sourced ranges, params.py)."""
from __future__ import annotations

from .calibration import CALIBRATION, SOURCE
from .predictions import BOOK_SIZES, load, lookup, lookup_shape

WHY = {
    "tensor core": "the tensor core is busy nearly all the time: the step reaches what its MMAs allow",
    "TMA": "the SM's TMA port is busy nearly all the time: a stage takes longer to arrive than its MMAs take",
    "L2": "the L2's measured total bandwidth, shared by all SMs, is the limit: a stage takes longer to arrive "
          "than its MMAs take",
    "shared memory": "shared memory is busy nearly all the time: the TMA's writes and the tensor core's operand "
                     "reads share its bandwidth",
    "HBM": "HBM bandwidth is the limit: the tile order re-reads operands that fell out of L2",
    "latency": "no unit is busy most of the time: the SM waits for loads that nothing overlaps",
    "launch overhead": "the kernel is so short that the launch itself is a large part of the time",
}


#: Published B200 figures at 8192^3 for the designs of chapters 8 and 9 (the same CMU assignment's
#: 8192 column, as book/benchmarking.md quotes them). HELD OUT: shown beside the model, never used
#: to choose a parameter (calibration.CALIBRATION has only the 2048 and 4096 columns).
HELD_OUT = {(8, 8192): 1395, (9, 8192): 1510}


def design_depth(chapter):
    """The ring depth of the published design of a chapter (its calibration points'), or None: a
    held-out figure is compared only with our kernel at that depth (issue 31: chapter 8's table set
    the depth-4 design's 8192 figure beside our depth-6 row)."""
    depths = {p.pipe_depth for p in CALIBRATION if p.chapter == chapter}
    return depths.pop() if len(depths) == 1 else None


class Stored:
    """A stored prediction in the shape calibration.evaluate expects."""

    def __init__(self, data, chapter, size, depth, tmem_cols=None):
        r = lookup(data, chapter, size, depth, tmem_cols)
        self.tflops, self.bottleneck = r["tflops"], r["bottleneck"]
        self.tflops_low, self.tflops_high = r["tflops_low"], r["tflops_high"]


def range_text(r):
    """A stored row's figure with its range: "MODEL 1420 (1250-1560)" without the word."""
    return f"{r['tflops']:.0f} ({r['tflops_low']:.0f}-{r['tflops_high']:.0f})"


def inside(r, figure):
    """Whether a published figure lies inside a stored row's range."""
    return r["tflops_low"] <= figure <= r["tflops_high"]


def verdict(r, figure, who="the published figure"):
    """In words: whether the range includes a published figure, and if not, on which side it lies."""
    if inside(r, figure):
        return f"the model's range {range_text(r)} includes {who} ({figure:.0f})"
    side = "below" if figure < r["tflops_low"] else "above"
    return f"{who} ({figure:.0f}) lies {side} the model's range {range_text(r)}"


def design_row(data, chapter, size, depth):
    """The stored row that compares like for like with the published design at this point (our
    chapter configured as that design), and the published figure; (None, None) where none is."""
    for p in CALIBRATION:
        if (p.chapter, p.size, p.pipe_depth) == (chapter, size, depth):
            return lookup(data, chapter, size, depth, p.tmem_cols), p
    return None, None


def rungs_of(chapter):
    """The depths the book shows for a chapter: both calibrated depths where it takes one."""
    from ..chapters import CHAPTERS
    from .predictions import BOOK_RUNGS

    default = CHAPTERS[chapter].config.get("pipe_depth")
    depths = sorted({default if d is None else d for c, d in BOOK_RUNGS if c == chapter} - {None})
    return depths or [None]


def performance_rows(chapter, depths=None):
    """[(depth, size, stored model row, published figure or None)] for the chapter's book points.
    Where the published design differs from the chapter as written (its TMEM allocation), the row
    is the model of our kernel configured as that design (row["tmem_cols"] says so)."""
    data = load()
    out = []
    for d in (depths or rungs_of(chapter)):
        for s in BOOK_SIZES:
            r = lookup(data, chapter, s, d)
            like, p = design_row(data, chapter, s, r["pipe_depth"])
            held = HELD_OUT.get((chapter, s)) if r["pipe_depth"] == design_depth(chapter) else None
            figure = p.tflops if p else held
            if like is not None and like is not r:  # the chapter as written, then as the published design
                out.append((r["pipe_depth"], s, r, None))
            out.append((r["pipe_depth"], s, like or r, figure))
    return out


def show_performance(chapter, depths=None):
    """Print the chapter's table: the model's figure and range beside the published figure at
    4096^3 and 8192^3, whether the range includes it, and what limits each point."""
    rows = performance_rows(chapter, depths)
    print("MODEL = this book's B200 performance model (gemm_kernels.perf), not a measurement; "
          "its range comes from the parameters' sourced ranges")
    print(f"published = {SOURCE}: their kernel of the same design, measured by them "
          f"(4096: calibration set; 8192: held out)")
    print(f"{'depth':>5} {'size':>5}  {'MODEL TFLOP/s (range)':>22}  {'published':>9}  {'inside':<6}  "
          f"{'limited by (model)':<18}{'tensor core':>12}{'TMA':>6}{'smem':>6}{'L2/HBM':>8}")
    for d, s, r, p in rows:
        pub = f"{p:.0f}" if p else "-"
        ins = "-" if not p else ("yes" if inside(r, p) else "no")
        design = "" if r.get("tmem_cols") is None else f"  (as a {r['tmem_cols']}-column design)"
        print(f"{'-' if d is None else d:>5} {s:>5}  {range_text(r):>22}  {pub:>9}  {ins:<6}  {r['bottleneck']:<18}"
              f"{r['util_tensor_core']:>12.0%}{r['util_tma']:>6.0%}{r['util_smem']:>6.0%}{r['util_l2_hbm']:>8.0%}"
              f"{design}")
    return rows


def verdicts(chapter, depths=None):
    """One sentence per published figure of the chapter's design: whether the model's range
    (of our kernel configured as that design) includes it, and if not, on which side it lies."""
    out = []
    for d, s, r, p in performance_rows(chapter, depths):
        if p is None:
            continue
        where = f"{s}^3" + ("" if d is None else f", depth {d}")
        held = "held-out " if (chapter, s) in HELD_OUT else ""
        design = "" if r.get("tmem_cols") is None else f", our kernel as a {r['tmem_cols']}-column design"
        out.append(f"{where}{design}: {verdict(r, p, f'the {held}published figure')}.")
    return out


def limit_sentence(chapter, size=8192, depth=None):
    """The model's account of what limits the chapter at size^3, as a sentence."""
    r = lookup(load(), chapter, size, depth)
    return (f"At {size}^3 the model finds this step limited by {r['bottleneck']}: {WHY[r['bottleneck']]} "
            f"(tensor core {r['util_tensor_core']:.0%}, TMA port {r['util_tma']:.0%}, shared memory "
            f"{r['util_smem']:.0%}, L2/HBM {r['util_l2_hbm']:.0%} busy; MODEL {range_text(r)} TFLOP/s).")


def padded_shape(chapter, m, n, k):
    """M, N, K rounded up to the chapter's tile multiples: the zero-padded operands on which a
    chapter with a shape rule computes a ragged GEMM."""
    from ..chapters import CHAPTERS

    return tuple(-(-v // t) * t for v, t in zip((m, n, k), CHAPTERS[chapter].tile))


def useful_row(data, chapter, m, n, k):
    """The stored row of the chapter at M x N x K, or, where its shape rule refuses that shape, at the
    zero-padded shape with the TFLOP/s (and range) counted in useful FLOPs: 2 M N K over the padded
    run's time (the copies into padded buffers are not counted). ``row["padded"]`` names the shape run."""
    shape = padded_shape(chapter, m, n, k)
    r = dict(lookup_shape(data, chapter, *shape))
    scale = (m * n * k) / (shape[0] * shape[1] * shape[2])
    for key in ("tflops", "tflops_low", "tflops_high"):
        r[key] *= scale
    r["padded"] = shape if shape != (m, n, k) else None
    return r


def overlap(r1, r2):
    """Whether two stored rows' ranges overlap."""
    return r1["tflops_low"] <= r2["tflops_high"] and r2["tflops_low"] <= r1["tflops_high"]


def window(trace, start_ns, width_ns):
    """The events of ``trace`` that overlap [start_ns, start_ns + width_ns), clipped to it."""
    from dataclasses import replace

    from ..trace import Trace

    end = start_ns + width_ns
    out = Trace(source=trace.source)
    for e in trace.events:
        if e.end > start_ns and e.start < end:
            out.events.append(replace(e, start=max(e.start, start_ns), end=min(e.end, end)))
    return out


def steady_state(chapter, size=4096, depth=None, *, width_ns=6000.0):
    """A full-size run of one SM's share on the calibrated virtual clock (timing mode), and a
    window of ``width_ns`` from its middle (the steady state, away from fill and drain).
    Returns (window Trace, prediction)."""
    from .model import predict

    pred = predict(chapter, size, size, size, depth, keep_trace=True, with_range=False)
    tr = pred.share.trace
    t0, t1 = tr.span()
    mid = t0 + (t1 - t0) / 2
    return window(tr, mid - width_ns / 2, width_ns), pred


def ladder_figure(measured=None):
    """The ladder plot from the stored predictions (model), the calibration set (published) and an
    optional measured series (empty in the book)."""
    from .ladder import ladder_figure as fig

    return fig(model=load(), measured=measured)


#: What the published design of a calibration point does that our kernel of the same step does not
#: (as the CMU assignment's README states it: the calibration source), or what the model assumes that
#: does not hold for it, by CMU step. Printed beside a point the model misses; the model charges none
#: of it (no source gives its cost).
PUBLISHED_DESIGN = {
    4: "their kernel, like ours as the model runs it here, allocates all 512 TMEM columns and keeps one "
       "load in flight per SM: the L2 then carries far less than the loaded latency the model calibrates "
       "on the deeper designs assumes (an unloaded L2 hit is about 280 cycles, params.py)",
    9: "their writeback reads one accumulator back eight TMEM columns at a time and only then lets the "
       "MMAs reuse it (one accumulator, no overlap); ours overlaps it with a second accumulator",
    10: "each of their two consumers has one accumulator, read back eight TMEM columns at a time before "
        "its MMAs may reuse it",
}


def why_off(row, stored):
    """One line for a calibration point outside the model's range: which side, the parameter whose
    sourced range moves this point's figure furthest towards the published one (and whether its end
    reaches it), what limits the point in the model, and what the published design does differently."""
    import math

    p = row.point
    need = math.log(p.tflops / row.model_tflops)  # the log ratio the figure would have to move
    side = "above" if need > 0 else "below"
    best = max(stored["effects"].items(), key=lambda kv: max(e * need for e in kv[1]))
    name, ends = best
    move = max(ends, key=lambda e: e * need)
    reach = "reaches it" if abs(move) >= abs(need) else "does not reach it"
    line = (f"step {p.chapter} at {p.size}^3 (CMU step {p.cmu_step}): published {p.tflops:.0f} lies {side} the "
            f"range {row.low:.0f}-{row.high:.0f}; the model finds it limited by {row.bottleneck}; the parameter "
            f"that moves it furthest that way, {name}, moves it {100 * math.expm1(move):+.0f}% at the end of its "
            f"range, which {reach} ({100 * math.expm1(need):+.0f}% needed)")
    if p.cmu_step in PUBLISHED_DESIGN:
        line += f"; {PUBLISHED_DESIGN[p.cmu_step]}"
    if p.size == min(q.size for q in CALIBRATION):
        from .chip import geometry

        geo = geometry(p.chapter, {"pipe_depth": p.pipe_depth} if p.pipe_depth else None)
        tiles = -(-p.size // geo.tile_m) * -(-p.size // geo.tile_n)
        units = 148 // geo.ctas_per_unit
        if tiles <= units:
            line += (f"; at this size {tiles} tiles for {units} units: the run is one tile's fill, main loop and "
                     f"writeback, and a launch's costs beyond the launch gap (cluster launch, TMEM allocation) "
                     f"are not in the model")
    return line
