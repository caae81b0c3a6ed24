"""TMA tensor maps for 2-D row-major matrices: one description, validated once, encoded two ways.

:class:`TensorMap2D` says what a tensor map describes (element type, global shape, row stride, box,
swizzle) and checks the driver's rules when it is built, so a bad map is refused on every machine
with a ValueError that names the rule. On a GPU, :func:`encode_on_gpu` encodes it with
``cuTensorMapEncodeTiled`` and copies the 128-byte ``CUtensorMap`` into global memory: numba cannot
pass it by value as a ``__grid_constant__`` parameter, so the kernel gets its address as a uint64 and
must run ``fence.proxy.tensormap::generic.acquire.sys`` on it once per CTA before the first TMA.
The emulator decodes the same description with its own Python model.

Conventions: ``dims = (rows, cols)`` of a row-major matrix; the driver wants the innermost dimension
first, so ``globalDim = {cols, rows}``, ``globalStrides = {row_stride_bytes}``, ``boxDim =
{box_cols, box_rows}``, and TMA coordinates are ``{col, row}``.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

__all__ = ["TensorMap2D", "DeviceTensorMap", "encode", "encode_on_gpu", "SWIZZLE_BYTES", "DTYPES"]

#: swizzle mode -> span in bytes (0 = no swizzle)
SWIZZLE_BYTES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}

#: element type name -> (bytes per element, CUtensorMapDataType member name)
DTYPES = {
    "uint8": (1, "CU_TENSOR_MAP_DATA_TYPE_UINT8"),
    "int8": (1, "CU_TENSOR_MAP_DATA_TYPE_UINT8"),
    "uint16": (2, "CU_TENSOR_MAP_DATA_TYPE_UINT16"),
    "float16": (2, "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"),
    "bfloat16": (2, "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"),
    "uint32": (4, "CU_TENSOR_MAP_DATA_TYPE_UINT32"),
    "int32": (4, "CU_TENSOR_MAP_DATA_TYPE_INT32"),
    "float32": (4, "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"),
    "uint64": (8, "CU_TENSOR_MAP_DATA_TYPE_UINT64"),
    "int64": (8, "CU_TENSOR_MAP_DATA_TYPE_INT64"),
    "float64": (8, "CU_TENSOR_MAP_DATA_TYPE_FLOAT64"),
}

_L2 = {0: "CU_TENSOR_MAP_L2_PROMOTION_NONE", 64: "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
       128: "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", 256: "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"}

TENSORMAP_BYTES = 128
GLOBAL_ALIGN = 16          # driver rule for globalAddress (interleave NONE)
TENSORMAP_ALIGN = 128      # where we keep the encoded map (driver asks 64, cuda.h declares 128)


def _dtype_name(dtype) -> str:
    if isinstance(dtype, str):
        name = dtype
    else:
        import numpy as np

        name = np.dtype(dtype).name
    aliases = {"half": "float16", "f16": "float16", "fp16": "float16", "bf16": "bfloat16",
               "f32": "float32", "fp32": "float32", "float": "float32"}
    return aliases.get(name, name)


@dataclass(frozen=True)
class TensorMap2D:
    """A 2-D tiled TMA tensor map over a row-major matrix.

    dtype: element type (numpy dtype or name: "float16", "bfloat16", "float32", ...).
    dims: (rows, cols) of the global matrix, in elements.
    row_stride: bytes from one row to the next (``cols * itemsize`` for a dense matrix).
    box: (rows, cols) of the box one TMA moves, in elements.
    swizzle: "none", "32B", "64B" or "128B".
    l2_promotion: 0, 64, 128 or 256 (bytes). oob_nan: fill out-of-bounds with NaN instead of zero.
    """

    dtype: str
    dims: tuple
    row_stride: int
    box: tuple
    swizzle: str = "128B"
    l2_promotion: int = 256
    oob_nan: bool = False

    def __post_init__(self):
        name = _dtype_name(self.dtype)
        if name not in DTYPES:
            raise ValueError(f"tensor map dtype {self.dtype!r} not supported; one of {sorted(DTYPES)}")
        object.__setattr__(self, "dtype", name)
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
        object.__setattr__(self, "box", tuple(int(b) for b in self.box))
        object.__setattr__(self, "row_stride", int(self.row_stride))
        self.validate()

    @classmethod
    def for_matrix(cls, rows: int, cols: int, dtype, box, swizzle="128B", **kw) -> "TensorMap2D":
        """A map over a dense row-major [rows, cols] matrix."""
        itemsize = DTYPES[_dtype_name(dtype)][0]
        return cls(dtype, (rows, cols), cols * itemsize, box, swizzle, **kw)

    @classmethod
    def for_array(cls, array, box, swizzle="128B", **kw) -> "TensorMap2D":
        """A map over a 2-D array (numpy, numba device array, anything with shape/strides/dtype)
        whose rows are contiguous."""
        if len(array.shape) != 2:
            raise ValueError(f"tensor map needs a 2-D array, got shape {tuple(array.shape)}")
        rows, cols = array.shape
        itemsize = array.dtype.itemsize
        rs, cs = array.strides
        if cs != itemsize and cols > 1:
            raise ValueError(f"rows of the array are not contiguous (column stride {cs} B, element "
                             f"{itemsize} B): TMA needs a unit innermost stride")
        return cls(array.dtype, (rows, cols), rs, box, swizzle, **kw)

    # -- derived sizes ----------------------------------------------------------------------
    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype][0]

    @property
    def swizzle_bytes(self) -> int:
        return SWIZZLE_BYTES[self.swizzle]

    @property
    def box_inner_bytes(self) -> int:
        """Bytes of one box row (the innermost box dimension)."""
        return self.box[1] * self.itemsize

    @property
    def box_bytes(self) -> int:
        """Bytes one TMA load of a full box writes to shared memory (the expect_tx amount; out-of-bounds
        elements are filled and count too)."""
        return self.box[0] * self.box[1] * self.itemsize

    # -- the rules ----------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ValueError naming the first driver rule this description breaks."""
        if self.swizzle not in SWIZZLE_BYTES:
            raise ValueError(f"swizzle must be one of {list(SWIZZLE_BYTES)}, got {self.swizzle!r}")
        if len(self.dims) != 2 or len(self.box) != 2:
            raise ValueError(f"dims and box must be (rows, cols), got dims={self.dims} box={self.box}")
        rows, cols = self.dims
        brows, bcols = self.box
        if not (0 < rows <= 2**32 and 0 < cols <= 2**32):
            raise ValueError(f"global dims must be in 1..2^32, got {self.dims}")
        if self.row_stride % 16:
            raise ValueError(f"row stride must be a multiple of 16 bytes (16-byte aligned rows), got "
                             f"{self.row_stride} B; for {self.dtype} the row length must be a multiple "
                             f"of {16 // self.itemsize} elements or the rows padded")
        if rows > 1 and self.row_stride < cols * self.itemsize:
            raise ValueError(f"row stride {self.row_stride} B is less than a row of {cols} x "
                             f"{self.itemsize} B: rows would overlap")
        if self.row_stride >= 2**40:
            raise ValueError(f"row stride must be below 2^40 bytes, got {self.row_stride}")
        if not (1 <= brows <= 256 and 1 <= bcols <= 256):
            raise ValueError(f"box dims must be in 1..256 elements, got {self.box}")
        if self.box_inner_bytes % 16:
            raise ValueError(f"box inner dimension must be a multiple of 16 bytes: {bcols} x "
                             f"{self.itemsize} B = {self.box_inner_bytes} B")
        if self.swizzle_bytes and self.box_inner_bytes > self.swizzle_bytes:
            raise ValueError(f"box inner bytes must be <= the swizzle span: {bcols} x {self.itemsize} B "
                             f"= {self.box_inner_bytes} B > {self.swizzle} swizzle")
        if self.l2_promotion not in _L2:
            raise ValueError(f"l2_promotion must be one of {sorted(_L2)} bytes, got {self.l2_promotion}")

    def check_address(self, address: int) -> None:
        """Raise ValueError unless ``address`` (the matrix's base) meets the driver's alignment rule."""
        if int(address) % GLOBAL_ALIGN:
            raise ValueError(f"global base address must be {GLOBAL_ALIGN}-byte aligned, got "
                             f"{int(address):#x}")

    def smem_alignment(self) -> int:
        """Alignment the box's shared-memory destination needs: 1024 B with 128B swizzle (the swizzle
        pattern repeats every 8 rows of 128 B), else the swizzle span times 8, else 128 B."""
        return self.swizzle_bytes * 8 if self.swizzle_bytes else 128

    # -- driver arguments ---------------------------------------------------------------------
    def driver_args(self, address: int) -> tuple:
        """The arguments of ``cuTensorMapEncodeTiled`` for a matrix at ``address``."""
        from cuda.bindings import driver as drv

        self.check_address(address)
        rows, cols = self.dims
        brows, bcols = self.box
        u64, u32 = drv.cuuint64_t, drv.cuuint32_t
        sw = {"none": "CU_TENSOR_MAP_SWIZZLE_NONE", "32B": "CU_TENSOR_MAP_SWIZZLE_32B",
              "64B": "CU_TENSOR_MAP_SWIZZLE_64B", "128B": "CU_TENSOR_MAP_SWIZZLE_128B"}[self.swizzle]
        oob = ("CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA" if self.oob_nan
               else "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
        return (
            getattr(drv.CUtensorMapDataType, DTYPES[self.dtype][1]),
            2,
            int(address),
            [u64(cols), u64(rows)],
            [u64(self.row_stride)],
            [u32(bcols), u32(brows)],
            [u32(1), u32(1)],
            drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            getattr(drv.CUtensorMapSwizzle, sw),
            getattr(drv.CUtensorMapL2promotion, _L2[self.l2_promotion]),
            getattr(drv.CUtensorMapFloatOOBfill, oob),
        )


def _device_address(x) -> int:
    if isinstance(x, int):
        return x
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    for attr in ("device_ctypes_pointer", "ptr", "handle"):
        v = getattr(x, attr, None)
        if v is not None:
            return int(getattr(v, "value", v))
    raise TypeError(f"cannot find a device address in {x!r}")


def encode(desc: TensorMap2D, device_ptr) -> bytes:
    """The 128 bytes of the ``CUtensorMap`` for ``desc`` over the matrix at ``device_ptr`` (an int
    address or a device array). Needs a CUDA driver (and a GPU of compute capability >= 9.0)."""
    from cuda.bindings import driver as drv

    (err,) = drv.cuInit(0)
    if int(err) != 0:
        raise RuntimeError(f"cuInit failed: {err!r}")
    err, tm = drv.cuTensorMapEncodeTiled(*desc.driver_args(_device_address(device_ptr)))
    if int(err) != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed: {err!r} for {desc}")
    return ctypes.string_at(tm.getPtr(), TENSORMAP_BYTES)


class DeviceTensorMap:
    """An encoded tensor map living in global memory. Keeps its 128-byte device buffer (and the
    matrix it describes, if given) alive; pass ``.address`` (a uint64) to the kernel."""

    def __init__(self, desc: TensorMap2D, host_bytes: bytes, buffer, target=None):
        self.desc = desc
        self.host_bytes = host_bytes
        self._buffer = buffer
        self._target = target
        self.address = _device_address(buffer)
        if self.address % TENSORMAP_ALIGN:
            raise RuntimeError(f"tensor map buffer at {self.address:#x} is not {TENSORMAP_ALIGN}-byte aligned")

    def __int__(self) -> int:
        return self.address

    def __repr__(self) -> str:
        return f"DeviceTensorMap({self.desc}, address={self.address:#x})"


def encode_on_gpu(desc: TensorMap2D, device_ptr, *, stream=0) -> DeviceTensorMap:
    """Encode ``desc`` over the matrix at ``device_ptr`` and copy the 128-byte map into global memory
    (a numba device allocation in numba's context). Returns a :class:`DeviceTensorMap` owning that
    memory; its ``.address`` is what the kernel receives."""
    import numpy as np
    from numba import cuda

    from . import ensure_numpy_compat

    ensure_numpy_compat()
    cuda.current_context()  # make numba's (primary) context current before the driver call
    raw = encode(desc, device_ptr)
    buf = cuda.to_device(np.frombuffer(raw, dtype=np.uint8).copy(), stream=stream)
    target = None if isinstance(device_ptr, int) else device_ptr
    return DeviceTensorMap(desc, raw, buf, target)
