"""The fake ``cuda.core`` launch surface (LaunchConfig, launch, Stream) and what a loaded kernel
knows of itself (attributes, occupancy). ``launch`` applies the driver's launch rules and hands the
launch to the FakeGpu, which records it."""
from __future__ import annotations

import math
from dataclasses import dataclass, field


class FakeLaunchError(RuntimeError):
    """A launch the real driver refuses, with the CUresult name it would return."""


def _dim3(x):
    if x is None:
        return None
    if isinstance(x, int):
        x = (x,)
    x = tuple(int(v) for v in x)
    return x + (1,) * (3 - len(x))


class FakeLaunchConfig:
    """Launch options (cuda.core 1.x semantics).

    Note
    ----
    When cluster is specified, the grid parameter represents the number of clusters (not blocks).
    """

    def __init__(self, grid=None, cluster=None, block=None, shmem_size=None, is_cooperative=False,
                 programmatic_stream_serialization=False):
        self.grid, self.cluster, self.block = _dim3(grid), _dim3(cluster), _dim3(block)
        self.shmem_size = int(shmem_size or 0)

    def __repr__(self):
        return f"LaunchConfig(grid={self.grid}, cluster={self.cluster}, block={self.block}, shmem={self.shmem_size})"


class FakeStream:
    def __init__(self, gpu, handle=0):
        self.gpu, self.handle = gpu, int(handle)

    def sync(self):
        self.gpu.synchronize()

    def __cuda_stream__(self):
        return (0, self.handle)


@dataclass
class KernelHandle:
    """A loaded kernel (the CUkernel handle and its attributes), one per compiled dispatcher."""

    name: str
    dispatcher: object
    argument_types: tuple
    registers: int = 64
    static_shared: int = 0
    local: int = 0
    max_dynamic_shared: int = 48 * 1024
    non_portable_cluster: bool = False
    extra: dict = field(default_factory=dict)


class _Occupancy:
    def __init__(self, kernel):
        self._kernel = kernel

    def max_active_clusters(self, config, stream=None):
        """cuOccupancyMaxActiveClusters as a simple model: blocks per SM from shared memory,
        threads and registers; clusters of ``cluster`` blocks on SMs grouped by the cluster size.
        It gives the H200's own answers for the chapters' configurations (up to a few CTAs per SM;
        tests/data/fake_gpu_vs_h200.json) but overestimates many small CTAs per SM in clusters
        (4-CTA clusters of 128 threads: 528 here, 248 on the H200)."""
        h, sp = self._kernel.handle, self._kernel.gpu.spec
        block = math.prod(config.block)
        size = math.prod(config.cluster or (1, 1, 1))
        smem = h.static_shared + config.shmem_size + sp.reserved_shared_per_block
        per_sm = min(sp.max_blocks_per_sm, sp.shared_per_sm // smem, sp.max_threads_per_sm // block,
                     sp.registers_per_sm // max(1, h.registers * block))
        return (sp.sm_count // size) * per_sm


class FakeCoreKernel:
    """``cuda.core`` Kernel of a loaded handle."""

    def __init__(self, gpu, handle: KernelHandle):
        self.gpu, self.handle = gpu, handle
        self.occupancy = _Occupancy(self)


def check_launch(spec, handle: KernelHandle, grid_blocks, block, cluster, shmem):
    """The driver's launch rules; raises FakeLaunchError naming the CUresult it would return."""
    threads = math.prod(block)
    if threads > spec.max_threads_per_block or any(b > m for b, m in zip(block, spec.max_block_dims)):
        raise FakeLaunchError(f"CUDA_ERROR_INVALID_VALUE: block {block} ({threads} threads) exceeds the limits")
    if handle.registers * threads > spec.registers_per_sm:
        raise FakeLaunchError(f"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: {handle.registers} registers x {threads} threads "
                              f"exceed the {spec.registers_per_sm} registers of an SM")
    if any(g < 1 or g > m for g, m in zip(grid_blocks, spec.max_grid_dims)):
        raise FakeLaunchError(f"CUDA_ERROR_INVALID_VALUE: grid {grid_blocks} blocks is outside the grid limits")
    if shmem > handle.max_dynamic_shared:
        raise FakeLaunchError(
            f"CUDA_ERROR_INVALID_VALUE: {shmem} B of dynamic shared memory, but {handle.name} allows "
            f"{handle.max_dynamic_shared} B (set CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first)")
    if handle.static_shared + shmem > spec.max_shared_per_block_optin:
        raise FakeLaunchError(f"CUDA_ERROR_INVALID_VALUE: {handle.static_shared} + {shmem} B of shared memory "
                              f"exceed {spec.max_shared_per_block_optin} B per block")
    size = math.prod(cluster)
    limit = spec.max_cluster_size if handle.non_portable_cluster else spec.portable_cluster_size
    if size > limit:
        raise FakeLaunchError(f"CUDA_ERROR_INVALID_CLUSTER_SIZE: cluster {cluster} has {size} blocks, more than "
                              f"{limit}" + ("" if handle.non_portable_cluster else
                                            " (set CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED for up to "
                                            f"{spec.max_cluster_size})"))
    if any(g % c for g, c in zip(grid_blocks, cluster)):
        raise FakeLaunchError(f"CUDA_ERROR_INVALID_CLUSTER_SIZE: grid {grid_blocks} blocks is not a multiple of "
                              f"the cluster {cluster}")
