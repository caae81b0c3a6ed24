"""The runbook's checks on a Hopper GPU (H200, sm_90a): instrumented builds of tests/hopper_runbook/micro.py
launched for real, and the bench protocol's cuBLAS-only mode.

    PYTHONPATH=. python3 tests/hopper_runbook/run_h200.py --out DIR

Writes DIR/runbook_h200.json (every check and figure), DIR/gpu_trace.json (the %globaltimer trace
of the micro-kernel), DIR/bench_cublas.json and DIR/bench_cublas.png. The deliberately deadlocking
launch runs in a child process (its trap poisons that process's CUDA context) with a wall-clock
limit; the child must raise gemm_kernels.emu.errors.Deadlock within seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

CTAS, K_TILES = 4, 64
LIMIT_NS, GRACE_NS = 1_000_000_000, 100_000_000


def _time_launch(kernel, args, reps=5):
    from numba import cuda

    from gemm_kernels.runtime.launch import launch
    from tests.hopper_runbook import micro

    out = []
    for _ in range(reps):
        e0, e1 = cuda.event(), cuda.event()
        e0.record()
        launch(kernel, CTAS, micro.THREADS, args, shared_bytes=micro.plan.size)
        e1.record()
        e1.synchronize()
        out.append(cuda.event_elapsed_time(e0, e1))
    return sorted(out)[len(out) // 2]


def child_hang():
    """Launch the deadlocking kernel under the guard; print what was raised."""
    from gemm_kernels.emu.errors import Deadlock
    from gemm_kernels.instrument import launch_guarded
    from gemm_kernels.runtime import ensure_numpy_compat
    from tests.hopper_runbook import micro

    ensure_numpy_compat()
    args, keep, _, _ = micro.gpu_args(CTAS, K_TILES, extra_tx=1024)
    from gemm_kernels.instrument import GuardBuffer
    from gemm_kernels.runtime.launch import prepare

    buf = GuardBuffer(limit_ns=LIMIT_NS, grace_ns=GRACE_NS)
    prepare(buf.kernel_for(micro.pipe_kernel), args, shared_bytes=micro.plan.size)  # compile outside the clock
    t0 = time.time()
    try:
        launch_guarded(micro.pipe_kernel, CTAS, micro.THREADS, args, regions=micro.plan.regions,
                       shared_bytes=micro.plan.size, buffer=buf)
    except Deadlock as e:
        dt = time.time() - t0
        print(json.dumps({"raised": f"{type(e).__module__}.{type(e).__name__}", "seconds_launch_to_raise": round(dt, 3),
                          "message": str(e), "cause": repr(e.__cause__),
                          "records": [asdict(r) for r in e.records]}))
        sys.stdout.flush()
        os._exit(3)  # skip numba's finalizers on a poisoned context
    print(json.dumps({"raised": None, "seconds": round(time.time() - t0, 3)}))
    os._exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--child-hang", action="store_true")
    ap.add_argument("--skip-bench", action="store_true")
    a = ap.parse_args()
    if a.child_hang:
        child_hang()
        return

    from gemm_kernels.instrument import GuardBuffer, TimelineBuffer, decode_timeline, instrument, raise_if_guarded
    from gemm_kernels.runtime import ensure_numpy_compat
    from gemm_kernels.runtime.device import gpu_info
    from gemm_kernels.runtime.launch import launch
    from tests.hopper_runbook import micro

    ensure_numpy_compat()
    rep = {"gpu": str(gpu_info()), "checks": {}}
    chk = rep["checks"]
    os.makedirs(a.out, exist_ok=True)

    # 1. plain kernel
    args, keep, x, dout = micro.gpu_args(CTAS, K_TILES)
    launch(micro.pipe_kernel, CTAS, micro.THREADS, args, shared_bytes=micro.plan.size, sync=True)
    chk["plain_correct"] = micro.check(dout.copy_to_host(), x, CTAS, K_TILES)
    rep["plain_ms"] = _time_launch(micro.pipe_kernel, args)

    # 2. timeline build
    tl = TimelineBuffer(1 << 15)
    k_tl = instrument(micro.pipe_kernel, timeline=tl.options)
    dout.copy_to_device(micro.operands(CTAS, K_TILES)[1])
    launch(k_tl, CTAS, micro.THREADS, args, shared_bytes=micro.plan.size, sync=True)
    chk["timeline_correct"] = micro.check(dout.copy_to_host(), x, CTAS, K_TILES)
    raw = tl.read()
    trace = decode_timeline(raw, regions=micro.plan.regions, grid_x=CTAS, source="H200 %globaltimer (measured)")
    rep["timeline"] = {"events": len(trace.events), "dropped": trace.dropped, "timer_step_ns": trace.timer_step_ns,
                       "span_ns": trace.span()[1] - trace.span()[0],
                       "lanes": trace.lanes(), "smem_base": int.from_bytes(bytes(raw[4:8]), "little"),
                       "by_op": {}}
    for e in trace.events:
        rep["timeline"]["by_op"][e.op] = rep["timeline"]["by_op"].get(e.op, 0) + 1
    with open(os.path.join(a.out, "gpu_trace.json"), "w") as f:
        json.dump({"source": trace.source, "events": [asdict(e) for e in trace.events]}, f)
    tl.reset()
    rep["timeline_ms"] = _time_launch(k_tl, args)

    # 3. guard build, no hang
    gb = GuardBuffer(limit_ns=LIMIT_NS, grace_ns=GRACE_NS)
    k_g = instrument(micro.pipe_kernel, guard=gb.options)
    dout.copy_to_device(micro.operands(CTAS, K_TILES)[1])
    launch(k_g, CTAS, micro.THREADS, args, shared_bytes=micro.plan.size, sync=True)
    chk["guard_correct"] = micro.check(dout.copy_to_host(), x, CTAS, K_TILES)
    try:
        raise_if_guarded(gb.read(), regions=micro.plan.regions)
        chk["guard_no_record"] = True
    except Exception as e:  # noqa: BLE001
        chk["guard_no_record"] = f"unexpected: {e}"
    rep["guard_ms"] = _time_launch(k_g, args)
    rep["guard_smem_base"] = int.from_bytes(gb.read()[4:8], "little")

    # 4. the deliberate deadlock, guarded, in a child process
    t0 = time.time()
    try:
        res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child-hang"], capture_output=True,
                             text=True, timeout=60, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                 [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])))
        rep["hang"] = {"rc": res.returncode, "wall_s": round(time.time() - t0, 2), "stderr_tail": res.stderr[-2000:]}
        for line in res.stdout.splitlines():
            if line.startswith("{"):
                rep["hang"]["child"] = json.loads(line)
    except subprocess.TimeoutExpired:
        rep["hang"] = {"rc": None, "wall_s": round(time.time() - t0, 2), "error": "child did not finish in 60 s"}
    child = rep["hang"].get("child", {})
    chk["hang_reported_as_Deadlock"] = child.get("raised") == "gemm_kernels.emu.errors.Deadlock"
    chk["hang_names_full0"] = "full[0]" in child.get("message", "")
    print(child.get("message", rep["hang"]))

    # 5. the bench protocol, cuBLAS only (this is not a B200)
    if not a.skip_bench:
        r = subprocess.run([sys.executable, "-m", "gemm_kernels", "bench"], capture_output=True, text=True, cwd=ROOT,
                           timeout=120)
        rep["bench_refusal"] = {"rc": r.returncode, "stderr": r.stderr.strip()[-600:]}
        r = subprocess.run([sys.executable, "-m", "gemm_kernels", "bench", "--cublas-only", "--rounds", "3",
                            "--json", os.path.join(a.out, "bench_cublas.json"),
                            "--plot", os.path.join(a.out, "bench_cublas.png")],
                           capture_output=True, text=True, cwd=ROOT, timeout=300)
        rep["bench_cublas"] = {"rc": r.returncode, "stdout": r.stdout[-3000:], "stderr": r.stderr[-1500:]}
        print(r.stdout)
    with open(os.path.join(a.out, "runbook_h200.json"), "w") as f:
        json.dump(rep, f, indent=1, default=str)
    print(json.dumps({k: v for k, v in rep.items() if k not in ("bench_cublas",)}, indent=1, default=str)[:6000])


if __name__ == "__main__":
    main()
