"""Compute the B200 model's predictions that the book shows (and the calibration set, each point as
its published design) with their ranges, and write gemm_kernels/perf/predictions.json with the
fingerprint of what they depend on.

    PYTHONPATH=$PWD python tools/perf_predictions.py
"""
import sys
import time

from gemm_kernels.chapters import CHAPTERS
from gemm_kernels.perf import bench, calibration, predictions
from gemm_kernels.perf.book import Stored
from gemm_kernels.perf.model import predict


def main():
    t0 = time.perf_counter()

    def depth(c, d):  # None: the chapter's default depth (so each point is computed once)
        return d if d is not None else CHAPTERS[c].config.get("pipe_depth")

    wanted = {(c, (s, s, s), depth(c, d), None) for c, d in predictions.BOOK_RUNGS for s in predictions.BOOK_SIZES}
    wanted |= {(p.chapter, (p.size,) * 3, depth(p.chapter, p.pipe_depth), p.tmem_cols) for p in calibration.CALIBRATION}
    wanted |= {(c, (m, n, k), depth(c, None), None) for c, m, n, k in predictions.BOOK_SHAPES}
    rows = []
    for c, (m, n, k), d, cols in sorted(wanted, key=lambda x: (x[0], x[1], x[2] or 0, x[3] or 0)):
        pred = predict(c, m, n, k, d, tmem_cols=cols)
        rows.append(bench.row(pred))
        print(f"chapter {c} depth {d}{'' if cols is None else f' as a {cols}-column design'} {m} x {n} x {k}: "
              f"{pred.range_text} TFLOP/s ({pred.bottleneck}, {pred.wall_s:.1f} s)", flush=True)
    report = {"kind": "model", "model": True, "label": bench.MODEL_LABEL, "fingerprint": predictions.fingerprint(),
              "results": rows, "seconds": round(time.perf_counter() - t0, 1)}
    cal = calibration.evaluate(predict=lambda c, m, n, k, d, cols: Stored(report, c, m, d, cols))
    print(calibration.table(cal))
    bench.write_json(report, predictions.PATH)
    print(f"wrote {predictions.PATH} in {report['seconds']} s")


if __name__ == "__main__":
    sys.exit(main())
