"""The hot loops of chapters 4-9 (gemm_kernels.sass_loops, `sass --hot-loops`): the loop finder on a
hand-written listing, and a per-chapter instruction budget on the sm_100a build, so that a change that
makes a hot loop heavier, or puts a GPU-scope fence or a software division in a loop, fails here."""
import pytest

from gemm_kernels.runtime.build import find_nvdisasm
from gemm_kernels.sass_loops import flagged_loops, hot_loops, loops, report

needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="nvdisasm not installed")

LISTING = """
	.section	.text.kern,"ax",@progbits
        /*0000*/                   MOV R1, c[0x0][0x37c] ;
.L_x_1:
        /*0010*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2 ;
        /*0020*/              @!P0 BRA `(.L_x_9) ;
.L_x_2:
        /*0030*/                   ELECT P1, URZ, PT ;
        /*0040*/                   UTCHMMA gdesc[UR4], gdesc[UR10], tmem[UR9], tmem[UR18], idesc[UR19], UP0 ;
        /*0050*/               @P0 BRA.U.ANY `(.L_x_2) ;
        /*0060*/                   UTCHMMA gdesc[UR4], gdesc[UR10], tmem[UR9], tmem[UR18], idesc[UR19], UPT ;
        /*0070*/                   NOP ;
        /*0080*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0090*/                   MEMBAR.ALL.GPU ;
        /*00a0*/               @P2 BRA `(.L_x_1) ;
        /*00b0*/                   CALL.ABS.NOINC `(__cuda_sm10x_tcgen05_guardrail_trap_x) ;
        /*00c0*/                   EXIT ;
"""


def test_loop_finder():
    lps = loops(LISTING)
    assert [(lp.start, lp.end, lp.waterfall) for lp in lps] == [(0x30, 0x50, True), (0x10, 0xA0, False)]
    (mma,) = hot_loops(LISTING)
    assert mma.kind == "MMA" and mma.loop.start == 0x10
    assert mma.loop.size == 9  # the NOP is not counted
    assert mma.units == 0.5 and mma.per_unit == 18.0
    assert mma.categories["mma/commit"] == 2 and mma.categories["barrier/fence"] == 2  # ELECT, MEMBAR
    ((lp, texts),) = flagged_loops(LISTING)
    assert lp.start == 0x10 and texts == ["MEMBAR.ALL.GPU"]  # the guardrail trap is outside, and not flagged
    text = report(LISTING, label="x")
    assert "MMA loop 00010..000a0: 9 instructions" in text and "FLAG" in text


# Per-unit instruction counts of the sm_100a build (MMA and producer loops per k-block of 64, the
# epilogue per 128 fp16 columns of one thread), as built after issue 13, plus ~3% headroom (before
# issue 13, chapter 7 counted 80.5 / 36.8 / 371 and chapters 6-9 had a software division or a
# MEMBAR.ALL.GPU in a loop: /work/notes/i13_hot_loops_before.txt). Chapters 4 and 5 run their
# epilogue once per CTA: no epilogue loop.
HOT_LOOP_BUDGET = {
    4: {"MMA": 94, "TMA producer": 94},
    5: {"MMA": 120, "TMA producer": 26},
    6: {"MMA": 160, "TMA producer": 39, "epilogue": 301},
    7: {"MMA": 40, "TMA producer": 35, "epilogue": 210},
    8: {"MMA": 41, "TMA producer": 36, "epilogue": 189},
    9: {"MMA": 40, "TMA producer": 46, "epilogue": 179},
}


@needs_nvdisasm
@pytest.mark.parametrize("chapter", sorted(HOT_LOOP_BUDGET))
def test_hot_loop_budget(chapter):
    from gemm_kernels.sass_loops import chapter_summary

    per, flagged, b = chapter_summary(chapter)
    assert set(per) == set(HOT_LOOP_BUDGET[chapter]), f"chapter {chapter}: hot loops found: {sorted(per)}"
    over = {k: round(v, 1) for k, v in per.items() if v > HOT_LOOP_BUDGET[chapter][k]}
    assert not over, f"chapter {chapter}: hot loops over budget {HOT_LOOP_BUDGET[chapter]}: {over}\n" + report(b.sass)
    assert not flagged, f"chapter {chapter}: a MEMBAR.*GPU or CALL inside a loop\n" + report(b.sass)
