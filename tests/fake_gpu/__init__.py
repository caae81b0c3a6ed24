"""A fake GPU: a test double of the CUDA surface our runtime uses (``cuda.bindings.driver``,
``cuda.core``'s launch, numba-cuda's device arrays, events and kernel compile/launch, CuPy), so that
every host path written for a B200 runs in CI on a machine without one.

It pretends to be a B200 (``spec.B200``), refuses what the real driver refuses (launch and
tensor-map rules: ``core.check_launch``, ``driver.FakeDriver.cuTensorMapEncodeTiled``; pointers to
freed or foreign memory: ``memory``), and records what would run: ``launches`` (grid in BLOCKS,
block, cluster, dynamic shared memory, the arguments as the kernel would receive them, the tensor
maps they point to), ``tensor_maps``, ``calls`` (driver calls) and ``log`` (launches, event records
and synchronisations in order). Kernels do not run unless an ``executor`` is given
(``execute.numpy_gemm`` writes what a correct GEMM would; ``execute.emulated`` runs the real kernel
on the emulator against the fake memory).

    def test_x(fake_b200):            # fixture in tests/conftest.py
        gemm_v4(a, b, backend="blackwell")
        (launch,) = fake_b200.launches
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import core, cupy_fake, driver, memory, numba_side
from .core import FakeLaunchError, KernelHandle
from .memory import FakeDeviceArray, FakeIllegalAddress, FakeMemory
from .spec import B200, DeviceSpec

__all__ = ["FakeGpu", "Launch", "FakeLaunchError", "FakeIllegalAddress", "B200"]


@dataclass
class Launch:
    """One launch the fake GPU accepted."""

    kernel: str                # the kernel's Python name
    dispatcher: object
    api: str                   # "cuda.core" (runtime.launch), "numba" (kernel[grid, block]) or "library"
    grid: tuple = (1, 1, 1)    # in blocks
    block: tuple = (1, 1, 1)
    cluster: tuple = (1, 1, 1)
    shared_bytes: int = 0
    args: tuple = ()           # FakeDeviceArray / FakeMappedArray / int, as the kernel receives them
    argument_types: tuple = ()
    tensor_maps: dict = field(default_factory=dict)  # argument index -> driver.EncodedTensorMap
    extra: dict = field(default_factory=dict)

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)


class FakeEvent:
    def __init__(self, gpu):
        self.gpu, self.time_ms, self.done = gpu, None, False

    def record(self, stream=0):
        self.time_ms, self.done = self.gpu.clock_ms, False
        self.gpu.log.append(("record", self))

    def synchronize(self):
        self.done = True


class FakeGpu:
    def __init__(self, spec: DeviceSpec = B200, *, executor=None, cupy=True, build=False, kernel_ms=0.01):
        self.spec = spec
        self.executor = executor          # executor(gpu, launch) runs after a launch is accepted
        self.with_cupy = cupy
        self.build = build                # compile = the real sm_100a build (registers, static smem)
        self.kernel_ms = kernel_ms        # fake time a launch takes (a number or a function of the Launch)
        self.memory = FakeMemory()
        self.driver = driver.FakeDriver(self)
        self.launches: list[Launch] = []
        self.tensor_maps: list[driver.EncodedTensorMap] = []
        self.calls, self.refusals, self.log = [], [], []
        self.kernel_handles: dict[int, KernelHandle] = {}
        self._compiled = {}
        self.clock_ms = 0.0
        self.trapped = None               # an executor sets a message: the next synchronize raises it
        self.cublas_compute_type = "default"

    # -- installing -----------------------------------------------------------------------------
    def install(self, monkeypatch):
        """Replace the CUDA surface with this fake for the test (monkeypatch undoes it)."""
        import cuda.core as cc
        from cuda.bindings import driver as drv

        for name in driver.FakeDriver.FUNCTIONS:
            monkeypatch.setattr(drv, name, getattr(self.driver, name))
        monkeypatch.setattr(cc, "LaunchConfig", core.FakeLaunchConfig)
        monkeypatch.setattr(cc, "launch", self.launch_core)
        monkeypatch.setattr(cc, "Stream", _stream_class(self))
        numba_side.install(self, monkeypatch)
        if self.with_cupy:
            cupy_fake.install(self, monkeypatch)
        else:
            import sys

            monkeypatch.setitem(sys.modules, "cupy", None)  # "import cupy" raises ImportError
        self.reset_caches()
        return self

    @staticmethod
    def reset_caches():
        """Forget what the runtime cached about the GPU (call on install and after the test)."""
        from gemm_kernels.runtime import device, launch

        device.gpu_info.cache_clear()
        device.probe_gpu.cache_clear()
        launch.clear_cache()
        launch.GRID_COUNTS_CLUSTERS = None

    # -- memory -------------------------------------------------------------------------------------
    def to_device(self, ary) -> FakeDeviceArray:
        ary = np.ascontiguousarray(ary)
        dev = FakeDeviceArray(self.memory, ary.shape, ary.dtype)
        dev.copy_to_device(ary)
        return dev

    def mapped_array(self, shape, dtype=np.float64, strides=None, order="C", stream=0, portable=False,
                     wc=False):
        return memory.mapped_array(self.memory, shape, dtype)

    def matrix(self, tmap: driver.EncodedTensorMap) -> np.ndarray:
        """The [rows, cols] matrix a 2-D tensor map describes, as a view of the fake device memory."""
        (rows, cols), _ = tmap.rows_cols
        stride = tmap.strides[0]
        alloc, off = self.memory.find(tmap.address, (rows - 1) * stride + cols * tmap.element_bytes,
                                      what=f"the {rows} x {cols} matrix of tensor map {tmap.index}")
        dtype = {"FLOAT16": np.float16, "BFLOAT16": np.uint16, "FLOAT32": np.float32}.get(tmap.dtype, np.uint8)
        flat = alloc.data[off:off + rows * stride]
        if flat.size < rows * stride:  # the last row needs only cols elements
            flat = alloc.data[off:off + (rows - 1) * stride + cols * tmap.element_bytes]
            return np.lib.stride_tricks.as_strided(flat.view(dtype), (rows, cols), (stride, tmap.element_bytes))
        return flat.view(dtype).reshape(rows, stride // tmap.element_bytes)[:, :cols]

    # -- compile and launch ---------------------------------------------------------------------
    def compile(self, dispatcher, argtypes):
        key = (id(dispatcher), argtypes)
        hit = self._compiled.get(key)
        if hit is not None and hit.dispatcher is dispatcher:
            return hit
        name = dispatcher.py_func.__name__
        handle = KernelHandle(name, dispatcher, argtypes, max_dynamic_shared=self.spec.default_dynamic_shared)
        if self.build:
            from gemm_kernels.runtime.build import build

            b = build(dispatcher, argtypes, arch="sm_100a")
            handle.registers, handle.static_shared, handle.local = b.registers, b.shared_bytes, b.local_bytes
            handle.extra["build"] = b
        self.kernel_handles[id(handle)] = handle
        compiled = self._compiled[key] = numba_side.FakeCompiledKernel(self, dispatcher, argtypes, handle)
        self.calls.append(("load", name, argtypes))
        return compiled

    def launch_core(self, stream, config, kernel, *args):
        """cuda.core's launch: ``config.grid`` counts clusters when a cluster is given."""
        if not isinstance(config, core.FakeLaunchConfig) or not isinstance(kernel, core.FakeCoreKernel):
            raise TypeError(f"launch(stream, LaunchConfig, Kernel, *args), got {config!r}, {kernel!r}")
        cluster = config.cluster or (1, 1, 1)
        grid = tuple(g * c for g, c in zip(config.grid, cluster)) if config.cluster else config.grid
        return self._accept(kernel.handle, "cuda.core", grid, config.block, cluster, config.shmem_size, args)

    def launch_numba(self, dispatcher, args, griddim, blockdim, sharedmem):
        """``kernel[grid, block, stream, sharedmem](*args)``."""
        argtypes = tuple(dispatcher.typeof_pyval(a) for a in args)
        compiled = self.compile(dispatcher, argtypes)
        flat, retr = [], []
        for ty, val in zip(argtypes, args):
            compiled._prepare_args(ty, val, 0, retr, flat)
        handle = compiled._codelibrary.get_cufunc().handle
        launch = self._accept(handle, "numba", core._dim3(griddim), core._dim3(blockdim), (1, 1, 1),
                              int(sharedmem), flat)
        for wb in retr:
            wb()
        return launch

    def _accept(self, handle, api, grid, block, cluster, shmem, args):
        core.check_launch(self.spec, handle, grid, block, cluster, shmem)
        if len(args) != len(handle.argument_types):
            raise FakeLaunchError(f"CUDA_ERROR_INVALID_VALUE: {handle.name} takes {len(handle.argument_types)} "
                                  f"arguments, got {len(args)}")
        launch = Launch(handle.name, handle.dispatcher, api, tuple(grid), tuple(block), tuple(cluster), int(shmem),
                        tuple(args), handle.argument_types)
        for i, (ty, val) in enumerate(zip(handle.argument_types, args)):
            if isinstance(val, (FakeDeviceArray, memory.FakeMappedArray)):
                self.memory.find(val.__cuda_array_interface__["data"][0], val.nbytes, what=f"argument {i}")
            elif str(ty) == "uint64":
                tmap = self._tensor_map_at(val, i)
                if tmap is not None:
                    self.matrix(tmap)  # the described matrix must be live device memory
                    launch.tensor_maps[i] = tmap
        self.launches.append(launch)
        self.log.append(("launch", launch))
        if self.executor is not None:
            self.executor(self, launch)
        self.clock_ms += self.kernel_ms(launch) if callable(self.kernel_ms) else self.kernel_ms
        return launch

    def _tensor_map_at(self, address, index):
        """The tensor map encoded at device ``address`` (a uint64 argument), or None if the address
        is not device memory holding one. A map must sit 64-byte aligned (the driver's rule for
        the CUtensorMap object); its 128 bytes must be live. An address in freed device memory is an
        error (what a kernel dereferencing it would meet)."""
        try:
            raw = self.memory.read(address, 8, what=f"argument {index}")
        except memory.FakeFreedMemory:
            raise
        except FakeIllegalAddress:  # not device memory: a plain integer argument
            return None
        if raw != driver.MAGIC:
            return None
        if int(address) % 64:
            raise FakeIllegalAddress(f"tensor map at {int(address):#x} (argument {index}) is not 64-byte aligned")
        raw = self.memory.read(address, 128, what=f"tensor map (argument {index})")
        return self.tensor_maps[driver.decode_index(raw)]

    def record_library_launch(self, name, **extra):
        launch = Launch(name, None, "library", extra=extra)
        self.launches.append(launch)
        self.log.append(("launch", launch))
        self.clock_ms += self.kernel_ms(launch) if callable(self.kernel_ms) else self.kernel_ms

    # -- synchronisation and events -----------------------------------------------------------------
    def synchronize(self):
        self.log.append(("sync", None))
        if self.trapped:
            raise FakeLaunchError(f"CUDA_ERROR_LAUNCH_FAILED: {self.trapped}")
        for kind, ev in self.log:
            if kind == "record":
                ev.done = True

    def event(self):
        return FakeEvent(self)

    def event_elapsed_time(self, start, end):
        """cuEventElapsedTime: both events recorded, the end one completed."""
        if start.time_ms is None or end.time_ms is None:
            raise FakeLaunchError("CUDA_ERROR_INVALID_HANDLE: an event was never recorded")
        if not end.done:
            raise FakeLaunchError("CUDA_ERROR_NOT_READY: the end event has not completed (synchronize it first)")
        return end.time_ms - start.time_ms

    # -- what tests read ----------------------------------------------------------------------------
    def kernel_launches(self, name=None):
        return [x for x in self.launches if x.api != "library" and (name is None or x.kernel == name)]


def _stream_class(gpu):
    class Stream(core.FakeStream):
        @classmethod
        def from_handle(cls, handle):
            return cls(gpu, handle)

        def __init__(self, g=gpu, handle=0):
            super().__init__(gpu, handle)

    return Stream
