"""Run every micro-kernel of tests/hopper/micro_kernels.py on the GPU here (compute capability >= 9.0)
and write their outputs, with the GPU's name, driver and the date, to a JSON file.

    PYTHONPATH=. python3 tests/hopper/record.py --out tests/data/h200_ground_truth.json [--isolate] [--compare]

--isolate runs each case in its own process (a kernel that faults cannot poison the others' CUDA
context; its error is recorded instead). --compare also replays each case on the emulator here and
prints what differs (the emulator needs greenlet).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _version(pkg):
    try:
        from importlib.metadata import version

        return version(pkg)
    except Exception:
        return None


def metadata():
    from gemm_kernels.runtime.device import gpu_info

    info = gpu_info()
    smi = None
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,vbios_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        smi = f"nvidia-smi failed: {e}"
    import numpy as np

    return {
        "gpu": None if info is None else {
            "name": info.name, "compute_capability": list(info.compute_capability), "sm_count": info.sm_count,
            "max_shared_per_block_optin": info.max_shared_per_block_optin,
            "cuda_driver_api_version": info.driver_version,
        },
        "nvidia_smi": smi,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "software": {"python": sys.version.split()[0], "numpy": np.__version__,
                     "numba-cuda": _version("numba-cuda"), "numba": _version("numba"),
                     "llvmlite": _version("llvmlite"), "cuda-core": _version("cuda-core"),
                     "cuda-bindings": _version("cuda-bindings")},
    }


def run_case_gpu(name):
    from gemm_kernels.runtime import ensure_numpy_compat
    from tests.hopper.micro_kernels import CASE_BY_NAME, encode_outputs

    ensure_numpy_compat()
    case = CASE_BY_NAME[name]
    t0 = time.time()
    try:
        outs = case.run("gpu")
        return {"outputs": encode_outputs(outs), "seconds": round(time.time() - t0, 2)}
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}


def compare_case(name, rec, policy="lazy"):
    from tests.hopper.micro_kernels import CASE_BY_NAME, check_emulator

    try:
        return check_emulator(CASE_BY_NAME[name], rec, policy)
    except Exception as e:  # noqa: BLE001
        return f"emulator raised {type(e).__name__}: {e}"


def run_isolated(name, timeout=240):
    """Run one case in a fresh process (a CUDA fault there cannot poison this one's context)."""
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--case", name], capture_output=True,
                           text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    line = [x for x in p.stdout.splitlines() if x.startswith("@@RECORD@@")]
    if line:
        return json.loads(line[-1][len("@@RECORD@@"):])
    return {"error": f"exit {p.returncode}", "stderr": p.stderr[-3000:]}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "h200_ground_truth.json"))
    ap.add_argument("--isolate", action="store_true")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--case", help="run one case, print its JSON record on stdout (used by --isolate)")
    ap.add_argument("--only", nargs="*", help="case names to run (default: all)")
    args = ap.parse_args(argv)

    if args.case:
        print("@@RECORD@@" + json.dumps(run_case_gpu(args.case)))
        return 0

    from tests.hopper.micro_kernels import CASES, CASE_BY_NAME

    meta = metadata()
    print(json.dumps(meta, indent=1), flush=True)
    names = args.only or [c.name for c in CASES]
    records = {}
    for name in names:
        case = CASE_BY_NAME[name]
        if args.isolate or case.isolate:
            rec = run_isolated(name)
        else:
            rec = run_case_gpu(name)
        rec = {"what": case.what, "notes": case.notes, "gpu_only": list(case.gpu_only),
               "emulator_refuses": case.emulator_refuses, **rec}
        rec.pop("traceback", None) if "CUDA_ERROR" in rec.get("error", "") else None
        records[name] = rec
        status = "ok" if "outputs" in rec else f"ERROR {rec['error']}"
        print(f"{name}: {status} {rec.get('seconds', '')}", flush=True)
        if "outputs" in rec:
            for out, enc in rec["outputs"].items():
                if "values" in enc:
                    print(f"   {out} = {enc['values']}")
    doc = {
        "about": "Outputs of the micro-kernels in tests/hopper/micro_kernels.py recorded on a real GPU by "
                 "tests/hopper/record.py; tests/test_ground_truth.py replays the emulator against them byte for byte.",
        "by_design_differences": [
            "mbarrier.try_wait.parity on a phase that has not completed returns 0 on the GPU after a time limit; "
            "the emulator's twin blocks until it would return 1 (a try_wait loop that never succeeds is its "
            "deadlock report). Recorded in gpu_only_try_wait, not replayed; the micro-kernels observe the "
            "current phase with mbarrier.test_wait.parity instead, which both machines answer.",
            "The .cta_group::2 TMA form (barrier in the peer CTA) is sm_100a only and cannot run on an H200.",
            "Cases with an 'error' faulted on the GPU (each ran in a process of its own); the emulator must "
            "raise an EmulatorError for exactly those launches. Cases with 'emulator_refuses' ran on the GPU but "
            "misbehaved silently there; the emulator refuses them with a diagnostic matching that pattern.",
        ],
        **meta,
        "cases": records,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}")
    bad = 0
    if args.compare:
        for name, rec in records.items():
            for policy in CASE_BY_NAME[name].policies:
                d = compare_case(name, rec, policy)
                print(f"compare {name} [{policy}]: {'MATCH' if not d else 'DIFFER'}")
                if d:
                    bad += 1
                    print(d)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
