"""``trace``: run a chapter on the emulator with tracing on and draw its timeline.

    python -m gemm_kernels trace --chapter 7 --out v7.png [--policy lazy] [--m 512 --n 384 --k 192]
    python -m gemm_kernels trace --chapter 7 --out v7_b200.png --backend blackwell   # on a B200: %globaltimer

The times are the emulator's virtual clock (a cost model, not a measurement); the picture says so.
``--json FILE`` also writes the events."""
from __future__ import annotations

import sys

from ._common import non_negative_int, positive_int


def add_parser(subparsers):
    p = subparsers.add_parser("trace", help="draw a chapter's timeline from an emulator trace",
                              description="Run chapter N on the emulator with trace=True and draw its timeline "
                                          "(virtual clock: a model, not a measurement).")
    p.add_argument("--chapter", type=int, required=True, metavar="N")
    p.add_argument("--out", required=True, metavar="FILE.png")
    p.add_argument("--m", type=positive_int)
    p.add_argument("--n", type=positive_int)
    p.add_argument("--k", type=positive_int)
    p.add_argument("--policy", choices=["eager", "lazy", "random"], default="lazy")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--max-ctas", type=positive_int, default=1, help="CTAs to draw (default 1)")
    p.add_argument("--json", metavar="FILE", help="also write the trace's events as JSON")
    p.add_argument("--backend", choices=["emulator", "blackwell"], default="emulator",
                   help="emulator (default): virtual clock; blackwell: an on-chip %%globaltimer timeline of a "
                        "timeline-instrumented build on a B200 (gemm_kernels.instrument)")
    p.set_defaults(func=run)


def draw(trace, path, title, max_ctas=1):
    """Draw with the book's renderer (gemm_kernels.timeline) into ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gemm_kernels.timeline import draw_timeline

    fig = draw_timeline(trace, title=title, max_ctas=max_ctas).figure
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(args) -> int:
    from gemm_kernels.check import random_operands

    from ._common import CliError, chapter_and_shape, check_output

    try:
        ch, m, n, k = chapter_and_shape(args)
        check_output("--out", args.out)
        check_output("--json", args.json)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.backend == "blackwell":
        from gemm_kernels.runtime.device import gpu_info

        info = gpu_info()
        if info is None or tuple(info.compute_capability) != (10, 0):
            found = "no CUDA GPU" if info is None else f"a {info.name}"
            print(f"trace: --backend blackwell needs a B200 (compute capability 10.0); found {found}. Without one, "
                  f"use the emulator (the default).", file=sys.stderr)
            return 2
        from gemm_kernels.bench import chapter_gpu_trace

        try:
            tr, ok, text = chapter_gpu_trace(args.chapter, m, n, k)
        except (ValueError, TypeError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        t0, t1 = tr.span()
        title = (f"chapter {ch.number} ({ch.title}), {m}x{n}x{k}: {tr.source}, timeline-instrumented build "
                 f"(timer step {tr.timer_step_ns} ns)")
        draw(tr, args.out, title, max_ctas=args.max_ctas)
        print(f"chapter {ch.number}: {len(tr.events)} events over {t1 - t0:.0f} ns measured, {tr.dropped} dropped; "
              f"result {text}; wrote {args.out}")
        if not ok:
            return 1
    else:
        a, b = random_operands(m, n, k, seed=args.seed)
        try:
            launched = ch.entry(a, b, backend="emulator", policy=args.policy, seed=args.seed, trace=True)
        except (ValueError, TypeError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        tr = launched.launch.trace
        t0, t1 = tr.span()
        title = (f"chapter {ch.number} ({ch.title}), {m}x{n}x{k}, policy {args.policy}: emulator virtual clock "
                 f"(a model, not a measurement)")
        draw(tr, args.out, title, max_ctas=args.max_ctas)
        print(f"chapter {ch.number}: {len(tr.events)} events over {t1 - t0:.0f} ns of virtual time (model); "
              f"wrote {args.out}")
    if args.json:
        import json
        from dataclasses import asdict

        with open(args.json, "w") as f:
            json.dump({"source": tr.source, "events": [asdict(e) for e in tr.events]}, f)
        print(f"wrote {args.json}")
    return 0
