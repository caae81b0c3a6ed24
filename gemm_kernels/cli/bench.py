"""``bench``: TFLOP/s of each chapter beside cuBLAS, by the published protocol (gemm_kernels.bench).

    python -m gemm_kernels bench [--chapters 1-10] [--sizes 2048,4096,8192] [--json FILE] [--plot FILE]

On a B200, ``--json F`` also writes F's stem + ``-vs-model.md``: your figures beside the model's
ranges and the published figures, and what the differences say about the model's parameters.
    python -m gemm_kernels bench --backend emulator --chapters 1,4,7   # the emulator's MODEL, labelled so

Without a B200 it refuses (exit 2) unless ``--backend emulator``. ``--cublas-only`` times cuBLAS
alone on any CUDA GPU, to check the protocol (flush, events, clocks) where there is no B200."""
from __future__ import annotations

import sys

from ..chapters import CHAPTERS
from ._common import CliError, check_output, non_negative_int, parsed as _parsed, positive_int


def _depth_chapters():
    """The chapters that take a pipeline depth, as " (5-10)", read from their configs ("" when none
    does, as under a test that replaces the entries)."""
    with_depth = [c for c in CHAPTERS if "pipe_depth" in CHAPTERS[c].config]
    return f" ({min(with_depth)}-{max(with_depth)})" if with_depth else ""


def add_parser(subparsers):
    p = subparsers.add_parser("bench", help="benchmark the chapters against cuBLAS (B200), or the emulator's model",
                              description="Benchmark each chapter's kernel beside cuBLAS on a B200 by the published "
                                          "protocol (warm-up, L2 flush, CUDA events, median of rounds, alternating "
                                          "order, fp16 uniform[-1,1) inputs, clocks reported).")
    every = f"{min(CHAPTERS)}-{max(CHAPTERS)}"  # every chapter, the last included (it was "1-9" after step 10 came)
    p.add_argument("--chapters", default=every, help=f"e.g. {every}, 3,5,7 (default {every})")
    p.add_argument("--sizes", default="2048,4096,8192", help="cube sizes M=N=K (default 2048,4096,8192)")
    p.add_argument("--backend", choices=["blackwell", "emulator", "model"], default="blackwell",
                   help="blackwell (default; needs a B200), emulator (a virtual-clock MODEL at each chapter's "
                        "small test shape) or model (the B200 performance MODEL at full size, gemm_kernels.perf)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--plot", metavar="FILE", help="write a bar chart (PNG)")
    p.add_argument("--warmup", type=non_negative_int, default=3)
    p.add_argument("--rounds", type=positive_int, default=5)
    p.add_argument("--reps", type=positive_int, default=4, help="timed launches per kernel per round")
    p.add_argument("--no-cublas", action="store_true", help="skip the cuBLAS baseline")
    p.add_argument("--pipe-depth", default=None, metavar="D[,D...]",
                   help=f"pipeline depths to time for the chapters that take one{_depth_chapters()}, e.g. 2,4; "
                        "default: each chapter's own")
    p.add_argument("--cublas-only", action="store_true",
                   help="time cuBLAS alone (any CUDA GPU): checks the protocol where there is no B200")
    p.set_defaults(func=run)


def run(args) -> int:
    from gemm_kernels import CHAPTERS, bench
    from gemm_kernels.runtime.device import gpu_info

    try:
        chapters = _parsed("--chapters", bench.parse_chapters, args.chapters)
        sizes = _parsed("--sizes", lambda t: [positive_int(s) for s in t.split(",") if s.strip()], args.sizes)
        depths = _parsed("--pipe-depth", lambda t: tuple(positive_int(d) for d in t.split(",")), args.pipe_depth) \
            if args.pipe_depth else (None,)
        check_output("--json", args.json)
        check_output("--plot", args.plot)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    missing = [c for c in chapters if c not in CHAPTERS]
    if missing:
        print(f"error: no chapter(s) {missing}; available: {sorted(CHAPTERS)}", file=sys.stderr)
        return 2
    log = lambda s: print(s, file=sys.stderr)  # noqa: E731
    if args.backend == "model":  # the B200 performance model (gemm_kernels.perf, issue 14)
        from gemm_kernels.perf.bench import run_cli
        return run_cli(args, chapters, sizes, depths, log)

    if args.backend == "emulator":
        if args.cublas_only:
            print("error: --cublas-only needs a GPU, not the emulator", file=sys.stderr)
            return 2
        rep = bench.run_model(chapters, log=log)
    else:
        info = gpu_info()
        if args.cublas_only:
            if info is None:
                print("error: --cublas-only needs a CUDA GPU; none found", file=sys.stderr)
                return 2
            rep = bench.run_gpu(chapters, sizes, warmup=args.warmup, rounds=args.rounds, reps=args.reps,
                                chapters_on=False, log=log)
            rep.notes.append(f"--cublas-only on {info.name}: a check of the protocol, not a B200 result")
        elif info is None or tuple(info.compute_capability) != (10, 0):
            found = "no CUDA GPU" if info is None else f"a {info.name} (compute capability " \
                f"{info.compute_capability[0]}.{info.compute_capability[1]})"
            print(f"bench: refusing to run: found {found}. The benchmark measures the chapters' tcgen05 kernels and "
                  f"needs a B200 (compute capability 10.0). Run with --backend emulator for the emulator's "
                  f"virtual-clock MODEL (labelled as a model, not a measurement).", file=sys.stderr)
            return 2
        else:
            rep = bench.run_gpu(chapters, sizes, warmup=args.warmup, rounds=args.rounds, reps=args.reps,
                                cublas=not args.no_cublas, log=log, pipe_depths=depths)
    print(bench.table(rep))
    if rep.kind == "measurement" and not args.cublas_only:  # the model beside each measurement (issue 14)
        from gemm_kernels.perf.bench import beside_measurements
        print(beside_measurements(rep))
    if args.json:
        bench.write_json(rep, args.json)
        print(f"wrote {args.json}")
        if rep.kind == "measurement" and not args.cublas_only:  # your figures beside the model's ranges (issue 22)
            from gemm_kernels.perf.yours import write_page
            print(f"wrote {write_page(rep, args.json)}")
    if args.plot:
        bench.plot(rep, args.plot)
        print(f"wrote {args.plot}")
        if rep.kind == "measurement" and not args.cublas_only:  # the ladder: model, published, yours (issue 14)
            from gemm_kernels.perf.ladder import plot_measured_ladder
            print(f"wrote {plot_measured_ladder(rep, args.plot)}")
    bad = [r for r in rep.results if r.verified is False]
    if bad:
        print(f"error: {len(bad)} result(s) failed the correctness check: {[r.name for r in bad]}", file=sys.stderr)
        return 1
    return 0
