"""Run the fake GPU's rule cases (rule_cases.py) against a real CUDA driver and write the verdicts:

    python3 tests/fake_gpu/record_h200.py OUT.json

Needs only cuda-bindings, cuda-core and NVRTC (a one-parameter kernel is compiled from CUDA C), so it
runs under any recent image. Every check is recorded, an exception included."""
from __future__ import annotations

import ctypes
import json
import os
import sys

import importlib.util

from cuda.bindings import driver as drv


def _cases():
    """rule_cases.py beside this file, loaded on its own (the fake's package needs numba; this does not)."""
    spec = importlib.util.spec_from_file_location("rule_cases", os.path.join(os.path.dirname(__file__),
                                                                             "rule_cases.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_c = _cases()
LAUNCH_CASES, OCCUPANCY_CASES, TENSOR_MAP_CASES = _c.LAUNCH_CASES, _c.OCCUPANCY_CASES, _c.TENSOR_MAP_CASES

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hopper"))
from nvrtc_cubin import compile_cubin  # noqa: E402  (shared with tests/hopper/sanitizer_h200.py)

SRC = b'extern "C" __global__ void count(unsigned* c) { if (threadIdx.x == 0) atomicAdd(c, 1u); }'


def ok(res):
    err = res[0]
    if int(err) != 0:
        raise RuntimeError(err.name)
    return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)


def compile_kernel(cc):
    return compile_cubin(SRC, b"count.cu", f"sm_{cc[0]}{cc[1]}")


def tensor_map(base, changes):
    """The real cuTensorMapEncodeTiled on the cases' map."""
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    dims = changes.get("dims", [128, 256])
    strides = changes.get("strides", [256])
    box = changes.get("box", [64, 128])
    estr = changes.get("estrides", [1, 1])
    sw = getattr(drv.CUtensorMapSwizzle, changes.get("swizzle", "CU_TENSOR_MAP_SWIZZLE_128B"))
    err, _ = drv.cuTensorMapEncodeTiled(
        drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base + changes.get("address_offset", 0),
        [u64(d) for d in dims], [u64(s) for s in strides], [u32(b) for b in box], [u32(e) for e in estr],
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    return err.name


def launch(module, counter, case):
    """Load a fresh function (attributes start at their defaults), set what the case sets, launch with
    cuLaunchKernelEx; return (result name, blocks that ran)."""
    fn = ok(drv.cuModuleGetFunction(module, b"count"))
    A = drv.CUfunction_attribute
    if case.get("attr_smem"):
        (err,) = drv.cuFuncSetAttribute(fn, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, case["attr_smem"])
        if int(err) != 0:
            return "attribute: " + err.name, 0
    if case.get("non_portable"):
        (err,) = drv.cuFuncSetAttribute(fn, A.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
        if int(err) != 0:
            return "attribute: " + err.name, 0
    ok(drv.cuMemsetD32(counter, 0, 1))
    cfg = drv.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = case["grid"]
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = case["block"]
    cfg.sharedMemBytes = case.get("shmem", 0)
    cfg.hStream = 0
    attrs = []
    if case.get("cluster"):
        at = drv.CUlaunchAttribute()
        at.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        at.value.clusterDim.x, at.value.clusterDim.y, at.value.clusterDim.z = case["cluster"]
        attrs.append(at)
    cfg.attrs, cfg.numAttrs = attrs, len(attrs)
    arg = ctypes.c_uint64(int(counter))
    params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
    (err,) = drv.cuLaunchKernelEx(cfg, fn, ctypes.addressof(params), 0)
    if int(err) != 0:
        return err.name, 0
    (err,) = drv.cuCtxSynchronize()
    if int(err) != 0:
        return "sync: " + err.name, 0
    out = (ctypes.c_uint32 * 1)()
    ok(drv.cuMemcpyDtoH(out, counter, 4))
    return "CUDA_SUCCESS", int(out[0])


def cuda_core_grid_counts_clusters(cubin, counter):
    """cuda.core's LaunchConfig(grid=2, cluster=2): do 2 or 4 blocks run?"""
    import cuda.core as cc

    try:
        from cuda.core import Device, LaunchConfig, ObjectCode, launch
    except ImportError:
        from cuda.core.experimental import Device, LaunchConfig, ObjectCode, launch
    dev = Device(0)
    dev.set_current()
    kernel = ObjectCode.from_cubin(cubin).get_kernel("count")
    ok(drv.cuMemsetD32(counter, 0, 1))
    stream = dev.create_stream()
    launch(stream, LaunchConfig(grid=2, cluster=2, block=32), kernel, int(counter))
    stream.sync()
    out = (ctypes.c_uint32 * 1)()
    ok(drv.cuMemcpyDtoH(out, counter, 4))
    return {"cuda_core_version": getattr(cc, "__version__", "?"), "blocks_for_grid_2_cluster_2": int(out[0])}


def main(path):
    rec = {}
    ok(drv.cuInit(0))
    dev = ok(drv.cuDeviceGet(0))
    name = bytes(ok(drv.cuDeviceGetName(128, dev))).split(b"\0")[0].decode()
    A = drv.CUdevice_attribute
    cc = (ok(drv.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)),
          ok(drv.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)))
    rec["device"] = {"name": name, "compute_capability": cc,
                     "sm_count": ok(drv.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)),
                     "optin_smem": ok(drv.cuDeviceGetAttribute(
                         A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev)),
                     "driver": ok(drv.cuDriverGetVersion())}
    ctx = ok(drv.cuDevicePrimaryCtxRetain(dev))
    ok(drv.cuCtxSetCurrent(ctx))
    base = ok(drv.cuMemAlloc(256 * 128 * 2))
    rec["tensor_maps"] = {}
    for name_, changes, _ in TENSOR_MAP_CASES:
        try:
            rec["tensor_maps"][name_] = tensor_map(int(base), changes)
        except Exception as e:  # noqa: BLE001
            rec["tensor_maps"][name_] = f"exception: {type(e).__name__}: {e}"
    cubin = compile_kernel(cc)
    module = ok(drv.cuModuleLoadData(cubin))
    counter = ok(drv.cuMemAlloc(4))
    rec["launches"] = {}
    for name_, case, _ in LAUNCH_CASES:
        try:
            rec["launches"][name_] = launch(module, counter, case)
        except Exception as e:  # noqa: BLE001
            rec["launches"][name_] = [f"exception: {type(e).__name__}: {e}", 0]
    rec["occupancy"] = []
    fn = ok(drv.cuModuleGetFunction(module, b"count"))
    ok(drv.cuFuncSetAttribute(fn, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448))
    ok(drv.cuFuncSetAttribute(fn, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1))
    for threads, smem, size in OCCUPANCY_CASES:
        try:
            cfg = drv.CUlaunchConfig()
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = size, 1, 1
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = threads, 1, 1
            cfg.sharedMemBytes = smem
            at = drv.CUlaunchAttribute()
            at.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            at.value.clusterDim.x, at.value.clusterDim.y, at.value.clusterDim.z = size, 1, 1
            cfg.attrs, cfg.numAttrs = [at], 1
            n = ok(drv.cuOccupancyMaxActiveClusters(fn, cfg))
            regs = ok(drv.cuFuncGetAttribute(drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn))
            rec["occupancy"].append({"threads": threads, "smem": smem, "cluster": size, "clusters": int(n),
                                     "registers": int(regs)})
        except Exception as e:  # noqa: BLE001
            rec["occupancy"].append({"threads": threads, "smem": smem, "cluster": size, "error": str(e)})
    try:
        rec["cuda_core"] = cuda_core_grid_counts_clusters(cubin, counter)
    except Exception as e:  # noqa: BLE001
        rec["cuda_core"] = {"error": f"{type(e).__name__}: {e}"}
    with open(path, "w") as f:
        json.dump(rec, f, indent=1)
    print(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
