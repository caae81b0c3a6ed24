"""A fake ``cupy`` module for the benchmark's cuBLAS baseline: arrays on the fake GPU and
``matmul`` recorded as a cuBLAS launch (computed with numpy in fp32, rounded to the output type)."""
from __future__ import annotations

import sys
import types as pytypes

import numpy as np


class FakeCupyArray:
    def __init__(self, gpu, host: np.ndarray):
        self.gpu, self._a = gpu, host

    @property
    def T(self):  # noqa: N802 - numpy's name
        return FakeCupyArray(self.gpu, self._a.T)

    @property
    def shape(self):
        return self._a.shape

    @property
    def dtype(self):
        return self._a.dtype


def install(gpu, monkeypatch):
    cp = pytypes.ModuleType("cupy")
    cp.__version__ = "13.0.0+fake"
    cp.float16, cp.float32 = np.float16, np.float32
    cp.asarray = lambda a: FakeCupyArray(gpu, np.array(a))
    cp.empty = lambda shape, dtype=np.float32: FakeCupyArray(gpu, np.empty(shape, dtype))
    cp.asnumpy = lambda x: np.array(x._a)

    def matmul(a, b, out=None):
        if out is None:
            out = FakeCupyArray(gpu, np.empty((a.shape[0], b.shape[1]), a.dtype))
        if a.shape[1] != b.shape[0] or out.shape != (a.shape[0], b.shape[1]):
            raise ValueError(f"matmul: shapes {a.shape} @ {b.shape} -> {out.shape}")
        out._a[...] = (a._a.astype(np.float32) @ b._a.astype(np.float32)).astype(out.dtype)
        gpu.record_library_launch("cuBLAS gemm (cupy.matmul)", shape=(a.shape[0], b.shape[1], a.shape[1]),
                                  compute_type=gpu.cublas_compute_type)
        return out

    cp.matmul = matmul
    cp.cuda = pytypes.SimpleNamespace(Device=lambda i=0: pytypes.SimpleNamespace(synchronize=gpu.synchronize))
    core = pytypes.ModuleType("cupy._core")
    linalg = pytypes.ModuleType("cupy._core._routines_linalg")
    linalg.COMPUTE_TYPE_DEFAULT, linalg.COMPUTE_TYPE_FP32 = "default", "fp32"

    def set_compute_type(t):
        gpu.cublas_compute_type = t

    linalg.set_compute_type = set_compute_type
    core._routines_linalg = linalg
    cp._core = core
    for name, mod in (("cupy", cp), ("cupy._core", core), ("cupy._core._routines_linalg", linalg)):
        monkeypatch.setitem(sys.modules, name, mod)
