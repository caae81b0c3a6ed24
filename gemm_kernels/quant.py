"""Host quantisation for step 11: FP8 (e4m3, e5m2) and block-scaled MXFP8 and NVFP4 operands.

The number formats come from ``ml_dtypes`` (float8_e4m3fn, float8_e5m2, float4_e2m1fn,
float8_e8m0fnu), not from bit twiddling here: rounding, saturation and NaN follow that library, and
``tests/test_quant.py`` checks its decoding of every code against the formats' definitions.

``quantize(x, fmt)`` turns an (M, K) float array into a ``Quantized``: the element codes as the
tensor core reads them from memory (one byte per element; NVFP4 packs two E2M1 codes per byte, the
element of even k in the low nibble), the scale factors in the plain (M, K / block) layout, and the
same scale factors in the packed layout the tensor core's ``tcgen05.cp`` copies from shared memory
(``sf_offset`` below). ``dequantize`` inverts it: values times their block's scale, in float32.

Formats (``FORMATS``):

* ``e4m3``, ``e5m2``: one FP8 code per element, no scale factor (kind::f8f6f4). Values beyond the
  format's largest finite value saturate to it (the host's choice: an overflow to NaN, which
  ml_dtypes' plain cast gives for e4m3, would poison every dot product it enters).
* ``mxfp8``: e4m3 elements, one UE8M0 scale (a power of two) per 32 elements of K (OCP MX v1.0;
  kind::mxf8f6f4, ``.block32``). The scale is 2**(floor(log2(amax)) - 8), 8 being e4m3's largest
  exponent, so the block's largest element lands in e4m3's top binade; elements saturate at 448.
* ``nvfp4``: E2M1 elements, one UE4M3 scale per 16 elements of K (kind::mxf4nvf4, ``.block16``),
  and one float32 scale for the whole tensor, ``global_scale`` = amax(x) / (6 * 448), so that the
  block scales use UE4M3's whole range whatever the tensor's magnitude (NVIDIA's two-level NVFP4
  recipe). A block's scale is amax_block / (6 * global_scale) rounded to e4m3 (6 is E2M1's largest
  value), clipped to e4m3's positive range [2**-9, 448]; elements saturate at 6. UE4M3 is e4m3
  with the sign bit zero (ml_dtypes.float8_e4m3fn holding positive values). The tensor core applies
  the block scales only: a kernel multiplies D by the two operands' global scales.

An all-zero block gets the scale 1.0. Padding of the packed layout (rows past M up to a multiple
of 128, scale columns past K / block up to a multiple of 4) holds the code of 1.0, so a padded
zero element times its scale stays 0 (0xFF, the poison of uninitialised memory, is NaN in UE8M0).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

#: format -> (element dtype, scale dtype or None, elements per scale factor or None)
FORMATS = {
    "e4m3": (ml_dtypes.float8_e4m3fn, None, None),
    "e5m2": (ml_dtypes.float8_e5m2, None, None),
    "mxfp8": (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, 32),
    "nvfp4": (ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn, 16),
}
#: the tensor core's scale-factor atom: 128 rows (M or N) x 4 scale factors along K, 512 bytes
SF_ATOM_ROWS = 128
SF_ATOM_COLS = 4
SF_ATOM_BYTES = SF_ATOM_ROWS * SF_ATOM_COLS
#: largest exponent of an e4m3 normal number (448 = 1.75 * 2**8): MX's emax_elem for FP8 E4M3
_E4M3_EMAX = 8


def element_max(fmt):
    """The largest finite value of ``fmt``'s element type."""
    return float(ml_dtypes.finfo(_spec(fmt)[0]).max)


def _spec(fmt):
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: the formats are {list(FORMATS)}")
    return FORMATS[fmt]


@dataclass(frozen=True)
class Quantized:
    """An (M, K) operand in ``fmt``. ``codes``: uint8, (M, K) (one code per byte) or (M, K // 2)
    for nvfp4 (two codes per byte, even k in the low nibble). ``values``: the elements as
    ml_dtypes values, (M, K). ``scales``: (M, K // block) in the scale dtype, or None.
    ``scales_packed``: uint8, the tensor core's layout (see ``pack_scales``), or None.
    ``global_scale``: nvfp4's per-tensor float32 scale (1.0 for the other formats)."""
    fmt: str
    codes: np.ndarray
    values: np.ndarray
    scales: np.ndarray | None
    scales_packed: np.ndarray | None
    global_scale: float = 1.0

    @property
    def block(self):
        return FORMATS[self.fmt][2]

    @property
    def shape(self):
        return self.values.shape


def _check_input(x, fmt):
    _spec(fmt)
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"quantize takes a 2-D (M, K) array, got shape {x.shape}: reshape it to rows x K")
    if x.dtype.kind != "f":
        raise ValueError(f"quantize takes a floating-point array, got dtype {x.dtype}: convert it with "
                         ".astype(np.float32)")
    if x.size == 0:
        raise ValueError(f"quantize got an empty array of shape {x.shape}: M and K must be at least 1")
    x = x.astype(np.float32)
    if not np.isfinite(x).all():
        raise ValueError("quantize got NaN or infinite values: the formats' scales are computed from each "
                         "block's largest magnitude, so replace them first (np.nan_to_num)")
    block = FORMATS[fmt][2]
    if block and x.shape[1] % block:
        raise ValueError(f"K = {x.shape[1]} is not a multiple of {fmt}'s scale block of {block} elements: "
                         f"pad K to a multiple of {block} with zeros")
    return x


def _block_amax(x, block):
    m, k = x.shape
    return np.abs(x).reshape(m, k // block, block).max(axis=2)


def _global_scale(x, fmt):
    """nvfp4's per-tensor scale: the tensor's largest magnitude maps to E2M1's 6 times UE4M3's 448."""
    if fmt != "nvfp4":
        return 1.0
    amax = float(np.abs(x).max())
    return float(np.float32(amax / (element_max(fmt) * 448.0))) if amax > 0 else 1.0


def _scales(x, fmt):
    """The scale factor of every block, in the scale dtype, (M, K // block)."""
    _, sdtype, block = FORMATS[fmt]
    amax = _block_amax(x, block)
    if fmt == "mxfp8":
        exp = np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - _E4M3_EMAX
        exp = np.clip(exp, -127, 127)
        s = np.where(amax > 0, np.exp2(exp), 1.0)
    else:  # nvfp4: amax / 6 in e4m3, inside e4m3's positive range
        tiny = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).smallest_subnormal)
        s = np.where(amax > 0, np.clip(amax / element_max(fmt), tiny, 448.0), 1.0)
    return s.astype(np.float32).astype(sdtype)


def _to_elements(x, edtype):
    """``x`` cast to ``edtype`` with saturation at its largest finite value."""
    top = float(ml_dtypes.finfo(edtype).max)
    return np.clip(x, -top, top).astype(edtype)


def codes_of(values):
    """The bit patterns of an ml_dtypes array, as uint8 (4-bit formats: the low nibble)."""
    return values.view(np.uint8).copy()


def pack_nibbles(codes):
    """(M, K) 4-bit codes -> (M, K // 2) bytes, element 2j in the low nibble of byte j."""
    if codes.shape[1] % 2:
        raise ValueError(f"K = {codes.shape[1]} is odd: 4-bit elements pack two per byte")
    return (codes[:, 0::2] & 0xF) | ((codes[:, 1::2] & 0xF) << 4)


def unpack_nibbles(packed):
    """Inverse of ``pack_nibbles``."""
    out = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.uint8)
    out[:, 0::2] = packed & 0xF
    out[:, 1::2] = packed >> 4
    return out


def sf_offset(row, sf_col, sf_cols):
    """Byte offset of scale factor (row, sf_col) in the packed layout of an operand with ``sf_cols``
    scale factors per row. The layout is a grid of 512-byte atoms, atoms along K first: atom
    (row // 128, sf_col // 4) is number (row // 128) * ceil(sf_cols / 4) + sf_col // 4; inside an
    atom, row r = 32 * i + j (j < 32) and scale column c sit at 16 * j + 4 * i + c. So one 16-byte
    row of an atom holds rows j, j + 32, j + 64, j + 96, four scale factors each: the 32 lanes x
    128 bits that ``tcgen05.cp .32x128b.warpx4`` copies into TMEM (lane j, column i, byte c).
    Accepts numpy integer arrays."""
    row = np.asarray(row, dtype=np.int64)
    sf_col = np.asarray(sf_col, dtype=np.int64)
    atoms_k = -(-int(sf_cols) // SF_ATOM_COLS)
    r = row % SF_ATOM_ROWS
    atom = (row // SF_ATOM_ROWS) * atoms_k + sf_col // SF_ATOM_COLS
    return atom * SF_ATOM_BYTES + 16 * (r % 32) + 4 * (r // 32) + sf_col % SF_ATOM_COLS


def packed_size(rows, sf_cols):
    """Bytes of the packed layout: whole atoms, rows up to a multiple of 128, columns of 4."""
    return -(-rows // SF_ATOM_ROWS) * -(-sf_cols // SF_ATOM_COLS) * SF_ATOM_BYTES


def pack_scales(scales):
    """(rows, sf_cols) scale factors (an ml_dtypes array) -> uint8 bytes in the packed layout,
    padding holding the code of 1.0."""
    rows, cols = scales.shape
    one = codes_of(np.array([1.0], dtype=np.float32).astype(scales.dtype))[0]
    out = np.full(packed_size(rows, cols), one, dtype=np.uint8)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    out[sf_offset(r, c, cols)] = codes_of(scales)
    return out


def unpack_scales(packed, rows, sf_cols, dtype):
    """Inverse of ``pack_scales``: the (rows, sf_cols) scale factors as ``dtype``."""
    packed = np.asarray(packed, dtype=np.uint8)
    if packed.size != packed_size(rows, sf_cols):
        raise ValueError(f"packed scale factors hold {packed.size} bytes, a ({rows}, {sf_cols}) scale "
                         f"matrix packs into {packed_size(rows, sf_cols)}")
    r, c = np.meshgrid(np.arange(rows), np.arange(sf_cols), indexing="ij")
    return packed[sf_offset(r, c, sf_cols)].view(dtype)


def quantize(x, fmt):
    """``x`` (M, K, float) in ``fmt`` (one of ``FORMATS``): a ``Quantized``. Raises ValueError for
    a non-2-D or non-float array, NaN/inf, an unknown format, or K not a multiple of the block."""
    x = _check_input(x, fmt)
    edtype, sdtype, block = FORMATS[fmt]
    if block is None:
        values = _to_elements(x, edtype)
        return Quantized(fmt, codes_of(values), values, None, None)
    g = _global_scale(x, fmt)
    x = (x / np.float32(g)).astype(np.float32)
    scales = _scales(x, fmt)
    expanded = np.repeat(scales.astype(np.float32), block, axis=1)
    values = _to_elements(x / expanded, edtype)
    codes = codes_of(values)
    if fmt == "nvfp4":
        codes = pack_nibbles(codes)
    return Quantized(fmt, codes, values, scales, pack_scales(scales), g)


def dequantize(q, *, with_global=True):
    """The float32 (M, K) matrix ``q`` stands for: each element times its block's scale factor and,
    unless ``with_global`` is False, the per-tensor scale (what the tensor core computes with: its
    A x B lacks the two global scales)."""
    if not isinstance(q, Quantized):
        raise ValueError(f"dequantize takes a Quantized (from quantize), got {type(q).__name__}")
    v = q.values.astype(np.float32)
    if q.scales is not None:
        v = v * np.repeat(q.scales.astype(np.float32), q.block, axis=1)
    return v * np.float32(q.global_scale) if with_global and q.global_scale != 1.0 else v


def from_codes(codes, fmt, k=None):
    """The element values of raw codes as stored in memory (nvfp4: packed bytes, ``k`` elements
    per row), as float32: how the tensor core decodes what it reads."""
    edtype = _spec(fmt)[0]
    codes = np.asarray(codes, dtype=np.uint8)
    if fmt == "nvfp4":
        codes = unpack_nibbles(codes)
        if k is not None:
            codes = codes[:, :k]
    return codes.view(edtype).astype(np.float32)


#: (A format, B format) -> the tcgen05.mma kind that multiplies them
KINDS = {**{(a, b): "f8f6f4" for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")},
         ("mxfp8", "mxfp8"): "mxf8f6f4", ("nvfp4", "nvfp4"): "mxf4nvf4"}


def check_pair(qa, qb):
    """The checks a step-11 kernel makes before launch, with what to change: two ``Quantized``
    operands of one K, a format pair one tensor-core kind multiplies, scale factors of the shape,
    dtype and packed size their format needs. Returns (kind, M, N, K)."""
    for name, q in (("A", qa), ("B", qb)):
        if not isinstance(q, Quantized):
            raise ValueError(f"{name} must be a Quantized operand (gemm_kernels.quant.quantize(x, fmt)), got "
                             f"{type(q).__name__}")
    kind = KINDS.get((qa.fmt, qb.fmt))
    if kind is None:
        raise ValueError(f"A in {qa.fmt} and B in {qb.fmt}: the tensor core multiplies FP8 by FP8 (e4m3/e5m2, any "
                         f"mix), MXFP8 by MXFP8 or NVFP4 by NVFP4; quantize both operands to one of these pairs")
    (m, k), (n, kb) = qa.shape, qb.shape
    if k != kb:
        raise ValueError(f"A has K = {k} and B has K = {kb}: both operands are (rows, K) with the same K")
    for name, q, rows in (("A", qa, m), ("B", qb, n)):
        edtype, sdtype, block = FORMATS[q.fmt]
        packed_k = k // 2 if q.fmt == "nvfp4" else k
        if q.codes.dtype != np.uint8 or q.codes.shape != (rows, packed_k):
            raise ValueError(f"{name}'s codes must be uint8 of shape ({rows}, {packed_k}) for {q.fmt}; got "
                             f"{q.codes.dtype} {q.codes.shape}")
        if block is None:
            continue
        if k % block:
            raise ValueError(f"K = {k} is not a multiple of {q.fmt}'s scale block of {block}: pad K with zeros")
        if q.scales is None or q.scales.dtype != sdtype or q.scales.shape != (rows, k // block):
            got = None if q.scales is None else f"{q.scales.dtype} {q.scales.shape}"
            raise ValueError(f"{name}'s scale factors must be {np.dtype(sdtype).name} of shape ({rows}, {k // block}) "
                             f"(one per {block} elements of K); got {got}")
        size = packed_size(rows, k // block)
        if q.scales_packed is None or q.scales_packed.dtype != np.uint8 or q.scales_packed.size != size:
            got = None if q.scales_packed is None else f"{q.scales_packed.dtype} of {q.scales_packed.size} bytes"
            raise ValueError(f"{name}'s packed scale factors must be {size} bytes of uint8 (pack_scales of the "
                             f"({rows}, {k // block}) scales); got {got}")
    return kind, m, n, k


def instr_desc(qa, qb, m, n, *, cta_group=1, sfa_id=0, sfb_id=0):
    """The instruction descriptor of the MMA that multiplies ``qa`` by ``qb`` (check_pair's kind),
    M x N, F32 accumulator."""
    from . import layouts

    kind = check_pair(qa, qb)[0]
    if kind == "f8f6f4":
        return layouts.make_instr_desc_f8f6f4(m, n, a_dtype=qa.fmt, b_dtype=qb.fmt, cta_group=cta_group)
    element = "e4m3" if kind == "mxf8f6f4" else "e2m1"
    scale = "ue8m0" if kind == "mxf8f6f4" else "ue4m3"
    return layouts.make_instr_desc_block_scaled(m, n, kind=kind, a_dtype=element, b_dtype=element, scale_dtype=scale,
                                                sfa_id=sfa_id, sfb_id=sfb_id, cta_group=cta_group)
