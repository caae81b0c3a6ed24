"""Host runtime: the sm_100a build (PTX -> cubin -> SASS), GPU detection, the cluster-aware launcher
and TMA tensor maps.

    from gemm_kernels.runtime.build import build          # build(kernel, sig, arch="sm_100a") -> Build
    from gemm_kernels.runtime.device import gpu_info, require_blackwell
    from gemm_kernels.runtime.launch import launch
    from gemm_kernels.runtime.tensormap import TensorMap2D, encode_on_gpu

The package re-exports these names lazily, except the two that share a name with their module,
which it offers as ``build_kernel`` (= ``build.build``) and ``launch_kernel`` (= ``launch.launch``):
importing a submodule binds the package attribute of that name to the module, so ``runtime.build``
and ``runtime.launch`` are always the modules. Nothing here touches a CUDA driver at import time.
"""
from __future__ import annotations

import importlib

__all__ = [
    "ensure_numpy_compat",
    # build
    "Build", "build_kernel", "find_nvdisasm",
    # device
    "GpuInfo", "gpu_info", "require_blackwell", "require_gpu",
    # launch
    "launch_kernel", "prepare",
    # tensormap
    "TensorMap2D", "DeviceTensorMap", "encode_on_gpu",
]

_LAZY = {
    "Build": ("build", "Build"), "build_kernel": ("build", "build"),
    "find_nvdisasm": ("build", "find_nvdisasm"),
    "GpuInfo": ("device", "GpuInfo"), "gpu_info": ("device", "gpu_info"),
    "require_blackwell": ("device", "require_blackwell"), "require_gpu": ("device", "require_gpu"),
    "launch_kernel": ("launch", "launch"), "prepare": ("launch", "prepare"),
    "TensorMap2D": ("tensormap", "TensorMap2D"), "DeviceTensorMap": ("tensormap", "DeviceTensorMap"),
    "encode_on_gpu": ("tensormap", "encode_on_gpu"),
}


def ensure_numpy_compat() -> None:
    """numpy 2.5 removed ``np.row_stack``, which numba-cuda 0.30.4 still registers an overload for
    when its array support is first loaded. Restore it as an alias of ``np.vstack`` (a no-op on
    older numpy). Called before every compile in this package; harmless to call twice."""
    import numpy as np

    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


ensure_numpy_compat()


def __getattr__(name):
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    mod, attr = spec
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
