"""Copying a kernel's Python functions with some of the names they use rebound.

Two things need it: the emulator (``numba.cuda`` -> the emulator's CUDA surface, each PTX op -> its
Python twin) and the B200 build options of ``instrument`` (each PTX op -> a timed or guarded
wrapper). Both differ only in *what* a name is rebound to (``value``); this class does the copying.
The original functions are never touched, so every variant lives in one process."""
from __future__ import annotations

import types as pytypes


def is_dispatcher(obj):
    """A ``numba.cuda.jit`` kernel or device function (it carries its Python source as ``py_func``)."""
    return hasattr(obj, "py_func") and type(obj).__name__ in ("CUDADispatcher", "Dispatcher")


class FunctionRebinder:
    """Copies a function with its globals (the names its code reads) and its closure cells mapped
    through ``value``. Copies are cached, and registered before their globals are filled, so a
    function that refers to itself (or to a caller) reaches the copy."""

    def __init__(self):
        self._copies = {}

    def value(self, v):  # the rule: override in a subclass
        return v

    def function(self, fn):
        hit = self._copies.get(id(fn))
        if hit is not None and hit[0] is fn:
            return hit[1]
        new_globals = {"__name__": fn.__globals__.get("__name__"),
                       "__builtins__": fn.__globals__.get("__builtins__", __builtins__)}
        cells = None
        if fn.__closure__:
            cells = tuple(pytypes.CellType(self.value(c.cell_contents)) for c in fn.__closure__)
        new_fn = pytypes.FunctionType(fn.__code__, new_globals, fn.__name__, fn.__defaults__, cells)
        new_fn.__kwdefaults__ = fn.__kwdefaults__
        new_fn.__qualname__ = fn.__qualname__
        new_fn.__module__ = fn.__module__
        self._copies[id(fn)] = (fn, new_fn)
        for name in fn.__code__.co_names:
            if name in fn.__globals__:
                new_globals[name] = self.value(fn.__globals__[name])
        return new_fn
