"""Launch a ``numba.cuda.jit`` kernel with thread-block clusters and more than 48 KiB of dynamic
shared memory, neither of which ``kernel[grid, block, stream, shmem](...)`` offers.

    from gemm_kernels.runtime.launch import launch
    launch(kernel, grid=(8, 1, 1), block=(128, 1, 1), args=(a_dev, b_dev, n),
           cluster=(2, 1, 1), shared_bytes=200 * 1024)

What it does, the way numba's own launch does it (``_Kernel.launch`` in numba-cuda 0.30.4):

1. Type the arguments (``dispatcher.typeof_pyval``) and compile for them on the current device
   (``dispatcher.compile(argtypes)``, which also binds the module to numba's context). numba adds the
   ``a`` suffix (sm_90a, sm_100a) itself for compute capability >= 9.0.
2. Take the driver kernel from the code library (``_Kernel._codelibrary.get_cufunc()``: a
   ``CudaPythonFunction`` with ``.kernel`` (a ``cuda.core`` Kernel) and ``.handle`` (a CUkernel)).
3. Set ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` on it with ``cuKernelSetAttribute`` when
   ``shared_bytes`` exceeds 48 KiB (and ``NON_PORTABLE_CLUSTER_SIZE_ALLOWED`` for clusters above 8).
4. Flatten every argument to what the kernel's parameter list expects with
   ``_Kernel._prepare_args(ty, val, stream, retr, kernelargs)`` (an array becomes meminfo, parent,
   size, itemsize, data pointer, shape..., strides...).
5. ``cuda.core.launch(stream, LaunchConfig(grid, block, cluster, shmem_size), kernel, *flat_args)``.

``grid`` is given in BLOCKS (the CUDA convention). cuda.core 1.x counts ``LaunchConfig.grid`` in
clusters when a cluster shape is given, so it is divided by the cluster shape here (each grid
dimension must be a multiple of the cluster's).

Steps 1-2 are cached per (dispatcher, argument types) (the cache lives on this module and holds the
dispatcher alive); step 3 is done once per kernel and only ever raises the shared-memory limit, so
one compiled kernel serves launches of any shared-memory size.

Private numba-cuda 0.30.4 internals relied on (pinned in requirements.txt; tested by
tests/test_launch_hopper.py on a real GPU):
  * ``CUDADispatcher.compile(argtypes) -> _Kernel`` (public-ish, undocumented return type)
  * ``CUDADispatcher.typeof_pyval(value)``
  * ``_Kernel._codelibrary.get_cufunc() -> CudaPythonFunction`` with ``.kernel``, ``.handle``,
    ``.attrs.shared`` and ``.device.id``
  * ``_Kernel.argument_types`` and ``_Kernel._prepare_args(ty, val, stream, retr, kernelargs)``
  * ``numba.cuda.cudadrv.driver._to_core_stream(stream)`` (numba stream / 0 -> cuda.core Stream;
    a fallback through ``__cuda_stream__`` is used when it is missing)
Not supported: numba's ``debug=True`` exception reporting, NRT, and launch-config-sensitive
dispatchers (numba's ``_select_launch_config_dispatcher``); none is used by this project's kernels.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["launch", "prepare", "PreparedKernel", "GRID_COUNTS_CLUSTERS", "clear_cache"]

_DEFAULT_SMEM_LIMIT = 48 * 1024
_PORTABLE_CLUSTER = 8


def _core():
    """cuda.core's (LaunchConfig, launch, Stream, version): ``cuda.core`` (>= 0.4 / 1.x) or the older
    ``cuda.core.experimental``."""
    try:
        from cuda.core import LaunchConfig, Stream, launch as core_launch
    except ImportError:  # cuda.core < 0.4
        from cuda.core.experimental import LaunchConfig, Stream, launch as core_launch
    try:
        from cuda.core import __version__ as ver
    except ImportError:
        try:
            from importlib.metadata import version

            ver = version("cuda-core")
        except Exception:
            ver = "0"
    return LaunchConfig, core_launch, Stream, ver


def _grid_counts_clusters() -> bool:
    """True when cuda.core's LaunchConfig.grid counts clusters once a cluster shape is given
    (cuda.core >= 1.0; stated in its LaunchConfig docstring)."""
    LaunchConfig, _, _, ver = _core()
    if "number of clusters" in (LaunchConfig.__doc__ or "").lower():
        return True
    try:
        return int(str(ver).split(".")[0]) >= 1
    except ValueError:
        return True


def _core_stream(stream):
    """A cuda.core Stream for a numba stream, a cuda.core stream, or None/0 (the default stream)."""
    from numba.cuda.cudadrv import driver as nbdrv

    conv = getattr(nbdrv, "_to_core_stream", None)
    if conv is not None:
        try:
            return conv(stream)
        except TypeError:
            pass
    _, _, Stream, _ = _core()
    if not stream:
        return Stream.from_handle(0)
    if hasattr(stream, "__cuda_stream__") and not isinstance(stream, Stream):
        return Stream.from_handle(int(stream.__cuda_stream__()[1]))
    return stream


GRID_COUNTS_CLUSTERS: bool | None = None  # resolved on first launch


def _dim3(x, what) -> tuple[int, int, int]:
    if isinstance(x, int):
        x = (x,)
    x = tuple(int(v) for v in x)
    if not 1 <= len(x) <= 3 or any(v < 1 for v in x):
        raise ValueError(f"{what} must be 1 to 3 positive integers, got {x}")
    return x + (1,) * (3 - len(x))


@dataclass
class PreparedKernel:
    """A kernel compiled for one set of argument types, with its driver attributes set."""

    dispatcher: object
    numba_kernel: object       # numba's _Kernel
    cufunc: object             # numba's CudaPythonFunction
    argument_types: tuple
    max_dynamic_shared: int = _DEFAULT_SMEM_LIMIT   # what the kernel is currently allowed
    non_portable_cluster: bool = False

    @property
    def kernel(self):
        """The ``cuda.core`` Kernel."""
        return self.cufunc.kernel

    @property
    def handle(self):
        """The driver CUkernel handle."""
        return self.cufunc.handle

    @property
    def device_id(self) -> int:
        return self.cufunc.device.id

    @property
    def registers(self) -> int:
        return self.cufunc.attrs.regs

    @property
    def static_shared_bytes(self) -> int:
        return self.cufunc.attrs.shared

    @property
    def local_bytes(self) -> int:
        return self.cufunc.attrs.local

    def allow(self, shared_bytes: int, cluster_size: int) -> None:
        """Set the attributes a launch with this much dynamic shared memory and this cluster size
        needs (only ever raising the dynamic shared-memory limit)."""
        from cuda.bindings import driver as drv
        from .device import gpu_info

        A = drv.CUfunction_attribute
        if shared_bytes > self.max_dynamic_shared:
            info = gpu_info(self.device_id)
            static = int(self.static_shared_bytes)
            if info is not None and static + shared_bytes > info.max_shared_per_block_optin:
                raise ValueError(
                    f"{self.dispatcher.py_func.__name__}: {static} B static + {shared_bytes} B dynamic "
                    f"shared memory exceeds the {info.max_shared_per_block_optin} B per block that "
                    f"{info.name} allows")
            _set_attr(self.handle, self.device_id,
                      A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes)
            self.max_dynamic_shared = shared_bytes
        if cluster_size > _PORTABLE_CLUSTER and not self.non_portable_cluster:
            _set_attr(self.handle, self.device_id,
                      A.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
            self.non_portable_cluster = True

    def flatten(self, args, stream=0):
        """The flat kernel argument list numba would pass, and the write-back callbacks."""
        kernelargs, retr = [], []
        for ty, val in zip(self.argument_types, args):
            self.numba_kernel._prepare_args(ty, val, stream, retr, kernelargs)
        return kernelargs, retr


_cache: dict = {}
_lock = threading.Lock()


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def _set_attr(handle, device_id, attr, value):
    from cuda.bindings import driver as drv

    (err,) = drv.cuKernelSetAttribute(attr, int(value), handle, device_id)
    if int(err) != 0:
        raise RuntimeError(f"cuKernelSetAttribute({attr.name}, {value}) failed: {err!r}")


def prepare(kernel, args, *, shared_bytes: int = 0, cluster=(1, 1, 1)) -> PreparedKernel:
    """Compile ``kernel`` (a ``numba.cuda.jit`` dispatcher) for the types of ``args`` on the current
    device and set the attributes that a launch with ``shared_bytes`` of dynamic shared memory and
    this cluster shape needs. The compiled kernel is cached per (dispatcher, argument types); the
    attributes are raised as later launches need."""
    from . import ensure_numpy_compat

    ensure_numpy_compat()
    if not hasattr(kernel, "typeof_pyval") or not hasattr(kernel, "compile"):
        raise TypeError(f"launch() wants a numba.cuda.jit kernel, got {kernel!r}")
    if getattr(kernel, "targetoptions", {}).get("device"):
        raise TypeError(f"{kernel.py_func.__name__} is a device function, not a kernel")
    shared_bytes = int(shared_bytes)
    if shared_bytes < 0:
        raise ValueError("shared_bytes must be >= 0")
    cx, cy, cz = _dim3(cluster, "cluster")
    argtypes = tuple(kernel.typeof_pyval(a) for a in args)
    key = (id(kernel), argtypes)
    prepared = _cache.get(key)
    if prepared is None or prepared.dispatcher is not kernel:
        nk = kernel.compile(argtypes)
        cufunc = nk._codelibrary.get_cufunc()
        prepared = PreparedKernel(kernel, nk, cufunc, tuple(nk.argument_types))
        with _lock:
            _cache[key] = prepared
    prepared.allow(shared_bytes, cx * cy * cz)
    return prepared


def launch(kernel, grid, block, args, *, cluster=(1, 1, 1), shared_bytes: int = 0, stream=None,
           sync: bool = False) -> PreparedKernel:
    """Launch ``kernel`` on ``grid`` BLOCKS of ``block`` threads, in clusters of ``cluster`` blocks,
    with ``shared_bytes`` of dynamic shared memory per block.

    kernel: a ``numba.cuda.jit`` dispatcher. args: numba device arrays, anything with
    ``__cuda_array_interface__``, host numpy arrays (copied in and back, as numba does) and scalars.
    stream: a numba stream (``cuda.stream()``), a ``cuda.core`` Stream, or None/0 for the default.
    sync: synchronize the stream before returning.
    Returns the PreparedKernel (registers, static shared memory, ... of what ran).
    """
    global GRID_COUNTS_CLUSTERS
    LaunchConfig, core_launch, _, _ = _core()

    g = _dim3(grid, "grid")
    b = _dim3(block, "block")
    c = _dim3(cluster, "cluster")
    if any(gi % ci for gi, ci in zip(g, c)):
        raise ValueError(f"grid {g} (in blocks) is not a multiple of the cluster shape {c} in every dimension")
    if b[0] * b[1] * b[2] > 1024:
        raise ValueError(f"block {b} has more than 1024 threads")
    shared_bytes = int(shared_bytes)
    prepared = prepare(kernel, args, shared_bytes=shared_bytes, cluster=c)

    core_stream = _core_stream(stream)
    # numba's argument packing wants a numba stream (or 0) for any host->device copies it makes
    nb_stream = stream if stream is not None and not isinstance(stream, _core()[2]) else 0
    kernelargs, retr = prepared.flatten(args, nb_stream)

    if c == (1, 1, 1):
        config = LaunchConfig(grid=g, block=b, shmem_size=shared_bytes)
    else:
        if GRID_COUNTS_CLUSTERS is None:
            GRID_COUNTS_CLUSTERS = _grid_counts_clusters()
        cgrid = tuple(gi // ci for gi, ci in zip(g, c)) if GRID_COUNTS_CLUSTERS else g
        config = LaunchConfig(grid=cgrid, cluster=c, block=b, shmem_size=shared_bytes)
    core_launch(core_stream, config, prepared.kernel, *kernelargs)

    for wb in retr:  # copy auto-transferred host arrays back, as numba does
        wb()
    if sync:
        core_stream.sync()
    return prepared


def max_active_clusters(kernel, block, args, *, cluster, shared_bytes: int = 0, stream=None) -> int:
    """How many clusters of this kernel (this block, cluster shape and dynamic shared memory) the
    device can run at the same time (cuOccupancyMaxActiveClusters through cuda.core). A persistent
    grid of more clusters than this runs its extra clusters as a second wave."""
    LaunchConfig, _, _, _ = _core()
    b = _dim3(block, "block")
    c = _dim3(cluster, "cluster")
    prepared = prepare(kernel, args, shared_bytes=int(shared_bytes), cluster=c)
    config = LaunchConfig(grid=(1, 1, 1) if _grid_counts_clusters() else c, cluster=c, block=b,
                          shmem_size=int(shared_bytes))
    return int(prepared.kernel.occupancy.max_active_clusters(config, stream=_core_stream(stream)))
