"""gemm_kernels.quant: the formats' decoding (ml_dtypes against the formats' definitions written as
numpy arithmetic), quantize/dequantize against numpy, the packed scale-factor layout, bad input."""
import ml_dtypes
import numpy as np
import pytest

from gemm_kernels import quant as Q


def _decode_minifloat(code, exp_bits, man_bits, bias, *, ieee_specials, fn_nan_all_ones=False):
    """Value of a sign/exponent/mantissa code by the textbook formula (subnormals at exponent 0)."""
    sign = -1.0 if (code >> (exp_bits + man_bits)) & 1 else 1.0
    e = (code >> man_bits) & ((1 << exp_bits) - 1)
    m = code & ((1 << man_bits) - 1)
    if ieee_specials and e == (1 << exp_bits) - 1:
        return sign * np.inf if m == 0 else np.nan
    if fn_nan_all_ones and e == (1 << exp_bits) - 1 and m == (1 << man_bits) - 1:
        return np.nan
    if e == 0:
        return sign * m / (1 << man_bits) * 2.0 ** (1 - bias)
    return sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)


@pytest.mark.parametrize("dtype, exp_bits, man_bits, bias, ieee, fn", [
    (ml_dtypes.float8_e4m3fn, 4, 3, 7, False, True),   # OCP FP8 E4M3: no inf, S.1111.111 is NaN
    (ml_dtypes.float8_e5m2, 5, 2, 15, True, False),    # OCP FP8 E5M2: IEEE-like inf and NaN
    (ml_dtypes.float4_e2m1fn, 2, 1, 1, False, False),  # OCP FP4 E2M1: no inf, no NaN
])
def test_every_code_decodes_as_the_format_defines(dtype, exp_bits, man_bits, bias, ieee, fn):
    bits = 1 + exp_bits + man_bits
    codes = np.arange(1 << bits, dtype=np.uint8)
    got = codes.view(dtype).astype(np.float64)
    want = np.array([_decode_minifloat(int(c), exp_bits, man_bits, bias, ieee_specials=ieee,
                                       fn_nan_all_ones=fn) for c in codes])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.array_equal(got[ok], want[ok])


def test_ue8m0_is_a_power_of_two_and_ff_is_nan():
    codes = np.arange(256, dtype=np.uint8)
    got = codes.view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    assert np.isnan(got[255])
    assert np.array_equal(got[:255], 2.0 ** (np.arange(255) - 127))


def test_element_maxima():
    assert [Q.element_max(f) for f in ("e4m3", "e5m2", "mxfp8", "nvfp4")] == [448.0, 57344.0, 448.0, 6.0]


def _matrix(m, k, seed=0, spread=6.0):
    rng = np.random.default_rng(seed)
    # magnitudes spread over many binades, per row and block, so scales differ
    return (rng.standard_normal((m, k)) * np.exp2(rng.uniform(-spread, spread, (m, 1)))).astype(np.float32)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_without_scale_rounds_to_nearest(fmt):
    x = _matrix(5, 48, spread=3.0)
    q = Q.quantize(x, fmt)
    assert q.scales is None and q.scales_packed is None and q.codes.shape == (5, 48)
    d = Q.dequantize(q)
    # nearest representable: no code is closer to x than the chosen one
    table = np.arange(256, dtype=np.uint8).view(Q.FORMATS[fmt][0]).astype(np.float32)
    table = table[np.isfinite(table)]
    best = table[np.abs(x[..., None] - table).argmin(axis=-1)]
    assert np.array_equal(np.abs(d - x), np.abs(best - x))
    assert np.array_equal(Q.from_codes(q.codes, fmt), d)


def test_fp8_saturates_instead_of_overflowing_to_nan():
    x = np.array([[1e6, -1e6, 447.0, 500.0]], dtype=np.float32)
    d = Q.dequantize(Q.quantize(x, "e4m3"))
    assert d.tolist() == [[448.0, -448.0, 448.0, 448.0]]
    assert Q.dequantize(Q.quantize(x, "e5m2"))[0, 0] == 57344.0


@pytest.mark.parametrize("fmt, block", [("mxfp8", 32), ("nvfp4", 16)])
@pytest.mark.parametrize("m, k", [(1, 64), (7, 32), (130, 96), (256, 128)])
def test_block_scaled_roundtrip(fmt, block, m, k):
    if k % block:
        pytest.skip("not a multiple of the block")
    x = _matrix(m, k, seed=m + k)
    q = Q.quantize(x, fmt)
    assert q.scales.shape == (m, k // block)
    assert q.codes.shape == ((m, k) if fmt == "mxfp8" else (m, k // 2))
    d = Q.dequantize(q)
    # reference: numpy on the decoded codes and scales, written out independently
    elem = Q.from_codes(q.codes, fmt, k)
    scale = q.scales.astype(np.float32)
    want = (elem.reshape(m, k // block, block) * scale[..., None]).reshape(m, k) * np.float32(q.global_scale)
    assert np.array_equal(d, want)
    assert np.array_equal(Q.dequantize(q, with_global=False) * np.float32(q.global_scale), d)
    # relative error per block: half a unit of the element format's mantissa, for the block's largest
    amax = np.abs(x).reshape(m, k // block, block).max(axis=2)
    err = np.abs(d - x).reshape(m, k // block, block).max(axis=2)
    mant = 3 if fmt == "mxfp8" else 1
    # nvfp4's scale is itself rounded to e4m3 (3 mantissa bits): one more unit of slack
    bound = amax * (2.0 ** -mant if fmt == "mxfp8" else 2.0 ** -mant + 2.0 ** -3)
    assert (err <= bound + 1e-30).all()
    if fmt == "mxfp8":
        assert np.all(np.log2(scale) == np.round(np.log2(scale)))  # powers of two


def test_mxfp8_scale_puts_the_block_max_in_the_top_binade():
    x = np.zeros((1, 32), dtype=np.float32)
    x[0, 3] = 3.0e-3
    q = Q.quantize(x, "mxfp8")
    s = float(q.scales[0, 0])
    assert s == 2.0 ** (np.floor(np.log2(3.0e-3)) - 8)
    assert 256.0 <= float(q.values[0, 3].astype(np.float32)) <= 448.0


@pytest.mark.parametrize("magnitude", [1e-30, 1e-6, 1.0, 1e6, 1e30])
def test_nvfp4_global_scale_keeps_any_magnitude(magnitude):
    """The per-tensor scale puts the largest block scale at UE4M3's 448 whatever the magnitude, so the
    relative error does not depend on it (the block scales alone span only 2**-9 .. 448)."""
    x = _matrix(32, 64, seed=11, spread=3.0) * np.float32(magnitude)
    q = Q.quantize(x, "nvfp4")
    assert q.global_scale == pytest.approx(np.abs(x).max() / 2688.0, rel=1e-6)
    assert float(q.scales.astype(np.float32).max()) == 448.0
    def rel_err(q, x):
        x = x.astype(np.float64)
        return np.linalg.norm(Q.dequantize(q).astype(np.float64) - x) / np.linalg.norm(x)

    rel = rel_err(q, x)
    one = _matrix(32, 64, seed=11, spread=3.0)
    ref_rel = rel_err(Q.quantize(one, "nvfp4"), one)
    assert rel == pytest.approx(ref_rel, rel=0.05)
    assert rel < 0.15


def test_zero_block_scale_is_one_and_zeros_stay_zero():
    x = np.zeros((2, 64), dtype=np.float32)
    for fmt in ("mxfp8", "nvfp4"):
        q = Q.quantize(x, fmt)
        assert np.all(q.scales.astype(np.float32) == 1.0)
        assert not Q.dequantize(q).any()


def test_nvfp4_packs_even_k_in_the_low_nibble():
    x = np.array([[0.5, 1.0, 1.5, -6.0] + [0.0] * 12], dtype=np.float32) * np.float32(448.0)
    q = Q.quantize(x, "nvfp4")
    assert q.global_scale == 1.0  # amax = 6 * 448
    assert float(q.scales[0, 0].astype(np.float32)) == 448.0
    # E2M1 codes: 0.5 = 0x1, 1.0 = 0x2, 1.5 = 0x3, -6 = 0xF
    assert q.codes[0, :2].tolist() == [0x21, 0xF3]
    assert np.array_equal(Q.unpack_nibbles(q.codes), Q.codes_of(q.values))


def test_sf_offset_atoms():
    # inside an atom: row j, j+32, j+64, j+96 share one 16-byte row, 4 scale factors each
    assert Q.sf_offset(0, 0, 4) == 0
    assert Q.sf_offset(0, 3, 4) == 3
    assert Q.sf_offset(32, 0, 4) == 4
    assert Q.sf_offset(1, 0, 4) == 16
    assert Q.sf_offset(127, 3, 4) == 16 * 31 + 4 * 3 + 3
    # atoms along K first, then along rows
    assert Q.sf_offset(0, 4, 8) == 512
    assert Q.sf_offset(128, 0, 8) == 1024
    assert Q.sf_offset(128, 0, 5) == 1024  # 5 columns take two atoms along K
    # a bijection onto the packed bytes for full atoms
    r, c = np.meshgrid(np.arange(256), np.arange(12), indexing="ij")
    off = Q.sf_offset(r, c, 12)
    assert np.array_equal(np.sort(off.ravel()), np.arange(Q.packed_size(256, 12)))


@pytest.mark.parametrize("fmt", ["mxfp8", "nvfp4"])
def test_packed_scales_roundtrip_and_padding(fmt):
    x = _matrix(130, 16 * 5 * (2 if fmt == "mxfp8" else 1), seed=3)
    q = Q.quantize(x, fmt)
    rows, cols = q.scales.shape
    assert q.scales_packed.size == Q.packed_size(rows, cols) == 2 * 2 * 512
    back = Q.unpack_scales(q.scales_packed, rows, cols, q.scales.dtype)
    assert np.array_equal(Q.codes_of(back), Q.codes_of(q.scales))
    pad = np.ones(q.scales_packed.size, dtype=bool)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    pad[Q.sf_offset(r, c, cols)] = False
    one = Q.codes_of(np.array([1.0], np.float32).astype(q.scales.dtype))[0]
    assert pad.sum() == q.scales_packed.size - rows * cols
    assert np.all(q.scales_packed[pad] == one)


def test_a_times_b_against_numpy_on_dequantised_operands():
    a, b = _matrix(64, 128, seed=1), _matrix(48, 128, seed=2)
    for fmt in Q.FORMATS:
        qa, qb = Q.quantize(a, fmt), Q.quantize(b, fmt)
        ref = Q.dequantize(qa).astype(np.float64) @ Q.dequantize(qb).astype(np.float64).T
        exact = a.astype(np.float64) @ b.astype(np.float64).T
        rel = np.linalg.norm(ref - exact) / np.linalg.norm(exact)
        # mxfp8 is not better than plain e4m3 here: the OCP scale puts a block's largest element in
        # [256, 512), and those above 448 saturate (the spec's choice); the rows here need no scale
        assert rel < {"e4m3": 0.06, "e5m2": 0.12, "mxfp8": 0.07, "nvfp4": 0.2}[fmt], (fmt, rel)


@pytest.mark.parametrize("x, fmt, match", [
    (np.zeros((4, 32), np.float32), "fp8", "unknown format"),
    (np.zeros(32, np.float32), "e4m3", "2-D"),
    (np.zeros((4, 32), np.int32), "e4m3", "floating-point"),
    (np.zeros((0, 32), np.float32), "e4m3", "empty"),
    (np.full((4, 32), np.nan, np.float32), "mxfp8", "NaN or infinite"),
    (np.zeros((4, 48), np.float32), "mxfp8", "multiple of mxfp8's scale block of 32"),
    (np.zeros((4, 40), np.float32), "nvfp4", "multiple of nvfp4's scale block of 16"),
])
def test_bad_input_says_what_to_change(x, fmt, match):
    with pytest.raises(ValueError, match=match):
        Q.quantize(x, fmt)


def test_bad_packed_size_and_dequantize_argument():
    with pytest.raises(ValueError, match="packs into 512"):
        Q.unpack_scales(np.zeros(100, np.uint8), 4, 2, ml_dtypes.float8_e8m0fnu)
    with pytest.raises(ValueError, match="takes a Quantized"):
        Q.dequantize(np.zeros((2, 2)))


def test_check_pair_and_its_descriptor():
    a, b = _matrix(130, 64, seed=21), _matrix(72, 64, seed=22)
    for fa, fb, kind in (("e4m3", "e5m2", "f8f6f4"), ("mxfp8", "mxfp8", "mxf8f6f4"), ("nvfp4", "nvfp4", "mxf4nvf4")):
        qa, qb = Q.quantize(a, fa), Q.quantize(b, fb)
        assert Q.check_pair(qa, qb) == (kind, 130, 72, 64)
    from gemm_kernels import layouts as L

    qa, qb = Q.quantize(a, "e5m2"), Q.quantize(b, "e4m3")
    assert Q.instr_desc(qa, qb, 128, 64) == L.make_instr_desc_f8f6f4(128, 64, a_dtype="e5m2", b_dtype="e4m3")
    qa, qb = Q.quantize(a, "nvfp4"), Q.quantize(b, "nvfp4")
    d = L.decode_instr_desc_block_scaled(Q.instr_desc(qa, qb, 256, 256, cta_group=2), "mxf4nvf4")
    assert (d["m"], d["n"], d["a_dtype"], d["scale_dtype"]) == (256, 256, "e2m1", "ue4m3")


def _replace(q, **kw):
    import dataclasses

    return dataclasses.replace(q, **kw)


@pytest.mark.parametrize("make, match", [
    (lambda a, b: (np.zeros((4, 4)), b), "A must be a Quantized"),
    (lambda a, b: (Q.quantize(np.ones((4, 64), np.float32), "mxfp8"), Q.quantize(np.ones((4, 64), np.float32),
                                                                                   "nvfp4")), "A in mxfp8 and B in nvfp4"),
    (lambda a, b: (Q.quantize(np.ones((4, 64), np.float32), "e4m3"), Q.quantize(np.ones((4, 64), np.float32),
                                                                                  "mxfp8")), "A in e4m3 and B in mxfp8"),
    (lambda a, b: (a, Q.quantize(np.ones((4, 96), np.float32), "mxfp8")), "A has K = 64 and B has K = 96"),
    (lambda a, b: (_replace(a, scales=a.scales[:, :1]), b), r"A's scale factors must be float8_e8m0fnu of shape \(4, 2\)"),
    (lambda a, b: (a, _replace(b, scales=b.scales.astype(np.float32))), "B's scale factors must be float8_e8m0fnu"),
    (lambda a, b: (a, _replace(b, scales_packed=b.scales_packed[:100])), "B's packed scale factors must be 512 bytes"),
    (lambda a, b: (_replace(a, codes=a.codes[:, :32]), b), r"A's codes must be uint8 of shape \(4, 64\)"),
])
def test_check_pair_refuses_with_what_to_change(make, match):
    a = Q.quantize(np.ones((4, 64), np.float32), "mxfp8")
    b = Q.quantize(np.ones((4, 64), np.float32), "mxfp8")
    with pytest.raises(ValueError, match=match):
        Q.check_pair(*make(a, b))
