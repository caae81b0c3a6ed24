"""The part of ``numba.cuda`` that kernels use, answered for the running emulated thread.

The emulator rebinds the name ``cuda`` in a copy of each kernel's globals to ``EmuCuda()``, so
``cuda.threadIdx.x`` and ``cuda.shared.array(...)`` mean the same thing as on the GPU.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import types as nbtypes

from .context import thread as _thread


def _np_dtype(dtype):
    if isinstance(dtype, nbtypes.Type):
        return np.dtype(str(dtype))
    return np.dtype(dtype)


class _Dim3:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z


class _PerThread:
    def __init__(self, fn):
        self.fn = fn

    def __get__(self, obj, owner):
        return self.fn(_thread())


class _Shared:
    @staticmethod
    def array(shape, dtype, alignment=None):
        t = _thread()
        dt = _np_dtype(dtype)
        if shape == 0 or shape == (0,):
            return t.cta.smem.dynamic(dt, alignment)
        i = t.static_allocs
        t.static_allocs += 1
        return t.cta.smem.static(i, shape, dt, alignment)


class _Local:
    @staticmethod
    def array(shape, dtype):
        return np.zeros(shape, dtype=_np_dtype(dtype))


class EmuCuda:
    """Stands in for the ``numba.cuda`` module inside an emulated kernel."""

    threadIdx = _PerThread(lambda t: _Dim3(t.tid % t.launch.block[0],
                                           (t.tid // t.launch.block[0]) % t.launch.block[1],
                                           t.tid // (t.launch.block[0] * t.launch.block[1])))
    blockIdx = _PerThread(lambda t: _Dim3(*t.cta.block_index))
    blockDim = _PerThread(lambda t: _Dim3(*t.launch.block))
    gridDim = _PerThread(lambda t: _Dim3(*t.launch.grid))
    laneid = _PerThread(lambda t: t.lane)
    warpsize = 32
    shared = _Shared()
    local = _Local()

    @staticmethod
    def syncthreads():
        t = _thread()
        t.cta.named_barrier(0).arrive(t, len(t.cta.threads), wait=True)

    @staticmethod
    def syncwarp(mask=0xFFFFFFFF):
        t = _thread()
        t.warp.collective(t, "syncwarp", (), members=int(mask), same=False, action=t.warp.lanes_synced)

    @staticmethod
    def grid(ndim):
        t = _thread()
        x = t.cta.block_index[0] * t.launch.block[0] + t.tid % t.launch.block[0]
        if ndim == 1:
            return x
        y = t.cta.block_index[1] * t.launch.block[1] + (t.tid // t.launch.block[0]) % t.launch.block[1]
        return x, y

    atomic = SimpleNamespace(add=lambda arr, idx, val: _atomic_add(arr, idx, val))

    def __getattr__(self, name):
        raise AttributeError(f"the emulator does not model numba.cuda.{name}; only the subset the "
                             f"chapter kernels use (see gemm_kernels/emu/cuda_surface.py)")


def _atomic_add(arr, idx, val):
    old = arr[idx]
    arr[idx] = old + val
    return old
