"""Compute the B200 model's predictions that the book shows (and the calibration set, each point as
its published design) with their ranges, and write gemm_kernels/perf/predictions.json with the
fingerprint of what they depend on.

    PYTHONPATH=$PWD python tools/perf_predictions.py [--jobs N]

The points of one chapter and depth share their short emulator runs (model.py caches them), so
they are computed together, one design per worker process; ``--jobs`` (default: the machine's
cores) sets how many run at once. The figures do not depend on it."""
import argparse
import multiprocessing
import os
import sys
import time

from gemm_kernels.chapters import CHAPTERS
from gemm_kernels.perf import bench, calibration, predictions
from gemm_kernels.perf import chapter_design, predict
from gemm_kernels.perf.book import Stored


def _key(point):
    c, (m, n, k), d, cols = point
    return c, (m, n, k), d or 0, cols or 0


def wanted_points():
    """(chapter, (M, N, K), depth, TMEM columns or None) of every stored row."""
    def depth(c, d):  # None: the chapter's default depth (so each point is computed once)
        return d if d is not None else CHAPTERS[c].config.get("pipe_depth")

    wanted = {(c, (s, s, s), depth(c, d), None) for c, d in predictions.BOOK_RUNGS for s in predictions.BOOK_SIZES}
    wanted |= {(p.chapter, (p.size,) * 3, depth(p.chapter, p.pipe_depth), p.tmem_cols) for p in calibration.CALIBRATION}
    wanted |= {(c, (m, n, k), depth(c, None), None) for c, m, n, k in predictions.BOOK_SHAPES}
    wanted |= {(c, (s, s, s), d, None) for c, s, d in predictions.LIKE_FOR_LIKE}
    return sorted(wanted, key=_key)


def predict_design(points):
    """Rows and log lines of the points of one design (chapter, depth), in one process, and the
    processor time they took (the design's share of the work, whatever else the machine runs)."""
    cpu = time.process_time()
    out = []
    for point in points:
        c, (m, n, k), d, cols = point
        design = chapter_design(c, d).with_(tmem_cols=cols)  # each chapter's kernel is one perf.Design
        pred = predict(design, m, n, k, engine="emulator").detail
        out.append((point, bench.row(pred),
                    f"chapter {c} depth {d}{'' if cols is None else f' as a {cols}-column design'} {m} x {n} x {k}: "
                    f"{pred.range_text} TFLOP/s ({pred.bottleneck}, {pred.wall_s:.1f} s)"))
    return out, time.process_time() - cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: cores)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    t0 = time.perf_counter()
    designs = {}
    for point in wanted_points():
        designs.setdefault((point[0], point[2]), []).append(point)
    # the pair chapters' runs cost the most: hand them out first, so the workers finish together
    groups = sorted(designs.values(), key=lambda g: (-(g[0][0] >= 8), -len(g)))
    done = []
    if args.jobs == 1:
        results = map(predict_design, groups)
    else:
        pool = multiprocessing.get_context("fork").Pool(min(args.jobs, len(groups)))
        results = pool.imap_unordered(predict_design, groups)
    cpu = {}
    for group, seconds in results:
        for point, row, line in group:
            print(line, flush=True)
            done.append((point, row))
        c, _, d, _ = group[0][0]
        cpu[(c, d)] = seconds
        print(f"  chapter {c} depth {d}: {seconds:.1f} s of processor time", flush=True)
    if args.jobs != 1:
        pool.close()
        pool.join()
    rows = [row for _, row in sorted(done, key=lambda pr: _key(pr[0]))]
    report = {"kind": "model", "model": True, "label": bench.MODEL_LABEL, "fingerprint": predictions.fingerprint(),
              "results": rows, "seconds": round(time.perf_counter() - t0, 1)}
    cal = calibration.evaluate(predict=lambda c, m, n, k, d, cols: Stored(report, c, m, d, cols))
    print(calibration.table(cal))
    bench.write_json(report, predictions.PATH)
    print(f"wrote {predictions.PATH} in {report['seconds']} s with {args.jobs} worker(s); processor time "
          f"{sum(cpu.values()):.0f} s in all, {max(cpu.values()):.0f} s for the costliest design")


if __name__ == "__main__":
    sys.exit(main())
