"""The emulator's unit semantics: each PTX twin through a tiny kernel (tests/emu_kernels.py) run with
gemm_kernels.emu.run, under several completion policies.

What is checked here is what the hardware documents (PTX ISA) and what the H200 ground truth and the
kernels rely on: mbarrier phases and parity, expect_tx arithmetic, TMA placement (128B swizzle byte
for byte, no swizzle, out-of-bounds zero fill, stores and bulk groups), matrix and instruction
descriptor decoding, MMA numerics (fp16, bf16, accumulate chains), TMEM layouts of cta_group 1 and
2, the lane-quarter rule, DSMEM with mapa and remote arrivals, elect.sync, named barriers with
partial thread counts, and the cluster barrier.
"""
import numpy as np
import pytest

from gemm_kernels import layouts
from gemm_kernels.emu.tensor_core import decode_instr_desc, decode_smem_desc
from tests import emu_kernels as K

POLICIES = ["eager", "lazy", "random"]
ALL = [("eager", 0), ("lazy", 0), ("random", 1), ("random", 2)]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _fp16(shape, seed=0):
    return (_rng(seed).standard_normal(shape) * 0.5).astype(np.float16)


def _ref(a, b):
    return a.astype(np.float32) @ b.astype(np.float32).T


# ---------------------------------------------------------------------------------------------------
# mbarrier
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", ALL)
def test_fresh_barrier_parity1_passes_parity0_blocks(policy, seed):
    out = np.zeros(64, dtype=np.uint32)
    K.run(K.k_fresh_parity, (out,), block=64, policy=policy, seed=seed)
    assert out[40] == 1  # warp 1 passed parity 1 before anybody arrived (thread 0 waited for that)
    assert (out[1:33] == 42).all(), out[1:33]  # the parity-0 wait released only after thread 0's store


@pytest.mark.parametrize("stages", [1, 2, 3])
@pytest.mark.parametrize("policy,seed", ALL)
def test_ring_many_rounds(stages, policy, seed):
    """Producer/consumer through full/empty barriers: 40 rounds wrap the ring's phases many times (an
    odd ring depth makes the phase flip at different rounds in each slot)."""
    rounds = 40
    out = np.zeros(32 * rounds, dtype=np.uint32)
    K.run(K.k_ring, (out, rounds, stages, 0), block=64, policy=policy, seed=seed, names=K.RING_NAMES)
    want = np.repeat(7 * np.arange(rounds) + 1, 32)
    np.testing.assert_array_equal(out, want)


# ---------------------------------------------------------------------------------------------------
# TMA loads: expect_tx, placement, out of bounds
# ---------------------------------------------------------------------------------------------------
def _distinct_u16(rows, cols, seed=0):
    v = _rng(seed).permutation(rows * cols).astype(np.uint16) + 1
    return v.reshape(rows, cols)


def _load(arr, box, swizzle, c0=0, c1=0, mode=0, nbytes=None, policy="lazy", seed=0):
    rows, cols = box
    box_bytes = rows * cols * 2
    nwords = box_bytes // 4
    out = np.zeros(nwords, dtype=np.uint32)
    maps = K.tmaps((K.TMAP_A, arr, rows, cols, swizzle))
    K.run(K.k_tma_load, (out, c0, c1, box_bytes if nbytes is None else nbytes, mode, nwords), block=128,
          policy=policy, seed=seed, names=K.bar_names("tma_bar"), maps=maps)
    return out.view(np.uint8)


def sw128_off(r, c):
    """Byte offset of element (r, c) of a 128-byte-row fp16 box with the 128B swizzle."""
    return 128 * r + 16 * ((c // 8) ^ (r % 8)) + 2 * (c % 8)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("policy", POLICIES)
def test_tma_load_sw128_placement_and_expect_tx(mode, policy):
    """A 128 x 64 fp16 box with the 128B swizzle lands byte for byte at
    off(r, c) = 128 r + 16 ((c // 8) ^ (r % 8)) + 2 (c % 8), whichever way its 16384 bytes were announced:
    arrive.expect_tx; expect_tx + arrive; two expect_tx halves; or arrive.expect_tx after the copy."""
    arr = _distinct_u16(256, 192)
    c0, c1 = 64, 128
    got = _load(arr, (128, 64), "128B", c0, c1, mode=mode, policy=policy)
    box = arr[c1:c1 + 128, c0:c0 + 64]
    r, c = np.meshgrid(np.arange(128), np.arange(64), indexing="ij")
    off = sw128_off(r, c)
    assert sorted(off.ravel().tolist()) == list(range(0, 16384, 2))  # a permutation of the box
    placed = got[off] | (got[off + 1].astype(np.uint16) << 8)
    np.testing.assert_array_equal(placed, box)
    # the formula is the layouts module's (one definition for host, kernels and emulator)
    assert all(layouts.tile_offset_k_major_sw128(int(rr), int(cc), 2) == sw128_off(int(rr), int(cc))
               for rr, cc in [(0, 0), (1, 8), (7, 63), (9, 17), (127, 40)])


@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_tma_load_no_swizzle_is_row_major(policy):
    arr = _distinct_u16(64, 96)
    got = _load(arr, (16, 32), "none", 32, 8, policy=policy).view(np.uint16)
    np.testing.assert_array_equal(got.reshape(16, 32), arr[8:24, 32:64])


@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_tma_load_edge_boxes_zero_fill(policy):
    """Boxes that hang over the end (and, for loads, the start) of the matrix: the outside reads 0,
    and the expected byte count is still the whole box."""
    arr = _distinct_u16(100, 40)
    r, c = np.meshgrid(np.arange(64), np.arange(32), indexing="ij")
    lin = 64 * r + 2 * c  # 64-byte rows; the 128B swizzle XORs address bits [6:4] with [9:7]
    off = lin ^ (((lin >> 7) & 7) << 4)
    for c0, c1 in [(32, 64), (-8, -4), (0, 96)]:
        got = _load(arr, (64, 32), "128B", c0, c1, policy=policy)
        want = np.zeros((64, 32), dtype=np.uint16)
        rr0, rr1 = max(c1, 0), min(c1 + 64, 100)
        cc0, cc1 = max(c0, 0), min(c0 + 32, 40)
        want[rr0 - c1:rr1 - c1, cc0 - c0:cc1 - c0] = arr[rr0:rr1, cc0:cc1]
        placed = got[off] | (got[off + 1].astype(np.uint16) << 8)
        np.testing.assert_array_equal(placed, want, err_msg=f"box at (col {c0}, row {c1})")


# ---------------------------------------------------------------------------------------------------
# TMA stores and bulk groups
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", ALL)
def test_tma_store_round_trip_bulk_groups(policy, seed):
    """Load a box into staging, store it, wait_group.read, rewrite the staging (+1, fenced), store it
    again elsewhere: both destinations hold exactly what the staging held at each store."""
    src = _distinct_u16(256, 128)
    d1 = np.zeros((256, 128), dtype=np.uint16)
    d2 = np.zeros((256, 128), dtype=np.uint16)
    maps = K.tmaps((K.TMAP_A, src, 128, 64), (K.TMAP_B, d1, 128, 64), (K.TMAP_C, d2, 128, 64))
    o1, o2 = np.zeros(128, np.uint32), np.zeros(128, np.uint32)
    K.run(K.k_tma_store, (o1, o2, 64, 128, 0, 64, 128 * 64 * 2, 0), block=128, policy=policy, seed=seed, maps=maps)
    want1 = np.zeros_like(d1)
    want1[64:192, 0:64] = src[128:256, 64:128]
    np.testing.assert_array_equal(d1, want1)
    want2 = np.zeros_like(d2)
    want2[64:192, 0:64] = src[128:256, 64:128] + 1
    np.testing.assert_array_equal(d2, want2)


@pytest.mark.parametrize("policy", ["eager", "lazy"])
def test_tma_store_edge_box_is_clipped(policy):
    """A store box that hangs over the end of the matrix writes only the inside."""
    src = _distinct_u16(256, 128)
    d1 = np.zeros((100, 40), dtype=np.uint16)
    d2 = np.zeros((100, 40), dtype=np.uint16)
    maps = K.tmaps((K.TMAP_A, src, 64, 32), (K.TMAP_B, d1, 64, 32), (K.TMAP_C, d2, 64, 32))
    o1, o2 = np.zeros(128, np.uint32), np.zeros(128, np.uint32)
    K.run(K.k_tma_store, (o1, o2, 0, 0, 32, 64, 64 * 32 * 2, 0), block=128, policy=policy, maps=maps)
    want = np.zeros_like(d1)
    want[64:100, 32:40] = src[0:36, 0:8]
    np.testing.assert_array_equal(d1, want)
    np.testing.assert_array_equal(d2[64:100, 32:40], src[0:36, 0:8] + 1)


# ---------------------------------------------------------------------------------------------------
# descriptors
# ---------------------------------------------------------------------------------------------------
def test_decode_smem_desc_known_value():
    d = decode_smem_desc(0x4000404000010040)
    assert d["start"] == 0x400
    assert d["lbo"] == 16
    assert d["sbo"] == 1024
    assert d["fixed"] == 1  # bit 46: the sm_100 descriptor version
    assert d["base_offset"] == 0 and d["lbo_mode"] == 0
    assert d["swizzle_code"] == 2  # 128B
    assert layouts.make_smem_desc(0x400, lbo=16, sbo=1024, swizzle="128B") == 0x4000404000010040


def test_decode_instr_desc_known_values():
    d = decode_instr_desc(0x08200010)
    assert (d["m"], d["n"]) == (128, 128)
    assert d["d_fmt"] == 1 and d["a_fmt"] == 0 and d["b_fmt"] == 0  # f32 accumulator, f16 inputs
    assert d["a_mn"] == 0 and d["b_mn"] == 0 and d["sparse"] == 0
    assert layouts.make_instr_desc(128, 128) == 0x08200010
    d = decode_instr_desc(0x10400010)
    assert (d["m"], d["n"]) == (256, 256)
    assert layouts.make_instr_desc(256, 256, cta_group=2) == 0x10400010
    d = decode_instr_desc(layouts.make_instr_desc(128, 64, ab_dtype="bf16", acc_dtype="f16"))
    assert (d["m"], d["n"], d["a_fmt"], d["b_fmt"], d["d_fmt"]) == (128, 64, 1, 1, 0)


# ---------------------------------------------------------------------------------------------------
# MMA numerics, TMEM layout (cta_group 1), lane quarters
# ---------------------------------------------------------------------------------------------------
def _mma(a, b, *, n, nk, chains=1, acc2=0, idesc=None, block=128, policy="lazy", seed=0, desc_clear=0,
         quarter_bug=0):
    out = np.full((128, n), np.nan, dtype=np.float32)
    maps = K.tmaps((K.TMAP_A, a, 128, 64), (K.TMAP_B, b, n, 64))
    idesc = layouts.make_instr_desc(128, n) if idesc is None else idesc
    K.run(K.k_mma, (out, idesc, n, nk, chains, acc2, desc_clear, quarter_bug), block=block, policy=policy, seed=seed,
          names=K.MMA_NAMES, maps=maps)
    return out


@pytest.mark.parametrize("policy", POLICIES)
def test_one_mma_128x128x16(policy):
    """One M=128 N=128 K=16 MMA; row m of D is TMEM lane m (each warp reads its lane quarter)."""
    a, b = _fp16((128, 64), 1), _fp16((128, 64), 2)
    out = _mma(a, b, n=128, nk=1, policy=policy)
    np.testing.assert_allclose(out, _ref(a[:, :16], b[:, :16]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("policy", POLICIES)
def test_mma_accumulate_chain_k64(policy):
    a, b = _fp16((128, 64), 3), _fp16((128, 64), 4)
    out = _mma(a, b, n=128, nk=4, policy=policy)
    np.testing.assert_allclose(out, _ref(a, b), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("acc2,factor", [(0, 1.0), (1, 2.0)])
def test_mma_second_chain_overwrites_or_accumulates(acc2, factor):
    """accumulate = 0 on the first MMA of a chain overwrites D; 1 adds to what is there."""
    a, b = _fp16((128, 64), 5), _fp16((128, 64), 6)
    out = _mma(a, b, n=128, nk=4, chains=2, acc2=acc2)
    np.testing.assert_allclose(out, factor * _ref(a, b), rtol=1e-5, atol=1e-4)


def test_mma_n256_eight_warps_lane_quarters():
    """N = 256 and 8 warps: warps w and w + 4 share lane quarter w % 4 (columns split between them)."""
    a, b = _fp16((128, 64), 7), _fp16((256, 64), 8)
    out = _mma(a, b, n=256, nk=4, block=256)
    np.testing.assert_allclose(out, _ref(a, b), rtol=1e-5, atol=1e-4)


def test_mma_n64():
    a, b = _fp16((128, 64), 9), _fp16((64, 64), 10)
    out = _mma(a, b, n=64, nk=4)
    np.testing.assert_allclose(out, _ref(a, b), rtol=1e-5, atol=1e-4)


def test_mma_bf16_inputs():
    """ab_dtype bf16: the same bits are read as bfloat16 (the upper half of an fp32)."""
    x = _rng(11).standard_normal((128, 64)).astype(np.float32)
    y = _rng(12).standard_normal((128, 64)).astype(np.float32)
    a = (x.view(np.uint32) >> 16).astype(np.uint16)  # truncation to bf16
    b = (y.view(np.uint32) >> 16).astype(np.uint16)
    af = (a.astype(np.uint32) << 16).view(np.float32)
    bf = (b.astype(np.uint32) << 16).view(np.float32)
    out = _mma(a, b, n=128, nk=4, idesc=layouts.make_instr_desc(128, 128, ab_dtype="bf16"))
    np.testing.assert_allclose(out, af @ bf.T, rtol=1e-5, atol=1e-4)


def test_mma_f16_accumulator_rounds_each_step():
    a, b = _fp16((128, 64), 13), _fp16((128, 64), 14)
    out = _mma(a, b, n=128, nk=4, idesc=layouts.make_instr_desc(128, 128, acc_dtype="f16"))
    want = np.zeros((128, 128), np.float32)
    for k in range(4):
        want = (want + _ref(a[:, 16 * k:16 * k + 16], b[:, 16 * k:16 * k + 16])).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------------------------------------------
# cta_group 2: a CTA pair, each CTA's rows in its own TMEM
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", [("eager", 0), ("lazy", 0), ("random", 1)])
def test_mma_cta_pair_rows_in_own_tmem(policy, seed):
    n = 256
    a, b = _fp16((256, 64), 15), _fp16((n, 64), 16)
    out = np.full((256, n), np.nan, dtype=np.float32)
    maps = K.tmaps((K.TMAP_A, a, 128, 64), (K.TMAP_B, b, n // 2, 64))
    K.run(K.k_mma_cg2, (out, layouts.make_instr_desc(256, n, cta_group=2), n), block=128, grid=2, cluster=2,
          policy=policy, seed=seed, names=K.MMA_NAMES, maps=maps)
    np.testing.assert_allclose(out, _ref(a, b), rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------------------------------
# clusters: DSMEM, remote arrivals, the cluster barrier
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy,seed", ALL)
def test_dsmem_mapa_and_remote_arrival(policy, seed):
    out = np.zeros((2, 65, 4), dtype=np.uint32)
    K.run(K.k_dsmem, (out,), block=64, grid=2, cluster=2, policy=policy, seed=seed, names=K.bar_names("mailbox"))
    for rank in (0, 1):
        peer = rank ^ 1
        v = 100 * (peer + 1)
        assert (out[rank, :64] == np.array([v + 1, v + 2, v + 3, v + 4])).all(), out[rank, :4]
        local = int(out[rank, 64, 1])
        assert int(out[rank, 64, 0]) == (local & 0xFFFFFF) | (peer << 24)  # mapa: the peer's rank from bit 24


@pytest.mark.parametrize("policy,seed", ALL)
def test_cluster_barrier(policy, seed):
    rounds = 3
    marks = np.zeros((rounds, 128), dtype=np.int32)
    seen = np.zeros((rounds, 128), dtype=np.int32)
    K.run(K.k_cluster_barrier, (marks, seen, rounds), block=64, grid=2, cluster=2, policy=policy, seed=seed)
    assert (seen == 128).all()


# ---------------------------------------------------------------------------------------------------
# warps: elect.sync, named barriers
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("block", [32, 96, 80])
@pytest.mark.parametrize("policy", ["lazy", "random"])
def test_elect_sync_picks_exactly_one_lane(block, policy):
    out = np.full(block, 7, dtype=np.uint32)
    K.run(K.k_elect, (out,), block=block, policy=policy, seed=3)
    for w in range(0, block, 32):
        lanes = out[w:w + 32]
        assert set(lanes.tolist()) <= {0, 1} and lanes.sum() == 1 and lanes[0] == 1


@pytest.mark.parametrize("policy,seed", ALL)
def test_named_barriers_partial_counts(policy, seed):
    """Barrier 1 (warps 0-3, 128 of 256 threads): producers bar.arrive, consumers bar.sync; barrier 2
    hands the slot back; barrier 3 is used by warps 4-7 alone, at the same time."""
    rounds = 4
    out = np.zeros(64 * rounds + 4, dtype=np.uint32)
    K.run(K.k_named, (out, rounds, 0), block=256, policy=policy, seed=seed)
    for r in range(rounds):
        np.testing.assert_array_equal(out[64 * r:64 * r + 64], 3 * np.arange(64) + r)
    assert (out[64 * rounds:] == rounds).all()
