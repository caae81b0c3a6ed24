"""Compile kernels that call device functions on a machine without a GPU.

numba-cuda 0.30.4 compiles a ``cuda.jit(device=True)`` function, when a kernel calls it, for the
compute capability of the *current device* (``CUDADispatcher.compile_device`` calls
``get_current_device()``), which fails without a CUDA driver. The kernel's own target comes from
``compile_ptx(cc=...)``, so during such a build we answer that question with the target's
compute capability. Private numba API: pinned by requirements.txt and covered by tests/test_build.py.
"""
from __future__ import annotations

import contextlib
from types import SimpleNamespace

from numba.cuda import dispatcher as _dispatcher


@contextlib.contextmanager
def target_device(cc):
    """Within the block, device functions compile for compute capability ``cc[:2]``."""
    original = _dispatcher.get_current_device
    fake = SimpleNamespace(compute_capability=tuple(cc[:2]))
    _dispatcher.get_current_device = lambda: fake
    try:
        yield
    finally:
        _dispatcher.get_current_device = original
