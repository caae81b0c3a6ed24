"""The fake GPU (tests/fake_gpu) refuses what the real driver refuses: a test double whose checks
cannot fail would make tests/test_blackwell_host.py worthless."""
from __future__ import annotations

import gc

import numpy as np
import pytest
from cuda.bindings import driver as drv
from numba import cuda

from gemm_kernels.runtime.launch import launch, prepare
from gemm_kernels.runtime.tensormap import TensorMap2D
from tests.fake_gpu import FakeIllegalAddress, FakeLaunchError
from tests.fake_gpu.core import FakeLaunchConfig


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
            "box": lambda v: [u32(x) for x in v], "estrides": lambda v: [u32(x) for x in v]}
    for k, v in change.items():
        args[names.index(k)] = conv.get(k, lambda x: x)(v)
    return args


def test_a_valid_tensor_map_is_encoded_and_recorded(fake_b200):
    err, tm = _encode(_map_args(fake_b200))
    assert int(err) == 0 and tm.getPtr()
    (rec,) = fake_b200.tensor_maps
    assert rec.rows_cols == ((256, 128), (128, 64)) and rec.strides == (256,) and rec.swizzle_span == 128


@pytest.mark.parametrize("change, rule", [
    (dict(strides=[100]), "multiple of 16"),
    (dict(strides=[2**40]), "below 2^40"),
    (dict(box=[64, 257]), "1..256"),
    (dict(box=[72, 128]), "wider than the CU_TENSOR_MAP_SWIZZLE_128B span"),
    (dict(box=[4, 128], swizzle=drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE), "multiple of 16 bytes"),
    (dict(estrides=[1, 9]), "element strides"),
    (dict(dims=[128, 0]), "1..2^32"),
    (dict(rank=3), "rank 3 needs"),
])
def test_tensor_map_rules(fake_b200, change, rule):
    err, tm = _encode(_map_args(fake_b200, **change))
    assert err == drv.CUresult.CUDA_ERROR_INVALID_VALUE and tm is None
    assert rule in fake_b200.refusals[-1][1]


def test_misaligned_global_address_is_refused(fake_b200):
    args = _map_args(fake_b200)
    args[2] += 8
    assert _encode(args)[0] == drv.CUresult.CUDA_ERROR_INVALID_VALUE
    assert "16-byte aligned" in fake_b200.refusals[-1][1]


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
    with pytest.raises(FakeLaunchError, match="CLUSTER_SIZE_NOT_SUPPORTED"):
        fake_b200.launch_core(None, FakeLaunchConfig(grid=1, cluster=16, block=32), p.kernel, x)
    launch(_touch, 16, 32, (x,), cluster=(16, 1, 1))  # runtime.launch allows non-portable sizes first
    assert fake_b200.launches[-1].grid == (16, 1, 1) and fake_b200.launches[-1].cluster == (16, 1, 1)


def test_block_and_grid_limits(fake_b200):
    p, x = _prepared(fake_b200)
    with pytest.raises(FakeLaunchError, match="block"):
        fake_b200.launch_core(None, FakeLaunchConfig(grid=1, block=(32, 1, 65)), p.kernel, x)
    with pytest.raises(FakeLaunchError, match="grid"):
        fake_b200.launch_core(None, FakeLaunchConfig(grid=(1, 65536, 1), block=32), p.kernel, x)


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
