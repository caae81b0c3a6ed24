"""tcgen05 for step 11's low-precision operands: the FP8 MMA without scale factors
(``kind::f8f6f4``), the block-scaled MMAs (``kind::mxf8f6f4.block_scale.block32`` for MXFP8,
``kind::mxf4nvf4.block_scale.block16`` for NVFP4), and ``tcgen05.cp``, which copies scale factors
from shared memory into TMEM, where the block-scaled MMAs read them.

Facts (PTX ISA 9.7.16.10.9.1 tcgen05.mma, 9.7.16.10.7 Block Scaling, 9.7.16.9.2 tcgen05.cp,
9.7.16.2 data-movement shapes): one MMA reads 32 bytes of each A and B row whatever the format, so K
is 32 for 8-bit elements and 64 for E2M1; the scale factors come from TMEM addresses
``[scale-A-tmem]`` and ``[scale-B-tmem]``, must be present in all four 32-lane partitions of TMEM,
and ``tcgen05.cp .32x128b.warpx4`` copies 32 rows of 16 bytes into 32 lanes x 4 columns and
replicates them into each of the four lane quarters. ``tcgen05.cp`` -> ``tcgen05.mma`` and
``tcgen05.mma`` -> ``tcgen05.cp`` issued by one thread are pipelined pairs (PTX ISA, the tcgen05 memory
consistency model's "pipelined instructions"): they execute in issue order, so an MMA after the copy
that fills its scale factors needs no wait, and a copy after the MMAs that read the previous ones
may reuse their TMEM columns; ``tcgen05.commit`` tracks both.

The twins hand each operation to the emulator's model (gemm_kernels.emu.tensor_core_lowp)."""
from ..emu import tensor_core_lowp as _lowp
from ._declare import asm_op, twin, u32, u64

_PRED = " .reg .pred p;\n setp.ne.b32 p, {{accumulate}}, 0;\n"

# -- tcgen05.cp: scale factors, shared memory -> TMEM ----------------------------------------------
_CP = "tcgen05.cp.cta_group::{group}.32x128b.warpx4 [{{taddr}}], {{s_desc}};"


def _cp_op(group):
    op = asm_op(
        f"tcgen05_cp_32x128b_warpx4{'_cg2' if group == 2 else ''}", _CP.format(group=group),
        operands=(("taddr", u32), ("s_desc", u64)),
        doc="One thread copies 32 rows x 128 bits from shared memory (matrix descriptor ``s_desc``, no "
            "swizzle: row r at start + (r // 8) * SBO + (r % 8) * 16) into TMEM lanes 0..31 of column "
            "``taddr`` and the 3 columns after it, replicated into all four 32-lane quarters "
            "(tcgen05.cp .32x128b.warpx4). Asynchronous, in issue order with this thread's tcgen05.mma; "
            "tcgen05.commit tracks its completion (its read of shared memory)."
            + (" cta_group::2: the even CTA issues; each CTA of the pair copies its own shared memory "
               "into its own TMEM." if group == 2 else ""))

    @twin(op)
    def _cp(taddr, s_desc):
        _lowp.issue_cp(taddr, s_desc, group)

    return op


tcgen05_cp_32x128b_warpx4 = _cp_op(1)
tcgen05_cp_32x128b_warpx4_cg2 = _cp_op(2)


# -- MMAs -----------------------------------------------------------------------------------------
_MMA_F8 = ("{{{{\n" + _PRED + " tcgen05.mma.cta_group::{group}.kind::f8f6f4 [{{d_tmem}}], {{a_desc}}, "
           "{{b_desc}}, {{idesc}}, p;\n}}}}")
_MMA_BS = ("{{{{\n" + _PRED + " tcgen05.mma.cta_group::{group}.kind::{kind}.block_scale.{vec} [{{d_tmem}}], "
           "{{a_desc}}, {{b_desc}}, {{idesc}}, [{{sfa_tmem}}], [{{sfb_tmem}}], p;\n}}}}")
_MMA_OPERANDS = (("d_tmem", u32), ("a_desc", u64), ("b_desc", u64), ("idesc", u32))


def _f8_op(group):
    op = asm_op(
        f"tcgen05_mma_f8f6f4{'_cg2' if group == 2 else ''}", _MMA_F8.format(group=group),
        operands=_MMA_OPERANDS + (("accumulate", u32),),
        doc="One thread issues D[M x N] (+)= A[M x 32] . B[N x 32]^T with FP8 operands (e4m3 or e5m2, "
            "as the instruction descriptor says: tcgen05.mma kind::f8f6f4), FP32 accumulator in TMEM. "
            "The operands' matrix descriptors are those of kind::f16 (32 bytes per row per MMA). "
            "``accumulate`` = 0 overwrites D.")

    @twin(op)
    def _mma(d_tmem, a_desc, b_desc, idesc, accumulate):
        _lowp.issue_mma("f8f6f4", group, d_tmem, a_desc, b_desc, idesc, None, None, accumulate)

    return op


def _bs_op(kind, vec, group):
    op = asm_op(
        f"tcgen05_mma_{kind}{'_cg2' if group == 2 else ''}", _MMA_BS.format(group=group, kind=kind, vec=vec),
        operands=_MMA_OPERANDS + (("sfa_tmem", u32), ("sfb_tmem", u32), ("accumulate", u32)),
        doc=f"One thread issues the block-scaled D (+)= (A x SFA) . (B x SFB)^T (tcgen05.mma kind::{kind}"
            f".block_scale.{vec}): one scale factor per {vec[5:]} elements of K, read from TMEM at "
            f"``sfa_tmem`` / ``sfb_tmem`` (row r of A or B: lane r % 32 of every lane quarter, column "
            f"r // 32, the byte(s) the descriptor's scale-factor IDs select), FP32 accumulator in TMEM.")

    @twin(op)
    def _mma(d_tmem, a_desc, b_desc, idesc, sfa_tmem, sfb_tmem, accumulate):
        _lowp.issue_mma(kind, group, d_tmem, a_desc, b_desc, idesc, sfa_tmem, sfb_tmem, accumulate)

    return op


tcgen05_mma_f8f6f4 = _f8_op(1)
tcgen05_mma_f8f6f4_cg2 = _f8_op(2)
tcgen05_mma_mxf8f6f4 = _bs_op("mxf8f6f4", "block32", 1)
tcgen05_mma_mxf8f6f4_cg2 = _bs_op("mxf8f6f4", "block32", 2)
tcgen05_mma_mxf4nvf4 = _bs_op("mxf4nvf4", "block16", 1)
tcgen05_mma_mxf4nvf4_cg2 = _bs_op("mxf4nvf4", "block16", 2)
