"""``bench --backend model``: the B200 model's TFLOP/s for chapters x sizes x depths, as a table
labelled MODEL and as JSON; and the model's figure beside each measurement on a B200.

JSON contract (``results`` rows): chapter, m, n, k, pipe_depth (null where the chapter has no
depth), tflops, tflops_low, tflops_high (the model at its parameters' pessimistic and optimistic
ends), kind "model", bottleneck (the unit that limits the point, or "latency" / "launch overhead"),
util_tensor_core, util_tma, util_smem, util_l2_hbm (the larger of the L2 and HBM utilisations;
util_l2 and util_hbm separately too), time_us, harness, tmem_cols (null: the chapter as written;
a number: compared as a published design with that TMEM allocation), wall_s (how long the model
took here), split_us (microseconds of the busiest SM: launch, fill = start to first MMA, steady,
drain = last MMA to end), effects (per ranged parameter: the log ratio of the figure at its
pessimistic and at its optimistic end)."""
from __future__ import annotations

import datetime
import json
import time

from . import MODEL_LABEL



def points(chapters, sizes, depths=(None,)):
    """(chapter, size, depth) for every chapter x size (a multiple of the chapter's tile) x depth
    (depths only for chapters that take one)."""
    from ..chapters import CHAPTERS
    from .model import takes_depth

    out = []
    for c in chapters:
        tm, tn, tk = CHAPTERS[c].tile
        for s in sizes:
            if s % tm or s % tn or s % tk:
                continue
            for d in (depths if takes_depth(c) else (None,)):
                out.append((c, s, d))
    return out


def row(pred):
    from .calibration import published

    pub = published(pred.chapter, pred.m, pred.pipe_depth, pred.tmem_cols) if pred.m == pred.n == pred.k else None
    return {"chapter": pred.chapter, "m": pred.m, "n": pred.n, "k": pred.k, "pipe_depth": pred.pipe_depth,
            "tmem_cols": pred.tmem_cols, "harness": pred.harness,
            "tflops": round(pred.tflops, 1), "tflops_low": round(pred.tflops_low, 1),
            "tflops_high": round(pred.tflops_high, 1), "kind": "model", "bottleneck": pred.bottleneck,
            "util_tensor_core": round(pred.util_tensor_core, 3), "util_tma": round(pred.util_tma, 3),
            "util_smem": round(pred.util_smem, 3),
            "util_l2_hbm": round(max(pred.util_l2, pred.util_hbm), 3), "util_l2": round(pred.util_l2, 3),
            "util_hbm": round(pred.util_hbm, 3), "time_us": round(pred.time_us, 2),
            "tma_latency_cycles": round(pred.tma_latency_cycles), "tma_bytes_per_cycle": round(pred.tma_bytes_per_cycle, 1),
            "l2_miss_fraction": round(pred.l2_miss_fraction, 3), "tiles_per_unit": pred.tiles_per_unit,
            "occupancy": pred.occupancy, "wall_s": round(pred.wall_s, 2),
            "split_us": pred.split, "effects": {k: [round(a, 4), round(b, 4)] for k, (a, b) in (pred.effects or {}).items()},
            "published_tflops": pub.tflops if pub else None}


def run(chapters, sizes, depths=(None,), *, log=print):
    """Predict every point; returns the report dict (the JSON)."""
    from . import params
    from .design import chapter_design
    from .explore import predict

    t0 = time.perf_counter()
    rows = []
    for c, s, d in points(chapters, sizes, depths):
        pred = predict(chapter_design(c, d), s, s, s, engine="emulator").detail  # each chapter is one Design
        rows.append(row(pred))
        log(f"model: chapter {c}{'' if d is None else f' depth {d}'} at {s}^3: {pred.range_text} TFLOP/s "
            f"({pred.bottleneck}; {pred.wall_s:.1f} s)")
    return {"kind": "model", "model": True, "label": MODEL_LABEL,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "results": rows,
            "parameters": [dict(zip(("name", "value", "unit", "low", "high", "source"), r))
                           for r in params.table_rows()],
            "timing": {"total_s": round(time.perf_counter() - t0, 1),
                       "max_point_s": max((r["wall_s"] for r in rows), default=0.0)},
            "notes": ["published_tflops: the CMU 15-442/642 TIRx assignment's B200 reference time for the same "
                      "design (calibration set), not our measurement; the model is not a measurement either"]}


def table(report):
    lines = [report["label"],
             f"{'chapter':<8}{'depth':>6}{'size':>6}{'MODEL TFLOP/s (range)':>23}{'published*':>11}{'error':>7}  "
             f"{'limited by':<16}{'TC':>5}{'TMA':>6}{'L2/HBM':>8}"]
    lines.append("-" * len(lines[1]))
    for r in report["results"]:
        d = "-" if r["pipe_depth"] is None else str(r["pipe_depth"])
        p = r["published_tflops"]
        pub, err = ("", "") if p is None else (f"{p:.0f}", f"{100 * (r['tflops'] / p - 1):+.0f}%")
        rng = f"{r['tflops']:.0f} ({r['tflops_low']:.0f}-{r['tflops_high']:.0f})"
        lines.append(f"{r['chapter']:<8}{d:>6}{r['m']:>6}{rng:>23}{pub:>11}{err:>7}  {r['bottleneck']:<16}"
                     f"{r['util_tensor_core']:>5.2f}{r['util_tma']:>6.2f}{r['util_l2_hbm']:>8.2f}")
    lines.append("* published: CMU 15-442/642 TIRx assignment on a B200 (their kernels of the same design), "
                 "not ours. TC/TMA/L2/HBM: modelled utilisations.")
    t = report["timing"]
    lines.append(f"model time on this machine: {t['total_s']:.0f} s in all, {t['max_point_s']:.1f} s for the slowest point")
    return "\n".join(lines)


def write_json(report, path):
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    return path


MODELLED = range(4, 11)  # chapters with TMA tensor maps; 1-3 load with ordinary loads (not modelled at full size)


def run_cli(args, chapters, sizes, depths, log):
    """What ``bench --backend model`` does (called from gemm_kernels.cli.bench)."""
    import sys

    outside = [c for c in chapters if c not in MODELLED]
    if outside:
        print(f"error: the B200 model covers chapters {MODELLED.start}-{MODELLED.stop - 1}; drop {outside} from "
              f"--chapters", file=sys.stderr)
        return 2
    report = run(chapters, sizes, depths, log=log)
    print(table(report))
    if args.json:
        write_json(report, args.json)
        print(f"wrote {args.json}")
    if args.plot:
        from .ladder import plot_ladder

        plot_ladder(args.plot, model=report)
        print(f"wrote {args.plot}")
    return 0


def beside_measurements(rep, *, log=print):
    """On a B200: the model's prediction for each measured chapter result (a table to print)."""
    from .model import predict

    lines = [f"beside each measurement, the {MODEL_LABEL}:",
             f"{'kernel':<22}{'M':>6}{'measured':>10}{'MODEL (range)':>18}  limited by (model)"]
    for r in rep.results:
        if r.chapter is None or r.chapter < 4:
            continue
        depth = None
        if "(depth " in r.name:
            depth = int(r.name.split("(depth ")[1].rstrip(")"))
        pred = predict(r.chapter, r.m, r.n, r.k, depth)
        lines.append(f"{r.name:<22}{r.m:>6}{r.tflops:>10.0f}{pred.range_text:>18}  {pred.bottleneck}")
    return "\n".join(lines)
