"""Which GPU, if any, is here: a quiet probe through the CUDA driver API.

``probe_gpu()`` asks ``cuda.bindings.driver`` directly (cuInit, cuDeviceGet, attributes) rather than
``numba.cuda.is_available()``, which prints warnings and initialises numba's own driver state. It
tells "no GPU" (no driver library, or the driver says there is no device: None) from "a driver is
here but fails" (any other driver error: :class:`GpuProbeError` with the driver's own error name and
text), so that a broken driver on a B200 is reported, not mistaken for a machine without a GPU.
``gpu_info()`` is the quiet form (None for both, never raises); ``require_blackwell()`` turns its
answer into a clear error for ``backend="blackwell"``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = ["GpuInfo", "GpuProbeError", "gpu_info", "probe_gpu", "require_gpu", "require_blackwell", "describe"]


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


class GpuProbeError(RuntimeError):
    """A CUDA driver is installed but fails: the message holds the driver's error name and text."""


#: driver answers that mean "this machine has no usable GPU", not "the driver is broken"
_NO_GPU = ("CUDA_ERROR_NO_DEVICE",)


def _driver_error(drv, err, call):
    name = getattr(err, "name", str(err))
    try:
        res, text = drv.cuGetErrorString(err)
        text = bytes(text).decode(errors="replace") if int(res) == 0 and text else ""
    except Exception:  # noqa: BLE001 - the error text is a courtesy
        text = ""
    return GpuProbeError(f"{call} failed: {name}" + (f" ({text})" if text else ""))


class _NoDriver(Exception):
    """Internal: the driver says there is no GPU here."""


@functools.lru_cache(maxsize=None)
def probe_gpu(device: int = 0) -> GpuInfo | None:
    """Description of CUDA device ``device``; None when this machine has no GPU (no driver library,
    no device); GpuProbeError when the driver is there but a call fails."""
    try:
        from cuda.bindings import driver as drv
    except ImportError:
        return None

    def call(name, *args):
        try:
            err, *values = getattr(drv, name)(*args)
        except RuntimeError as e:  # cuda.pathfinder: libcuda is not installed at all
            if "NotFound" in type(e).__name__:
                raise _NoDriver from e
            raise GpuProbeError(f"{name} raised {type(e).__name__}: {e}") from e
        if int(err) != 0:
            if getattr(err, "name", "") in _NO_GPU:
                raise _NoDriver
            raise _driver_error(drv, err, name)
        return values[0] if len(values) == 1 else tuple(values)

    try:
        call("cuInit", 0)
        count = call("cuDeviceGetCount")
        if not count or device >= count:
            return None
        dev = call("cuDeviceGet", device)
        name = bytes(call("cuDeviceGetName", 128, dev)).split(b"\x00", 1)[0].decode(errors="replace")
        A = drv.CUdevice_attribute

        def attr(a):
            return int(call("cuDeviceGetAttribute", a, dev))

        return GpuInfo(
            index=device,
            name=name,
            compute_capability=(attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            sm_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            max_shared_per_block_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            total_memory=int(call("cuDeviceTotalMem", dev)),
            driver_version=int(call("cuDriverGetVersion")),
        )
    except _NoDriver:
        return None


@functools.lru_cache(maxsize=None)
def gpu_info(device: int = 0) -> GpuInfo | None:
    """Description of CUDA device ``device``, or None when no GPU is usable (none here, or a broken
    driver: ``probe_gpu`` tells which). Never raises."""
    try:
        return probe_gpu(device)
    except GpuProbeError:
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
