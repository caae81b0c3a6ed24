"""Draw the micro-kernel's on-chip timeline (from run_h200.py's gpu_trace.json) above the emulator's
timeline of the same kernel, with the same renderer (gemm_kernels.timeline).

    PYTHONPATH=. python tests/hopper_runbook/draw.py DIR/gpu_trace.json OUT.png [--k-tiles 64]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def load_trace(path):
    from gemm_kernels.trace import Event, Trace

    with open(path) as f:
        d = json.load(f)
    return Trace(events=[Event(**e) for e in d["events"]], source=d["source"])


def main():
    import matplotlib

    matplotlib.use("Agg")
    from gemm_kernels.timeline import side_by_side
    from tests.hopper_runbook import micro

    ap = argparse.ArgumentParser()
    ap.add_argument("gpu_trace")
    ap.add_argument("out")
    ap.add_argument("--k-tiles", type=int, default=64)
    a = ap.parse_args()
    gpu = load_trace(a.gpu_trace)
    launch, _, _ = micro.run_emulator(4, a.k_tiles)
    emu_tr = launch.trace
    fig = side_by_side([gpu, emu_tr], [f"H200, %globaltimer (measured): micro-kernel, CTA 0, {a.k_tiles} stages",
                                       "emulator, virtual clock (a model of a B200 SM, not a measurement): same kernel"],
                       sharex=False)
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}: GPU span {gpu.span()[1] - gpu.span()[0]:.0f} ns, emulator span "
          f"{emu_tr.span()[1] - emu_tr.span()[0]:.0f} ns (model)")


if __name__ == "__main__":
    main()
