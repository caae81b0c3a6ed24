"""gemm_kernels.layouts: worked values from the fact sheet, round trips, the swizzle formula,
bad input, and the device functions (sm_100a build + their Python cores against the host API).
CPU only."""
import itertools

import numpy as np
import pytest
from numba import cuda, types

from gemm_kernels import layouts as L

# -- worked values (reference fact sheet, sections 3 and 4) ----------------------------------------
IDESC_CASES = [
    (dict(m=128, n=128), 0x08200010),
    (dict(m=128, n=128, ab_dtype="bf16"), 0x08200490),
    (dict(m=128, n=256), 0x08400010),
    (dict(m=64, n=256), 0x04400010),
    (dict(m=256, n=256, cta_group=2), 0x10400010),
    (dict(m=256, n=128, cta_group=2), 0x10200010),
]


@pytest.mark.parametrize("kw,expected", IDESC_CASES, ids=[hex(e) for _, e in IDESC_CASES])
def test_instr_desc_worked_values(kw, expected):
    assert L.make_instr_desc(**kw) == expected
    d = L.decode_instr_desc(expected)
    assert (d["m"], d["n"]) == (kw["m"], kw["n"])
    assert d["ab_dtype"] == kw.get("ab_dtype", "f16") and d["acc_dtype"] == "f32"
    assert d["a_major"] == d["b_major"] == "K" and not d["sparse"]


def test_smem_desc_worked_values_and_k_advance():
    desc = L.make_smem_desc(0x400, lbo=16, sbo=1024, swizzle="128B")
    assert desc == 0x4000404000010040
    assert [L.smem_desc_advance_k(desc, 32 * k) for k in range(4)] == [
        0x4000404000010040, 0x4000404000010042, 0x4000404000010044, 0x4000404000010046]
    # the same as encoding the advanced address directly
    for k in range(4):
        assert L.smem_desc_advance_k(desc, 32 * k) == L.make_smem_desc(0x400 + 32 * k, lbo=16, sbo=1024)
    d = L.decode_smem_desc(desc)
    assert d == {"start_addr": 0x400, "lbo": 16, "sbo": 1024, "fixed_bit46": True, "fixed_bits_46_48": 1,
                 "base_offset": 0, "lbo_mode": 0, "swizzle": "128B", "swizzle_code": 2}


def test_smem_desc_masks_cluster_rank_bits():
    for rank in range(1, 16):
        a = (rank << 24) | 0x400
        assert L.make_smem_desc(a, lbo=16, sbo=1024) == L.make_smem_desc(0x400, lbo=16, sbo=1024)
    assert L.make_smem_desc(0x1000400, lbo=16, sbo=1024) == 0x4000404000010040


def test_smem_desc_swizzle_codes_and_fixed_bit():
    for name, code in [("none", 0), ("128B_base32B", 1), ("128B", 2), ("64B", 4), ("32B", 6)]:
        desc = L.make_smem_desc(0, lbo=0, sbo=0, swizzle=name)
        assert desc == (code << 61) | (1 << 46)
        assert L.decode_smem_desc(desc)["swizzle"] == name


# -- round trips -----------------------------------------------------------------------------------
def _valid_shapes():
    for cta_group, ms, step in ((1, (64, 128), 8), (2, (128, 256), 16)):
        for m in ms:
            for n in range(step, 257, step):
                if cta_group == 1 and m == 128 and n % 16:
                    continue
                yield m, n, cta_group


def test_instr_desc_round_trip_grid():
    seen = set()
    for (m, n, g), ab, acc, am, bm in itertools.product(
            _valid_shapes(), ("f16", "bf16"), ("f16", "f32"), ("K", "MN"), ("K", "MN")):
        idesc = L.make_instr_desc(m, n, ab_dtype=ab, acc_dtype=acc, a_major=am, b_major=bm, cta_group=g)
        assert 0 <= idesc < 1 << 32
        d = L.decode_instr_desc(idesc)
        assert (d["m"], d["n"], d["ab_dtype"], d["acc_dtype"], d["a_major"], d["b_major"]) == (m, n, ab, acc, am, bm)
        assert not (d["negate_a"] or d["negate_b"] or d["sparse"] or d["saturate"] or d["max_shift"])
        assert idesc & ((1 << 6) | (1 << 23) | (1 << 29)) == 0  # reserved bits
        seen.add((idesc, g))
    # distinct parameters give distinct descriptors (cta_group is not encoded: M=128 appears twice)
    assert len({i for i, _ in seen}) == len(seen) - len({i for i, g in seen if g == 2} & {i for i, g in seen if g == 1})


def test_smem_desc_round_trip_grid():
    addrs = [0, 0x10, 0x400, 0x420, 0x800, 0x1230, 0x3FFF0, 0x2A400, (3 << 24) | 0x8000]
    sizes = [0, 16, 32, 128, 256, 1024, 2048, 8192, 0x3FFF0]
    for a, lbo, sbo, sw, bo in itertools.product(addrs, sizes, sizes, L.SWIZZLE_CODES, (0, 1, 7)):
        desc = L.make_smem_desc(a, lbo=lbo, sbo=sbo, swizzle=sw, base_offset=bo)
        assert 0 <= desc < 1 << 64
        d = L.decode_smem_desc(desc)
        assert (d["start_addr"], d["lbo"], d["sbo"], d["swizzle"], d["base_offset"]) == (a & 0x3FFFF, lbo, sbo, sw, bo)
        assert d["fixed_bit46"] and d["fixed_bits_46_48"] == 1 and d["lbo_mode"] == 0
        assert desc & ((3 << 14) | (3 << 30) | (0xFF << 53)) == 0  # reserved / fixed-zero bits


def test_tmem_addresses():
    for base_col, lane, col in itertools.product((0, 32, 256), (0, 1, 31, 64, 127), (0, 1, 100, 255)):
        a = L.tmem_addr(base_col, lane, col)
        assert a == (lane << 16) + base_col + col
        assert (L.tmem_lane(a), L.tmem_col(a)) == (lane, base_col + col)
    assert [L.tmem_warp_lane_base(w) for w in range(12)] == [0, 32, 64, 96] * 3
    assert L.tmem_warp_addr(0x100, 6, 8) == (64 << 16) | 0x108


# -- swizzle ---------------------------------------------------------------------------------------
def test_tile_offset_matches_formula_and_is_a_bijection():
    rows, cols = np.meshgrid(np.arange(128), np.arange(64), indexing="ij")
    expect = 128 * rows + 16 * ((cols >> 3) ^ (rows & 7)) + 2 * (cols & 7)
    got = L.tile_offset_k_major_sw128(rows, cols)
    assert np.array_equal(got, expect)
    assert np.array_equal(np.sort(got.ravel()), np.arange(0, 16384, 2))  # every fp16 slot once
    for r, c in [(0, 0), (1, 0), (7, 63), (8, 9), (127, 63)]:  # scalar path: Python ints
        v = L.tile_offset_k_major_sw128(r, c)
        assert type(v) is int and v == expect[r, c]
        assert v == L.swizzle_128b(128 * r + 2 * c)


@pytest.mark.parametrize("mode,bits", [("none", 0), ("32B", 1), ("64B", 2), ("128B", 3)])
def test_swizzle_modes_are_cute_swizzle_b43(mode, bits):
    off = np.arange(0, 1 << 14)
    # CuTe Swizzle<B,M=4,S=3>: offset ^ ((offset & (((1<<B)-1) << (M+S))) >> S)
    expect = off ^ ((off & (((1 << bits) - 1) << 7)) >> 3)
    got = L.swizzle(off, mode)
    assert np.array_equal(got, expect)
    # a permutation of every repeat (8 rows of the span), and byte order kept inside 16-byte chunks
    repeat = 1024
    for start in range(0, 1 << 14, repeat):
        assert np.array_equal(np.sort(got[start:start + repeat]), off[start:start + repeat])
    assert np.array_equal(got & 15, off & 15)
    assert L.swizzle(0x3A5, mode) == int(expect[0x3A5])


def test_swizzle_128b_scalar_examples():
    # chunk 0 of row 1 lands at chunk 1; chunk 3 of row 5 at chunk 6
    assert L.swizzle_128b(128) == 128 + 16
    assert L.swizzle_128b(5 * 128 + 3 * 16 + 4) == 5 * 128 + (3 ^ 5) * 16 + 4


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("m,n,g,rule", [
    (32, 128, 1, "M = 64 or 128"),
    (256, 128, 1, "M = 64 or 128"),
    (128, 0, 1, "multiple of 8 in [8, 256]"),
    (64, 12, 1, "multiple of 8 in [8, 256]"),
    (64, 264, 1, "multiple of 8 in [8, 256]"),
    (128, 24, 1, "M = 128 needs N a multiple of 16"),
    (64, 128, 2, "M = 128 or 256"),
    (512, 128, 2, "M = 128 or 256"),
    (256, 8, 2, "multiple of 16 in [16, 256]"),
    (256, 40, 2, "multiple of 16 in [16, 256]"),
    (256, 272, 2, "multiple of 16 in [16, 256]"),
    (128, 128, 3, "cta_group 1 or 2"),
])
def test_instr_desc_bad_shape(m, n, g, rule):
    with pytest.raises(ValueError, match=rule.replace("[", r"\[").replace("]", r"\]")):
        L.make_instr_desc(m, n, cta_group=g)


@pytest.mark.parametrize("kw,rule", [
    (dict(ab_dtype="f32"), "ab_dtype"),
    (dict(ab_dtype="e4m3"), "ab_dtype"),
    (dict(acc_dtype="bf16"), "acc_dtype"),
    (dict(a_major="M"), "a_major"),
    (dict(b_major="N"), "b_major"),
])
def test_instr_desc_bad_dtype_or_major(kw, rule):
    with pytest.raises(ValueError, match=rule):
        L.make_instr_desc(128, 128, **kw)


@pytest.mark.parametrize("addr,lbo,sbo,what", [
    (0x408, 16, 1024, "address"),
    (0x1000408, 16, 1024, "address"),
    (0x400, 8, 1024, "LBO"),
    (0x400, 16, 1000, "SBO"),
])
def test_smem_desc_misaligned(addr, lbo, sbo, what):
    with pytest.raises(ValueError, match=f"{what} .* not 16-byte aligned"):
        L.make_smem_desc(addr, lbo=lbo, sbo=sbo)


def test_smem_desc_bad_values():
    with pytest.raises(ValueError, match="unknown swizzle '256B'"):
        L.make_smem_desc(0x400, lbo=16, sbo=1024, swizzle="256B")
    with pytest.raises(ValueError, match="SBO"):
        L.make_smem_desc(0x400, lbo=16, sbo=1 << 18)
    with pytest.raises(ValueError, match="LBO"):
        L.make_smem_desc(0x400, lbo=-16, sbo=1024)
    with pytest.raises(ValueError, match="base_offset"):
        L.make_smem_desc(0x400, lbo=16, sbo=1024, base_offset=8)
    with pytest.raises(ValueError, match="address"):
        L.make_smem_desc(1 << 32, lbo=16, sbo=1024)
    with pytest.raises(ValueError, match="address must be an integer"):
        L.make_smem_desc(1024.0, lbo=16, sbo=1024)
    desc = L.make_smem_desc(0x400, lbo=16, sbo=1024)
    with pytest.raises(ValueError, match="multiple of 16"):
        L.smem_desc_advance_k(desc, 8)
    with pytest.raises(ValueError, match="carry into LBO"):
        L.smem_desc_advance_k(L.make_smem_desc(0x3FFF0, lbo=16, sbo=1024), 16)


def test_swizzle_and_tile_bad_input():
    with pytest.raises(ValueError, match="unknown swizzle '16B'"):
        L.swizzle(0, "16B")
    with pytest.raises(ValueError, match="byte offset"):
        L.swizzle(-16)
    with pytest.raises(ValueError, match="col"):
        L.tile_offset_k_major_sw128(0, 64)  # 64 fp16 fill a 128-byte row
    with pytest.raises(ValueError, match="col"):
        L.tile_offset_k_major_sw128(0, 32, elem_bytes=4)
    with pytest.raises(ValueError, match="elem_bytes"):
        L.tile_offset_k_major_sw128(0, 0, elem_bytes=3)


def test_tmem_bad_input():
    with pytest.raises(ValueError, match="lane"):
        L.tmem_addr(0, 128, 0)
    with pytest.raises(ValueError, match="lane .* past"):
        L.tmem_addr(64 << 16, 64, 0)
    with pytest.raises(ValueError, match="column .* past"):
        L.tmem_addr(256, 0, 256)
    with pytest.raises(ValueError, match="warp_id"):
        L.tmem_warp_lane_base(-1)


# -- device functions --------------------------------------------------------------------------------
def test_device_cores_match_host_api():
    """The emulator runs the device functions' Python cores: same numbers as the host API, in the
    unsigned widths the GPU uses."""
    for name, (dev, raw) in L.DEVICE_FUNCTIONS.items():
        assert dev.py_func is raw, name
    for (m, n, g), ab, am in itertools.product(_valid_shapes(), ("f16", "bf16"), ("K", "MN")):
        f = L.DTYPE_CODES[ab]
        v = L.instr_desc_dev.py_func(m, n, f, f, 1, int(am == "MN"), 0)
        assert isinstance(v, np.uint32)
        assert int(v) == L.make_instr_desc(m, n, ab_dtype=ab, a_major=am, cta_group=g)
    for a, sbo in itertools.product((0x400, 0x420, 0x1000400, 0x3FC00), (1024, 2048)):
        v = L.smem_desc_sw128_kmajor_dev.py_func(np.uint32(a), sbo)
        assert isinstance(v, np.uint64)
        assert int(v) == L.make_smem_desc(a, lbo=16, sbo=sbo, swizzle="128B")
        for code, name in L.SWIZZLE_NAMES.items():
            assert int(L.smem_desc_dev.py_func(a, 16, sbo, code)) == L.make_smem_desc(a, lbo=16, sbo=sbo, swizzle=name)
            assert int(L.smem_desc_dev.py_func(a, 16, sbo, code, 3)) == L.make_smem_desc(
                a, lbo=16, sbo=sbo, swizzle=name, base_offset=3)
        d = L.make_smem_desc(a, lbo=16, sbo=sbo)
        assert int(L.smem_desc_advance_k_dev.py_func(np.uint64(d), 96)) == L.smem_desc_advance_k(d, 96)
    for off in range(0, 4096, 48):
        for mode, mask in L.SWIZZLE_ROW_MASKS.items():
            assert int(L.swizzle_dev.py_func(off, mask)) == L.swizzle(off, mode)
        assert int(L.swizzle_128b_dev.py_func(off)) == L.swizzle_128b(off)
    for r, c in itertools.product(range(0, 128, 9), range(64)):
        assert int(L.tile_offset_k_major_sw128_dev.py_func(r, c, 2)) == L.tile_offset_k_major_sw128(r, c)
    for w, col in itertools.product(range(8), (0, 17, 255)):
        base = 0x40
        assert int(L.tmem_warp_addr_dev.py_func(base, w, col)) == L.tmem_warp_addr(base, w, col)
        a = L.tmem_addr(base, L.tmem_warp_lane_base(w), col)
        assert int(L.tmem_addr_dev.py_func(base, 32 * (w % 4), col)) == a
        assert int(L.tmem_lane_dev.py_func(a)) == L.tmem_lane(a)
        assert int(L.tmem_col_dev.py_func(a)) == L.tmem_col(a)
        assert int(L.tmem_warp_lane_base_dev.py_func(w)) == L.tmem_warp_lane_base(w)


u32, u64 = types.uint32, types.uint64

# each device function, the argument types a kernel passes (addresses as uint32, plain int
# literals as int64), and the unsigned type it must return
DEVICE_SIGNATURES = [
    ("swizzle_dev", (u32, types.int64), u32),
    ("swizzle_128b_dev", (u32,), u32),
    ("tile_offset_k_major_sw128_dev", (types.int32, types.int32, types.int64), u32),
    ("instr_desc_dev", (types.int64,) * 7, u32),
    ("smem_desc_dev", (u32, types.int64, types.int64, types.int64, types.int64), u64),
    ("smem_desc_dev", (u64, u32, u32, u32, u32), u64),
    ("smem_desc_sw128_kmajor_dev", (u32, types.int64), u64),
    ("smem_desc_advance_k_dev", (u64, types.int64), u64),
    ("tmem_addr_dev", (u32, types.int32, types.int64), u32),
    ("tmem_lane_dev", (u32,), u32),
    ("tmem_col_dev", (u32,), u32),
    ("tmem_warp_lane_base_dev", (types.int32,), u32),
    ("tmem_warp_addr_dev", (u32, types.int32, u32), u32),
]


@pytest.mark.parametrize("name,argtys,resty", DEVICE_SIGNATURES, ids=[f"{s[0]}-{s[1][0]}" for s in DEVICE_SIGNATURES])
def test_device_function_return_type(name, argtys, resty):
    """Each core compiled alone as an sm_100a device function returns one unsigned type (no float,
    no signed promotion)."""
    from gemm_kernels.runtime.offline import target_device

    _dev, raw = L.DEVICE_FUNCTIONS[name]
    with target_device((10, 0, "a")):
        ptx, got = cuda.compile_ptx(raw, argtys, device=True, cc=(10, 0, "a"))
    assert got == resty
    assert ".target sm_100a" in ptx
    assert ".f64" not in ptx and ".f32" not in ptx


def test_device_functions_compile_inside_a_kernel():
    """A tiny sm_100a kernel that calls every device function (the way kernels do)."""
    from gemm_kernels.runtime.offline import target_device

    @cuda.jit
    def probe(out32, out64, addr, warp):
        out64[0] = L.smem_desc_sw128_kmajor_dev(addr, 1024)
        out64[1] = L.smem_desc_advance_k_dev(L.smem_desc_dev(addr, 16, 1024, 2, 0), 32)
        out64[2] = L.smem_desc_dev(addr, 16, 1024, 2)
        out32[0] = L.instr_desc_dev(128, 256, 0, 0, 1, 0, 0)
        out32[1] = L.swizzle_dev(addr, 7)
        out32[2] = L.swizzle_128b_dev(addr)
        out32[3] = L.tile_offset_k_major_sw128_dev(warp, 3, 2)
        t = L.tmem_addr_dev(out32[4], L.tmem_warp_lane_base_dev(warp), 8)
        out32[5] = L.tmem_lane_dev(t) + L.tmem_col_dev(t)
        out32[6] = L.tmem_warp_addr_dev(t, warp, 0)

    sig = (types.uint32[::1], types.uint64[::1], types.uint32, types.int32)
    with target_device((10, 0, "a")):
        ptx, _ = cuda.compile_ptx(probe.py_func, sig, cc=(10, 0, "a"))
    assert ".target sm_100a" in ptx
    assert ".f64" not in ptx and "cvt.rn.f" not in ptx and "cvt.rz" not in ptx
