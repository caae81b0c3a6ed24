"""Turn a kernel's Python source into its emulated twin, without touching the original.

The copy of each function (``gemm_kernels.rebinding``) gets new globals and closure cells in which
* the module ``numba.cuda`` is replaced by the emulator's ``EmuCuda``;
* every PTX op of ``gemm_kernels.ptx`` is replaced by its Python twin;
* every Numba CUDA device function is replaced by its own emulated copy (recursively);
* modules are replaced by proxies that apply the same rules to their attributes.
Nothing process-wide changes: the GPU path and the emulator live side by side.
"""
from __future__ import annotations

import types as pytypes

from numba import cuda as _numba_cuda
from numba.cuda.extending import _Intrinsic

from ..rebinding import FunctionRebinder
from ..rebinding import is_dispatcher as _is_dispatcher
from .cuda_surface import EmuCuda
from .source import mark_helper

_EMU_CUDA = EmuCuda()


def _missing_twin(op):
    def fail(*args, **kwargs):
        raise NotImplementedError(f"PTX op {op._name} has no emulator twin")

    return fail


class _ModuleProxy:
    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        value = emulated(getattr(self._module, name))
        setattr(self, name, value)
        return value


class _EmulatorRebinder(FunctionRebinder):
    kernel_file = None  # the file of the kernel being rebound (its own device functions are kernel code)

    def value(self, obj):
        if obj is _numba_cuda:
            return _EMU_CUDA
        if isinstance(obj, _Intrinsic):
            tw = getattr(obj, "twin", None)
            return tw if tw is not None else _missing_twin(obj)
        if _is_dispatcher(obj):
            code = obj.py_func.__code__
            if code.co_filename != self.kernel_file:  # a device function of another module: a shared helper
                mark_helper(code)
            return self.function(obj.py_func)
        if isinstance(obj, pytypes.FunctionType):
            if obj.__module__ and obj.__module__.startswith(("numpy", "numba")):
                return obj
            return self.function(obj)
        if isinstance(obj, pytypes.ModuleType):
            if obj.__name__.startswith("numba") and obj is not _numba_cuda:
                return obj
            return _ModuleProxy(obj)
        return obj


_REBINDER = _EmulatorRebinder()


def emulated(obj):
    """The emulator's stand-in for a global value seen by a kernel."""
    return _REBINDER.value(obj)


def emulate_function(fn):
    """A copy of ``fn`` whose globals and closure follow the rules above (cached)."""
    return _REBINDER.function(fn)


def kernel_function(kernel):
    """The emulated Python function of a ``cuda.jit`` kernel (or of a plain Python function)."""
    fn = kernel.py_func if _is_dispatcher(kernel) else kernel
    _REBINDER.kernel_file = fn.__code__.co_filename
    return emulate_function(fn)
