"""One tiny kernel per PTX operation of ``gemm_kernels.ptx`` (for tests/test_ptx_ops.py).

Every kernel has the same signature, :data:`SIG` = ``(tmap, x, out, fout)``:

* ``tmap``  uint64   global address of a 128-byte CUtensorMap (as the real kernels pass it),
* ``x``     uint32   a run-time value, so that coordinates, parities and ranks are not constants,
* ``out``   uint32[] and ``fout`` float32[]: where results go, so that ptxas keeps them.

Each kernel is :func:`k_baseline` (the scaffolding: a shared array, its address, one store) plus the
one operation it is named after, with plausible operands: shared addresses from ``ptx.shared_addr``,
the TMEM address read from the shared slot that ``tcgen05.alloc`` writes, matrix descriptors from the
kernels' own device function (so building them also exercises device functions without a GPU).
``opcodes(k_<op>) - opcodes(k_baseline)`` is what the op costs in SASS (``k_no_smem`` is the baseline
of ``k_shared_addr``). Nothing here is launched; the kernels are only built.

``OP_KERNELS`` maps every op name of ``gemm_kernels.ptx.REGISTRY`` to its kernel. ``MIXED_CTA_GROUP``
is a kernel ptxas must reject (cta_group::1 and ::2 in one kernel).
"""
from numba import cuda, uint8, uint32, uint64

from gemm_kernels import layouts, ptx
from gemm_kernels.kernels.descriptors import DESC_HI, sw128_desc_lo, sw128_kmajor_desc
from gemm_kernels.trace import ROLE_MMA

SIG = "void(uint64, uint32, uint32[::1], float32[::1])"

IDESC = layouts.make_instr_desc(128, 256)                  # M=128, N=256, f16 x f16 -> f32
IDESC_CG2 = layouts.make_instr_desc(256, 256, cta_group=2)  # the CTA pair's M=256
TMEM_COLS = 256
BOX_BYTES = 128 * 64 * 2                                   # one 128 x 64 fp16 TMA box (A, 128 rows)
B_BYTES = 256 * 64 * 2                                     # B: N = 256 rows of 64 fp16


# -- scaffolding --------------------------------------------------------------------------------------
def k_baseline(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x


def k_no_smem(tmap, x, out, fout):
    """The baseline of ``k_shared_addr`` (which must not take an address in its baseline)."""
    out[0] = x


# -- addresses and special registers ------------------------------------------------------------------
def k_shared_addr(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    tile = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    out[1] = ptx.shared_addr(tile)


def k_cluster_ctarank(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    out[1] = ptx.cluster_ctarank()


def k_cluster_nctarank(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    out[1] = ptx.cluster_nctarank()


def k_globaltimer(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    t = ptx.globaltimer()
    out[1] = uint32(t & uint64(0xFFFFFFFF))
    out[2] = uint32(t >> uint64(32))


def k_mapa(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    out[1] = ptx.mapa(ptx.shared_addr(bars), x & uint32(1))


# -- fences ---------------------------------------------------------------------------------------------
def k_fence_proxy_async(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.fence_proxy_async()


def k_fence_proxy_tensormap_acquire(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.fence_proxy_tensormap_acquire(tmap)


def k_tcgen05_fence_before(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_fence_before()


def k_tcgen05_fence_after(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_fence_after()


# -- mbarrier -------------------------------------------------------------------------------------------
def k_mbarrier_init(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_init(ptx.shared_addr(bars), 1)


def k_fence_mbarrier_init(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.fence_mbarrier_init()


def k_mbarrier_arrive(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_arrive(ptx.shared_addr(bars))


def k_mbarrier_arrive_expect_tx(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_arrive_expect_tx(ptx.shared_addr(bars), BOX_BYTES)


def k_mbarrier_expect_tx(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_expect_tx(ptx.shared_addr(bars), BOX_BYTES)


def k_mbarrier_arrive_cluster(tmap, x, out, fout):
    # the peer's barrier as a .shared::cluster address; mapa's own SASS is known from k_mapa
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_arrive_cluster(ptx.mapa(ptx.shared_addr(bars), x & uint32(1)))


def k_mbarrier_arrive_expect_tx_cluster(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_arrive_expect_tx_cluster(ptx.mapa(ptx.shared_addr(bars), x & uint32(1)), 16)


def k_mbarrier_arrive_remote(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_arrive_remote(ptx.mapa(ptx.shared_addr(bars), x & uint32(1)))


def k_clc_try_cancel_multicast(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)  # 16 bytes, 16-byte aligned: bars[0] the response, bars[1] its barrier
    out[0] = ptx.shared_addr(bars) + x
    ptx.clc_try_cancel_multicast(ptx.shared_addr(bars), ptx.shared_addr(bars) + uint32(8))


def k_clc_query_cancel(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ok, cx = ptx.clc_query_cancel(ptx.shared_addr(bars))
    out[1] = ok
    out[2] = cx


def k_mbarrier_arrive_relaxed_cluster(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_arrive_relaxed_cluster(ptx.mapa(ptx.shared_addr(bars), x & uint32(1)))


def k_mbarrier_wait_sleep(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_wait_sleep(ptx.shared_addr(bars), x & uint32(1))


def k_mbarrier_wait(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_wait(ptx.shared_addr(bars), x & uint32(1))


def k_mbarrier_wait_cluster(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_wait_cluster(ptx.shared_addr(bars), x & uint32(1))


def k_mbarrier_wait_relaxed_cluster(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_wait_relaxed_cluster(ptx.shared_addr(bars), x & uint32(1))


def k_mbarrier_wait_sleep_relaxed_cluster(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_wait_sleep_relaxed_cluster(ptx.shared_addr(bars), x & uint32(1))


def k_mbarrier_try_wait(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    out[1] = ptx.mbarrier_try_wait(ptx.shared_addr(bars), x & uint32(1))


def k_mbarrier_inval(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.mbarrier_inval(ptx.shared_addr(bars))


# -- tcgen05: TMEM allocation (cta_group::1 and ::2 in separate kernels) -------------------------------
def k_tmem_alloc(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tmem_alloc(ptx.shared_addr(slot), TMEM_COLS)


def k_tmem_dealloc(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tmem_dealloc(slot[0], TMEM_COLS)


def k_tmem_relinquish(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tmem_relinquish()


def k_tmem_alloc_cg2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tmem_alloc_cg2(ptx.shared_addr(slot), TMEM_COLS)


def k_tmem_dealloc_cg2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tmem_dealloc_cg2(slot[0], TMEM_COLS)


def k_tmem_relinquish_cg2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tmem_relinquish_cg2()


# -- tcgen05: MMA and commit ---------------------------------------------------------------------------
def k_tcgen05_mma(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(B_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma(slot[0], sw128_kmajor_desc(ptx.shared_addr(a)), sw128_kmajor_desc(ptx.shared_addr(b)),
                    IDESC, x & uint32(1))


def k_tcgen05_mma_cg2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_cg2(slot[0], sw128_kmajor_desc(ptx.shared_addr(a)), sw128_kmajor_desc(ptx.shared_addr(b)),
                        IDESC_CG2, x & uint32(1))


def k_tcgen05_mma_lo(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(B_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_lo(slot[0], sw128_desc_lo(ptx.shared_addr(a)), sw128_desc_lo(ptx.shared_addr(b)), DESC_HI,
                       IDESC, x & uint32(1))


def k_tcgen05_mma_cg2_lo(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_cg2_lo(slot[0], sw128_desc_lo(ptx.shared_addr(a)), sw128_desc_lo(ptx.shared_addr(b)), DESC_HI,
                           IDESC_CG2, x & uint32(1))


def k_tcgen05_commit(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_commit(ptx.shared_addr(bars))


def k_tcgen05_commit_cg2_multicast(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_commit_cg2_multicast(ptx.shared_addr(bars), 0b11)


# -- tcgen05: loads from TMEM (each with the wait that makes its registers usable) ---------------------
def k_tmem_ld_32x32b_x8(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    out[0] = ptx.shared_addr(bars) + x
    v = ptx.tmem_ld_32x32b_x8(slot[0] + ((uint32(cuda.threadIdx.x) >> uint32(5)) << uint32(21)))
    ptx.tmem_wait_ld()
    for i in range(8):
        fout[i * 128 + cuda.threadIdx.x] = v[i]


def k_tmem_ld_32x32b_x16(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    out[0] = ptx.shared_addr(bars) + x
    v = ptx.tmem_ld_32x32b_x16(slot[0] + ((uint32(cuda.threadIdx.x) >> uint32(5)) << uint32(21)))
    ptx.tmem_wait_ld()
    for i in range(16):
        fout[i * 128 + cuda.threadIdx.x] = v[i]


def k_tmem_ld_32x32b_x32(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    out[0] = ptx.shared_addr(bars) + x
    v = ptx.tmem_ld_32x32b_x32(slot[0] + ((uint32(cuda.threadIdx.x) >> uint32(5)) << uint32(21)))
    ptx.tmem_wait_ld()
    for i in range(32):
        fout[i * 128 + cuda.threadIdx.x] = v[i]


def k_tmem_ld_32x32b_x64(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    out[0] = ptx.shared_addr(bars) + x
    v = ptx.tmem_ld_32x32b_x64(slot[0] + ((uint32(cuda.threadIdx.x) >> uint32(5)) << uint32(21)))
    ptx.tmem_wait_ld()
    lo = v[:32]  # static slices: `for i in range(64): v[i]` is not unrolled and becomes a 64-way switch
    hi = v[32:]
    for i in range(32):
        fout[i * 128 + cuda.threadIdx.x] = lo[i]
    for i in range(32):
        fout[(32 + i) * 128 + cuda.threadIdx.x] = hi[i]


def k_tmem_wait_ld(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tmem_wait_ld()


# -- TMA ------------------------------------------------------------------------------------------------
def k_tma_load_2d(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    tile = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tma_load_2d(ptx.shared_addr(tile), tmap, x * uint32(64), uint32(0), ptx.shared_addr(bars))


def k_tma_load_2d_cg2(tmap, x, out, fout):
    # both CTAs' loads complete on the leader's (rank 0's) barrier, addressed with mapa
    bars = cuda.shared.array(2, uint64)
    tile = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tma_load_2d_cg2(ptx.shared_addr(tile), tmap, x * uint32(64), uint32(0),
                        ptx.mapa(ptx.shared_addr(bars), uint32(0)))


def k_tma_store_2d(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    tile = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tma_store_2d(tmap, x * uint32(64), uint32(0), ptx.shared_addr(tile))


def k_bulk_commit_group(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.bulk_commit_group()


def k_bulk_wait_group_read0(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.bulk_wait_group_read0()


def k_bulk_wait_group_read1(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.bulk_wait_group_read1()


def k_bulk_wait_group_read2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.bulk_wait_group_read2()


def k_bulk_wait_group_read3(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.bulk_wait_group_read3()


def k_prefetch_tensormap(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.prefetch_tensormap(tmap)


# -- warps, CTAs, clusters --------------------------------------------------------------------------------
def k_elect_sync(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    out[1 + cuda.threadIdx.x] = ptx.elect_sync()


def k_warp_uniform(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    out[1 + cuda.threadIdx.x] = ptx.warp_uniform(cuda.threadIdx.x // 32 + x)


def k_named_barrier_sync(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.named_barrier_sync(1, 128)


def k_named_barrier_arrive(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.named_barrier_arrive(1, 128)


def k_cluster_arrive(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.cluster_arrive()


def k_cluster_wait(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.cluster_wait()


def k_pack_f16x2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    out[1 + cuda.threadIdx.x] = ptx.pack_f16x2(fout[cuda.threadIdx.x], fout[128 + cuda.threadIdx.x])


def k_pack_bf16x2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    out[1 + cuda.threadIdx.x] = ptx.pack_bf16x2(fout[cuda.threadIdx.x], fout[128 + cuda.threadIdx.x])


def k_set_warp_role(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.set_warp_role(ROLE_MMA)


# -- shared memory ----------------------------------------------------------------------------------------
def k_st_shared_v4(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    tile = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    t = uint32(cuda.threadIdx.x)
    ptx.st_shared_v4(ptx.shared_addr(tile) + t * uint32(16), x, t, x + t, x ^ t)


# -- probes (gemm_kernels.ptx.probe: instrumented builds only); ``tmap`` stands for a device buffer --------
def k_timeline_stamp(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.timeline_stamp(tmap, 4096, 7, x)


def k_guard_wait(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.guard_wait(ptx.shared_addr(bars), x & uint32(1), tmap, tmap + uint64(4096), uint64(2_000_000_000),
                   uint64(50_000_000), 64)


def k_guard_wait_cluster(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.guard_wait_cluster(ptx.shared_addr(bars), x & uint32(1), tmap, tmap + uint64(4096),
                           uint64(2_000_000_000), uint64(50_000_000), 64)


def k_guard_note_base(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    out[0] = ptx.shared_addr(bars) + x
    ptx.guard_note_base(tmap, ptx.shared_addr(bars))


# -- a kernel ptxas must refuse: cta_group::1 and ::2 in one function ---------------------------------------
def k_mixed_cta_group(tmap, x, out, fout):
    slot = cuda.shared.array(1, uint32)
    ptx.tmem_alloc(ptx.shared_addr(slot), TMEM_COLS)
    ptx.tmem_alloc_cg2(ptx.shared_addr(slot), TMEM_COLS)


MIXED_CTA_GROUP = k_mixed_cta_group

#: op name -> its kernel (k_<name>), for every op in gemm_kernels.ptx.REGISTRY

# -- step 11: FP8 and block-scaled MMAs, scale factors into TMEM ------------------------------------
IDESC_F8 = layouts.make_instr_desc_f8f6f4(128, 256)
IDESC_F8_CG2 = layouts.make_instr_desc_f8f6f4(256, 256, cta_group=2)
IDESC_MXF8 = layouts.make_instr_desc_block_scaled(128, 256, kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e4m3",
                                                  scale_dtype="ue8m0")
IDESC_MXF8_CG2 = layouts.make_instr_desc_block_scaled(256, 256, kind="mxf8f6f4", a_dtype="e4m3",
                                                      b_dtype="e4m3", scale_dtype="ue8m0", cta_group=2)
IDESC_NVF4 = layouts.make_instr_desc_block_scaled(128, 256, kind="mxf4nvf4", a_dtype="e2m1", b_dtype="e2m1",
                                                  scale_dtype="ue4m3")
IDESC_NVF4_CG2 = layouts.make_instr_desc_block_scaled(256, 256, kind="mxf4nvf4", a_dtype="e2m1",
                                                      b_dtype="e2m1", scale_dtype="ue4m3", cta_group=2)
SF_DESC_HI = uint64(layouts.make_smem_desc(0, lbo=16, sbo=128, swizzle="none"))  # 8 rows of 16 bytes per 128


@cuda.jit(device=True, forceinline=True)
def _sf_desc(addr):
    return SF_DESC_HI | uint64((addr & uint32(0x3FFFF)) >> uint32(4))


def k_tcgen05_cp_32x128b_warpx4(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    sf = cuda.shared.array(512, uint8, alignment=128)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_cp_32x128b_warpx4(slot[0] + (x & uint32(4)), _sf_desc(ptx.shared_addr(sf)))


def k_tcgen05_cp_32x128b_warpx4_cg2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    sf = cuda.shared.array(512, uint8, alignment=128)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_cp_32x128b_warpx4_cg2(slot[0] + (x & uint32(4)), _sf_desc(ptx.shared_addr(sf)))


def k_tcgen05_mma_f8f6f4(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(B_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_f8f6f4(slot[0], sw128_kmajor_desc(ptx.shared_addr(a)), sw128_kmajor_desc(ptx.shared_addr(b)),
                           IDESC_F8, x & uint32(1))


def k_tcgen05_mma_f8f6f4_cg2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_f8f6f4_cg2(slot[0], sw128_kmajor_desc(ptx.shared_addr(a)),
                               sw128_kmajor_desc(ptx.shared_addr(b)), IDESC_F8_CG2, x & uint32(1))


def k_tcgen05_mma_mxf8f6f4(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(B_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_mxf8f6f4(slot[0], sw128_kmajor_desc(ptx.shared_addr(a)), sw128_kmajor_desc(ptx.shared_addr(b)),
                             IDESC_MXF8, slot[0] + uint32(256), slot[0] + uint32(260), x & uint32(1))


def k_tcgen05_mma_mxf8f6f4_cg2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_mxf8f6f4_cg2(slot[0], sw128_kmajor_desc(ptx.shared_addr(a)),
                                 sw128_kmajor_desc(ptx.shared_addr(b)), IDESC_MXF8_CG2, slot[0] + uint32(256),
                                 slot[0] + uint32(260), x & uint32(1))


def k_tcgen05_mma_mxf4nvf4(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(B_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_mxf4nvf4(slot[0], sw128_kmajor_desc(ptx.shared_addr(a)), sw128_kmajor_desc(ptx.shared_addr(b)),
                             IDESC_NVF4, slot[0] + uint32(256), slot[0] + uint32(260), x & uint32(1))


def k_tcgen05_mma_mxf4nvf4_cg2(tmap, x, out, fout):
    bars = cuda.shared.array(2, uint64)
    slot = cuda.shared.array(1, uint32)
    a = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    b = cuda.shared.array(BOX_BYTES, uint8, alignment=1024)
    out[0] = ptx.shared_addr(bars) + x
    ptx.tcgen05_mma_mxf4nvf4_cg2(slot[0], sw128_kmajor_desc(ptx.shared_addr(a)),
                                 sw128_kmajor_desc(ptx.shared_addr(b)), IDESC_NVF4_CG2, slot[0] + uint32(256),
                                 slot[0] + uint32(260), x & uint32(1))


OP_KERNELS = {name[2:]: fn for name, fn in dict(globals()).items()
              if name.startswith("k_") and fn not in (k_baseline, k_no_smem, k_mixed_cta_group)}
