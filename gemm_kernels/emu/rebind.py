"""Turn a kernel's Python source into its emulated twin, without touching the original.

The copy of each function gets new globals (and closure cells) in which
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

from .cuda_surface import EmuCuda

_EMU_CUDA = EmuCuda()
_cache: dict = {}


def _is_dispatcher(obj):
    return hasattr(obj, "py_func") and type(obj).__name__ in ("CUDADispatcher", "Dispatcher")


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


def emulated(obj):
    """The emulator's stand-in for a global value seen by a kernel."""
    if obj is _numba_cuda:
        return _EMU_CUDA
    if isinstance(obj, _Intrinsic):
        tw = getattr(obj, "twin", None)
        return tw if tw is not None else _missing_twin(obj)
    if _is_dispatcher(obj):
        return emulate_function(obj.py_func)
    if isinstance(obj, pytypes.FunctionType):
        return emulate_function(obj)
    if isinstance(obj, pytypes.ModuleType):
        if obj.__name__.startswith("numba") and obj is not _numba_cuda:
            return obj
        return _ModuleProxy(obj)
    return obj


def emulate_function(fn):
    """A copy of ``fn`` whose globals and closure follow the rules above (cached)."""
    key = id(fn)
    hit = _cache.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    if fn.__module__ and (fn.__module__.startswith("numpy") or fn.__module__.startswith("numba")):
        return fn
    new_globals = {}
    cells = None
    if fn.__closure__:
        cells = tuple(pytypes.CellType(emulated(c.cell_contents)) for c in fn.__closure__)
    new_fn = pytypes.FunctionType(fn.__code__, new_globals, fn.__name__, fn.__defaults__, cells)
    _cache[key] = (fn, new_fn)  # before filling the globals: recursive device functions
    for name in fn.__code__.co_names:
        if name in fn.__globals__:
            new_globals[name] = emulated(fn.__globals__[name])
    new_globals["__builtins__"] = fn.__globals__.get("__builtins__", __builtins__)
    new_fn.__kwdefaults__ = fn.__kwdefaults__
    new_fn.__qualname__ = fn.__qualname__
    new_fn.__emulated_from__ = fn
    return new_fn


def kernel_function(kernel):
    """The emulated Python function of a ``cuda.jit`` kernel (or of a plain Python function)."""
    fn = kernel.py_func if _is_dispatcher(kernel) else kernel
    return emulate_function(fn)
