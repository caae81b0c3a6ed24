"""The emulator's step-11 tensor core (gemm_kernels.emu.tensor_core_lowp) on a purpose-built kernel:
FP8 (kind::f8f6f4), MXFP8 (kind::mxf8f6f4.block32) and NVFP4 (kind::mxf4nvf4.block16) MMAs whose
operands and scale factors come from gemm_kernels.quant through TMA and tcgen05.cp, against numpy on
the dequantised operands; the packed scale-factor layout, the TMEM scale-factor layout and the
descriptors' scale-factor IDs are thereby checked together. Then the new ways to be wrong."""
import inspect

import ml_dtypes
import numpy as np
import pytest
from numba import cuda, uint32

from gemm_kernels import emu, layouts, ptx
from gemm_kernels import quant as Q
from gemm_kernels.emu.errors import (DescriptorError, EmulatorError, SharedMemoryHazard, TmemHazard,
                                     UninitializedRead)
from tests.emu_kernels import BAR, SLOT, TMAP_A, _epilogue, sw128

A_BUF = 1024                 # 128 rows x 128 bytes, 128B swizzle
B_BUF = A_BUF + 16384        # N = 128 rows x 128 bytes
SFA_BUF = B_BUF + 16384      # up to 4 atoms of 512 bytes
SFB_BUF = SFA_BUF + 2048
SHARED = SFB_BUF + 2048
TMAP_B, TMAP_SFA, TMAP_SFB = TMAP_A + 128, TMAP_A + 256, TMAP_A + 384
SFA_COL, SFB_COL = 128, 144  # TMEM columns of the scale factors (the accumulator takes 0..127)
N = 128
#: kind -> (code the kernel branches on, elements per row of one 128-byte box row)
KINDS = {"f8f6f4": (0, 128), "mxf8f6f4": (1, 128), "mxf4nvf4": (2, 256)}


def _sf_desc(addr):
    return layouts.smem_desc_dev(addr, 16, 128, 0, 0)  # no swizzle: 8 rows of 16 bytes every 128 bytes


def k_lowp(out, kind, idesc, atoms, bug):
    """D[128, 128] = A . B^T over one 128-byte box of K (4 MMAs), scale factors (``atoms`` 512-byte
    atoms each of A and B) copied into TMEM by thread 0 after the TMA wait.
    bug 1: no copy of A's scale factors. bug 2: the copies are issued before the TMA wait.
    bug 3: B's scale factors are copied into columns the MMA does not read.
    bug 4: A's scale-factor buffer is refilled by TMA right after the MMAs, before the commit that
    says the copies read it.
    bug 5: the accumulator starts at column SFA_COL: the first MMA overwrites A's scale factors.
    bug 6: A's scale factors are copied to lane 32 (a .warpx4 copy names lane 0).
    bug 7: A's copy gets a 128B-swizzled descriptor (the scale-factor atom is not swizzled)."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    tma_bar, mma_done = base + BAR(0), base + BAR(1)
    if tid == 0:
        ptx.mbarrier_init(tma_bar, 1)
        ptx.mbarrier_init(mma_done, 1)
        ptx.fence_mbarrier_init()
    if warp == 0:
        ptx.tmem_alloc(base + SLOT, 256)
    cuda.syncthreads()
    tmem = smem32[SLOT // 4]
    if tid == 0:
        ptx.mbarrier_arrive_expect_tx(tma_bar, 2 * 16384 + (2 * 512 * atoms if kind else 0))
        ptx.tma_load_2d(base + A_BUF, TMAP_A, 0, 0, tma_bar)
        ptx.tma_load_2d(base + B_BUF, TMAP_B, 0, 0, tma_bar)
        if kind:
            ptx.tma_load_2d(base + SFA_BUF, TMAP_SFA, 0, 0, tma_bar)
            ptx.tma_load_2d(base + SFB_BUF, TMAP_SFB, 0, 0, tma_bar)
        if bug != 2:
            ptx.mbarrier_wait(tma_bar, 0)
            ptx.tcgen05_fence_after()
        if kind:
            for j in range(atoms):
                if bug == 6:
                    ptx.tcgen05_cp_32x128b_warpx4(tmem + (32 << 16) + SFA_COL, _sf_desc(base + SFA_BUF))
                elif bug == 7:
                    ptx.tcgen05_cp_32x128b_warpx4(tmem + SFA_COL, sw128(base + SFA_BUF))
                elif bug != 1:
                    ptx.tcgen05_cp_32x128b_warpx4(tmem + SFA_COL + 4 * j, _sf_desc(base + SFA_BUF + 512 * j))
                ptx.tcgen05_cp_32x128b_warpx4(tmem + SFB_COL + 4 * j + (64 if bug == 3 else 0),
                                              _sf_desc(base + SFB_BUF + 512 * j))
        if bug == 2:
            ptx.mbarrier_wait(tma_bar, 0)
            ptx.tcgen05_fence_after()
        d = tmem + (SFA_COL if bug == 5 else 0)
        for k in range(4):
            a, b = sw128(base + A_BUF + 32 * k), sw128(base + B_BUF + 32 * k)
            acc = 1 if k > 0 else 0
            if kind == 0:
                ptx.tcgen05_mma_f8f6f4(d, a, b, idesc, acc)
            elif kind == 1:  # one atom: 4 scale columns, MMA k reads byte k of each word
                ptx.tcgen05_mma_mxf8f6f4(d, a, b, layouts.instr_desc_sf_ids_dev(idesc, k, k),
                                         tmem + SFA_COL, tmem + SFB_COL, acc)
            else:  # four atoms: MMA k reads all four bytes of atom k's words
                ptx.tcgen05_mma_mxf4nvf4(d, a, b, idesc, tmem + SFA_COL + 4 * k, tmem + SFB_COL + 4 * k, acc)
        if bug == 4:
            ptx.mbarrier_arrive_expect_tx(tma_bar, 512 * atoms)
            ptx.tma_load_2d(base + SFA_BUF, TMAP_SFA, 0, 0, tma_bar)
        ptx.tcgen05_commit(mma_done)
        if bug == 4:
            ptx.mbarrier_wait(tma_bar, 1)
    ptx.mbarrier_wait(mma_done, 0)
    ptx.tcgen05_fence_after()
    _epilogue(out, tmem, warp, lane, 0, 0, N, 32 * warp)
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    if warp == 0:
        ptx.tcgen05_fence_after()
        ptx.tmem_relinquish()
        ptx.tmem_dealloc(tmem, 256)


def _operands(kind, fmt_a, fmt_b, seed, spread=8.0):
    k = KINDS[kind][1]
    rng = np.random.default_rng(seed)

    def mat(rows):
        # each block of 16 along K at its own magnitude: scale factors span many binades
        mag = np.exp2(rng.uniform(-spread, spread, (rows, k // 16))).repeat(16, axis=1)
        return (rng.standard_normal((rows, k)) * mag).astype(np.float32)

    return Q.quantize(mat(128), fmt_a), Q.quantize(mat(N), fmt_b)


def _run(kind, qa, qb, idesc, bug=0, policy="lazy", seed=0):
    code = KINDS[kind][0]
    maps = {TMAP_A: emu.TensorMapModel(qa.codes if kind != "mxf4nvf4" else qa.codes, 128, 128, "128B", name="A"),
            TMAP_B: emu.TensorMapModel(qb.codes, N, 128, "128B", name="B")}
    atoms = 0
    if qa.scales_packed is not None:
        sfa, sfb = qa.scales_packed.reshape(-1, 128), qb.scales_packed.reshape(-1, 128)
        atoms = sfa.shape[0] // 4
        maps[TMAP_SFA] = emu.TensorMapModel(sfa, sfa.shape[0], 128, "none", name="SFA")
        maps[TMAP_SFB] = emu.TensorMapModel(sfb, sfb.shape[0], 128, "none", name="SFB")
    out = np.zeros((128, N), dtype=np.float32)
    names = [("TMEM slot", SLOT, 4), ("A tile", A_BUF, 16384), ("B tile", B_BUF, 16384),
             ("SFA", SFA_BUF, 2048), ("SFB", SFB_BUF, 2048)]
    emu.run(k_lowp, 1, 128, (out, code, idesc, atoms, bug), shared_bytes=SHARED, policy=policy, seed=seed,
            names=names, tensor_maps=maps)
    return out


def _deq(q):
    return Q.dequantize(q, with_global=False).astype(np.float64)  # what the tensor core multiplies


def _reference(qa, qb):
    return _deq(qa) @ _deq(qb).T


def _check(out, qa, qb, rows=slice(None)):
    ref = _reference(qa, qb)[rows]
    # per MMA one float32 rounding of an exact sum, then 3 float32 additions: a few ulps of sum |a b|
    mag = (np.abs(_deq(qa)) @ np.abs(_deq(qb)).T)[rows]
    err = np.abs(out[rows] - ref)
    assert np.all(err <= 8 * np.finfo(np.float32).eps * mag + 1e-38), err.max()


@pytest.mark.parametrize("fa, fb", [("e4m3", "e4m3"), ("e5m2", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e5m2")])
def test_fp8_mma_matches_numpy(fa, fb):
    qa, qb = _operands("f8f6f4", fa, fb, seed=1, spread=2.0)
    out = _run("f8f6f4", qa, qb, layouts.make_instr_desc_f8f6f4(128, N, a_dtype=fa, b_dtype=fb))
    _check(out, qa, qb)


@pytest.mark.parametrize("policy", ["lazy", "eager", "random"])
def test_mxfp8_mma_matches_numpy(policy):
    qa, qb = _operands("mxf8f6f4", "mxfp8", "mxfp8", seed=2)
    idesc = layouts.make_instr_desc_block_scaled(128, N, kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e4m3",
                                                 scale_dtype="ue8m0")
    _check(_run("mxf8f6f4", qa, qb, idesc, policy=policy, seed=3), qa, qb)


@pytest.mark.parametrize("policy", ["lazy", "random"])
def test_nvfp4_mma_matches_numpy(policy):
    qa, qb = _operands("mxf4nvf4", "nvfp4", "nvfp4", seed=4, spread=4.0)
    idesc = layouts.make_instr_desc_block_scaled(128, N, kind="mxf4nvf4", a_dtype="e2m1", b_dtype="e2m1",
                                                 scale_dtype="ue4m3")
    _check(_run("mxf4nvf4", qa, qb, idesc, policy=policy, seed=5), qa, qb)


def test_scale_factors_matter():
    """The check above could not pass with the scales misplaced: two rows' scale bytes swapped in the
    packed layout (rows 0 and 32: bytes 0 and 4 of the first atom) change exactly those two rows."""
    qa, qb = _operands("mxf8f6f4", "mxfp8", "mxfp8", seed=2)
    plain = layouts.make_instr_desc_block_scaled(128, N, kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e4m3",
                                                 scale_dtype="ue8m0")
    swapped = qa.scales_packed.copy()
    swapped[[0, 4]] = swapped[[4, 0]]
    bad = Q.Quantized(qa.fmt, qa.codes, qa.values, qa.scales, swapped)
    out = _run("mxf8f6f4", bad, qb, plain)
    ref = _reference(qa, qb)
    assert not np.allclose(out[[0, 32]], ref[[0, 32]], rtol=1e-3)
    _check(out, qa, qb, rows=np.delete(np.arange(128), [0, 32]))


def _mx_pair():
    qa, qb = _operands("mxf8f6f4", "mxfp8", "mxfp8", seed=6)
    return qa, qb, layouts.make_instr_desc_block_scaled(128, N, kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e4m3",
                                                        scale_dtype="ue8m0")


@pytest.mark.parametrize("policy", ["lazy", "eager", "random"])
def test_mma_reading_scale_columns_no_copy_filled(policy):
    qa, qb, idesc = _mx_pair()
    with pytest.raises(UninitializedRead, match=r"reads its A scale factors .* which no tcgen05.cp filled"):
        _run("mxf8f6f4", qa, qb, idesc, bug=1, policy=policy)
    with pytest.raises(UninitializedRead, match=r"reads its B scale factors .* which no tcgen05.cp filled"):
        _run("mxf8f6f4", qa, qb, idesc, bug=3, policy=policy)


@pytest.mark.parametrize("policy", ["lazy", "eager", "random"])
def test_copy_before_the_tma_wait(policy):
    qa, qb, idesc = _mx_pair()
    with pytest.raises(SharedMemoryHazard, match=r"tcgen05.cp") as info:
        _run("mxf8f6f4", qa, qb, idesc, bug=2, policy=policy)
    assert "SFA" in str(info.value) and f"test_emu_lowp.py:{_line('tcgen05_cp_32x128b_warpx4(tmem + SFA_COL + 4 * j')}" in str(info.value)


@pytest.mark.parametrize("policy", ["lazy", "eager", "random"])
def test_scale_buffer_refilled_before_the_copy_read_it(policy):
    qa, qb, idesc = _mx_pair()
    with pytest.raises(EmulatorError) as info:
        _run("mxf8f6f4", qa, qb, idesc, bug=4, policy=policy)
    assert isinstance(info.value, SharedMemoryHazard)
    # the copy's line, whichever of the two came first in the run
    assert "SFA" in str(info.value) and f"test_emu_lowp.py:{_line('tcgen05_cp_32x128b_warpx4(tmem + SFA_COL + 4 * j')}" in str(info.value)


def _line(text):
    lines, first = inspect.getsourcelines(k_lowp)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("policy", ["lazy", "eager", "random"])
def test_accumulator_over_the_scale_factors(policy):
    qa, qb, idesc = _mx_pair()
    with pytest.raises(TmemHazard, match=r"overlap the scale factors") as info:
        _run("mxf8f6f4", qa, qb, idesc, bug=5, policy=policy)
    assert f"test_emu_lowp.py:{_line('ptx.tcgen05_mma_mxf8f6f4(d, a, b')}" in str(info.value)


def test_copy_to_another_lane_or_from_a_swizzled_descriptor_is_refused():
    from gemm_kernels.emu.errors import MemoryFault

    qa, qb, idesc = _mx_pair()
    with pytest.raises(MemoryFault, match="has lane 32; .warpx4 fills lanes 0..31"):
        _run("mxf8f6f4", qa, qb, idesc, bug=6)
    with pytest.raises(DescriptorError, match="no-swizzle"):
        _run("mxf8f6f4", qa, qb, idesc, bug=7)


def test_ue4m3_scale_with_sign_bit_is_refused():
    qa, qb = _operands("mxf4nvf4", "nvfp4", "nvfp4", seed=7, spread=2.0)
    packed = qa.scales_packed.copy()
    packed[0] |= 0x80
    bad = Q.Quantized(qa.fmt, qa.codes, qa.values, qa.scales, packed)
    idesc = layouts.make_instr_desc_block_scaled(128, N, kind="mxf4nvf4", a_dtype="e2m1", b_dtype="e2m1",
                                                 scale_dtype="ue4m3")
    with pytest.raises(DescriptorError, match="sign bit"):
        _run("mxf4nvf4", bad, qb, idesc)


def test_block16_with_scale_ids_is_refused():
    qa, qb = _operands("mxf4nvf4", "nvfp4", "nvfp4", seed=7, spread=2.0)
    idesc = layouts.make_instr_desc_block_scaled(128, N, kind="mxf4nvf4", a_dtype="e2m1", b_dtype="e2m1",
                                                 scale_dtype="ue4m3") | (2 << 29)
    with pytest.raises(DescriptorError, match="scale-factor IDs must be 0"):
        _run("mxf4nvf4", qa, qb, idesc)


def test_nan_scale_gives_nan_rows():
    """UE8M0 0xFF is NaN: the rows it scales come out NaN, the others stay exact."""
    qa, qb, idesc = _mx_pair()
    packed = qa.scales_packed.copy()
    packed[Q.sf_offset(5, 2, 4)] = 0xFF
    bad = Q.Quantized(qa.fmt, qa.codes, qa.values, qa.scales, packed)
    out = _run("mxf8f6f4", bad, qb, idesc)
    assert np.isnan(out[5]).all()
    _check(out, qa, qb, rows=np.delete(np.arange(128), 5))


def test_decode_is_exact_for_every_e4m3_code():
    """A one-hot B picks column k of A: every finite E4M3 code (subnormals and the largest values
    included) comes out exactly as ml_dtypes decodes it. (A NaN element makes its whole row NaN,
    0 x NaN included: tested with the scales above.)"""
    codes = np.arange(128 * 128, dtype=np.int64).reshape(128, 128) % 256
    codes[(codes & 0x7F) == 0x7F] = 0
    values = codes.astype(np.uint8).view(ml_dtypes.float8_e4m3fn)
    qa = Q.Quantized("e4m3", codes.astype(np.uint8), values, None, None)
    eye = np.zeros((N, 128), dtype=np.float32)
    eye[np.arange(N), np.arange(N)] = 1.0
    qb = Q.quantize(eye, "e4m3")
    out = _run("f8f6f4", qa, qb, layouts.make_instr_desc_f8f6f4(128, N))
    assert np.array_equal(out, values.astype(np.float32))
    assert len(np.unique(codes)) == 254


@pytest.mark.parametrize("policy", ["lazy", "random"])
def test_fp8_pair_mma_matches_numpy(policy):
    """kind::f8f6f4 with cta_group::2: the CTA-pair kernel of the emulator tests (tests/emu_kernels.py's
    k_mma_cg2, each CTA loading its half of A and B) with the FP8 pair MMA in place of the FP16 one:
    the byte counts of its boxes are the same (128 bytes per row)."""
    import types

    from tests import emu_kernels as K

    ptx_f8 = types.ModuleType("ptx_f8")
    ptx_f8.__dict__.update(vars(ptx))
    ptx_f8.tcgen05_mma_cg2 = ptx.tcgen05_mma_f8f6f4_cg2
    kern = types.FunctionType(K.k_mma_cg2.__code__, {**K.k_mma_cg2.__globals__, "ptx": ptx_f8}, "k_mma_cg2_fp8",
                              K.k_mma_cg2.__defaults__)
    rng = np.random.default_rng(9)
    qa = Q.quantize(rng.standard_normal((256, 128)).astype(np.float32), "e4m3")
    qb = Q.quantize(rng.standard_normal((256, 128)).astype(np.float32), "e5m2")
    out = np.full((256, 256), np.nan, dtype=np.float32)
    idesc = layouts.make_instr_desc_f8f6f4(256, 256, a_dtype="e4m3", b_dtype="e5m2", cta_group=2)
    K.run(kern, (out, idesc, 256, 0), block=128, grid=2, cluster=2, policy=policy, seed=1,
          names=K.bar_names("tma_bar", "mma_done", "spare", "late", "bye"),
          maps=K.tmaps((K.TMAP_A, qa.codes, 128, 128), (K.TMAP_B, qb.codes, 128, 128)))
    _check(out, qa, qb)


# -- the CTA pair (cta_group::2) ------------------------------------------------------------------
P_SFA_COL, P_SFB_COL = 256, 272  # the accumulator takes columns 0..255 (N = 256)
P_SFA_BUF, P_SFB_BUF = SFA_BUF, SFA_BUF + 2048
P_SHARED = P_SFB_BUF + 4096


def k_lowp_pair(out, kind, idesc, atoms_k, bug):
    """D[256, 256] = A . B^T by a CTA pair: CTA r loads its 128 rows of A and of B, the scale factors of
    its A rows (``atoms_k`` atoms) and of all 256 rows of B (2 x ``atoms_k`` atoms); the even CTA copies
    them into both CTAs' TMEM (cta_group::2), issues 4 pair MMAs and commits to both CTAs.
    bug 1: the copy of B's second row block (rows 128..255) is left out."""
    smem32 = cuda.shared.array(0, uint32)
    base = ptx.shared_addr(smem32)
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    rank = ptx.cluster_ctarank()
    tma_bar, mma_done = base + BAR(0), base + BAR(1)
    if tid == 0:
        ptx.mbarrier_init(tma_bar, 1)
        ptx.mbarrier_init(mma_done, 1)
        ptx.fence_mbarrier_init()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if warp == 0:
        ptx.tmem_alloc_cg2(base + SLOT, 512)
    ptx.tcgen05_fence_before()
    cuda.syncthreads()
    ptx.tcgen05_fence_after()
    tmem = smem32[SLOT // 4]
    if tid == 0:
        ptx.mbarrier_arrive_expect_tx(tma_bar, 2 * 16384 + 3 * 512 * atoms_k)
        ptx.tma_load_2d(base + A_BUF, TMAP_A, 0, 128 * rank, tma_bar)
        ptx.tma_load_2d(base + B_BUF, TMAP_B, 0, 128 * rank, tma_bar)
        ptx.tma_load_2d(base + P_SFA_BUF, TMAP_SFA, 0, 4 * atoms_k * rank, tma_bar)
        ptx.tma_load_2d(base + P_SFB_BUF, TMAP_SFB, 0, 0, tma_bar)
        ptx.mbarrier_wait(tma_bar, 0)
    ptx.cluster_arrive()  # both CTAs' operands and scale factors are in
    ptx.cluster_wait()
    if rank == 0 and tid == 0:
        ptx.tcgen05_fence_after()
        for j in range(atoms_k):  # k-atom j: A's at SFA_COL + 4 j, B's two row blocks at SFB_COL + 8 j (+ 4)
            ptx.tcgen05_cp_32x128b_warpx4_cg2(tmem + P_SFA_COL + 4 * j, _sf_desc(base + P_SFA_BUF + 512 * j))
            for rb in range(2):
                if not (bug == 1 and rb == 1):
                    ptx.tcgen05_cp_32x128b_warpx4_cg2(tmem + P_SFB_COL + 8 * j + 4 * rb,
                                                      _sf_desc(base + P_SFB_BUF + 512 * (rb * atoms_k + j)))
        for k in range(4):
            a, b = sw128(base + A_BUF + 32 * k), sw128(base + B_BUF + 32 * k)
            acc = 1 if k > 0 else 0
            if kind == 1:
                ptx.tcgen05_mma_mxf8f6f4_cg2(tmem, a, b, layouts.instr_desc_sf_ids_dev(idesc, k, k),
                                             tmem + P_SFA_COL, tmem + P_SFB_COL, acc)
            else:
                ptx.tcgen05_mma_mxf4nvf4_cg2(tmem, a, b, idesc, tmem + P_SFA_COL + 4 * k, tmem + P_SFB_COL + 8 * k,
                                             acc)
        ptx.tcgen05_commit_cg2_multicast(mma_done, 3)
    ptx.mbarrier_wait_cluster(mma_done, 0)
    ptx.tcgen05_fence_after()
    _epilogue(out, tmem, warp, lane, 128 * rank, 0, 256, 32 * warp)
    ptx.tcgen05_fence_before()
    ptx.cluster_arrive()
    ptx.cluster_wait()
    if warp == 0:
        ptx.tcgen05_fence_after()
        ptx.tmem_relinquish_cg2()
        ptx.tmem_dealloc_cg2(tmem, 512)


def _run_pair(kind, qa, qb, idesc, bug=0, policy="lazy", seed=0):
    sfa, sfb = qa.scales_packed.reshape(-1, 128), qb.scales_packed.reshape(-1, 128)
    atoms_k = sfa.shape[0] // 8  # two row blocks of A, 4 rows of 128 bytes per atom
    maps = {TMAP_A: emu.TensorMapModel(qa.codes, 128, 128, "128B", name="A"),
            TMAP_B: emu.TensorMapModel(qb.codes, 128, 128, "128B", name="B"),
            TMAP_SFA: emu.TensorMapModel(sfa, 4 * atoms_k, 128, "none", name="SFA"),
            TMAP_SFB: emu.TensorMapModel(sfb, sfb.shape[0], 128, "none", name="SFB")}
    out = np.full((256, 256), np.nan, dtype=np.float32)
    names = [("TMEM slot", SLOT, 4), ("A tile", A_BUF, 16384), ("B tile", B_BUF, 16384),
             ("SFA", P_SFA_BUF, 2048), ("SFB", P_SFB_BUF, 4096)]
    emu.run(k_lowp_pair, 2, 128, (out, KINDS[kind][0], idesc, atoms_k, bug), cluster=2, shared_bytes=P_SHARED,
            policy=policy, seed=seed, names=names, tensor_maps=maps)
    return out


def _pair_operands(kind, fmt, seed):
    k = KINDS[kind][1]
    rng = np.random.default_rng(seed)

    def mat(rows):
        mag = np.exp2(rng.uniform(-6, 6, (rows, k // 16))).repeat(16, axis=1)
        return (rng.standard_normal((rows, k)) * mag).astype(np.float32)

    return Q.quantize(mat(256), fmt), Q.quantize(mat(256), fmt)


@pytest.mark.parametrize("kind, fmt, scale", [("mxf8f6f4", "mxfp8", "ue8m0"), ("mxf4nvf4", "nvfp4", "ue4m3")])
@pytest.mark.parametrize("policy", ["lazy", "random"])
def test_block_scaled_pair_mma_matches_numpy(kind, fmt, scale, policy):
    qa, qb = _pair_operands(kind, fmt, seed=12)
    ab = "e4m3" if fmt == "mxfp8" else "e2m1"
    idesc = layouts.make_instr_desc_block_scaled(256, 256, kind=kind, a_dtype=ab, b_dtype=ab, scale_dtype=scale,
                                                 cta_group=2)
    _check(_run_pair(kind, qa, qb, idesc, policy=policy, seed=2), qa, qb)


def test_pair_mma_missing_a_row_block_of_b_scales():
    qa, qb = _pair_operands("mxf8f6f4", "mxfp8", seed=13)
    idesc = layouts.make_instr_desc_block_scaled(256, 256, kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e4m3",
                                                 scale_dtype="ue8m0", cta_group=2)
    with pytest.raises(UninitializedRead, match=r"B scale factors from TMEM lane \d+, column 276 of CTA"):
        _run_pair("mxf8f6f4", qa, qb, idesc, bug=1)
