"""What the chapters' Performance sections and book/benchmarking.md call: the model's stored
predictions (``predictions.json``, kept current by a test) beside the published measurement of
the same design, the model's account of what limits each step, and a steady-state window of a
full-size run on the virtual clock. Every figure printed here says MODEL or whose measurement it is."""
from __future__ import annotations

from .calibration import SOURCE, published
from .predictions import BOOK_SIZES, load, lookup

WHY = {
    "tensor core": "the tensor core is busy nearly all the time: the step reaches what its MMAs allow",
    "TMA": "the SM's TMA port is busy nearly all the time: a stage takes longer to arrive than its MMAs take",
    "L2": "the L2's total bandwidth, shared by all SMs, is the limit",
    "HBM": "HBM bandwidth is the limit: the tile order re-reads operands that fell out of L2",
    "latency": "no unit is busy most of the time: the SM waits for loads that nothing overlaps",
    "launch overhead": "the kernel is so short that the launch itself is a large part of the time",
}


#: Published B200 figures at 8192^3 for the designs of chapters 8 and 9 (the same CMU assignment's
#: 8192 column, as book/benchmarking.md quotes them). HELD OUT: shown beside the model, never used
#: to choose a parameter (calibration.CALIBRATION has only the 2048 and 4096 columns).
HELD_OUT = {(8, 8192): 1395, (9, 8192): 1510}


class Stored:
    """A stored prediction in the shape calibration.evaluate expects."""

    def __init__(self, data, chapter, size, depth):
        r = lookup(data, chapter, size, depth)
        self.tflops, self.bottleneck = r["tflops"], r["bottleneck"]


def rungs_of(chapter):
    """The depths the book shows for a chapter: both calibrated depths where it takes one."""
    from ..chapters import CHAPTERS
    from .predictions import BOOK_RUNGS

    default = CHAPTERS[chapter].config.get("pipe_depth")
    depths = sorted({default if d is None else d for c, d in BOOK_RUNGS if c == chapter} - {None})
    return depths or [None]


def performance_rows(chapter, depths=None):
    """[(depth, size, stored model row, published Point or None)] for the chapter's book points."""
    data = load()
    out = []
    for d in (depths or rungs_of(chapter)):
        for s in BOOK_SIZES:
            r = lookup(data, chapter, s, d)
            p = published(chapter, s, r["pipe_depth"])
            out.append((r["pipe_depth"], s, r, p.tflops if p else HELD_OUT.get((chapter, s))))
    return out


def show_performance(chapter, depths=None):
    """Print the chapter's table: model vs published at 4096^3 and 8192^3, and what limits each."""
    rows = performance_rows(chapter, depths)
    print("MODEL = this book's B200 performance model (gemm_kernels.perf), not a measurement")
    print(f"published = {SOURCE}: their kernel of the same design, measured by them "
          f"(4096: calibration set; 8192: held out)")
    print(f"{'depth':>5} {'size':>5}  {'MODEL TFLOP/s':>13}  {'published':>9}  {'limited by (model)':<18}"
          f"{'tensor core':>12}{'TMA port':>9}{'L2/HBM':>8}")
    for d, s, r, p in rows:
        pub = f"{p:.0f}" if p else "-"
        print(f"{'-' if d is None else d:>5} {s:>5}  {r['tflops']:>13.0f}  {pub:>9}  {r['bottleneck']:<18}"
              f"{r['util_tensor_core']:>12.0%}{r['util_tma']:>9.0%}{r['util_l2_hbm']:>8.0%}")
    return rows


def limit_sentence(chapter, size=8192, depth=None):
    """The model's account of what limits the chapter at size^3, as a sentence."""
    r = lookup(load(), chapter, size, depth)
    return (f"At {size}^3 the model finds this step limited by {r['bottleneck']}: {WHY[r['bottleneck']]} "
            f"(tensor core {r['util_tensor_core']:.0%}, TMA port {r['util_tma']:.0%}, "
            f"L2/HBM {r['util_l2_hbm']:.0%} busy).")


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

    pred = predict(chapter, size, size, size, depth, keep_trace=True)
    tr = pred.share.trace
    t0, t1 = tr.span()
    mid = t0 + (t1 - t0) / 2
    return window(tr, mid - width_ns / 2, width_ns), pred


def ladder_figure(measured=None):
    """The ladder plot from the stored predictions (model), the calibration set (published) and an
    optional measured series (empty in the book)."""
    from .ladder import ladder_figure as fig

    return fig(model=load(), measured=measured)
