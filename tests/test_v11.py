"""Step 11's kernel (gemm_v11): FP8 (kind::f8f6f4), MXFP8 (kind::mxf8f6f4) and NVFP4 (kind::mxf4nvf4;
scale factors through TMA and tcgen05.cp, NVFP4's global scales in the writeback) on the emulator against numpy on the dequantised operands, at ragged M and N, K
at one scale block, under every policy; bad input refused before anything launches."""
import ml_dtypes
import numpy as np
import pytest

from gemm_kernels import quant as Q
from gemm_kernels.emu.scheduler import POLICIES
from gemm_kernels.kernels import v11_low_precision as v11
from gemm_kernels.kernels.v11_low_precision import gemm_v11

EPS32, EPS16 = 2.0 ** -24, 2.0 ** -11  # unit roundoffs (half an ulp at 1) of float32 and float16
FP16_HALF_TINY = 2.0 ** -25  # half of fp16's smallest subnormal


def tolerance(qa, qb, *, hardware=False, bf16=False):
    """How far D may be from numpy's float64 product of the dequantised operands, element by element.
    S = |A| . |B|^T bounds every partial sum. The emulator's model (ARCHITECTURE.md, "Low-precision
    MMA numerics"): each MMA (K = 32, NVFP4's 64) sums its products exactly and rounds once to float32
    (<= EPS32 S), then adds to the float32 accumulator (<= EPS32 S per addition): 2 EPS32 S per MMA;
    NVFP4's multiplication by the global scales rounds once more (counted as one more MMA). ``hardware``:
    a tensor core that truncates like Hopper's FP8 wgmma (measured on an H200: within 3 units of
    2^(E - 13), 2^E <= 2 S) instead loses up to 6 * 2^-13 S per MMA, the allowance a B200 run needs
    until one is measured. Then D's rounding to fp16: EPS16 of |D|, or half the smallest subnormal
    (``bf16``: 2^-8 of |D|; bf16 has float32's range, its subnormals are far below these products)."""
    a, b = _deq(qa), _deq(qb)
    s = np.abs(a) @ np.abs(b).T
    mmas = -(-a.shape[1] // 64) + 1 if qa.fmt == "nvfp4" else -(-a.shape[1] // 32)
    per_mma = 6 * 2.0 ** -13 if hardware else 2 * EPS32
    acc_err = mmas * per_mma * s
    eps, tiny = (2.0 ** -8, 0.0) if bf16 else (EPS16, FP16_HALF_TINY)
    return eps * (np.abs(a @ b.T) + acc_err) + acc_err + tiny


def _deq(q):
    return Q.dequantize(q).astype(np.float64)  # NVFP4's global scale included: D includes it


def _check(d, qa, qb):
    ref = _deq(qa) @ _deq(qb).T
    bf16 = d.dtype == ml_dtypes.bfloat16
    assert d.shape == ref.shape and (bf16 or d.dtype == np.float16)
    err = np.abs(d.astype(np.float64) - ref)
    tol = tolerance(qa, qb, bf16=bf16)
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    assert np.all(err <= tol), f"D{worst} = {d[worst]}, numpy {ref[worst]}, error {err[worst]:.3g} > {tol[worst]:.3g}"
    return err, ref


def _spread_operands(m, n, k, fmt_a, fmt_b, seed, spread=0):
    """A and B whose 32-element blocks along K sit at magnitudes 2^(s_j) in A and 2^(-s_j) in B,
    s_j uniform in [-spread, spread]: the scale factors span 2 * spread binades while every product
    stays near 1 (D must fit in fp16)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(-spread, spread, -(-k // 32)).repeat(32)[:k]
    a = rng.standard_normal((m, k)) * np.exp2(s)
    b = rng.standard_normal((n, k)) * np.exp2(-s)
    return Q.quantize(a.astype(np.float32), fmt_a), Q.quantize(b.astype(np.float32), fmt_b)


# (M, N, K): ragged M and N in one tile with K of one scale block (32) or FP8's 16-byte minimum;
# edge tiles in M and N, 2 x 3 tiles on the emulator's 2 clusters (CLC hands out the rest), a last
# partial k-block (K = 416 = 3 x 128 + 32)
FP8_SHAPES = [(5, 13, 16), (200, 72, 160)]
MX_ONE_BLOCK = (37, 100, 32)
MX_MANY_TILES = (300, 260, 416)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fa, fb", [("e4m3", "e4m3"), ("e5m2", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e5m2")])
def test_fp8_ragged(fa, fb, policy):
    for i, (m, n, k) in enumerate(FP8_SHAPES):
        qa, qb = _spread_operands(m, n, k, fa, fb, seed=10 + i)
        _check(gemm_v11(qa, qb, backend="emulator", policy=policy, seed=i), qa, qb)


@pytest.mark.parametrize("policy", POLICIES)
def test_mxfp8_one_scale_block(policy):
    """K = 32: one scale factor per row; the k-block's other three scale columns are the packed
    layout's padding and multiply the TMA's zero fill."""
    qa, qb = _spread_operands(*MX_ONE_BLOCK, "mxfp8", "mxfp8", seed=3, spread=30)
    _check(gemm_v11(qa, qb, backend="emulator", policy=policy, seed=4), qa, qb)


@pytest.mark.parametrize("policy", POLICIES)
def test_mxfp8_many_tiles_scales_spanning_the_range(policy):
    """Scale factors from 2^-68 to 2^60 (UE8M0 reaches 2^-127 .. 2^127), six tiles on two clusters,
    four k-blocks (the last partial): every stage's scale atoms and both TMEM slots in use."""
    qa, qb = _spread_operands(*MX_MANY_TILES, "mxfp8", "mxfp8", seed=5, spread=60)
    exps = np.log2(qa.scales.astype(np.float32))
    assert exps.min() < -50 and exps.max() > 50  # the scales do span the range
    _check(gemm_v11(qa, qb, backend="emulator", policy=policy, seed=6), qa, qb)


# NVFP4: ragged M and N with K of two scale blocks (32, the TMA's 16-byte rows of packed codes), and
# edge tiles with a partial last k-block (K = 288 = 256 + 32: the scale columns packed again to 32)
NV_SHAPES = [(37, 100, 32), (300, 140, 288)]


@pytest.mark.parametrize("policy", POLICIES)
def test_nvfp4_ragged_with_global_scales(policy):
    """Block scales across UE4M3's range (blocks 2^12 apart in magnitude) and global scales far from 1
    (A's values near 1000, B's near 0.001): D carries both, applied in the writeback."""
    for i, (m, n, k) in enumerate(NV_SHAPES):
        qa, qb = _spread_operands(m, n, k, "nvfp4", "nvfp4", seed=20 + i, spread=6)
        qa, qb = (Q.quantize(_deq(q).astype(np.float32) * f, "nvfp4") for q, f in ((qa, 1e3), (qb, 1e-3)))
        assert qa.global_scale > 0.1 and qb.global_scale < 1e-4
        _check(gemm_v11(qa, qb, backend="emulator", policy=policy, seed=i), qa, qb)


def test_nvfp4_raw_codes():
    """Packed E2M1 codes (two per byte, every code but -0) with plain UE4M3 scales in [1/16, 1/2]: no
    global scale (1), so the scales keep D inside fp16."""
    rng = np.random.default_rng(30)

    def raw(rows, k=64):
        codes = rng.choice([c for c in range(16) if c != 8], size=(rows, k)).astype(np.uint8)
        scales = np.exp2(rng.uniform(-4, -1, (rows, k // 16))).astype(ml_dtypes.float8_e4m3fn)
        return Q.pack_nibbles(codes), scales

    (ca, sa), (cb, sb) = raw(20), raw(30)
    d = gemm_v11(ca, cb, sfa=sa, sfb=sb, fmt="nvfp4", backend="emulator")
    qa, qb = (Q.Quantized("nvfp4", c, Q.from_codes(c, "nvfp4").astype(ml_dtypes.float4_e2m1fn), s, Q.pack_scales(s))
              for c, s in ((ca, sa), (cb, sb)))
    _check(d, qa, qb)


def test_scale_factors_matter():
    """The check above could fail: A's scale factors of one k-block doubled for rows 0..31 (one TMEM
    column of the atom) change exactly those rows of D beyond the tolerance."""
    qa, qb = _spread_operands(64, 40, 256, "mxfp8", "mxfp8", seed=7, spread=4)
    scales = qa.scales.astype(np.float32)
    scales[:32, 5] *= 2
    bad = Q.Quantized("mxfp8", qa.codes, qa.values, scales.astype(ml_dtypes.float8_e8m0fnu),
                      Q.pack_scales(scales.astype(ml_dtypes.float8_e8m0fnu)))
    d = gemm_v11(bad, qb, backend="emulator").astype(np.float64)
    ref = _deq(qa) @ _deq(qb).T
    wrong = np.abs(d - ref) > tolerance(qa, qb)
    assert wrong[:32].mean() > 0.9 and not wrong[32:].any()


def test_raw_codes_and_plain_scales():
    """The other calling form: uint8 codes, fmt, and the plain (rows, K / 32) scale factors."""
    qa, qb = _spread_operands(33, 20, 64, "mxfp8", "mxfp8", seed=8, spread=8)
    d = gemm_v11(qa.codes, qb.codes, sfa=qa.scales, sfb=qb.scales, fmt="mxfp8", backend="emulator")
    assert np.array_equal(d, gemm_v11(qa, qb, backend="emulator"))
    fa, fb = _spread_operands(9, 17, 48, "e5m2", "e4m3", seed=9)
    _check(gemm_v11(fa.codes, fb.codes, fmt=("e5m2", "e4m3"), backend="emulator"), fa, fb)


@pytest.mark.parametrize("fmt", ["e5m2", "mxfp8", "nvfp4"])
def test_bf16_output(fmt):
    """D in bf16 (the writeback's cvt.rn.bf16x2.f32): within bf16's rounding of numpy, and further
    from it than fp16's tolerance somewhere (a D rounded to fp16 by mistake would not be)."""
    qa, qb = _spread_operands(70, 40, 64, fmt, fmt, seed=50, spread=3)
    d = gemm_v11(qa, qb, backend="emulator", out_dtype="bfloat16")
    assert d.dtype == ml_dtypes.bfloat16
    _check(d, qa, qb)
    ref = _deq(qa) @ _deq(qb).T
    assert np.abs(d.astype(np.float64) - ref).max() > tolerance(qa, qb).min()  # bf16 is coarser: not fp16 by mistake


def test_hardware_tolerance_is_wider():
    qa, qb = _spread_operands(8, 8, 256, "e4m3", "e4m3", seed=1)
    assert np.all(tolerance(qa, qb, hardware=True) > tolerance(qa, qb))


# -- bad input, refused before anything launches ---------------------------------------------------
@pytest.fixture
def no_launch(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("gemm_v11 launched despite bad input")

    monkeypatch.setattr(v11, "tma_launch", refuse)


def _q(m, k, fmt, seed=0):
    return Q.quantize(np.random.default_rng(seed).standard_normal((m, k)).astype(np.float32), fmt)


@pytest.mark.usefixtures("no_launch")
@pytest.mark.parametrize("case, match", [
    ("pair", r"A in mxfp8 and B in e4m3: .*quantize both operands"),
    ("nvfp4_k", r"K = 16: .* \(32 nvfp4 codes\); pad K .* up to 32"),
    ("nvfp4_sf", r"sfb must be a 2-D float8_e4m3fn array \(one scale per 16"),
    ("k_block", r"K = 48 is not a multiple of mxfp8's scale block of 32: pad K"),
    ("sf_shape", r"sfa must have shape \(8, 2\)"),
    ("sf_dtype", r"sfb must be a 2-D float8_e8m0fnu array"),
    ("no_sf", r"mxfp8 needs scale factors: give sfa="),
    ("sf_for_fp8", r"e4m3 has no scale factors: leave sfa out"),
    ("no_fmt", r"A is a raw array: give fmt="),
    ("fp8_k", r"K = 8: .* pad K with zero columns .* up to 16"),
    ("k_mismatch", r"A has K = 64 and B has K = 32"),
    ("codes_dtype", r"A must be a 2-D uint8 array of e4m3 codes"),
    ("packed", r"A's packed scale factors must be 512 bytes"),
    ("fmt_conflict", r"A is already quantized as e4m3 but fmt says 'e5m2'"),
    ("out_dtype", r"out_dtype must be one of \('float16', 'bfloat16'\)"),
])
def test_bad_input_refused(case, match):
    a8, b8, n4 = _q(8, 64, "mxfp8"), _q(8, 64, "mxfp8", 1), _q(8, 64, "nvfp4")
    calls = {
        "pair": lambda: gemm_v11(a8, _q(8, 64, "e4m3")),
        "nvfp4_k": lambda: gemm_v11(_q(8, 16, "nvfp4"), _q(8, 16, "nvfp4")),
        "nvfp4_sf": lambda: gemm_v11(n4.codes, n4.codes, fmt="nvfp4", sfa=n4.scales, sfb=a8.scales),
        "k_block": lambda: gemm_v11(np.zeros((8, 48), np.uint8), np.zeros((8, 48), np.uint8), fmt="mxfp8",
                                    sfa=np.ones((8, 1), ml_dtypes.float8_e8m0fnu),
                                    sfb=np.ones((8, 1), ml_dtypes.float8_e8m0fnu)),
        "sf_shape": lambda: gemm_v11(a8.codes, b8.codes, fmt="mxfp8", sfa=a8.scales[:, :1].copy(), sfb=b8.scales),
        "sf_dtype": lambda: gemm_v11(a8.codes, b8.codes, fmt="mxfp8", sfa=a8.scales,
                                     sfb=b8.scales.astype(np.float32)),
        "no_sf": lambda: gemm_v11(a8.codes, b8.codes, fmt="mxfp8"),
        "sf_for_fp8": lambda: gemm_v11(a8.codes, b8.codes, fmt="e4m3", sfa=a8.scales),
        "no_fmt": lambda: gemm_v11(a8.codes, b8),
        "fp8_k": lambda: gemm_v11(_q(4, 8, "e4m3"), _q(4, 8, "e4m3")),
        "k_mismatch": lambda: gemm_v11(_q(4, 64, "e4m3"), _q(4, 32, "e4m3")),
        "codes_dtype": lambda: gemm_v11(np.zeros((4, 32), np.float16), np.zeros((4, 32), np.uint8), fmt="e4m3"),
        "packed": lambda: gemm_v11(Q.Quantized("mxfp8", a8.codes, a8.values, a8.scales, a8.scales_packed[:100]), b8),
        "fmt_conflict": lambda: gemm_v11(_q(4, 32, "e4m3"), _q(4, 32, "e4m3"), fmt="e5m2"),
        "out_dtype": lambda: gemm_v11(a8, b8, out_dtype="float32"),
    }
    with pytest.raises(ValueError, match=match):
        calls[case]()


# -- the sm_100a build ------------------------------------------------------------------------------
#: hot loops per k-block (MMA, producer) and per 128 columns of a thread's row (epilogue), measured
#: (sass --hot-loops, --loads-per-stage 4 for the block-scaled kernels: A, B, SFA, SFB) with ~3%
#: headroom, as tests/test_sass_hot_loops.py budgets steps 4-10. MXFP8 69.0 / 45.8 / 187.0; FP8
#: 47.0 / 32.8 / 187.0 (step 10's narrow tile: 39.0 / 28.0 / 200.0); NVFP4 96.0 / 45.8 / 318.0 (eight
#: tcgen05.cp per k-block; the global scales' 32 multiplies per subtile in the writeback)
HOT_LOOP_BUDGET = {"gemm_v11_kernel": ({"MMA": 71, "TMA producer": 47, "epilogue": 193}, 4),
                   "gemm_v11_fp8_kernel": ({"MMA": 49, "TMA producer": 34, "epilogue": 193}, 2),
                   "gemm_v11_nvfp4_kernel": ({"MMA": 99, "TMA producer": 47, "epilogue": 328}, 4)}


@pytest.mark.parametrize("name", ["gemm_v11_kernel", "gemm_v11_fp8_kernel", "gemm_v11_nvfp4_kernel"])
def test_builds_without_local_memory_and_orders_the_clc_loads(name):
    """The three kernels (MXFP8, FP8, NVFP4) build for sm_100a with no local memory or spills; their MMA
    loop holds the low-precision MMAs (UTCQMMA, NVFP4's UTCOMMA), no fp16 one, and the block-scaled
    ones their tcgen05.cp (UTCCP); no GPU-scope fence or CALL in a loop; every CLC response load
    after its wait."""
    from gemm_kernels.runtime.build import build, find_nvdisasm
    from gemm_kernels.sass_loops import flagged_loops, hot_loops
    from gemm_kernels.sass_order import check

    b = build(getattr(v11, name), v11.SIGNATURE, arch="sm_100a")
    assert b.local_bytes == 0 and b.spill_stores == 0 and b.spill_loads == 0
    if find_nvdisasm() is None:
        pytest.skip("nvdisasm not installed")
    budget, loads_per_stage = HOT_LOOP_BUDGET[name]
    per = {h.kind: h.per_unit for h in hot_loops(b.sass, loads_per_stage)}
    assert set(per) == set(budget) and all(per[k] <= budget[k] for k in per), per
    ops = [line.split()[1] for line in b.sass.splitlines() if "UTC" in line and "MMA" in line or "UTCCP" in line]
    assert not any(op.startswith("UTCHMMA") for op in ops)
    assert any(op.startswith("UTCOMMA" if "nvfp4" in name else "UTCQMMA") for op in ops)
    copies = sum(op.startswith("UTCCP") for op in ops)
    assert (copies > 0) == (name != "gemm_v11_fp8_kernel")
    assert not flagged_loops(b.sass)
    plans = {"gemm_v11_kernel": v11.plan, "gemm_v11_fp8_kernel": v11.fp8_plan, "gemm_v11_nvfp4_kernel": v11.nvfp4_plan}
    loads = check(b.sass, plans[name])
    assert loads and not any(ld.problem for ld in loads)


# -- step 11's new ways to be wrong, planted in gemm_v11's own kernel ---------------------------------
def _planted(monkeypatch, old, new):
    """gemm_v11 with one edit of make_kernel's source (the kernel keeps its file and line numbers)."""
    import functools
    import inspect

    lines, first = inspect.getsourcelines(v11.make_kernel.__wrapped__)
    src = "".join(lines)
    assert src.count(old) == 1, old
    ns = dict(vars(v11))
    exec(compile("\n" * (first - 1) + src.replace(old, new), v11.__file__, "exec"), ns)  # noqa: S102
    monkeypatch.setattr(v11, "make_kernel", functools.lru_cache(maxsize=None)(ns["make_kernel"]))
    return first + src[:src.index(old)].count("\n")  # the edited line


@pytest.mark.parametrize("policy", POLICIES)
def test_planted_missing_copy_of_b_scales(monkeypatch, policy):
    """The MMA issuer copies A's scale factors but not B's: the first MMA reads TMEM columns no
    tcgen05.cp filled, named with the MMA's line."""
    from gemm_kernels.emu.errors import UninitializedRead

    _planted(monkeypatch, "ptx.tcgen05_cp_32x128b_warpx4_cg2(sfb_tmem + j * SF_ATOM_COLS,",
             "(lambda *a: None)(sfb_tmem + j * SF_ATOM_COLS,")
    qa, qb = _spread_operands(*MX_ONE_BLOCK, "mxfp8", "mxfp8", seed=3)
    with pytest.raises(UninitializedRead, match=r"reads its B scale factors .* which no tcgen05.cp filled") as info:
        gemm_v11(qa, qb, backend="emulator", policy=policy)
    assert "v11_low_precision.py:" in str(info.value)


@pytest.mark.parametrize("policy", POLICIES)
def test_planted_scale_factors_in_the_accumulator(monkeypatch, policy):
    """The scale-factor slots placed at column 0, inside the accumulator: the MMA that overwrites the
    copied scale factors is named."""
    from gemm_kernels.emu.errors import TmemHazard

    _planted(monkeypatch, "sfa_tmem = tmem + SF_COL0 + sf_slot", "sfa_tmem = tmem + 0 + sf_slot")
    qa, qb = _spread_operands(*MX_ONE_BLOCK, "mxfp8", "mxfp8", seed=3)
    with pytest.raises(TmemHazard, match=r"overlap the scale factors"):
        gemm_v11(qa, qb, backend="emulator", policy=policy)


def test_planted_scale_factors_of_another_k_block_are_caught_by_the_numbers(monkeypatch):
    """Every k-block loads the first k-block's scale atoms: the TMEM is filled and ordered, so no rule
    fires; the comparison with numpy on the dequantised operands is what catches it."""
    _planted(monkeypatch, "sf_k = uint32(kc * SF_ATOMS * 4)", "sf_k = uint32(0 * kc)")
    qa, qb = _spread_operands(40, 24, 256, "mxfp8", "mxfp8", seed=4, spread=8)
    d = gemm_v11(qa, qb, backend="emulator")
    ref = _deq(qa) @ _deq(qb).T
    assert (np.abs(d - ref) > tolerance(qa, qb)).mean() > 0.9


# -- the B200 host path, on the fake GPU of tests/fake_gpu ------------------------------------------
@pytest.mark.parametrize("fmt, shape", [("e4m3", (37, 100, 48)), ("mxfp8", (37, 100, 64)), ("nvfp4", (20, 30, 64))])
def test_gpu_path_runs_its_kernel(fmt, shape, monkeypatch):
    """backend="blackwell" on a fake B200 whose launches run on the emulator against its fake memory:
    upload of codes and scale atoms, five tensor maps (A, B, D, then SFA and SFB, or 0 for FP8), the
    cluster launch and the copy back; D must match numpy."""
    from tests.fake_gpu import FakeGpu, execute

    gpu = FakeGpu(executor=execute.emulated).install(monkeypatch)
    try:
        m, n, k = shape
        qa, qb = _spread_operands(m, n, k, fmt, fmt, seed=40, spread=2)
        _check(gemm_v11(qa, qb, backend="blackwell"), qa, qb)
        (launch,) = gpu.kernel_launches()
        maps = sorted(launch.tensor_maps)
        assert len(maps) == (3 if fmt == "e4m3" else 5)
        if fmt != "e4m3":
            sf = [launch.tensor_maps[i] for i in (3, 4)]
            assert [t.swizzle for t in sf] == ["CU_TENSOR_MAP_SWIZZLE_NONE"] * 2
    finally:
        FakeGpu.reset_caches()
