"""Compared with step 10: FP8 operands (kind::f8f6f4), and MXFP8 and NVFP4 operands whose scale factors travel global -> shared -> TMEM (TMA, then tcgen05.cp by the MMA issuer), on step 10's 256 x 128 cluster tile.

Step 11: the same kernel (any shape, CLC, the pair, no seam) fed one byte per element, or half a byte.

The operands. A and B are FP8 codes (e4m3 or e5m2, one byte per element; gemm_kernels.quant makes
them). One MMA reads 32 bytes of each row whatever the format, so a k-block of 128 FP8 elements is
128 bytes per row: the same 128B-swizzled box, the same stage bytes and the same descriptors as step
10's 64 fp16 elements, and the MMA's K is 32 (four MMAs per k-block, as in step 10). The kind and
the formats live in the instruction descriptor, which the host builds (quant.instr_desc) and passes
as an argument: one compiled kernel per kind, not per format pair.

Scale factors (MXFP8: one UE8M0 power of two per 32 elements of K, kind::mxf8f6f4.block32). The
host packs them in the tensor core's layout (quant.pack_scales): 512-byte atoms of 128 rows x 4
scale factors. A k-block of 128 elements needs exactly one atom of A's rows and one of B's: the
producer loads both by TMA next to the operands, into the same stage and onto the same tma2mma
barrier (the leader expects both CTAs' 2 x 512 more bytes). The MMA issuer, after its wait on that
barrier, copies them into TMEM (tcgen05.cp .32x128b.warpx4, cta_group::2: each CTA copies its own
shared memory into its own TMEM) and then issues the MMAs that read them. Nothing waits between the
copy and the MMAs: the PTX ISA makes tcgen05.cp -> tcgen05.mma from one thread a pipelined pair,
executed in issue order. The stage's commit (mma2tma) tracks the copies too, so the producer never
refills a scale-factor buffer that a copy has still to read. The k-block's four MMAs read bytes 0..3
of the same TMEM words (the descriptor's scale-factor IDs, one per K = 32).

NVFP4 (E2M1 elements packed two per byte, one UE4M3 scale per 16 elements, kind::mxf4nvf4.block16).
A k-block is still 128 bytes per row, now 256 elements, so 16 scale factors per row: four atoms per
operand, one TMA box of 2 KiB each, four copies each, and MMA k (64 elements) reads all four bytes of
atom k's words. The host packs NVFP4's scale factors again with the columns padded to whole k-blocks
(sf_view says why). NVFP4 also has one float32 scale per tensor, which the tensor core does not
apply: the writeback multiplies the accumulator by the product of A's and B's before rounding to
fp16 (epilogue's ``alpha``; the other formats leave it at 1.0, which compiles to no instruction:
steps 7-10's SASS is byte for byte what it was before the argument existed).

TMEM. Step 10's 256-wide tile fills all 512 columns with two 256-column accumulators, and its
128-wide tile with four of 128: neither leaves a column for scale factors. Step 11 keeps the 128-wide
tile with two 128-column accumulators (the double buffer that removes the seam; step 10's other two
go) and gives columns 256..511 to scale factors: two slots, used by k-blocks in turn, each of A's
atoms and B's (MXFP8: 4 + 4 columns, NVFP4: 16 + 16; 64 of the 256 columns at most). Three
accumulators (384 columns, leaving 128) would fit too, but a ring of three takes a division by 3 where
two take a mask (pipeline.ring_slot), and two were enough for step 10 (its tensor core waited 2.3%
of a tile between tiles, with two 256-column accumulators). One slot would be correct by
the same issue-order rule (a copy after the MMAs that read the previous k-block's scale factors); two
keep the next k-block's copy off the columns the MMAs in flight read, in columns nothing else uses. The allocation
stays a power of two (512).

Depth. Each stage is 24 KiB of operands (step 10's narrow tile) plus 1 KiB of scale factors (MXFP8)
or 4 KiB (NVFP4): 7 or 6 stages fit beside the 32 KiB of staging (FP8, without scale factors: 8, as
in step 10).

What is new in the handoffs (step 10's names otherwise):
  tma2mma[s]  also both CTAs' scale-factor atoms of the k-block (MXFP8, NVFP4)
  mma2tma[s]  its commit also says the stage's tcgen05.cp copies have read the scale factors

D is fp16 as in step 10, or bf16 (make_kernel's out_dtype: the writeback rounds with
cvt.rn.bf16x2.f32; both are 2 bytes, so staging and stores are step 10's). What step 11 does not do
yet: FP32 D (4-byte elements: another staging layout), MXFP4 and mixed FP6/FP4 operands of
kind::f8f6f4 (quant has no such formats; check_pair refuses them)."""
import functools

from numba import cuda, uint8, uint32, uint64

from .. import pipeline, ptx, schedule
from ..layouts import instr_desc_sf_ids_dev, smem_desc_dev
from ..pipeline import grouped_tile, scheduler_args
from ..smem_plan import SmemPlan
from ..schedule import CLC_STAGES, RESPONSE_BYTES
from ..trace import ROLE_MMA, ROLE_SCHEDULER, ROLE_TMA, ROLE_WRITEBACK
from .descriptors import DESC_HI, DESC_LO_K_STEP, sw128_desc_lo
from .epilogue import SUBTILE_BYTES, SUBTILE_COLS, SUBTILE_SWIZZLE, subtile_row, subtile_row_chunks, subtiled_writeback
from .host import GROUP, tma_launch
from .v10_any_shape import (CLC_READERS, CLUSTER_M, CTA_M, EMULATOR_CLUSTERS, MMA_WARP, PAIR, PRODUCER_WARP,
                            SCHEDULER_WARP, STAGING_BUFFERS, SUBTILES_PER_GROUP, THREADS, WRITEBACK_BARRIER,
                            _check_out, padded_pitch)

BLOCK_K_BYTES = 128  # one 128B-swizzled box row per k-block: 128 FP8 elements
MMA_K_BYTES = 32  # what one MMA reads of each row: K = 32 FP8 elements
TILE_N = 128  # the cluster tile is 256 x 128: TMEM keeps room for scale factors
CTA_TILE_N = TILE_N // 2
A_BYTES = CTA_M * BLOCK_K_BYTES
B_BYTES = CTA_TILE_N * BLOCK_K_BYTES
A_STAGE_DESC_STEP, B_STAGE_DESC_STEP = A_BYTES >> 4, B_BYTES >> 4
TMEM_COLS = 512
ACC_COLS = TILE_N
ACC_STAGES = 2  # two 128-column accumulators: 0..255
SF_COL0 = ACC_STAGES * ACC_COLS  # scale factors in 256..511
SF_SLOTS = 2
SF_ATOM_BYTES, SF_ATOM_COLS = 512, 4  # 128 rows x 4 scale factors; in TMEM 32 lanes x 4 columns
SF_SBO = 128  # the atom in shared memory: 8 rows of 16 bytes every 128 bytes, no swizzle
SUBTILES = TILE_N // SUBTILE_COLS
#: kind -> (scale-factor atoms per operand per k-block, TMEM columns of one scale-factor slot)
KINDS = {"f8f6f4": 0, "mxf8f6f4": 1, "mxf4nvf4": 4}
OUT_DTYPES = ("float16", "bfloat16")  # D's element type: both 2 bytes, step 10's staging and stores
DEPTH_FOR_KIND = {"f8f6f4": 8, "mxf8f6f4": 7, "mxf4nvf4": 6}


@cuda.jit(device=True, forceinline=True)
def _desc(lo):
    """The whole 64-bit descriptor of a low word (step 7's split form): the FP8 MMAs take it whole.
    The low word is cut to 32 bits first: ``lo + stage * step`` is a 64-bit sum in numba, and its
    carries would otherwise be computed in the loop."""
    return uint64(uint32(lo)) | (uint64(DESC_HI) << uint64(32))


def make_plan(depth, sf_bytes):
    plan = SmemPlan()
    offs = dict(
        a=plan.add("A stage", A_BYTES, align=1024, count=depth),
        b=plan.add("B stage", B_BYTES, align=1024, count=depth),
        d=plan.add("D staging", SUBTILE_BYTES, align=1024, count=STAGING_BUFFERS),
        tma2mma=plan.add("tma2mma", 8, align=8, count=depth),
        mma2tma=plan.add("mma2tma", 8, align=8, count=depth),
        mma2ld=plan.add("mma2ld", 8, align=8, count=ACC_STAGES),
        ld2mma=plan.add("ld2mma", 8, align=8, count=ACC_STAGES),
        slot=plan.add("TMEM address slot", 4, align=4),
        clc_resp=plan.add("CLC response", RESPONSE_BYTES, align=16, count=CLC_STAGES),
        clc_full=plan.add("clc_full", 8, align=8, count=CLC_STAGES),
        clc_empty=plan.add("clc_empty", 8, align=8, count=CLC_STAGES),
    )
    if sf_bytes:
        offs["sfa"] = plan.add("SFA stage", sf_bytes, align=128, count=depth)
        offs["sfb"] = plan.add("SFB stage", sf_bytes, align=128, count=depth)
    return plan.check(f"a {depth}-stage pipeline"), offs


@functools.lru_cache(maxsize=None)
def make_kernel(kind, depth, group=GROUP, out_dtype="float16"):
    if kind not in KINDS:
        raise ValueError(f"gemm_v11's kernel multiplies kind {list(KINDS)}; got {kind!r}")
    if out_dtype not in OUT_DTYPES:
        raise ValueError(f"gemm_v11 writes D as one of {OUT_DTYPES}; got {out_dtype!r}")
    BF16 = out_dtype == "bfloat16"  # new: the writeback rounds to bf16 pairs
    SF_ATOMS = KINDS[kind]  # per operand and k-block
    SCALED = SF_ATOMS > 0
    NVFP4 = kind == "mxf4nvf4"  # 4 atoms per k-block (16 scale factors per row), global scales in the epilogue
    SF_BYTES = SF_ATOMS * SF_ATOM_BYTES
    SF_COLS = SF_ATOMS * SF_ATOM_COLS  # one operand's scale factors of one k-block, in TMEM
    plan, o = make_plan(depth, SF_BYTES)
    A0, B0, D_STAGING, TMA2MMA, MMA2TMA, MMA2LD, LD2MMA, TMEM_SLOT, CLC_RESP, CLC_FULL, CLC_EMPTY = (
        o[k] for k in ("a", "b", "d", "tma2mma", "mma2tma", "mma2ld", "ld2mma", "slot", "clc_resp", "clc_full",
                       "clc_empty"))
    SFA0, SFB0 = o.get("sfa", 0), o.get("sfb", 0)
    STAGE_BYTES = 2 * (A_BYTES + B_BYTES + 2 * SF_BYTES)  # both CTAs' boxes, announced by the leader
    DEPTH, GROUP_M = depth, group

    @cuda.jit
    def gemm_v11_kernel(tmap_a, tmap_b, tmap_d, tmap_sfa, tmap_sfb, k_tiles, num_m, num_n, div_group, div_last,
                        idesc, alpha):
        smem = cuda.shared.array(0, uint8, alignment=1024)
        smem32 = cuda.shared.array(0, uint32, alignment=1024)
        base = ptx.shared_addr(smem)
        tid = cuda.threadIdx.x
        warp = ptx.warp_uniform(tid // 32)
        rank = ptx.cluster_ctarank()
        cluster = cuda.blockIdx.x // 2

        if tid == 0:
            for s in range(DEPTH):
                ptx.mbarrier_init(pipeline.barrier(base + TMA2MMA, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + MMA2TMA, s), 1)
            for s in range(ACC_STAGES):
                ptx.mbarrier_init(pipeline.barrier(base + MMA2LD, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 2 * 4)
            for s in range(CLC_STAGES):
                ptx.mbarrier_init(pipeline.barrier(base + CLC_FULL, s), 1)
                ptx.mbarrier_init(pipeline.barrier(base + CLC_EMPTY, s), CLC_READERS)
            ptx.fence_mbarrier_init()
        ptx.cluster_arrive()
        ptx.cluster_wait()
        if warp == 0:
            ptx.tmem_alloc_cg2(base + TMEM_SLOT, TMEM_COLS)
        ptx.tcgen05_fence_before()
        cuda.syncthreads()
        ptx.tcgen05_fence_after()
        tmem = smem32[TMEM_SLOT // 4]
        leader_clc_empty0 = ptx.mapa(base + CLC_EMPTY, 0)

        if warp == PRODUCER_WARP:
            ptx.set_warp_role(ROLE_TMA)
            ptx.fence_proxy_tensormap_acquire(tmap_a)
            ptx.fence_proxy_tensormap_acquire(tmap_b)
            if SCALED:
                ptx.fence_proxy_tensormap_acquire(tmap_sfa)
                ptx.fence_proxy_tensormap_acquire(tmap_sfb)
            if ptx.elect_sync():
                ptx.prefetch_tensormap(tmap_a)
                ptx.prefetch_tensormap(tmap_b)
            leader_tma2mma0 = ptx.mapa(base + TMA2MMA, 0)
            stage = uint32(0)
            phase = uint32(1)
            done = uint32(0)
            more, t = schedule.clc_first(cluster)
            while more:
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                a_row = m_idx * CLUSTER_M + rank * CTA_M
                b_row = n_idx * TILE_N + rank * CTA_TILE_N
                # new: the scale-factor atoms of this CTA's 128 rows of A and of the tile's 128 rows
                # of B, k_tiles atoms per 128-row block, 4 rows of 128 bytes each (host's sf_view)
                sfa_row = uint32((m_idx * 2 + rank) * k_tiles * SF_ATOMS * 4)
                sfb_row = uint32(n_idx * k_tiles * SF_ATOMS * 4)
                for kc in range(k_tiles):
                    pipeline.wait_cluster(base + MMA2TMA, stage, phase)
                    if ptx.elect_sync():
                        if rank == 0:
                            pipeline.expect_tx(base + TMA2MMA, stage, STAGE_BYTES)
                        leader_tma2mma = pipeline.barrier(leader_tma2mma0, stage)
                        k0 = uint32(kc * BLOCK_K_BYTES)
                        ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + A0, stage, A_BYTES), tmap_a, k0, a_row,
                                            leader_tma2mma)
                        ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + B0, stage, B_BYTES), tmap_b, k0, b_row,
                                            leader_tma2mma)
                        if SCALED:
                            sf_k = uint32(kc * SF_ATOMS * 4)
                            ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + SFA0, stage, SF_BYTES), tmap_sfa, 0,
                                                sfa_row + sf_k, leader_tma2mma)
                            ptx.tma_load_2d_cg2(pipeline.stage_buffer(base + SFB0, stage, SF_BYTES), tmap_sfb, 0,
                                                sfb_row + sf_k, leader_tma2mma)
                    stage, phase = pipeline.advance(stage, phase, DEPTH)
                more, t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, done)
                done = uint32(done + uint32(1))
            pipeline.producer_tail_cluster(base + MMA2TMA, stage, phase, DEPTH)
        elif warp == MMA_WARP:
            if rank == 0:
                ptx.set_warp_role(ROLE_MMA)
                a_lo = sw128_desc_lo(base + A0)
                b_lo = sw128_desc_lo(base + B0)
                stage = uint32(0)
                phase = uint32(0)
                done = uint32(0)
                sf_slot = uint32(0)  # new: the scale factors' TMEM slot, k-block by k-block
                more, t = schedule.clc_first(cluster)
                while more:
                    acc, acc_phase = pipeline.ring_slot(done, ACC_STAGES)
                    pipeline.wait_cluster(base + LD2MMA, acc, acc_phase ^ uint32(1))
                    ptx.tcgen05_fence_after()
                    d_tmem = tmem + acc * ACC_COLS
                    accumulate = uint32(0)
                    for kc in range(k_tiles):
                        pipeline.wait_cluster(base + TMA2MMA, stage, phase)  # operands and scale factors, both CTAs
                        ptx.tcgen05_fence_after()
                        a_desc = a_lo + stage * A_STAGE_DESC_STEP
                        b_desc = b_lo + stage * B_STAGE_DESC_STEP
                        sfa_tmem = tmem + SF_COL0 + sf_slot * (2 * SF_COLS)
                        sfb_tmem = sfa_tmem + SF_COLS
                        if ptx.elect_sync():
                            for j in range(SF_ATOMS):  # new: shared -> TMEM, in issue order before the MMAs
                                ptx.tcgen05_cp_32x128b_warpx4_cg2(sfa_tmem + j * SF_ATOM_COLS, smem_desc_dev(
                                    pipeline.stage_buffer(base + SFA0, stage, SF_BYTES) + j * SF_ATOM_BYTES, 16, SF_SBO,
                                    0, 0))
                                ptx.tcgen05_cp_32x128b_warpx4_cg2(sfb_tmem + j * SF_ATOM_COLS, smem_desc_dev(
                                    pipeline.stage_buffer(base + SFB0, stage, SF_BYTES) + j * SF_ATOM_BYTES, 16, SF_SBO,
                                    0, 0))
                            for k in range(BLOCK_K_BYTES // MMA_K_BYTES):
                                acc_k = accumulate | uint32(k > 0)
                                a_k = a_desc + k * DESC_LO_K_STEP
                                b_k = b_desc + k * DESC_LO_K_STEP
                                if NVFP4:  # MMA k (64 elements) reads atom k: all 4 bytes of its words
                                    ptx.tcgen05_mma_mxf4nvf4_cg2(d_tmem, _desc(a_k), _desc(b_k), idesc,
                                                                 sfa_tmem + k * SF_ATOM_COLS, sfb_tmem + k * SF_ATOM_COLS,
                                                                 acc_k)
                                elif SCALED:  # MMA k reads byte k of each scale-factor word: its 32 elements' scale
                                    ptx.tcgen05_mma_mxf8f6f4_cg2(d_tmem, _desc(a_k),
                                                                 _desc(b_k),
                                                                 instr_desc_sf_ids_dev(idesc, k, k), sfa_tmem,
                                                                 sfb_tmem, acc_k)
                                else:
                                    ptx.tcgen05_mma_f8f6f4_cg2(d_tmem, _desc(a_k),
                                                               _desc(b_k), idesc, acc_k)
                            ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2TMA, stage), PAIR)
                        accumulate = uint32(1)
                        sf_slot = sf_slot ^ uint32(1)
                        stage, phase = pipeline.advance(stage, phase, DEPTH)
                    if ptx.elect_sync():
                        ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), PAIR)
                    more, t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, done)
                    done = uint32(done + uint32(1))
        elif warp < 4:  # step 10's writeback, unchanged
            ptx.set_warp_role(ROLE_WRITEBACK)
            if tid == 0:
                ptx.fence_proxy_tensormap_acquire(tmap_d)
                ptx.prefetch_tensormap(tmap_d)
            base = ptx.warp_uniform(base)
            staging = base + D_STAGING
            chunks = subtile_row_chunks(subtile_row(staging, tid))
            lanes = tmem + ((32 * warp) << 16)
            done = uint32(0)
            more, t = schedule.clc_first(cluster)
            while more:
                acc, acc_phase = pipeline.ring_slot(done, ACC_STAGES)
                m_idx, n_idx = grouped_tile(t, num_m, num_n, GROUP_M, div_group, div_last)
                col0 = ptx.warp_uniform(n_idx * TILE_N)
                row0 = ptx.warp_uniform(m_idx * CLUSTER_M + rank * CTA_M)
                ptx.mbarrier_wait_sleep_relaxed_cluster(pipeline.barrier(base + MMA2LD, acc), acc_phase)
                ptx.tcgen05_fence_after()
                leader_ld2mma = ptx.mapa(pipeline.barrier(base + LD2MMA, acc), 0)
                if NVFP4:  # new: D = the two operands' global scales x the accumulator
                    subtiled_writeback(tmap_d, lanes + acc * ACC_COLS, chunks, staging, tid, col0, row0,
                                       leader_ld2mma, True, WRITEBACK_BARRIER, 128, SUBTILES, SUBTILES_PER_GROUP,
                                       STAGING_BUFFERS, alpha, BF16)
                else:
                    subtiled_writeback(tmap_d, lanes + acc * ACC_COLS, chunks, staging, tid, col0, row0,
                                       leader_ld2mma, True, WRITEBACK_BARRIER, 128, SUBTILES, SUBTILES_PER_GROUP,
                                       STAGING_BUFFERS, 1.0, BF16)
                more, t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, done)
                done = uint32(done + uint32(1))
            if tid == 0:
                ptx.bulk_wait_group_read0()

        elif warp == SCHEDULER_WARP:
            if rank == 0:
                ptx.set_warp_role(ROLE_SCHEDULER)
                peer_clc_full0 = ptx.mapa(base + CLC_FULL, 1)
                more = uint32(1)
                asked = uint32(0)
                while more:
                    schedule.clc_request(base + CLC_RESP, base + CLC_FULL, peer_clc_full0, base + CLC_EMPTY, asked)
                    more, _t = schedule.clc_next(base + CLC_RESP, base + CLC_FULL, leader_clc_empty0, asked)
                    asked = uint32(asked + uint32(1))

        ptx.tcgen05_fence_before()
        ptx.cluster_arrive()
        ptx.cluster_wait()
        if warp == 0:
            ptx.tcgen05_fence_after()
            ptx.tmem_relinquish_cg2()
            ptx.tmem_dealloc_cg2(tmem, TMEM_COLS)

    return gemm_v11_kernel, plan


gemm_v11_kernel, plan = make_kernel("mxf8f6f4", DEPTH_FOR_KIND["mxf8f6f4"])  # the block-scaled one
gemm_v11_fp8_kernel, fp8_plan = make_kernel("f8f6f4", DEPTH_FOR_KIND["f8f6f4"])  # same signature
gemm_v11_nvfp4_kernel, nvfp4_plan = make_kernel("mxf4nvf4", DEPTH_FOR_KIND["mxf4nvf4"])
SIGNATURE = "void(uint64, uint64, uint64, uint64, uint64, int32, int32, int32, uint64, uint64, uint32, float32)"
LIMITS = ("FP8 (e4m3/e5m2, any mix), MXFP8 x MXFP8 or NVFP4 x NVFP4 operands from gemm_kernels.quant; any "
          "M, N >= 1; K a multiple of 16 (FP8) or 32 (MXFP8, NVFP4); fp16 D; clusters of 2 CTAs")
ROW_BYTES_MULTIPLE = 16  # the TMA's row rule: every row of A and B starts 16-byte aligned
SUPPORTED = ("e4m3", "e5m2", "mxfp8", "nvfp4")


def _as_quantized(name, x, fmt, sf):
    """``x`` as a quant.Quantized: one already, or uint8 codes in ``fmt`` with plain scale factors ``sf``."""
    import numpy as np

    from .. import quant as Q

    if isinstance(x, Q.Quantized):
        if fmt is not None and fmt != x.fmt:
            raise ValueError(f"{name} is already quantized as {x.fmt} but fmt says {fmt!r}: leave fmt out, or "
                             f"quantize {name} to {fmt!r}")
        if sf is not None:
            raise ValueError(f"{name} is a Quantized operand, which carries its own scale factors: leave "
                             f"sf{name.lower()} out")
        return x
    if fmt is None:
        raise ValueError(f"{name} is a raw array: give fmt= (one of {SUPPORTED}, or a pair (A's, B's)), or pass "
                         f"gemm_kernels.quant.quantize(x, fmt)")
    if fmt not in Q.FORMATS:
        raise ValueError(f"fmt {fmt!r} for {name}: the formats are {list(Q.FORMATS)}")
    if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim != 2:
        got = f"{x.dtype} {x.shape}" if isinstance(x, np.ndarray) else type(x).__name__
        raise ValueError(f"{name} must be a 2-D uint8 array of {fmt} codes (one byte per element, rows x K), or a "
                         f"Quantized; got {got}")
    edtype, sdtype, block = Q.FORMATS[fmt]
    values = Q.from_codes(x, fmt).astype(edtype)  # nvfp4: (rows, 2 x bytes), two codes per byte
    if block is None:
        if sf is not None:
            raise ValueError(f"{fmt} has no scale factors: leave sf{name.lower()} out")
        return Q.Quantized(fmt, np.ascontiguousarray(x), values, None, None)
    if sf is None:
        raise ValueError(f"{fmt} needs scale factors: give sf{name.lower()}= ({x.shape[0]}, K / {block}) of "
                         f"{np.dtype(sdtype).name}")
    sf = np.asarray(sf)
    if sf.dtype != sdtype or sf.ndim != 2:
        raise ValueError(f"sf{name.lower()} must be a 2-D {np.dtype(sdtype).name} array (one scale per {block} "
                         f"elements of K); got {sf.dtype} {sf.shape}")
    k = values.shape[1]
    if sf.shape[1] * block != k or sf.shape[0] != x.shape[0]:
        # check_pair's message, with the shapes: K not a multiple of the block, or scales of another shape
        if k % block:
            raise ValueError(f"K = {k} is not a multiple of {fmt}'s scale block of {block}: pad K with zeros")
        raise ValueError(f"sf{name.lower()} must have shape ({x.shape[0]}, {k // block}) (one per {block} elements "
                         f"of K); got {sf.shape}")
    return Q.Quantized(fmt, np.ascontiguousarray(x), values, sf, Q.pack_scales(sf))


def check_inputs(a, b, sfa=None, sfb=None, fmt=None):
    """Everything gemm_v11 checks before launch. ``fmt``: one format for both operands or a pair (A's,
    B's); not needed for Quantized operands. Returns (kind, qa, qb, M, N, K)."""
    from .. import quant as Q

    fa, fb = fmt if isinstance(fmt, tuple) else (fmt, fmt)
    qa, qb = _as_quantized("A", a, fa, sfa), _as_quantized("B", b, fb, sfb)
    kind, m, n, k = Q.check_pair(qa, qb)
    if m < 1 or n < 1:
        raise ValueError(f"gemm_v11 needs M >= 1 and N >= 1; got M={m}, N={n}")
    per_byte = 2 if kind == "mxf4nvf4" else 1  # E2M1 codes pack two per byte
    need = ROW_BYTES_MULTIPLE * per_byte
    if k % need:
        raise ValueError(f"K = {k}: the TMA reads A and B row by row and every row must start 16-byte aligned "
                         f"({need} {qa.fmt} codes); pad K with zero columns in both A and B up to "
                         f"{-(-k // need) * need} (and quantize again)")
    return kind, qa, qb, m, n, k


def sf_view(q, k_tiles, atoms):
    """The packed scale factors as the kernel's tensor map sees them: rows of 128 bytes, 4 rows per
    512-byte atom, the atoms of one 128-row block along K first (quant.sf_offset), ``k_tiles`` x
    ``atoms`` atoms per row block, so that a k-block's atoms are one box. quant packs ceil(K / 128)
    = k_tiles atoms per row block for MXFP8 (one per k-block), ceil(K / 64) for NVFP4; NVFP4's are
    packed again with the scale columns padded to a whole k-block (16; the padding holds 1.0 and
    multiplies the TMA's zero fill), or a partial last k-block's box would reach into the next row
    block's atoms."""
    import numpy as np

    from .. import quant as Q

    packed = q.scales_packed
    cols = k_tiles * atoms * Q.SF_ATOM_COLS
    if q.scales.shape[1] != cols:
        one = np.ones((q.scales.shape[0], cols - q.scales.shape[1]), dtype=np.float32).astype(q.scales.dtype)
        packed = Q.pack_scales(np.concatenate([q.scales, one], axis=1))
    return packed.reshape(-1, BLOCK_K_BYTES)


def gemm_v11(a, b, *, sfa=None, sfb=None, fmt=None, backend=None, policy="lazy", seed=0, trace=False,
             pipe_depth=None, group=GROUP, num_clusters=None, out=None, out_dtype="float16"):
    """D = A @ B.T (fp16, FP32 accumulation) for FP8, MXFP8 or NVFP4 operands, any M, N. ``a``, ``b``:
    gemm_kernels.quant.Quantized operands (``quantize(x, fmt)``), or uint8 code arrays with ``fmt``
    ('e4m3', 'e5m2', 'mxfp8', 'nvfp4', or a pair for A and B): rows x K bytes, NVFP4 rows x K / 2
    (two codes per byte), and for the block-scaled formats ``sfa`` / ``sfb``: the plain (rows,
    K / block) scale factors (float8_e8m0fnu per 32 for MXFP8, float8_e4m3fn per 16 for NVFP4; raw
    NVFP4 codes carry no global scale: 1). D is what numpy gives on the dequantised operands (NVFP4's
    global scales included), up to FP32 accumulation and the rounding of D to ``out_dtype``
    ('float16', or 'bfloat16': an ml_dtypes.bfloat16 array). ``out`` (fp16 D only): an M x N array
    to write D into, as in step 10. Everything is checked before launch."""
    from .host import check_pipeline_config, choose_backend, persistent_size

    kind, qa, qb, m, n, k = check_inputs(a, b, sfa, sfb, fmt)
    if out_dtype not in OUT_DTYPES:
        raise ValueError(f"out_dtype must be one of {OUT_DTYPES} (D is rounded from the FP32 accumulator to it); "
                         f"got {out_dtype!r}")
    if out is not None and out_dtype != "float16":
        raise ValueError("out= takes an fp16 D; for a bfloat16 D leave out= out and copy the result")
    if pipe_depth is not None:
        check_pipeline_config(pipe_depth, group)
    pipe_depth = DEPTH_FOR_KIND[kind] if pipe_depth is None else pipe_depth
    check_pipeline_config(pipe_depth, group)
    out = _check_out(out, m, n)
    backend = choose_backend(backend, 11)
    from .. import quant as Q

    idesc = Q.instr_desc(qa, qb, CLUSTER_M, TILE_N, cta_group=2)
    num_m, num_n = -(-m // CLUSTER_M), -(-n // TILE_N)
    k_bytes = k // 2 if kind == "mxf4nvf4" else k  # of one row of A or B
    k_tiles = -(-k_bytes // BLOCK_K_BYTES)
    num_clusters = persistent_size(backend, num_clusters, EMULATOR_CLUSTERS, 2)
    kernel, kplan = make_kernel(kind, pipe_depth, group, out_dtype)
    tiles = num_m * num_n
    import numpy as np

    sf_maps = (None, None)
    if kind != "f8f6f4":
        atoms = KINDS[kind]
        sf_maps = tuple((f"SF{nm}", sf_view(q, k_tiles, atoms), 4 * atoms, BLOCK_K_BYTES, "none")
                        for nm, q in (("A", qa), ("B", qb)))
    alpha = np.float32(qa.global_scale) * np.float32(qb.global_scale)  # NVFP4's; 1 otherwise

    bf16 = out_dtype == "bfloat16"  # stored as uint16 (numba's device arrays have no bf16), viewed after
    d = tma_launch(kernel, (2 * tiles, 1), qa.codes, qb.codes, m, n, k, backend, policy, seed,
                      trace, plan=kplan, threads=THREADS, cluster=(2, 1, 1),
                      boxes=((CTA_M, BLOCK_K_BYTES), (CTA_TILE_N, BLOCK_K_BYTES),
                             (CTA_M, SUBTILE_COLS, SUBTILE_SWIZZLE)),
                      extra=scheduler_args(num_m, num_n, group) + (np.uint32(idesc), np.float32(alpha)),
                      k_tiles=k_tiles,
                      d_pitch=padded_pitch(n), out=out, resident=min(num_clusters, tiles), extra_maps=sf_maps,
                      d_dtype=np.uint16 if bf16 else np.float16)
    if not bf16:
        return d
    import ml_dtypes

    if trace:
        d.d = d.d.view(ml_dtypes.bfloat16)
        return d
    return d.view(ml_dtypes.bfloat16)
