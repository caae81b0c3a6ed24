"""The fake GPU under numba-cuda: device arrays, events, synchronisation, and a dispatcher's compile
and ``kernel[grid, block](...)`` launch, routed to the FakeGpu instead of a CUDA driver.

``compile`` returns an object with what ``gemm_kernels.runtime.launch`` uses of numba's ``_Kernel``
(``argument_types``, ``_codelibrary.get_cufunc()``, ``_prepare_args``). ``_prepare_args`` checks
each value against the type the kernel was compiled for, as numba's would fail to convert it."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import types

from .core import KernelHandle
from .memory import FakeDeviceArray, FakeMappedArray


class FakeCompiledKernel:
    def __init__(self, gpu, dispatcher, argtypes, handle: KernelHandle):
        from .core import FakeCoreKernel

        self.gpu, self.dispatcher = gpu, dispatcher
        self.argument_types = tuple(argtypes)
        cufunc = SimpleNamespace(kernel=FakeCoreKernel(gpu, handle), handle=handle, device=SimpleNamespace(id=0),
                                 attrs=SimpleNamespace(regs=handle.registers, shared=handle.static_shared,
                                                       local=handle.local))
        self._codelibrary = SimpleNamespace(get_cufunc=lambda: cufunc)

    def _prepare_args(self, ty, val, stream, retr, kernelargs):
        """Append the value the kernel receives for parameter type ``ty``: a device array (host
        numpy arrays are copied in and, after the launch, back, as numba does) or a scalar."""
        if isinstance(ty, types.Array):
            if isinstance(val, np.ndarray) and not isinstance(val, FakeMappedArray):
                dev = self.gpu.to_device(val)
                retr.append(lambda dev=dev, host=val: dev.copy_to_host(host))
                val = dev
            if not isinstance(val, (FakeDeviceArray, FakeMappedArray)):
                raise TypeError(f"parameter of type {ty} got {type(val).__name__}, not a device array")
            if np.dtype(val.dtype) != np.dtype(str(ty.dtype)) or val.ndim != ty.ndim:
                raise TypeError(f"parameter of type {ty} got a {val.ndim}-D {val.dtype} array")
            kernelargs.append(val)
        elif isinstance(ty, types.Integer):
            v = int(val)
            lo, hi = (-(1 << (ty.bitwidth - 1)), (1 << (ty.bitwidth - 1)) - 1) if ty.signed else (0, (1 << ty.bitwidth) - 1)
            if not lo <= v <= hi:
                raise OverflowError(f"{v} does not fit parameter type {ty}")
            kernelargs.append(v)
        else:
            kernelargs.append(val)


def install(gpu, monkeypatch):
    """Route numba-cuda's driver-facing calls to ``gpu``."""
    import numba.cuda as nbcuda
    from numba.cuda.cudadrv import driver as nbdrv
    from numba.cuda.dispatcher import CUDADispatcher

    from .core import FakeStream

    def compile(dispatcher, sig):  # noqa: A001 - numba's name
        return gpu.compile(dispatcher, tuple(sig))

    def call(dispatcher, args, config):  # numba-cuda 0.30: config has griddim, blockdim, stream, sharedmem
        gpu.launch_numba(dispatcher, args, config.griddim, config.blockdim, config.sharedmem)

    monkeypatch.setattr(CUDADispatcher, "compile", compile)
    monkeypatch.setattr(CUDADispatcher, "call", call)
    monkeypatch.setattr(nbdrv, "_to_core_stream", lambda s: s if isinstance(s, FakeStream) else FakeStream(gpu, 0))
    funcs = {
        "to_device": lambda ary, stream=0, copy=True, to=None: gpu.to_device(ary),
        "device_array": lambda shape, dtype=np.float64, strides=None, order="C", stream=0: FakeDeviceArray(
            gpu.memory, shape, dtype),
        "mapped_array": gpu.mapped_array,
        "synchronize": gpu.synchronize,
        "event": lambda timing=True: gpu.event(),
        "event_elapsed_time": gpu.event_elapsed_time,
        "current_context": lambda devnum=None: SimpleNamespace(device=SimpleNamespace(id=0)),
    }
    for name, fn in funcs.items():
        monkeypatch.setattr(nbcuda, name, fn)
