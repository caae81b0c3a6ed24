"""Two mbarrier misuses run on a real Hopper GPU, each in processes of its own, to record what the
hardware does where the PTX ISA leaves the outcome open (the emulator's reports say it):

* ``over_arrival``: a barrier initialised for 1 arrival; all 32 lanes of the warp arrive once.
* ``small_expect_tx``: arrive.expect_tx announces 512 bytes; a bulk copy delivers 1024 bytes on the
  barrier (cp.async.bulk, the 1D form of the TMA copy: the same complete_tx accounting).

Each kernel waits with a bounded try_wait loop (about 0.2 s), so a run that does not end is the
hardware's doing. Every run is a fresh process with a wall-clock limit: a fault poisons its CUDA
context, a hang is killed and recorded as such.

    python3 tests/hopper/sanitizer_h200.py OUT.json [--runs 3] [--limit 40]

Needs only cuda-bindings and NVRTC (the kernels are CUDA C with inline PTX), so it runs on the H200
image without this project's dependencies. The recording is tests/hopper/h200_sanitizer_cases.json;
tests/test_emu_hopper_sanitizer.py replays it against the emulator.
"""
from __future__ import annotations

import ctypes
import datetime
import json
import os
import subprocess
import sys
import time

SRC = r'''
__device__ unsigned bounded_wait(unsigned bar, unsigned parity) {
    unsigned ok = 0;
    long long t0 = clock64();
    while (!ok && clock64() - t0 < 400000000LL) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    }
    return ok;
}

extern "C" __global__ void over_arrival(unsigned* out) {
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
    out[threadIdx.x] = bounded_wait(b, 0);
    out[32 + threadIdx.x] = bounded_wait(b, 1);
}

extern "C" __global__ void small_expect_tx(const unsigned char* src, unsigned* out) {
    __shared__ __align__(128) unsigned char buf[1024];
    __shared__ __align__(8) unsigned long long bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned d = (unsigned)__cvta_generic_to_shared(buf);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 512;" :: "r"(b) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];"
                     :: "r"(d), "l"(src), "r"(b) : "memory");
    }
    out[threadIdx.x] = bounded_wait(b, 0);
    out[32 + threadIdx.x] = bounded_wait(b, 1);
}
'''

CASES = {"over_arrival": 32, "small_expect_tx": 32}  # name -> threads


def _ok(res):
    err = res[0]
    if int(err) != 0:
        raise RuntimeError(err.name)
    return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)


def run_one(name):
    """In this process: compile, launch ``name`` once, print a JSON line with what happened."""
    from cuda.bindings import driver as drv
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from nvrtc_cubin import compile_cubin  # shared with tests/fake_gpu/record_h200.py

    _ok(drv.cuInit(0))
    dev = _ok(drv.cuDeviceGet(0))
    _ok(drv.cuCtxSetCurrent(_ok(drv.cuDevicePrimaryCtxRetain(dev))))
    A = drv.CUdevice_attribute
    cc = (_ok(drv.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)),
          _ok(drv.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)))
    arch = f"sm_{cc[0]}{cc[1]}{'a' if cc[0] >= 9 else ''}"
    cubin = compile_cubin(SRC.encode(), b"sanitizer.cu", arch)
    module = _ok(drv.cuModuleLoadData(cubin))
    fn = _ok(drv.cuModuleGetFunction(module, name.encode()))
    out = _ok(drv.cuMemAlloc(64 * 4))
    _ok(drv.cuMemsetD32(out, 0xFFFFFFFF, 64))
    src = _ok(drv.cuMemAlloc(1024))
    args = [ctypes.c_uint64(int(out))] if name == "over_arrival" else [ctypes.c_uint64(int(src)),
                                                                        ctypes.c_uint64(int(out))]
    params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
    t0 = time.time()
    (err,) = drv.cuLaunchKernel(fn, 1, 1, 1, CASES[name], 1, 1, 0, 0, ctypes.addressof(params), 0)
    result = {"launch": err.name}
    if int(err) == 0:
        (err,) = drv.cuCtxSynchronize()
        result["sync"] = err.name
        if int(err) == 0:
            host = (ctypes.c_uint32 * 64)()
            _ok(drv.cuMemcpyDtoH(host, out, 64 * 4))
            result["phase0_waits_passed"] = sum(host[i] == 1 for i in range(32))
            result["phase1_waits_passed"] = sum(host[32 + i] == 1 for i in range(32))
    result["seconds"] = round(time.time() - t0, 2)
    print(json.dumps(result))


def main(path, runs, limit):
    rec = {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "limit_s": limit, "cases": {}}
    try:
        rec["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        rec["nvidia_smi"] = f"nvidia-smi failed: {e}"
    for name in CASES:
        outcomes = []
        for _ in range(runs):
            try:
                p = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True,
                                   timeout=limit)
                line = (p.stdout.strip().splitlines() or [""])[-1]
                try:
                    outcomes.append(json.loads(line))
                except json.JSONDecodeError:
                    outcomes.append({"error": (p.stderr or p.stdout)[-1500:], "returncode": p.returncode})
            except subprocess.TimeoutExpired:
                outcomes.append({"hang": f"no end within {limit} s (process killed)"})
            print(name, outcomes[-1], flush=True)
        rec["cases"][name] = outcomes
    with open(path, "w") as f:
        json.dump(rec, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        run_one(sys.argv[2])
    else:
        args = sys.argv[1:]
        runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 3
        limit = int(args[args.index("--limit") + 1]) if "--limit" in args else 40
        main(args[0], runs, limit)
