"""The fake ``cuda.bindings.driver`` calls our runtime makes: device query, kernel attributes and
``cuTensorMapEncodeTiled``. Each returns what the real binding returns (``(CUresult, *values)``) and
refuses, with the real error code, what the real driver refuses."""
from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

from cuda.bindings import driver as drv

from . import spec as S

OK = drv.CUresult.CUDA_SUCCESS
INVALID = drv.CUresult.CUDA_ERROR_INVALID_VALUE

_ELEMENT_BYTES = {"UINT8": 1, "UINT16": 2, "UINT32": 4, "INT32": 4, "UINT64": 8, "INT64": 8, "FLOAT16": 2,
                  "FLOAT32": 4, "FLOAT64": 8, "BFLOAT16": 2, "FLOAT32_FTZ": 4, "TFLOAT32": 4, "TFLOAT32_FTZ": 4}
MAGIC = b"FAKETMAP"


@dataclass(frozen=True)
class EncodedTensorMap:
    """What one cuTensorMapEncodeTiled call described (the fake's record of a CUtensorMap)."""

    index: int
    dtype: str           # e.g. "FLOAT16"
    element_bytes: int
    address: int
    dims: tuple          # innermost first, as the driver takes them
    strides: tuple       # bytes, rank - 1 entries
    box: tuple           # innermost first
    element_strides: tuple
    swizzle: str         # e.g. "CU_TENSOR_MAP_SWIZZLE_128B"
    swizzle_span: int

    @property
    def rows_cols(self):
        """(rows, cols) of a 2-D row-major matrix, and its box (rows, cols)."""
        return (self.dims[1], self.dims[0]), (self.box[1], self.box[0])

    def to_bytes(self) -> bytes:
        """The 128 bytes the fake puts where a real CUtensorMap's opaque bytes would be."""
        return (MAGIC + struct.pack("<Q", self.index)).ljust(S.TMAP_BYTES, b"\0")


def decode_index(raw: bytes) -> int | None:
    """The record index in 128 bytes written by the fake encoder, or None if they are not one."""
    if raw[:8] != MAGIC:
        return None
    return struct.unpack_from("<Q", raw, 8)[0]


class _TensorMapResult:
    """The CUtensorMap object the binding returns: ``getPtr()`` points at its 128 bytes."""

    def __init__(self, raw: bytes):
        self._buf = ctypes.create_string_buffer(raw, S.TMAP_BYTES)

    def getPtr(self):  # noqa: N802 - the binding's name
        return ctypes.addressof(self._buf)


class FakeDriver:
    """Bound to one FakeGpu: its device spec, memory and records."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.initialised = False

    # -- device query -----------------------------------------------------------------------------
    def cuInit(self, flags):  # noqa: N802
        self.initialised = True
        self.gpu.calls.append(("cuInit",))
        return (OK,)

    def _need_init(self):
        return None if self.initialised else drv.CUresult.CUDA_ERROR_NOT_INITIALIZED

    def cuDeviceGetCount(self):  # noqa: N802
        return (self._need_init() or OK, 1)

    def cuDeviceGet(self, ordinal):  # noqa: N802
        if self._need_init():
            return (self._need_init(), None)
        if ordinal != 0:
            return (drv.CUresult.CUDA_ERROR_INVALID_DEVICE, None)
        return (OK, 0)

    def cuDeviceGetName(self, length, dev):  # noqa: N802
        return (OK, self.gpu.spec.name.encode().ljust(length, b"\0")[:length])

    def cuDeviceGetAttribute(self, attr, dev):  # noqa: N802
        A = drv.CUdevice_attribute
        sp = self.gpu.spec
        values = {
            A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: sp.compute_capability[0],
            A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: sp.compute_capability[1],
            A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: sp.sm_count,
            A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: sp.max_shared_per_block_optin,
            A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: sp.l2_bytes,
        }
        if attr not in values:
            return (INVALID, 0)
        return (OK, values[attr])

    def cuDeviceTotalMem(self, dev):  # noqa: N802
        return (OK, self.gpu.spec.total_memory)

    def cuDriverGetVersion(self):  # noqa: N802
        return (OK, self.gpu.spec.driver_version)

    # -- kernel attributes --------------------------------------------------------------------------
    def cuKernelSetAttribute(self, attrib, value, kernel, device):  # noqa: N802
        """MAX_DYNAMIC_SHARED_SIZE_BYTES may not take static + dynamic shared memory past the
        per-block opt-in limit; the non-portable cluster flag is 0 or 1."""
        A = drv.CUfunction_attribute
        handle = self.gpu.kernel_handles.get(id(kernel))
        if handle is None:
            return (drv.CUresult.CUDA_ERROR_INVALID_HANDLE,)
        value = int(value)
        if attrib == A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            if value < 0 or handle.static_shared + value > self.gpu.spec.max_shared_per_block_optin:
                return (INVALID,)
            handle.max_dynamic_shared = value
        elif attrib == A.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
            if value not in (0, 1):
                return (INVALID,)
            handle.non_portable_cluster = bool(value)
        else:
            return (INVALID,)
        self.gpu.calls.append(("cuKernelSetAttribute", attrib.name, value, handle.name))
        return (OK,)

    # -- tensor maps ---------------------------------------------------------------------------------
    def cuTensorMapEncodeTiled(self, dtype, rank, address, dims, strides, box, element_strides, interleave,  # noqa: N802
                               swizzle, l2, oob):
        """The driver's rules for a tiled map with interleave NONE: rank 1..5; global address
        16-byte aligned; every global dim in 1..2^32; every stride a multiple of 16 below 2^40; every
        box dim in 1..256 and the inner box dim x element size a multiple of 16 bytes; element
        strides in 1..8; with a swizzle, the inner box dim x element size at most the swizzle span."""
        err = self._need_init()
        if err:
            return (err, None)
        name = dtype.name.replace("CU_TENSOR_MAP_DATA_TYPE_", "")
        why = None
        dims = tuple(int(d) for d in dims)
        strides = tuple(int(s) for s in strides)
        box = tuple(int(b) for b in box)
        estr = tuple(int(e) for e in element_strides)
        if name not in _ELEMENT_BYTES:
            why = f"data type {name} is not one the fake knows"
        elif not 1 <= int(rank) <= S.TMAP_MAX_RANK:
            why = f"rank {rank} is not in 1..{S.TMAP_MAX_RANK}"
        elif not (len(dims) == int(rank) and len(box) == int(rank) and len(estr) == int(rank)
                  and len(strides) == int(rank) - 1):
            why = (f"rank {rank} needs {rank} dims, box dims and element strides and {int(rank) - 1} strides; got "
                   f"{len(dims)}, {len(box)}, {len(estr)} and {len(strides)}")
        elif interleave != drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE:
            why = "the fake models interleave NONE only"
        elif int(address) % S.TMAP_GLOBAL_ALIGN:
            why = f"global address {int(address):#x} is not {S.TMAP_GLOBAL_ALIGN}-byte aligned"
        elif any(not 0 < d <= S.TMAP_MAX_DIM for d in dims):
            why = f"global dims {dims} must each be in 1..2^32"
        elif any(s % S.TMAP_STRIDE_MULTIPLE or not 0 < s < S.TMAP_MAX_STRIDE for s in strides):
            why = f"global strides {strides} must each be a multiple of 16 bytes below 2^40"
        elif any(not 0 < b <= S.TMAP_MAX_BOX for b in box):
            why = f"box dims {box} must each be in 1..{S.TMAP_MAX_BOX}"
        elif (box[0] * _ELEMENT_BYTES[name]) % 16:
            why = f"inner box dim {box[0]} x {_ELEMENT_BYTES[name]} B is not a multiple of 16 bytes"
        elif any(not 0 < e <= S.TMAP_MAX_ELEMENT_STRIDE for e in estr):
            why = f"element strides {estr} must each be in 1..{S.TMAP_MAX_ELEMENT_STRIDE}"
        elif swizzle.name not in S.TMAP_SWIZZLE_SPAN:
            why = f"swizzle {swizzle.name} is not one the fake models"
        elif S.TMAP_SWIZZLE_SPAN[swizzle.name] and box[0] * _ELEMENT_BYTES[name] > S.TMAP_SWIZZLE_SPAN[swizzle.name]:
            why = (f"inner box {box[0]} x {_ELEMENT_BYTES[name]} B is wider than the {swizzle.name} span of "
                   f"{S.TMAP_SWIZZLE_SPAN[swizzle.name]} B")
        if why:
            self.gpu.refusals.append(("cuTensorMapEncodeTiled", why))
            return (INVALID, None)
        rec = EncodedTensorMap(len(self.gpu.tensor_maps), name, _ELEMENT_BYTES[name], int(address), dims, strides,
                               box, estr, swizzle.name, S.TMAP_SWIZZLE_SPAN[swizzle.name])
        self.gpu.tensor_maps.append(rec)
        self.gpu.calls.append(("cuTensorMapEncodeTiled", rec.index))
        return (OK, _TensorMapResult(rec.to_bytes()))

    FUNCTIONS = ("cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
                 "cuDeviceTotalMem", "cuDriverGetVersion", "cuKernelSetAttribute", "cuTensorMapEncodeTiled")
