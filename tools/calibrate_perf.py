"""Set the one calibrated parameter of the B200 model (gemm_kernels.perf.params: the TMA's latency
under load) inside the range its sources give, on the calibration set only
(gemm_kernels.perf.calibration), minimising the rms log error at the other parameters' nominal
values. Prints the grid and the best point; the value is then written into params.py by hand, with
this as the record.

    PYTHONPATH=$PWD python tools/calibrate_perf.py [latency ...]
"""
import sys

from gemm_kernels.perf import calibration, params


def main(argv):
    # by default the grid spans past the calibrated range on both sides (400 to 1200 cycles), inside
    # the bounds the sources allow (params.py)
    grid = [float(x) for x in argv] or [400.0 + 200 * i for i in range(5)]
    best = None
    for lat in grid:
        rows = calibration.evaluate(with_range=False, values=params.NOMINAL.with_(tma_l2_latency_cycles=lat))
        mean, rms, worst = calibration.summary(rows)
        s = calibration.scores(rows)
        print(f"latency {lat:6.0f} cycles: rms log {rms:.3f}  median {s['median']:.2f}x  within 1.35x "
              f"{100 * s['within_1_35']:.0f}%  worst {s['worst']:.2f}x", flush=True)
        if best is None or rms < best[0]:
            best = (rms, lat, rows)
    rms, lat, rows = best
    print(f"\nbest: latency {lat:.0f} cycles (rms log {rms:.3f})")
    print(calibration.table(rows))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
