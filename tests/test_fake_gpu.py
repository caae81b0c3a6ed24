"""The fake GPU (tests/fake_gpu) refuses what the real driver refuses: a test double whose checks
cannot fail would make tests/test_blackwell_host.py worthless."""
from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pytest
from cuda.bindings import driver as drv
from numba import cuda

from gemm_kernels.runtime.launch import launch, prepare
from gemm_kernels.runtime.tensormap import TensorMap2D
from tests.fake_gpu import FakeIllegalAddress, FakeLaunchError
from tests.fake_gpu.core import FakeCoreKernel, FakeLaunchConfig, KernelHandle
from tests.fake_gpu.rule_cases import LAUNCH_CASES, OCCUPANCY_CASES, TENSOR_MAP_CASES
from tests.fake_gpu.spec import B200, H200


@cuda.jit
def _touch(x):
    x[0] = 1


def _encode(args):
    drv.cuInit(0)
    return drv.cuTensorMapEncodeTiled(*args)


def test_the_driver_must_be_initialised_first(fake_b200):
    args = _map_args(fake_b200)
    assert drv.cuTensorMapEncodeTiled(*args)[0] == drv.CUresult.CUDA_ERROR_NOT_INITIALIZED
    assert drv.cuDeviceGetCount()[0] == drv.CUresult.CUDA_ERROR_NOT_INITIALIZED


def _map_args(fake, **change):
    """cuTensorMapEncodeTiled's arguments for a valid map (what TensorMap2D.driver_args gives for a
    256 x 128 fp16 matrix, 128 x 64 box, 128B swizzle), with fields replaced."""
    dev = fake.to_device(np.zeros((256, 128), np.float16))
    fake.keep = dev
    args = list(TensorMap2D.for_array(dev, (128, 64)).driver_args(dev.device_address))
    names = ["dtype", "rank", "address", "dims", "strides", "box", "estrides", "interleave", "swizzle", "l2", "oob"]
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    conv = {"dims": lambda v: [u64(x) for x in v], "strides": lambda v: [u64(x) for x in v],
            "box": lambda v: [u32(x) for x in v], "estrides": lambda v: [u32(x) for x in v],
            "swizzle": lambda v: getattr(drv.CUtensorMapSwizzle, v)}
    for k, v in change.items():
        if k == "address_offset":
            args[2] += v
        else:
            args[names.index(k)] = conv.get(k, lambda x: x)(v)
    return args


def test_a_valid_tensor_map_is_encoded_and_recorded(fake_b200):
    err, tm = _encode(_map_args(fake_b200))
    assert int(err) == 0 and tm.getPtr()
    (rec,) = fake_b200.tensor_maps
    assert rec.rows_cols == ((256, 128), (128, 64)) and rec.strides == (256,) and rec.swizzle_span == 128


@pytest.mark.parametrize("name, change, rule", TENSOR_MAP_CASES, ids=[c[0] for c in TENSOR_MAP_CASES])
def test_tensor_map_rules(fake_b200, name, change, rule):
    err, tm = _encode(_map_args(fake_b200, **change))
    if rule is None:
        assert int(err) == 0, fake_b200.refusals
        return
    assert err == drv.CUresult.CUDA_ERROR_INVALID_VALUE and tm is None
    assert rule in fake_b200.refusals[-1][1]


def test_rank_must_match_the_arrays(fake_b200):
    assert _encode(_map_args(fake_b200, rank=3))[0] == drv.CUresult.CUDA_ERROR_INVALID_VALUE
    assert "rank 3 needs" in fake_b200.refusals[-1][1]


def _prepared(fake, shared_bytes=0, cluster=(1, 1, 1)):
    x = fake.to_device(np.zeros(4, np.int64))
    return prepare(_touch, (x,), shared_bytes=shared_bytes, cluster=cluster), x


def test_dynamic_shared_memory_needs_the_attribute(fake_b200):
    p, x = _prepared(fake_b200)
    cfg = FakeLaunchConfig(grid=1, block=32, shmem_size=48 * 1024 + 1)
    with pytest.raises(FakeLaunchError, match="MAX_DYNAMIC_SHARED_SIZE_BYTES"):
        fake_b200.launch_core(None, cfg, p.kernel, x)
    launch(_touch, 1, 32, (x,), shared_bytes=48 * 1024 + 1)  # runtime.launch sets it first
    assert fake_b200.launches[-1].shared_bytes == 48 * 1024 + 1


def test_shared_memory_above_the_sm100_limit_is_refused(fake_b200):
    p, x = _prepared(fake_b200)
    (err,) = drv.cuKernelSetAttribute(drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      232448 + 1, p.handle, 0)
    assert err == drv.CUresult.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(ValueError, match="exceeds the 232448 B per block"):  # runtime.launch says so first
        launch(_touch, 1, 32, (x,), shared_bytes=232448 + 1)


def test_cluster_rules(fake_b200):
    p, x = _prepared(fake_b200)
    with pytest.raises(FakeLaunchError, match="INVALID_CLUSTER_SIZE"):
        fake_b200.launch_core(None, FakeLaunchConfig(grid=1, cluster=16, block=32), p.kernel, x)
    launch(_touch, 16, 32, (x,), cluster=(16, 1, 1))  # runtime.launch allows non-portable sizes first
    assert fake_b200.launches[-1].grid == (16, 1, 1) and fake_b200.launches[-1].cluster == (16, 1, 1)


def test_block_and_grid_limits(fake_b200):
    p, x = _prepared(fake_b200)
    with pytest.raises(FakeLaunchError, match="block"):
        fake_b200.launch_core(None, FakeLaunchConfig(grid=1, block=(32, 1, 65)), p.kernel, x)
    with pytest.raises(FakeLaunchError, match="grid"):
        fake_b200.launch_core(None, FakeLaunchConfig(grid=(1, 65536, 1), block=32), p.kernel, x)


def test_registers_must_fit_an_sm(fake_b200):
    p, x = _prepared(fake_b200)
    p.cufunc.handle.registers = 255  # what a build that holds too much in registers would report
    with pytest.raises(FakeLaunchError, match="OUT_OF_RESOURCES"):
        fake_b200.launch_core(None, FakeLaunchConfig(grid=1, block=512), p.kernel, x)
    fake_b200.launch_core(None, FakeLaunchConfig(grid=1, block=256), p.kernel, x)


def test_freed_memory_is_refused(fake_b200):
    p, x = _prepared(fake_b200)
    address = x.device_address
    del x
    gc.collect()
    with pytest.raises(FakeIllegalAddress, match="freed"):
        fake_b200.memory.read(address, 8)


def test_wrong_argument_types_are_refused(fake_b200):
    x = fake_b200.to_device(np.zeros(4, np.int64))
    p = prepare(_touch, (x,))
    with pytest.raises(TypeError, match="got a 1-D float32 array"):
        p.flatten((fake_b200.to_device(np.zeros(4, np.float32)),))


def test_event_time_needs_the_end_event_completed(fake_b200):
    e0, e1 = cuda.event(), cuda.event()
    e0.record()
    e1.record()
    with pytest.raises(FakeLaunchError, match="NOT_READY"):
        cuda.event_elapsed_time(e0, e1)
    e1.synchronize()
    assert cuda.event_elapsed_time(e0, e1) == 0.0


# -- the same cases on a real driver (an H200, tests/fake_gpu/record_h200.py) ----------------------------

H200_RECORD = json.loads((Path(__file__).parent / "data" / "fake_gpu_vs_h200.json").read_text())


def test_the_recording_is_an_h200_with_the_b200_limits():
    dev = H200_RECORD["device"]
    assert "H200" in dev["name"] and dev["compute_capability"] == [9, 0]
    assert dev["optin_smem"] == B200.max_shared_per_block_optin == H200.max_shared_per_block_optin
    assert dev["sm_count"] == H200.sm_count


@pytest.mark.parametrize("name, change, rule", TENSOR_MAP_CASES, ids=[c[0] for c in TENSOR_MAP_CASES])
def test_tensor_map_verdicts_match_the_h200_driver(fake_b200, name, change, rule):
    err, _ = _encode(_map_args(fake_b200, **change))
    assert err.name == H200_RECORD["tensor_maps"][name]


def _fake_driver_launch(gpu, case):
    """A LAUNCH_CASES case on the fake, as record_h200.launch runs it on the real driver: a fresh
    kernel, the attributes set, a launch with the grid in blocks. Returns (result name, blocks)."""
    from numba import types

    handle = KernelHandle("count", None, (types.uint64,), registers=8,
                          max_dynamic_shared=gpu.spec.default_dynamic_shared)
    gpu.kernel_handles[id(handle)] = handle
    A = drv.CUfunction_attribute
    for key, attr in (("attr_smem", A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
                      ("non_portable", A.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)):
        if case.get(key):
            (err,) = drv.cuKernelSetAttribute(attr, case[key], handle, 0)
            if int(err) != 0:
                return "attribute: " + err.name, 0
    try:
        launch = gpu._accept(handle, "driver", case["grid"], case["block"], case.get("cluster", (1, 1, 1)),
                             case.get("shmem", 0), (0,))
    except FakeLaunchError as e:
        return str(e).split(":")[0], 0
    return "CUDA_SUCCESS", launch.blocks


@pytest.mark.parametrize("name, case, rule", LAUNCH_CASES, ids=[c[0] for c in LAUNCH_CASES])
def test_launch_verdicts_match_the_h200_driver(fake_b200, name, case, rule):
    assert list(_fake_driver_launch(fake_b200, case)) == H200_RECORD["launches"][name]


def test_cuda_core_counts_the_grid_in_clusters_as_the_fake_does(fake_b200):
    """cuda.core 1.2 on the H200 ran 4 blocks for LaunchConfig(grid=2, cluster=2): the fake must too."""
    p, x = _prepared(fake_b200, cluster=(2, 1, 1))
    fake_b200.launch_core(None, FakeLaunchConfig(grid=2, cluster=2, block=32), p.kernel, x)
    blocks = fake_b200.launches[-1].grid
    assert blocks[0] * blocks[1] * blocks[2] == H200_RECORD["cuda_core"]["blocks_for_grid_2_cluster_2"] == 4


@pytest.mark.parametrize("threads, smem, size", OCCUPANCY_CASES)
def test_occupancy_model_against_the_h200(monkeypatch, threads, smem, size):
    """The fake's cuOccupancyMaxActiveClusters model with the H200's numbers gives the H200's answer,
    except where many small CTAs share an SM in clusters (a known overestimate: core._Occupancy)."""
    from tests.fake_gpu import FakeGpu

    gpu = FakeGpu(H200)
    rec = next(r for r in H200_RECORD["occupancy"] if (r["threads"], r["smem"], r["cluster"]) == (threads, smem, size))
    handle = KernelHandle("count", None, (), registers=rec["registers"])
    cfg = FakeLaunchConfig(grid=1, cluster=size, block=threads, shmem_size=smem)
    model = FakeCoreKernel(gpu, handle).occupancy.max_active_clusters(cfg)
    if (threads, smem, size) == (128, 1024, 4):
        assert (model, rec["clusters"]) == (528, 248)
    else:
        assert model == rec["clusters"]
