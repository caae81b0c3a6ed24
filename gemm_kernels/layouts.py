"""Bit layouts the kernels compute and the hardware reads: the shared-memory swizzles, the
tcgen05 instruction descriptor, the shared-memory matrix descriptor, TMEM addresses.

Every layout is written once, as a ``*_raw`` core: plain unsigned integer arithmetic, no Python
objects, no exceptions. Each core is usable three ways:

* **host code** calls the validated wrapper (``make_smem_desc``, ``make_instr_desc``, ``swizzle``,
  ``tmem_addr``, ...). It checks its arguments, raises ValueError naming the rule that was broken,
  then calls the core and returns a Python ``int``;
* **kernels** call the device function ``<name>_dev`` (``numba.cuda.jit(device=True)`` of the
  core), which takes and returns Numba integers (uint32 or uint64) and never raises;
* **the emulator** runs a device function's ``.py_func`` (the core itself), which returns numpy
  ``uint32``/``uint64`` scalars with the same bits as on the GPU.

Names, host API -> device function (all in this module; the raw core is ``<device name>`` with
``_dev`` replaced by ``_raw``):

    swizzle(off, mode)                      -> swizzle_dev(off, row_mask)
    swizzle_128b(off)                       -> swizzle_128b_dev(off)
    tile_offset_k_major_sw128(r, c, eb=2)   -> tile_offset_k_major_sw128_dev(r, c, eb)
    make_instr_desc(m, n, ...)              -> instr_desc_dev(m, n, a_fmt, b_fmt, d_fmt, a_mn, b_mn)
    make_smem_desc(addr, lbo=, sbo=, ...)   -> smem_desc_dev(addr, lbo, sbo, swizzle_code, base_offset=0)
    (128B swizzle, K-major, LBO 16 B)       -> smem_desc_sw128_kmajor_dev(addr, sbo_bytes)
    smem_desc_advance_k(desc, delta)        -> smem_desc_advance_k_dev(desc, delta)
    tmem_addr(base, lane, col)              -> tmem_addr_dev(base, lane, col)
    tmem_lane(addr), tmem_col(addr)         -> tmem_lane_dev(addr), tmem_col_dev(addr)
    tmem_warp_lane_base(warp)               -> tmem_warp_lane_base_dev(warp)
    tmem_warp_addr(base, warp, col)         -> tmem_warp_addr_dev(base, warp, col)

Numba trap: mixing an unsigned and a signed 64-bit integer (``uint64 + int64``) gives a float or a
signed result depending on the version. The cores therefore cast every input and every constant to
one unsigned type (``numba.uint32`` for swizzled offsets, instruction descriptors and TMEM
addresses, ``numba.uint64`` for matrix descriptors) before doing arithmetic, and the 32-bit cores
cast their result back to uint32 (Numba widens uint32 arithmetic to uint64). The cores are
``register_jitable``, so one core may call another from device code too.

Sources: PTX ISA 9.7.16.4.1 (matrix descriptor), 9.7.16.4.2 (instruction descriptor, kind::f16),
9.7.16.2.1 (MMA shapes), 5.5.7 (swizzling modes), 9.7.16.1.1 (TMEM addresses); CuTe's
``Swizzle<B,M,S>`` (cute/swizzle.hpp) for the address form of the swizzles. The book's references
list these; CUTLASS is used as an independent oracle in tests/test_layouts_cutlass.py.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import cuda
from numba.extending import register_jitable

# -- encodings -----------------------------------------------------------------------------------
#: matrix-descriptor layout/swizzle field (bits 61-63) on sm_100
SWIZZLE_CODES = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
SWIZZLE_NAMES = {v: k for k, v in SWIZZLE_CODES.items()}
#: swizzle mode -> mask of the row bits XOR-ed into the 16-byte chunk bits. CuTe writes the modes
#: as Swizzle<B, M=4, S=3>: 128B = Swizzle<3,4,3>, 64B = Swizzle<2,4,3>, 32B = Swizzle<1,4,3>
#: (cute/swizzle.hpp; cute/arch/mma_sm100_desc.hpp maps them to the SWIZZLE_* layout types).
#: Swizzle<B,4,3> XORs address bits [7, 7+B) into bits [4, 4+B), so the mask is 2**B - 1.
SWIZZLE_ROW_MASKS = {"none": 0, "32B": 1, "64B": 3, "128B": 7}
#: the span in bytes of one swizzled row, and the repeat of the pattern (8 rows)
SWIZZLE_SPAN_BYTES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
DTYPE_CODES = {"f16": 0, "bf16": 1}  # instruction descriptor A/B format, kind::f16
ACC_CODES = {"f16": 0, "f32": 1}  # instruction descriptor D format, kind::f16
MAJOR_CODES = {"K": 0, "MN": 1}  # transpose bits 15 (A) and 16 (B)

TMEM_LANES = 128
TMEM_COLUMNS = 512

_U32_MAX = (1 << 32) - 1


# ================================================================================================
# Raw cores: unsigned integer arithmetic only, no exceptions; Numba compiles them.
# ================================================================================================
@register_jitable
def swizzle_raw(byte_offset, row_mask):
    """``off ^ (((off >> 7) & row_mask) << 4)`` in uint32: CuTe Swizzle<B,4,3> with
    row_mask = 2**B - 1 (7 for 128B, 3 for 64B, 1 for 32B, 0 for none)."""
    off = numba.uint32(byte_offset)
    return numba.uint32(off ^ (((off >> numba.uint32(7)) & numba.uint32(row_mask)) << numba.uint32(4)))


@register_jitable
def swizzle_128b_raw(byte_offset):
    return swizzle_raw(byte_offset, 7)


@register_jitable
def tile_offset_k_major_sw128_raw(row, col, elem_bytes):
    """Swizzled byte offset of element (row, col) of a K-major tile with 128-byte rows."""
    lin = numba.uint32(128) * numba.uint32(row) + numba.uint32(col) * numba.uint32(elem_bytes)
    return swizzle_raw(lin, 7)


@register_jitable
def instr_desc_raw(m, n, a_fmt, b_fmt, d_fmt, a_mn, b_mn):
    """32-bit kind::f16 instruction descriptor: D format bits 4-5, A format 7-9, B format 10-12,
    A/B transpose (MN-major) bits 15/16, N >> 3 in 17-22, M >> 4 in 24-28."""
    return numba.uint32((numba.uint32(d_fmt) << numba.uint32(4))
            | (numba.uint32(a_fmt) << numba.uint32(7))
            | (numba.uint32(b_fmt) << numba.uint32(10))
            | (numba.uint32(a_mn) << numba.uint32(15))
            | (numba.uint32(b_mn) << numba.uint32(16))
            | ((numba.uint32(n) >> numba.uint32(3)) << numba.uint32(17))
            | ((numba.uint32(m) >> numba.uint32(4)) << numba.uint32(24)))


@register_jitable
def smem_desc_raw(addr, lbo, sbo, swizzle_code, base_offset=0):
    """64-bit sm_100 matrix descriptor: start (addr & 0x3FFFF) >> 4 in bits 0-13, LBO >> 4 in
    16-29, SBO >> 4 in 32-45, the constant 1 at bit 46, base offset in 49-51, swizzle code 61-63.
    The address is masked to its 18-bit shared-window offset first, so a cluster shared address
    (CTA rank from bit 24 up) encodes like the CTA-local one."""
    start = (numba.uint64(addr) & numba.uint64(0x3FFFF)) >> numba.uint64(4)
    return (start
            | (((numba.uint64(lbo) >> numba.uint64(4)) & numba.uint64(0x3FFF)) << numba.uint64(16))
            | (((numba.uint64(sbo) >> numba.uint64(4)) & numba.uint64(0x3FFF)) << numba.uint64(32))
            | (numba.uint64(1) << numba.uint64(46))
            | ((numba.uint64(base_offset) & numba.uint64(7)) << numba.uint64(49))
            | ((numba.uint64(swizzle_code) & numba.uint64(7)) << numba.uint64(61)))


@register_jitable
def smem_desc_sw128_kmajor_raw(addr, sbo_bytes):
    """Descriptor of a 128B-swizzled K-major operand at ``addr``: LBO encoded as 1 (16 B; the field
    is ignored for swizzled K-major layouts), SBO = ``sbo_bytes`` (1024 for 8 rows of 128 B),
    base offset 0 (the tile is 1024-aligned, or advanced along K inside its swizzle atom)."""
    return smem_desc_raw(addr, 16, sbo_bytes, 2, 0)


@register_jitable
def smem_desc_advance_k_raw(desc, byte_delta):
    """``desc`` with ``byte_delta`` (a non-negative multiple of 16) added to its start address."""
    return numba.uint64(desc) + (numba.uint64(byte_delta) >> numba.uint64(4))


@register_jitable
def tmem_addr_raw(base, lane, col):
    """TMEM address: lane in bits 31-16, column in bits 15-0 (added to ``base``)."""
    return numba.uint32(numba.uint32(base) + (numba.uint32(lane) << numba.uint32(16)) + numba.uint32(col))


@register_jitable
def tmem_lane_raw(addr):
    return numba.uint32((numba.uint32(addr) >> numba.uint32(16)) & numba.uint32(0xFFFF))


@register_jitable
def tmem_col_raw(addr):
    return numba.uint32(numba.uint32(addr) & numba.uint32(0xFFFF))


@register_jitable
def tmem_warp_lane_base_raw(warp_id):
    """First TMEM lane a warp may access with tcgen05.ld/st: 32 * (warp_id % 4)."""
    return numba.uint32(numba.uint32(32) * (numba.uint32(warp_id) & numba.uint32(3)))


@register_jitable
def tmem_warp_addr_raw(base, warp_id, col):
    """``base`` moved to the first lane of warp ``warp_id``'s lane quarter and column ``col``."""
    return tmem_addr_raw(base, tmem_warp_lane_base_raw(warp_id), col)


# ================================================================================================
# Device functions (kernels call these; the emulator runs their .py_func = the raw core).
# ================================================================================================
def _device(fn):
    return cuda.jit(device=True, forceinline=True)(fn)


swizzle_dev = _device(swizzle_raw)
swizzle_128b_dev = _device(swizzle_128b_raw)
tile_offset_k_major_sw128_dev = _device(tile_offset_k_major_sw128_raw)
instr_desc_dev = _device(instr_desc_raw)
smem_desc_dev = _device(smem_desc_raw)
smem_desc_sw128_kmajor_dev = _device(smem_desc_sw128_kmajor_raw)
smem_desc_advance_k_dev = _device(smem_desc_advance_k_raw)
tmem_addr_dev = _device(tmem_addr_raw)
tmem_lane_dev = _device(tmem_lane_raw)
tmem_col_dev = _device(tmem_col_raw)
tmem_warp_lane_base_dev = _device(tmem_warp_lane_base_raw)
tmem_warp_addr_dev = _device(tmem_warp_addr_raw)

#: host name -> (device function, raw core); tests walk this table
DEVICE_FUNCTIONS = {
    "swizzle_dev": (swizzle_dev, swizzle_raw),
    "swizzle_128b_dev": (swizzle_128b_dev, swizzle_128b_raw),
    "tile_offset_k_major_sw128_dev": (tile_offset_k_major_sw128_dev, tile_offset_k_major_sw128_raw),
    "instr_desc_dev": (instr_desc_dev, instr_desc_raw),
    "smem_desc_dev": (smem_desc_dev, smem_desc_raw),
    "smem_desc_sw128_kmajor_dev": (smem_desc_sw128_kmajor_dev, smem_desc_sw128_kmajor_raw),
    "smem_desc_advance_k_dev": (smem_desc_advance_k_dev, smem_desc_advance_k_raw),
    "tmem_addr_dev": (tmem_addr_dev, tmem_addr_raw),
    "tmem_lane_dev": (tmem_lane_dev, tmem_lane_raw),
    "tmem_col_dev": (tmem_col_dev, tmem_col_raw),
    "tmem_warp_lane_base_dev": (tmem_warp_lane_base_dev, tmem_warp_lane_base_raw),
    "tmem_warp_addr_dev": (tmem_warp_addr_dev, tmem_warp_addr_raw),
}


# ================================================================================================
# Host API: validated, returns Python ints.
# ================================================================================================
def _check_int(name, value, lo, hi):
    """``value`` must be an integer in [lo, hi] (inclusive)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} = {value} is outside [{lo}, {hi}]")
    return int(value)


def _check_array(name, value, lo, hi):
    """An integer scalar or numpy integer array with every element in [lo, hi]."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise ValueError(f"{name} must hold integers, got dtype {value.dtype}")
        if value.size and (value.min() < lo or value.max() > hi):
            raise ValueError(f"{name} has elements outside [{lo}, {hi}]")
        return value.astype(np.int64)
    return _check_int(name, value, lo, hi)


def _out(value):
    return value.astype(np.int64) if isinstance(value, np.ndarray) else int(value)


# -- swizzle -------------------------------------------------------------------------------------
def swizzle(byte_offset, mode="128B"):
    """The ``mode`` swizzle ("none", "32B", "64B", "128B") applied to a shared-memory byte address
    (or offset from a base aligned to the pattern's repeat: 1024/512/256 B): the 16-byte chunk
    bits [4, 4+B) are XOR-ed with the row bits [7, 7+B), B = 3, 2, 1, 0 (CuTe Swizzle<B,4,3>).
    Accepts an int or a numpy integer array (returned as int64)."""
    if mode not in SWIZZLE_ROW_MASKS:
        raise ValueError(f"unknown swizzle {mode!r}: the swizzle modes are {list(SWIZZLE_ROW_MASKS)}")
    off = _check_array("byte offset", byte_offset, 0, _U32_MAX)
    return _out(swizzle_raw(off, SWIZZLE_ROW_MASKS[mode]))


def swizzle_128b(byte_offset):
    """The 128B swizzle: address bits [6:4] XOR bits [9:7] (CuTe Swizzle<3,4,3>)."""
    return swizzle(byte_offset, "128B")


def tile_offset_k_major_sw128(row, col, elem_bytes=2):
    """Byte offset of element (row, col) in a 128B-swizzled K-major tile whose rows are 128 bytes,
    placed at a 1024-aligned address: for fp16, ``128*row + 16*((col >> 3) ^ (row & 7)) +
    2*(col & 7)``. ``row``/``col`` may be numpy integer arrays."""
    eb = _check_int("elem_bytes", elem_bytes, 1, 16)
    if eb not in (1, 2, 4, 8, 16):
        raise ValueError(f"elem_bytes = {eb}: an element must be 1, 2, 4, 8 or 16 bytes")
    per_row = 128 // eb
    r = _check_array("row", row, 0, (_U32_MAX >> 7) - 1)
    c = _check_array("col", col, 0, per_row - 1)  # a 128-byte row holds 128 / elem_bytes elements
    return _out(tile_offset_k_major_sw128_raw(r, c, eb))


# -- instruction descriptor (kind::f16) ----------------------------------------------------------
def _check_shape(m, n, cta_group):
    if cta_group == 1:
        if m not in (64, 128):
            raise ValueError(f"M = {m}: a cta_group::1 kind::f16 MMA has M = 64 or 128")
        if not (8 <= n <= 256 and n % 8 == 0):
            raise ValueError(f"N = {n}: a cta_group::1 kind::f16 MMA needs N a multiple of 8 in [8, 256]")
        if m == 128 and n % 16:
            raise ValueError(f"N = {n}: a cta_group::1 kind::f16 MMA with M = 128 needs N a multiple of 16")
    elif cta_group == 2:
        if m not in (128, 256):
            raise ValueError(f"M = {m}: a cta_group::2 kind::f16 MMA has M = 128 or 256 "
                             "(rows of the CTA pair together)")
        if not (16 <= n <= 256 and n % 16 == 0):
            raise ValueError(f"N = {n}: a cta_group::2 kind::f16 MMA needs N a multiple of 16 in [16, 256]")
    else:
        raise ValueError(f"cta_group = {cta_group!r}: tcgen05 MMAs use cta_group 1 or 2")


def make_instr_desc(m, n, *, ab_dtype="f16", acc_dtype="f32", a_major="K", b_major="K", cta_group=1):
    """The 32-bit instruction descriptor of ``tcgen05.mma.cta_group::<cta_group>.kind::f16`` for an
    M x N x 16 MMA (PTX ISA 9.7.16.4.2; shapes 9.7.16.2.1). For cta_group 2, M is the pair's M.
    Dense, no negation, no saturation."""
    if ab_dtype not in DTYPE_CODES:
        raise ValueError(f"ab_dtype {ab_dtype!r}: kind::f16 takes A/B of dtype {list(DTYPE_CODES)}")
    if acc_dtype not in ACC_CODES:
        raise ValueError(f"acc_dtype {acc_dtype!r}: kind::f16 accumulates in {list(ACC_CODES)}")
    for name, major in (("a_major", a_major), ("b_major", b_major)):
        if major not in MAJOR_CODES:
            raise ValueError(f"{name} {major!r}: an operand is 'K'-major or 'MN'-major")
    m = _check_int("M", m, 0, 1 << 16)
    n = _check_int("N", n, 0, 1 << 16)
    _check_shape(m, n, cta_group)
    f = DTYPE_CODES[ab_dtype]
    return int(instr_desc_raw(m, n, f, f, ACC_CODES[acc_dtype], MAJOR_CODES[a_major], MAJOR_CODES[b_major]))


def decode_instr_desc(idesc):
    """Fields of a kind::f16 instruction descriptor (cta_group is not encoded in it)."""
    idesc = _check_int("instruction descriptor", idesc, 0, _U32_MAX)
    a = {0: "f16", 1: "bf16"}.get((idesc >> 7) & 7, f"invalid({(idesc >> 7) & 7})")
    b = {0: "f16", 1: "bf16"}.get((idesc >> 10) & 7, f"invalid({(idesc >> 10) & 7})")
    d = {0: "f16", 1: "f32"}.get((idesc >> 4) & 3, f"invalid({(idesc >> 4) & 3})")
    return {
        "m": ((idesc >> 24) & 0x1F) << 4,
        "n": ((idesc >> 17) & 0x3F) << 3,
        "ab_dtype": a if a == b else None,
        "a_dtype": a,
        "b_dtype": b,
        "acc_dtype": d,
        "d_dtype": d,
        "a_major": "MN" if (idesc >> 15) & 1 else "K",
        "b_major": "MN" if (idesc >> 16) & 1 else "K",
        "negate_a": bool((idesc >> 13) & 1),
        "negate_b": bool((idesc >> 14) & 1),
        "sparse": bool((idesc >> 2) & 1),
        "sparsity_selector": idesc & 3,
        "saturate": bool((idesc >> 3) & 1),
        "max_shift": (idesc >> 30) & 3,
    }


# -- shared-memory matrix descriptor -------------------------------------------------------------
def make_smem_desc(addr, *, lbo, sbo, swizzle="128B", base_offset=0):
    """The validated 64-bit sm_100 shared-memory matrix descriptor (PTX ISA 9.7.16.4.1).

    ``addr`` is a 32-bit shared address; it is masked to its 18-bit shared-window offset, so a
    cluster address with the CTA rank from bit 24 up encodes like the CTA-local one. ``addr``,
    ``lbo`` and ``sbo`` count bytes and must be 16-byte aligned (the fields hold 16-byte units).
    A swizzled operand may start anywhere 16-byte aligned inside its swizzle atom with
    ``base_offset`` 0 (advancing along K by 32 B inside a 1024 B atom is how MMAs step through K):
    the hardware applies the XOR to the absolute address bits."""
    if swizzle not in SWIZZLE_CODES:
        raise ValueError(f"unknown swizzle {swizzle!r}: the descriptor's swizzle modes are "
                         f"{list(SWIZZLE_CODES)}")
    addr = _check_int("address", addr, 0, _U32_MAX)
    lbo = _check_int("LBO", lbo, 0, (0x3FFF << 4))
    sbo = _check_int("SBO", sbo, 0, (0x3FFF << 4))
    base_offset = _check_int("base_offset", base_offset, 0, 7)
    for name, v in (("address", addr & 0x3FFFF), ("LBO", lbo), ("SBO", sbo)):
        if v % 16:
            raise ValueError(f"{name} {v:#x} is not 16-byte aligned (the descriptor stores it in "
                             "16-byte units)")
    return int(smem_desc_raw(addr, lbo, sbo, SWIZZLE_CODES[swizzle], base_offset))


def decode_smem_desc(desc):
    """Fields of an sm_100 matrix descriptor; byte quantities in bytes."""
    desc = _check_int("matrix descriptor", desc, 0, (1 << 64) - 1)
    code = (desc >> 61) & 7
    return {
        "start_addr": (desc & 0x3FFF) << 4,
        "lbo": ((desc >> 16) & 0x3FFF) << 4,
        "sbo": ((desc >> 32) & 0x3FFF) << 4,
        "fixed_bit46": bool((desc >> 46) & 1),
        "fixed_bits_46_48": (desc >> 46) & 7,
        "base_offset": (desc >> 49) & 7,
        "lbo_mode": (desc >> 52) & 1,
        "swizzle": SWIZZLE_NAMES.get(code, f"invalid({code})"),
        "swizzle_code": code,
    }


def smem_desc_advance_k(desc, byte_delta):
    """``desc`` with its start address moved ``byte_delta`` bytes along K (a multiple of 16)."""
    desc = _check_int("matrix descriptor", desc, 0, (1 << 64) - 1)
    byte_delta = _check_int("byte_delta", byte_delta, 0, 0x3FFF << 4)
    if byte_delta % 16:
        raise ValueError(f"byte_delta {byte_delta} is not a multiple of 16 (the start address "
                         "counts 16-byte units)")
    if (desc & 0x3FFF) + (byte_delta >> 4) > 0x3FFF:
        raise ValueError(f"advancing start address {(desc & 0x3FFF) << 4:#x} by {byte_delta} bytes "
                         "leaves the 18-bit shared window (the 14-bit start field would carry into LBO)")
    return int(smem_desc_advance_k_raw(desc, byte_delta))


# -- TMEM addresses ------------------------------------------------------------------------------
def tmem_addr(base, lane, col):
    """TMEM address of (lane, col) relative to ``base`` (an address from tcgen05.alloc): lane in
    bits 31-16, column in bits 15-0 (PTX ISA 9.7.16.1.1). The result must stay inside TMEM's
    128 lanes x 512 columns."""
    base = _check_int("TMEM base address", base, 0, _U32_MAX)
    lane = _check_int("lane", lane, 0, TMEM_LANES - 1)
    col = _check_int("column", col, 0, TMEM_COLUMNS - 1)
    if (base >> 16) + lane >= TMEM_LANES:
        raise ValueError(f"lane {(base >> 16)} + {lane} is past TMEM's {TMEM_LANES} lanes")
    if (base & 0xFFFF) + col >= TMEM_COLUMNS:
        raise ValueError(f"column {base & 0xFFFF} + {col} is past TMEM's {TMEM_COLUMNS} columns")
    return int(tmem_addr_raw(base, lane, col))


def tmem_lane(addr):
    """Lane field (bits 31-16) of a TMEM address."""
    return int(tmem_lane_raw(_check_int("TMEM address", addr, 0, _U32_MAX)))


def tmem_col(addr):
    """Column field (bits 15-0) of a TMEM address."""
    return int(tmem_col_raw(_check_int("TMEM address", addr, 0, _U32_MAX)))


def tmem_warp_lane_base(warp_id):
    """The first TMEM lane warp ``warp_id`` may access: its lane quarter is 32 * (warp_id % 4)."""
    return int(tmem_warp_lane_base_raw(_check_int("warp_id", warp_id, 0, 1023)))


def tmem_warp_addr(base, warp_id, col):
    """``base`` moved to the first lane of warp ``warp_id``'s lane quarter, column ``col`` on."""
    return tmem_addr(base, tmem_warp_lane_base(warp_id), col)


# ================================================================================================
# Step 11: the instruction descriptors of the low-precision kinds (PTX ISA 9.7.16.4.2, the tables
# "Instruction descriptor format for .kind::tf32, .kind::f16, .kind::f8f6f4 and .kind::i8",
# "... for .kind::mxf8f6f4" and "... for .kind::mxf4 and .kind::mxf4nvf4").
# ================================================================================================
#: A/B format codes of kind::f8f6f4 and kind::mxf8f6f4 (bits 7-9 and 10-12)
F8F6F4_CODES = {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
#: A/B format code of kind::mxf4nvf4 (E2M1 packed two per byte; bits 7-9 and 10-11)
MXF4_CODES = {"e2m1": 1}
#: scale-factor format, bit 23 of the block-scaled descriptors
SCALE_CODES = {"ue4m3": 0, "ue8m0": 1}
#: K of one MMA per kind (dense): 32 bytes of A per row, whatever the element width
KIND_K = {"f16": 16, "f8f6f4": 32, "mxf8f6f4": 32, "mxf4nvf4": 64}
#: the scale-factor vector of a block-scaled kind and scale format: (elements per scale factor,
#: scale factors per row per MMA = the PTX .scale_vec::NX)
SCALE_VECTOR = {("mxf8f6f4", "ue8m0"): (32, 1), ("mxf4nvf4", "ue8m0"): (32, 2), ("mxf4nvf4", "ue4m3"): (16, 4)}


@register_jitable
def instr_desc_block_scaled_raw(m, n, a_fmt, b_fmt, scale_fmt, sfa_id, sfb_id):
    """32-bit block-scaled instruction descriptor (kind::mxf8f6f4 and kind::mxf4nvf4, dense,
    K = 32 / 64): B scale-factor ID bits 4-5, A format 7-9, B format 10-12 (10-11 for mxf4nvf4,
    whose codes fit), N >> 3 in 17-22, scale format bit 23, M >> 7 in 27-28, A scale-factor ID in
    29-30. There is no D format field: D is F32."""
    return numba.uint32((numba.uint32(sfb_id & 3) << numba.uint32(4))
            | (numba.uint32(a_fmt) << numba.uint32(7))
            | (numba.uint32(b_fmt) << numba.uint32(10))
            | ((numba.uint32(n) >> numba.uint32(3)) << numba.uint32(17))
            | (numba.uint32(scale_fmt) << numba.uint32(23))
            | ((numba.uint32(m) >> numba.uint32(7)) << numba.uint32(27))
            | (numba.uint32(sfa_id & 3) << numba.uint32(29)))


@register_jitable
def instr_desc_sf_ids_raw(idesc, sfa_id, sfb_id):
    """``idesc`` with its A and B scale-factor IDs replaced (an MMA steps through the bytes of one
    TMEM scale-factor word this way when one scale factor covers several MMAs along K)."""
    keep = numba.uint32(idesc) & numba.uint32(~((3 << 4) | (3 << 29)) & 0xFFFFFFFF)
    return numba.uint32(keep | (numba.uint32(sfb_id & 3) << numba.uint32(4))
                        | (numba.uint32(sfa_id & 3) << numba.uint32(29)))


instr_desc_block_scaled_dev = _device(instr_desc_block_scaled_raw)
instr_desc_sf_ids_dev = _device(instr_desc_sf_ids_raw)
DEVICE_FUNCTIONS["instr_desc_block_scaled_dev"] = (instr_desc_block_scaled_dev, instr_desc_block_scaled_raw)
DEVICE_FUNCTIONS["instr_desc_sf_ids_dev"] = (instr_desc_sf_ids_dev, instr_desc_sf_ids_raw)


def make_instr_desc_f8f6f4(m, n, *, a_dtype="e4m3", b_dtype="e4m3", acc_dtype="f32", cta_group=1):
    """The instruction descriptor of ``tcgen05.mma.kind::f8f6f4`` (no scale factors) with FP8 A and
    B, K-major: the kind::f16 layout with the f8f6f4 format codes (E4M3 = 0, E5M2 = 1), K = 32."""
    for name, fmt in (("a_dtype", a_dtype), ("b_dtype", b_dtype)):
        if fmt not in ("e4m3", "e5m2"):
            raise ValueError(f"{name} {fmt!r}: the FP8 kernels take 'e4m3' or 'e5m2' operands (kind::f8f6f4)")
    if acc_dtype not in ACC_CODES:
        raise ValueError(f"acc_dtype {acc_dtype!r}: kind::f8f6f4 accumulates in {list(ACC_CODES)}")
    m = _check_int("M", m, 0, 1 << 16)
    n = _check_int("N", n, 0, 1 << 16)
    _check_shape(m, n, cta_group)
    return int(instr_desc_raw(m, n, F8F6F4_CODES[a_dtype], F8F6F4_CODES[b_dtype], ACC_CODES[acc_dtype], 0, 0))


def _check_block_scaled_shape(kind, m, n, cta_group):
    if cta_group == 1:
        if m != 128:
            raise ValueError(f"M = {m}: a cta_group::1 kind::{kind} MMA has M = 128 (the descriptor stores M >> 7)")
        if not (8 <= n <= 256 and n % 8 == 0):
            raise ValueError(f"N = {n}: a cta_group::1 kind::{kind} MMA needs N a multiple of 8 in [8, 256]")
    elif cta_group == 2:
        if m not in (128, 256):
            raise ValueError(f"M = {m}: a cta_group::2 kind::{kind} MMA has M = 128 or 256 (rows of the pair)")
        if not (16 <= n <= 256 and n % 16 == 0):
            raise ValueError(f"N = {n}: a cta_group::2 kind::{kind} MMA needs N a multiple of 16 in [16, 256]")
    else:
        raise ValueError(f"cta_group = {cta_group!r}: tcgen05 MMAs use cta_group 1 or 2")


def make_instr_desc_block_scaled(m, n, *, kind, a_dtype, b_dtype, scale_dtype, sfa_id=0, sfb_id=0,
                                 cta_group=1):
    """The instruction descriptor of ``tcgen05.mma.kind::<kind>.block_scale`` (``kind`` "mxf8f6f4"
    or "mxf4nvf4"), dense, K-major, no negation. ``sfa_id``/``sfb_id`` pick the byte (scale_vec::1X),
    half word (2X: 0 or 2) of each TMEM scale-factor word the MMA reads; 4X (NVFP4's block16)
    reads the whole word and needs 0."""
    if kind == "mxf8f6f4":
        codes, scales = F8F6F4_CODES, ("ue8m0",)
        formats = ("e4m3", "e5m2")  # the 6- and 4-bit formats need the padded smem layout: not modelled
    elif kind == "mxf4nvf4":
        codes, scales, formats = MXF4_CODES, ("ue4m3", "ue8m0"), ("e2m1",)
    else:
        raise ValueError(f"kind {kind!r}: the block-scaled kinds are 'mxf8f6f4' and 'mxf4nvf4'")
    for name, fmt in (("a_dtype", a_dtype), ("b_dtype", b_dtype)):
        if fmt not in formats:
            raise ValueError(f"{name} {fmt!r}: kind::{kind} takes {list(formats)} here")
    if scale_dtype not in scales:
        raise ValueError(f"scale_dtype {scale_dtype!r}: kind::{kind} scales by {list(scales)}")
    per_mma = SCALE_VECTOR[(kind, scale_dtype)][1]
    allowed = {1: (0, 1, 2, 3), 2: (0, 2), 4: (0,)}[per_mma]
    for name, v in (("sfa_id", sfa_id), ("sfb_id", sfb_id)):
        if isinstance(v, bool) or v not in allowed:
            raise ValueError(f"{name} = {v!r}: with {per_mma} scale factor(s) per row per MMA the ID is one of "
                             f"{list(allowed)} (the byte offset in the TMEM word)")
    m = _check_int("M", m, 0, 1 << 16)
    n = _check_int("N", n, 0, 1 << 16)
    _check_block_scaled_shape(kind, m, n, cta_group)
    return int(instr_desc_block_scaled_raw(m, n, codes[a_dtype], codes[b_dtype], SCALE_CODES[scale_dtype],
                                           sfa_id, sfb_id))


def decode_instr_desc_block_scaled(idesc, kind):
    """Fields of a block-scaled instruction descriptor of ``kind`` ("mxf8f6f4" or "mxf4nvf4")."""
    idesc = _check_int("instruction descriptor", idesc, 0, _U32_MAX)
    if kind not in ("mxf8f6f4", "mxf4nvf4"):
        raise ValueError(f"kind {kind!r}: the block-scaled kinds are 'mxf8f6f4' and 'mxf4nvf4'")
    names = {v: k for k, v in (F8F6F4_CODES if kind == "mxf8f6f4" else MXF4_CODES).items()}
    b_bits = 7 if kind == "mxf8f6f4" else 3
    a, b = (idesc >> 7) & 7, (idesc >> 10) & b_bits
    return {
        "m": ((idesc >> 27) & 3) << 7,
        "n": ((idesc >> 17) & 0x3F) << 3,
        "a_dtype": names.get(a, f"invalid({a})"),
        "b_dtype": names.get(b, f"invalid({b})"),
        "scale_dtype": "ue8m0" if (idesc >> 23) & 1 else "ue4m3",
        "sfa_id": (idesc >> 29) & 3,
        "sfb_id": (idesc >> 4) & 3,
        "sparse": bool((idesc >> 2) & 1),
        "negate_a": bool((idesc >> 13) & 1),
        "negate_b": bool((idesc >> 14) & 1),
        "a_major": "MN" if (idesc >> 15) & 1 else "K",
        "b_major": "MN" if (idesc >> 16) & 1 else "K",
        "k96": bool((idesc >> 31) & 1),
        "reserved": idesc & ((3 << 0) | (1 << 3) | (1 << 6) | (7 << 24) | ((1 << 12) if kind == "mxf4nvf4" else 0)
                             | ((1 << 31) if kind == "mxf8f6f4" else 0)),
    }
