"""Which GPU, if any, is here: a quiet probe through the CUDA driver API.

``gpu_info()`` asks ``cuda.bindings.driver`` directly (cuInit, cuDeviceGet, attributes) rather than
``numba.cuda.is_available()``, which prints warnings and initialises numba's own driver state. Any
failure (no driver library, no device, a driver too old) means "no usable GPU": it returns None and
never raises. ``require_blackwell()`` turns that into a clear error for ``backend="blackwell"``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = ["GpuInfo", "gpu_info", "require_gpu", "require_blackwell", "describe"]


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    max_shared_per_block_optin: int   # bytes of shared memory one block may opt in to
    total_memory: int                 # bytes
    driver_version: int               # e.g. 13000

    @property
    def arch(self) -> str:
        """``sm_XY`` of this device (without the ``a`` suffix)."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def is_blackwell_datacenter(self) -> bool:
        """True for compute capability 10.0 (B200/GB200), the target of the tcgen05 kernels."""
        return self.compute_capability == (10, 0)

    def __str__(self) -> str:
        return (f"{self.name} ({self.arch}, {self.sm_count} SMs, "
                f"{self.max_shared_per_block_optin} B opt-in smem/block, "
                f"{self.total_memory / 2**30:.0f} GiB)")


def _check(result):
    """cuda.bindings returns (err, *values); raise on a non-success code."""
    err, *values = result
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver error {err!r}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


@functools.lru_cache(maxsize=None)
def gpu_info(device: int = 0) -> GpuInfo | None:
    """Description of CUDA device ``device``, or None when no CUDA driver/GPU is usable. Never raises."""
    try:
        from cuda.bindings import driver as drv

        _check(drv.cuInit(0))
        count = _check(drv.cuDeviceGetCount())
        if not count or device >= count:
            return None
        dev = _check(drv.cuDeviceGet(device))
        raw = _check(drv.cuDeviceGetName(128, dev))
        name = bytes(raw).split(b"\x00", 1)[0].decode(errors="replace")
        A = drv.CUdevice_attribute

        def attr(a):
            return int(_check(drv.cuDeviceGetAttribute(a, dev)))

        return GpuInfo(
            index=device,
            name=name,
            compute_capability=(attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            sm_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            max_shared_per_block_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            total_memory=int(_check(drv.cuDeviceTotalMem(dev))),
            driver_version=int(_check(drv.cuDriverGetVersion())),
        )
    except Exception:  # no libcuda, no device, driver too old, ... : all mean "no usable GPU"
        return None


def describe(device: int = 0) -> str:
    """One line saying which GPU is here, or that there is none."""
    info = gpu_info(device)
    return "no CUDA GPU found" if info is None else str(info)


def require_gpu(min_cc: tuple[int, int] = (0, 0), device: int = 0) -> GpuInfo:
    """The GpuInfo of a usable GPU of compute capability >= ``min_cc``, or a RuntimeError."""
    info = gpu_info(device)
    if info is None:
        raise RuntimeError("no CUDA GPU found (no CUDA driver or no device is usable on this machine)")
    if info.compute_capability < tuple(min_cc):
        raise RuntimeError(f"found {info.name} ({info.arch}); this needs compute capability "
                           f"{min_cc[0]}.{min_cc[1]} or newer")
    return info


def require_blackwell(device: int = 0) -> GpuInfo:
    """The GpuInfo of a compute capability 10.0 GPU, or a RuntimeError that says what was found."""
    info = gpu_info(device)
    if info is None:
        raise RuntimeError("no CUDA GPU found; backend='blackwell' needs a compute capability 10.0 "
                           "GPU (B200). Use backend='emulator' to run on the CPU.")
    if info.compute_capability != (10, 0):
        raise RuntimeError(f"found {info.name} ({info.arch}); backend='blackwell' needs a compute "
                           f"capability 10.0 GPU (B200). Use backend='emulator' to run on the CPU.")
    return info
