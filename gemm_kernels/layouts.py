"""Bit layouts the kernels compute and the hardware reads: the 128B swizzle, the tcgen05
instruction descriptor, the shared-memory matrix descriptor, TMEM addresses.

Pure integer functions, usable from host code, from the emulator, and (the ``*_raw`` cores, plain
integer arithmetic without exceptions) from Numba device code. The host versions validate and
raise ValueError naming the rule. Sources: PTX ISA 9.7.16.4.1-2 (descriptor tables), 5.5.7
(swizzle), 9.7.16.1.1 (TMEM addresses); see the book's references.
"""
from __future__ import annotations

SWIZZLE_CODES = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
SWIZZLE_NAMES = {v: k for k, v in SWIZZLE_CODES.items()}
_SWIZZLE_BITS = {"none": 0, "32B": 1, "64B": 3, "128B": 7}  # CuTe Swizzle<B,4,3> with B = 0,1,2,3
DTYPE_CODES = {"f16": 0, "bf16": 1}
ACC_CODES = {"f16": 0, "f32": 1}


# -- swizzle -----------------------------------------------------------------------------------
def swizzle(byte_offset, mode="128B"):
    """XOR the 16-byte chunk bits [6:4] with the 128-byte row bits [9:7] (128B; 2 bits for 64B,
    1 bit for 32B) of an absolute shared-memory byte address. Works on ints and numpy arrays."""
    if mode not in _SWIZZLE_BITS:
        raise ValueError(f"unknown swizzle {mode!r}: one of {sorted(_SWIZZLE_BITS)}")
    return byte_offset ^ (((byte_offset >> 7) & _SWIZZLE_BITS[mode]) << 4)


def swizzle_128b(byte_offset):
    return swizzle(byte_offset, "128B")


def tile_offset_k_major_sw128(row, col, elem_bytes=2):
    """Byte offset of element (row, col) in a 1024-aligned 128B-swizzled K-major tile whose rows
    are 128 bytes: 128*row + 16*((col_chunk) XOR (row % 8)) + byte within the chunk."""
    lin = 128 * row + col * elem_bytes
    return swizzle(lin, "128B")


# -- instruction descriptor (kind::f16) ----------------------------------------------------------
def instr_desc_raw(m, n, a_fmt, b_fmt, d_fmt, a_mn, b_mn):
    return ((d_fmt << 4) | (a_fmt << 7) | (b_fmt << 10) | (a_mn << 15) | (b_mn << 16)
            | ((n >> 3) << 17) | ((m >> 4) << 24))


def make_instr_desc(m, n, *, ab_dtype="f16", acc_dtype="f32", a_major="K", b_major="K", cta_group=1):
    """The 32-bit instruction descriptor of tcgen05.mma.kind::f16 (PTX ISA 9.7.16.4.2 Table 42)."""
    if ab_dtype not in DTYPE_CODES:
        raise ValueError(f"ab_dtype {ab_dtype!r}: kind::f16 takes 'f16' or 'bf16' inputs")
    if acc_dtype not in ACC_CODES:
        raise ValueError(f"acc_dtype {acc_dtype!r}: kind::f16 accumulates in 'f32' or 'f16'")
    for name, major in (("a_major", a_major), ("b_major", b_major)):
        if major not in ("K", "MN"):
            raise ValueError(f"{name} {major!r}: operands are 'K'-major or 'MN'-major")
    if cta_group == 1:
        if m not in (64, 128):
            raise ValueError(f"M={m}: cta_group::1 kind::f16 MMAs have M = 64 or 128")
        if not 8 <= n <= 256 or n % 8 or (m == 128 and n % 16):
            raise ValueError(f"N={n}: cta_group::1 needs N a multiple of 8 in [8, 256] (of 16 when M = 128)")
    elif cta_group == 2:
        if m not in (128, 256):
            raise ValueError(f"M={m}: cta_group::2 kind::f16 MMAs have M = 128 or 256 (the pair's rows)")
        if not 16 <= n <= 256 or n % 16:
            raise ValueError(f"N={n}: cta_group::2 needs N a multiple of 16 in [16, 256]")
    else:
        raise ValueError(f"cta_group {cta_group!r}: 1 or 2")
    f = DTYPE_CODES[ab_dtype]
    return instr_desc_raw(m, n, f, f, ACC_CODES[acc_dtype], int(a_major == "MN"), int(b_major == "MN"))


def decode_instr_desc(idesc):
    idesc = int(idesc)
    return {
        "d_dtype": {0: "f16", 1: "f32"}.get((idesc >> 4) & 3, "?"),
        "a_dtype": {0: "f16", 1: "bf16"}.get((idesc >> 7) & 7, "?"),
        "b_dtype": {0: "f16", 1: "bf16"}.get((idesc >> 10) & 7, "?"),
        "a_major": "MN" if (idesc >> 15) & 1 else "K",
        "b_major": "MN" if (idesc >> 16) & 1 else "K",
        "n": ((idesc >> 17) & 0x3F) << 3,
        "m": ((idesc >> 24) & 0x1F) << 4,
        "sparse": bool((idesc >> 2) & 1),
    }


# -- shared-memory matrix descriptor -------------------------------------------------------------
def smem_desc_raw(addr, lbo, sbo, swizzle_code, base_offset=0):
    """The 64-bit sm_100 descriptor: start (addr & 0x3FFFF) >> 4 in bits 0-13, LBO >> 4 in 16-29,
    SBO >> 4 in 32-45, the fixed 0b001 at 46-48, base offset 49-51, layout/swizzle 61-63."""
    return (((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 46)
            | ((base_offset & 7) << 49) | (swizzle_code << 61))


def make_smem_desc(addr, *, lbo, sbo, swizzle="128B", base_offset=0):
    """Validated matrix descriptor. ``addr`` may carry a cluster rank above bit 24 (it is masked to
    its 18-bit shared-window offset)."""
    if swizzle not in SWIZZLE_CODES:
        raise ValueError(f"unknown swizzle {swizzle!r}: one of {sorted(SWIZZLE_CODES)}")
    for name, v in (("address", addr & 0x3FFFF), ("LBO", lbo), ("SBO", sbo)):
        if v % 16:
            raise ValueError(f"{name} {v:#x} is not 16-byte aligned (descriptor fields count 16-byte units)")
    for name, v in (("LBO", lbo), ("SBO", sbo)):
        if not 0 <= v < (1 << 18):
            raise ValueError(f"{name} {v} does not fit the 14-bit field of 16-byte units")
    if not 0 <= base_offset < 8:
        raise ValueError(f"base offset {base_offset} must be in 0..7")
    return smem_desc_raw(int(addr), int(lbo), int(sbo), SWIZZLE_CODES[swizzle], base_offset)


def decode_smem_desc(desc):
    desc = int(desc)
    return {
        "start_addr": (desc & 0x3FFF) << 4,
        "lbo": ((desc >> 16) & 0x3FFF) << 4,
        "sbo": ((desc >> 32) & 0x3FFF) << 4,
        "fixed_bit46": bool((desc >> 46) & 1),
        "base_offset": (desc >> 49) & 7,
        "swizzle": SWIZZLE_NAMES.get((desc >> 61) & 7, "invalid"),
    }


def smem_desc_advance_k(desc, byte_delta):
    """Move the start address along K by ``byte_delta`` bytes (a multiple of 16)."""
    if byte_delta % 16:
        raise ValueError(f"advance of {byte_delta} bytes is not a multiple of 16")
    return int(desc) + (byte_delta >> 4)


# -- TMEM addresses ------------------------------------------------------------------------------
def tmem_addr(base, lane, col):
    """TMEM address: lane in bits 31:16, column in bits 15:0 (PTX ISA 9.7.16.1.1)."""
    return base + (lane << 16) + col


def tmem_lane(addr):
    return (addr >> 16) & 0xFFFF


def tmem_col(addr):
    return addr & 0xFFFF


def tmem_warp_lane_base(warp_id):
    """The first TMEM lane warp ``warp_id`` may access: its lane quarter 32 * (warp % 4)."""
    return 32 * (warp_id % 4)
