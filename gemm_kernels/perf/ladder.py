"""The ladder plot: TFLOP/s of each step of the book at one size: the model of each chapter as
written (a MODEL, its figure with its range as an error bar); beside its rung, every published
measurement of that size (CMU 15-442/642 TIRx on a B200; theirs) with the model of the published
design, like for like (its depth and TMEM allocation); and "measured on your B200" (empty until
``bench --backend blackwell --plot`` fills it)."""
from __future__ import annotations

from .calibration import CALIBRATION

#: The ladder's rungs: (label, chapter, depth).
RUNGS = ((("4", 4, None)), ("5 (depth 2)", 5, 2), ("6 (depth 2)", 6, 2), ("7 (depth 2)", 7, 2),
         ("7 (depth 4)", 7, 4), ("8", 8, None), ("9", 9, None), ("10", 10, None))


def _row(rows, chapter, depth, size):
    from ..chapters import CHAPTERS

    want = depth if depth is not None else CHAPTERS[chapter].config.get("pipe_depth")
    for r in rows:
        cube = r["m"] == r.get("n", r["m"]) == r.get("k", r["m"]) == size  # not chapter 10's ragged points
        if r["chapter"] == chapter and cube and r.get("pipe_depth") == want and r.get("tmem_cols") is None:
            return r
    return None


def _value(rows, chapter, depth, size):
    r = _row(rows, chapter, depth, size)
    return None if r is None else r["tflops"]


def measured_rows(rep):
    """Rows (dicts) from a measured bench Report: chapter, m, pipe_depth, tflops."""
    out = []
    for r in rep.results:
        if r.chapter is None:
            continue
        depth = int(r.name.split("(depth ")[1].rstrip(")")) if "(depth " in r.name else None
        out.append({"chapter": r.chapter, "m": r.m, "pipe_depth": depth, "tflops": r.tflops})
    return out


def plot_ladder(path, *, model, measured=None, sizes=(4096, 8192)):
    """Write the ladder figure to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = ladder_figure(model=model, measured=measured, sizes=sizes)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def published_points(size):
    """Every published figure of the CMU ladder at size^3 that the benchmarking page's table prints
    (the calibration set's 4096 column, the held-out 8192 figures), each with the rung it is drawn
    at and its like-for-like design: (rung index, CMU step, published TFLOP/s, chapter, depth, TMEM
    columns). The like-for-like design is our kernel configured as the published one (its depth, its
    TMEM allocation), as at the calibration size."""
    from .book import HELD_OUT

    design = {p.cmu_step: p for p in CALIBRATION}
    figures = [(p.cmu_step, p.tflops) for p in CALIBRATION if p.size == size]
    figures += [(next(p.cmu_step for p in CALIBRATION if p.chapter == c), t) for (c, s), t in HELD_OUT.items()
                if s == size]
    out = []
    for step, tflops in sorted(figures):
        p = design[step]
        same = [i for i, (_, c, d) in enumerate(RUNGS) if c == p.chapter and d == p.pipe_depth]
        rung = same[0] if same else next(i for i, (_, c, _) in enumerate(RUNGS) if c == p.chapter)
        out.append((rung, step, tflops, p.chapter, p.pipe_depth, p.tmem_cols))
    return out


def _like_row(model_rows, chapter, depth, tmem_cols, size):
    for r in model_rows:
        if (r["chapter"], r["m"], r.get("n", r["m"]), r.get("k", r["m"]), r.get("pipe_depth"), r.get("tmem_cols")) == (
                chapter, size, size, size, depth, tmem_cols):
            return r
    raise KeyError(f"no model row for chapter {chapter} depth {depth} ({tmem_cols} TMEM columns) at {size}^3: "
                   f"run tools/perf_predictions.py")


#: where a published point and its like-for-like model figure sit beside their rung
BESIDE = 0.25


def ladder_figure(*, model, measured=None, sizes=(4096, 8192)):
    """``model``: a model report dict (perf.bench.run or the stored predictions.json);
    ``measured``: rows of a B200 measurement (measured_rows), or None: the series stays empty.
    Each panel draws the model of the chapters as written (with its range), and beside a rung every
    published figure of that size with the model of the published design, like for like (its
    range as a bar), hits and misses alike. ``fig.ladder_drawn[size]`` lists what was drawn:
    (rung label, CMU step, published TFLOP/s, like-for-like model row)."""
    import matplotlib.pyplot as plt

    from ..timeline import DPI, MIN_FONT, WIDTH_IN

    fs = MIN_FONT  # page-wide at WIDTH_IN: shown at the size set (tests/test_legibility.py)
    fig, axes = plt.subplots(1, len(sizes), figsize=(WIDTH_IN, 4.8), dpi=DPI, layout="constrained", sharey=True)
    axes = list(axes) if len(sizes) > 1 else [axes]
    xs = range(len(RUNGS))
    fig.ladder_drawn = {}
    labels = {"model": "MODEL of the chapter as written (bar: its range)",
              "like": "MODEL of the published design, like for like (bar: its range)",
              "pub": "published: CMU TIRx on a B200 (theirs)", "meas": "measured on your B200"}
    for ax, size in zip(axes, sizes):
        rows = [(x, _row(model["results"], c, d, size)) for x, (_, c, d) in zip(xs, RUNGS)]
        rows = [(x, r) for x, r in rows if r is not None]
        ax.errorbar([x for x, _ in rows], [r["tflops"] for _, r in rows],
                    yerr=[[r["tflops"] - r["tflops_low"] for _, r in rows], [r["tflops_high"] - r["tflops"] for _, r in rows]],
                    color="#4c72b0", marker="o", lw=1.2, elinewidth=1.0, capsize=3, label=labels["model"])
        drawn = []
        for rung, step, tflops, c, d, cols in published_points(size):
            like = _like_row(model["results"], c, d, cols, size)
            drawn.append((RUNGS[rung][0], step, tflops, like))
        if drawn:
            bx = [next(i for i, r in enumerate(RUNGS) if r[0] == lab) + BESIDE for lab, *_ in drawn]
            ax.errorbar(bx, [lk["tflops"] for *_, lk in drawn],
                        yerr=[[lk["tflops"] - lk["tflops_low"] for *_, lk in drawn],
                              [lk["tflops_high"] - lk["tflops"] for *_, lk in drawn]],
                        fmt="D", mfc="white", color="#4c72b0", elinewidth=1.0, capsize=3, ls="none",
                        label=labels["like"])
            ax.plot(bx, [t for _, _, t, _ in drawn], "s", color="#dd8452", ls="none", label=labels["pub"])
        fig.ladder_drawn[size] = drawn
        meas = [(x, _value(measured or [], c, d, size)) for x, (_, c, d) in zip(xs, RUNGS)]
        meas = [(x, y) for x, y in meas if y is not None]
        ax.plot([x for x, _ in meas], [y for _, y in meas], marker="^", color="#55a868", lw=1.2, label=labels["meas"])
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r[0] for r in RUNGS], fontsize=fs, rotation=60)
        ax.set_title(f"{size}^3 fp16, TFLOP/s", fontsize=fs)
        ax.grid(color="#dddddd", lw=0.5)
        ax.set_xlabel("chapter (step of the ladder)", fontsize=fs)
        ax.tick_params(labelsize=fs)
    axes[0].set_ylabel("TFLOP/s", fontsize=fs)
    fig.legend(*axes[0].get_legend_handles_labels(), fontsize=fs, loc="outside lower center", ncol=1,
               frameon=False)
    return fig


def plot_measured_ladder(rep, plot_path):
    """``bench --backend blackwell --plot F``: the ladder with the measured series filled, written
    beside F as F's stem + '-ladder.png'; the model series is the stored predictions."""
    from pathlib import Path

    from .predictions import load

    p = Path(plot_path)
    out = p.with_name(p.stem + "-ladder.png")
    return plot_ladder(out, model=load(), measured=measured_rows(rep))
