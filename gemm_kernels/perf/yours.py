"""A page of your B200 measurements beside the model's ranges and the published figures, and what
the differences say about the model's parameters.

``python -m gemm_kernels bench --backend blackwell --json F`` writes it beside F (F's stem +
``-vs-model.md``). Our bench times each launch alone after an L2 flush, so the model is run with
the harness "single" (one synchronous launch) for your figures; the published CMU figures were
timed back to back. Every model figure here comes with its range; the words about the parameters
are computed from the model's own per-parameter effects (model.Prediction.effects)."""
from __future__ import annotations

import math
import statistics

from .params import PARAMS

#: The parameters that set a point's figure, by what limits it in the model.
DRIVERS = {
    "tensor core": ("clock_ghz",),
    "shared memory": ("smem_bytes_per_cycle_sm",),
    "L2": ("l2_bytes_per_s", "tma_port_bytes_per_cycle_sm"),
    "TMA": ("tma_port_bytes_per_cycle_sm",),
    "HBM": ("hbm_bytes_per_s", "l2_effective_bytes"),
    "latency": ("tma_l2_latency_cycles",),
    "launch overhead": ("launch_overhead_us",),
}


def _depth(name):
    return int(name.split("(depth ")[1].rstrip(")")) if "(depth " in name else None


def compare(rep, *, predict=None):
    """[(result, prediction, published figure or None)] for each measured chapter result the
    model covers (chapters 4-10, square or not)."""
    from .bench import MODELLED
    from .calibration import published
    from .model import predict as _predict

    predict = predict or (lambda c, m, n, k, d: _predict(c, m, n, k, d, harness="single"))
    out = []
    for r in rep.results:
        if r.chapter not in MODELLED or not r.tflops:
            continue
        try:
            pred = predict(r.chapter, r.m, r.n, r.k, _depth(r.name))
        except ValueError:  # a shape the chapter's tile does not divide: nothing to compare
            continue
        pub = published(r.chapter, r.m, pred.pipe_depth) if r.m == r.n == r.k else None
        out.append((r, pred, pub.tflops if pub else None))
    return out


def verdict(measured, pred):
    if pred.tflops_low <= measured <= pred.tflops_high:
        return "inside"
    return "below" if measured < pred.tflops_low else "above"


def lessons(rows):
    """What the differences say about the parameters: for each kind of limit the model names, the
    median ratio of your figures to the model's, and the parameter value that ratio implies."""
    groups = {}
    for r, pred, _ in rows:
        groups.setdefault(pred.bottleneck, []).append(r.tflops / pred.tflops)
    out = []
    for unit, ratios in sorted(groups.items()):
        ratio = statistics.median(ratios)
        names = DRIVERS.get(unit, ())
        text = (f"- Points the model finds limited by **{unit}** ({len(ratios)}): your figures are "
                f"{ratio:.2f}x the model's (median).")
        for name in names:
            p = PARAMS[name]
            # the figure scales as the parameter (a rate) or against it (a latency, an overhead)
            implied = p.value * ratio if p.faster == "high" else p.value / ratio
            where = "inside" if p.low <= implied <= p.high else "outside"
            text += (f" Read as `{name}` alone, that is {implied:.3g} {p.unit} (the model's {p.value:g}, "
                     f"sourced range {p.low:g}-{p.high:g}: {where} it).")
        if not names:
            text += " No single parameter sets this kind of point."
        out.append(text)
    return out


def render(rep, *, predict=None):
    """The page (Markdown) for a measured bench Report."""
    rows = compare(rep, predict=predict)
    lines = ["# Your B200 beside the model", "",
             f"{rep.label}. Beside each of your figures: the model's (MODEL, not a measurement; harness: one "
             f"launch after an L2 flush, as `bench` times it) with its range from the parameters' sourced ranges, "
             f"and the published figure of the same design where there is one (CMU 15-442/642 TIRx on a B200, "
             f"theirs, timed back to back).", "",
             "| kernel | M x N x K | yours TFLOP/s | MODEL (range) | yours vs the range | published | limited by (model) |",
             "|---|---|---|---|---|---|---|"]
    for r, pred, pub in rows:
        lines.append(f"| {r.name} | {r.m} x {r.n} x {r.k} | {r.tflops:.0f} | {pred.range_text} | "
                     f"{verdict(r.tflops, pred)} | {'-' if pub is None else f'{pub:.0f}'} | {pred.bottleneck} |")
    if not rows:
        lines.append("| (no chapter 4-10 result to compare) | | | | | | |")
    n_in = sum(verdict(r.tflops, p) == "inside" for r, p, _ in rows)
    lines += ["", f"{n_in} of {len(rows)} of your figures lie inside the model's range.", "",
              "## What the differences say about the parameters", ""]
    lines += lessons(rows) or ["- No point to read."]
    if rows:
        logs = [math.log(r.tflops / p.tflops) for r, p, _ in rows]
        lines += ["", f"Over all points your figures are {math.exp(statistics.median(logs)):.2f}x the model's "
                      f"(median); a parameter whose implied value lies outside its sourced range is one whose "
                      f"source, or the model's use of it, is wrong for your board."]
    return "\n".join(lines) + "\n"


def write_page(rep, json_path, *, predict=None):
    """Write the page beside ``json_path`` (its stem + '-vs-model.md'); returns the path."""
    from pathlib import Path

    p = Path(json_path)
    out = p.with_name(p.stem + "-vs-model.md")
    out.write_text(render(rep, predict=predict))
    return out
