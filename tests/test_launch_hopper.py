"""The GPU launch path on a real GPU of compute capability >= 9.0 (an H200 will do: clusters, >48 KiB
dynamic shared memory and tensor maps are Hopper features too). Skipped elsewhere."""
import os
import sys

import numpy as np
import pytest

from gemm_kernels.runtime import ensure_numpy_compat
from gemm_kernels.runtime.device import gpu_info

ensure_numpy_compat()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

_info = gpu_info()
pytestmark = [
    pytest.mark.hopper,
    pytest.mark.skipif(_info is None or _info.compute_capability < (9, 0),
                       reason="needs a CUDA GPU of compute capability >= 9.0"),
]

SMEM = 200 * 1024


def test_cluster_launch_with_200k_dynamic_smem():
    from numba import cuda

    from gemm_kernels.runtime.launch import launch
    from tests.kernels_for_build import cluster_probe

    blocks = 8
    out = cuda.to_device(np.zeros((blocks, 4), np.uint32))
    prepared = launch(cluster_probe, grid=(blocks, 1, 1), block=(128, 1, 1), args=(out, np.int32(SMEM)),
                      cluster=(2, 1, 1), shared_bytes=SMEM, sync=True)
    got = out.copy_to_host()
    b = np.arange(blocks)
    assert list(got[:, 0]) == list(b % 2), got          # %cluster_ctarank
    assert (got[:, 1] == blocks).all(), got             # %nctaid.x counts blocks, not clusters
    assert (got[:, 2] == 2).all(), got                  # %cluster_nctarank
    assert list(got[:, 3]) == list(b % 251 + 7000), got  # both ends of the 200 KB buffer usable
    assert prepared.max_dynamic_shared >= SMEM
    assert prepared.local_bytes == 0

    # cached: a second launch reuses the compiled kernel; smaller shared memory, no cluster
    out2 = cuda.to_device(np.zeros((blocks, 4), np.uint32))
    again = launch(cluster_probe, grid=blocks, block=64, args=(out2, np.int32(1024)), shared_bytes=1024,
                   sync=True)
    assert again is prepared
    got2 = out2.copy_to_host()
    assert (got2[:, 1] == blocks).all() and (got2[:, 0] == 0).all() and (got2[:, 2] == 1).all(), got2


def test_bad_cluster_shape_refused():
    from numba import cuda

    from gemm_kernels.runtime.launch import launch
    from tests.kernels_for_build import cluster_probe

    out = cuda.to_device(np.zeros((3, 4), np.uint32))
    with pytest.raises(ValueError, match="multiple of the cluster"):
        launch(cluster_probe, grid=3, block=32, args=(out, np.int32(16)), cluster=(2, 1, 1))


def test_too_much_shared_memory_refused():
    from numba import cuda

    from gemm_kernels.runtime.launch import launch
    from tests.kernels_for_build import cluster_probe

    out = cuda.to_device(np.zeros((2, 4), np.uint32))
    with pytest.raises(ValueError, match="shared memory exceeds"):
        launch(cluster_probe, grid=2, block=32, args=(out, np.int32(16)),
               shared_bytes=_info.max_shared_per_block_optin + 1024)


def test_tensormap_encodes():
    from numba import cuda

    from gemm_kernels.runtime.tensormap import TensorMap2D, encode_on_gpu

    a = cuda.to_device(np.zeros((256, 512), np.float16))
    desc = TensorMap2D.for_array(a, box=(128, 64), swizzle="128B")
    tm = encode_on_gpu(desc, a)
    assert tm.address % 128 == 0
    assert len(tm.host_bytes) == 128 and any(tm.host_bytes)
    back = tm._buffer.copy_to_host().tobytes()
    assert back == tm.host_bytes


def test_max_active_clusters():
    """The occupancy query the two-CTA chapters use to size their persistent grid: positive, at
    most one cluster per pair of SMs with ~200 KB of shared memory per CTA, and a grid of that many
    clusters really runs (every cluster writes its ranks)."""
    from numba import cuda

    from gemm_kernels.runtime.launch import launch, max_active_clusters
    from tests.kernels_for_build import cluster_probe

    info = gpu_info()
    out = cuda.to_device(np.zeros((2, 4), np.uint32))
    fit = max_active_clusters(cluster_probe, 128, (out, np.int32(SMEM)), cluster=(2, 1, 1), shared_bytes=SMEM)
    print(f"{info.name}: {fit} co-resident 2-CTA clusters with {SMEM} B of shared memory per CTA, "
          f"{info.sm_count} SMs")
    assert 1 <= fit <= info.sm_count // 2
    blocks = 2 * fit
    out = cuda.to_device(np.zeros((blocks, 4), np.uint32))
    launch(cluster_probe, grid=blocks, block=128, args=(out, np.int32(SMEM)), cluster=(2, 1, 1), shared_bytes=SMEM,
           sync=True)
    assert list(out.copy_to_host()[:, 0]) == [i % 2 for i in range(blocks)]
