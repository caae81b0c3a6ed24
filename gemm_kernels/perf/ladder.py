"""The ladder plot: TFLOP/s of each step of the book at one size, three series side by side: the
model (a MODEL, its figure with its range as an error bar), the published measurements of the same
designs (CMU 15-442/642 TIRx on a B200; theirs), and "measured on your B200" (empty until
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


def ladder_figure(*, model, measured=None, sizes=(4096, 8192)):
    """``model``: a model report dict (perf.bench.run or the stored predictions.json);
    ``measured``: rows of a B200 measurement (measured_rows), or None: the series stays empty."""
    import matplotlib.pyplot as plt

    pub_rows = [{"chapter": p.chapter, "m": p.size, "pipe_depth": p.pipe_depth, "tflops": p.tflops}
                for p in CALIBRATION]
    series = (("model (MODEL, not a measurement; bar: its range)", model["results"], "#4c72b0", "o"),
              ("published: CMU TIRx on a B200 (theirs)", pub_rows, "#dd8452", "s"),
              ("measured on your B200", measured or [], "#55a868", "^"))
    from ..timeline import DPI, MIN_FONT, WIDTH_IN

    fs = MIN_FONT  # page-wide at WIDTH_IN: shown at the size set (tests/test_legibility.py)
    fig, axes = plt.subplots(1, len(sizes), figsize=(WIDTH_IN, 4.6), dpi=DPI, layout="constrained", sharey=True)
    axes = list(axes) if len(sizes) > 1 else [axes]
    xs = range(len(RUNGS))
    for ax, size in zip(axes, sizes):
        for label, rows, color, marker in series:
            ys = [_value(rows, c, d, size) for _, c, d in RUNGS]
            pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, label=label, lw=1.2)
            ranged = [(x, _row(rows, c, d, size)) for x, (_, c, d) in zip(xs, RUNGS)]
            ranged = [(x, r) for x, r in ranged if r is not None and "tflops_low" in r]
            if ranged:  # the model's range at each rung
                ax.errorbar([x for x, _ in ranged], [r["tflops"] for _, r in ranged],
                            yerr=[[r["tflops"] - r["tflops_low"] for _, r in ranged],
                                  [r["tflops_high"] - r["tflops"] for _, r in ranged]],
                            fmt="none", ecolor=color, elinewidth=1.0, capsize=3)
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
