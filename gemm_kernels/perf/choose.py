"""Choosing a design by the model, on the host, before a launch: step 10's tile (issue 29, item 4).
The kernel change is not here; this is the model's side of it: which of step 10's variants the
model prefers at a shape, and by how much. A MODEL, never a measurement.

    from gemm_kernels.perf.choose import step10_variants, best
    label, pred, table = best(step10_variants(), 4000, 3000, 4096)"""
from __future__ import annotations

from .design import CHAPTER_DESIGNS


def step10_variants():
    """Step 10 as written (256 x 256 pair tile), with a 256 x 128 pair tile (eight stages fit), with a
    K-split of the last wave, and with both."""
    base = CHAPTER_DESIGNS[10]
    return {"as written (256 x 256)": base,
            "256 x 128 pair tile": base.with_(tile_n=128, stages=8, name="256 x 128"),
            "K-split, last wave": base.with_(k_split="last-wave", name="K-split"),
            "both": base.with_(tile_n=128, stages=8, k_split="last-wave", name="both")}


def best(designs, m, n, k, *, values=None):
    """(label, prediction, {label: prediction}) of the design the model finds fastest at M x N x K,
    each by the analytic share (the same engine for all, so that they compare like for like)."""
    from .explore import predict

    preds = {label: predict(d, m, n, k, values=values, with_range=False, engine="analytic")
             for label, d in designs.items()}
    label = max(preds, key=lambda name: preds[name].tflops)
    return label, preds[label], preds


__all__ = ["best", "step10_variants"]
