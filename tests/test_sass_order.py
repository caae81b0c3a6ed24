"""The SASS ordering check (gemm_kernels.sass_order, `sass --ordering`): on hand-written listings, on
every chapter's sm_100a build, and on step 10 rebuilt with the relaxed CLC wait it used to have, whose
scheduler load ptxas moved above the wait (the check must name that load)."""
import pytest
from numba import cuda, uint32

from gemm_kernels import pipeline, ptx, schedule
from gemm_kernels.runtime.build import find_nvdisasm
from gemm_kernels.sass_order import OTHER_PUBLISHERS, chapter_check, chapter_plan, check
from gemm_kernels.smem_plan import SmemPlan

needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="nvdisasm not installed")

PLAN = SmemPlan()
PLAN.add("CLC response", 16, align=16, count=2)  # offsets 0x00, 0x10
PLAN.add("clc_full", 8, align=8, count=2)  # 0x20, 0x28

# a scheduler-like loop: the response load (window base 0x400 + 0x0) before or after the wait on
# clc_full (0x420 in the window); the retry block sits at the end and jumps back, as ptxas lays it out
HEAD = """
	.section	.text.kern,"ax",@progbits
        /*0000*/                   UMOV UR4, 0x400 ;
        /*0010*/                   ULEA UR4, UR6, UR4, 0x18 ;
.L_x_1:
        /*0020*/                   UIADD3 UR5, UPT, UPT, UR4, 0x20, URZ ;
"""
BEFORE = """        /*0030*/                   LDS.128 R4, [UR4] ;
.L_x_5:
        /*0040*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR5], R0 ;
        /*0050*/              @!P0 BRA `(.L_x_9) ;
.L_x_2:
        /*0060*/                   NOP ;
"""
AFTER = """.L_x_5:
        /*0030*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR5], R0 ;
        /*0040*/              @!P0 BRA `(.L_x_9) ;
.L_x_2:
        /*0050*/                   LDS.128 R4, [UR4] ;
        /*0060*/                   NOP ;
"""
TAIL = """        /*0070*/               @P1 BRA `(.L_x_1) ;
        /*0080*/                   EXIT ;
.L_x_9:
        /*0090*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR5], R0 ;
        /*00a0*/              @!P0 BRA `(.L_x_9) ;
        /*00b0*/                   BRA `(.L_x_2) ;
"""


def test_a_load_after_the_wait_passes_and_one_before_it_is_named():
    good = check(HEAD + AFTER + TAIL, PLAN)
    assert [(ld.address, ld.region, ld.barrier, ld.problem) for ld in good] == [(0x50, "CLC response", "clc_full", "")]
    bad = check(HEAD + BEFORE + TAIL, PLAN)
    assert len(bad) == 1 and bad[0].address == 0x30 and "without a wait on clc_full" in bad[0].problem


def test_a_second_load_with_no_new_wait_is_named():
    twice = AFTER.replace("        /*0060*/                   NOP ;\n",
                          "        /*0060*/                   LDS.128 R8, [UR4] ;\n")
    loads = check(HEAD + twice + TAIL.replace("@P1 BRA `(.L_x_1)", "@P1 BRA `(.L_x_2)"), PLAN)
    assert any("again without a new wait" in ld.problem for ld in loads)


def test_a_load_of_a_region_no_rule_covers_is_named():
    plan = SmemPlan()
    plan.add("CLC response", 16, align=16, count=2)
    plan.add("mystery", 16)
    plan.add("clc_full", 8, align=8, count=2)
    listing = HEAD + AFTER.replace("LDS.128 R4, [UR4]", "LDS.128 R4, [UR4+0x20]") + TAIL
    loads = check(listing, plan)
    assert len(loads) == 1 and "mystery" in loads[0].problem


@needs_nvdisasm
@pytest.mark.parametrize("chapter", range(1, 11))
def test_every_chapter_orders_its_loads_of_published_data(chapter):
    loads = chapter_check(chapter)
    assert not [str(ld) for ld in loads if ld.problem]
    # step 10's four readers of the CLC response (scheduler, producer, MMA, writeback); no other
    # chapter reads mbarrier-published data with ordinary loads
    assert len(loads) == (4 if chapter == 10 else 0)
    assert set(OTHER_PUBLISHERS) >= {"TMEM address slot"}


@cuda.jit(device=True, forceinline=True)
def _clc_next_relaxed(resp0, full0, leader_empty0, count):
    """schedule.clc_next as it was before the fix: a relaxed wait, no proxy fence."""
    stage, phase = pipeline.ring_slot(count, schedule.CLC_STAGES)
    pipeline.wait_cluster(full0, stage, phase)
    ok, first_x = ptx.clc_query_cancel(pipeline.stage_buffer(resp0, stage, schedule.RESPONSE_BYTES))
    if ptx.elect_sync():
        ptx.mbarrier_arrive_remote(pipeline.barrier(leader_empty0, stage))
    return ok, uint32(first_x >> uint32(1))


@needs_nvdisasm
def test_the_relaxed_clc_wait_of_step_10_is_named(monkeypatch):
    from gemm_kernels.kernels import v10_any_shape as v10
    from gemm_kernels.runtime.build import build
    from gemm_kernels.sass_order import report

    monkeypatch.setattr(schedule, "clc_next", _clc_next_relaxed)
    kernel, plan = v10.make_kernel.__wrapped__(v10.DEFAULT_DEPTH)  # not the cached, fixed kernel
    loads = check(build(kernel, v10.SIGNATURE, arch="sm_100a").sass, plan)
    bad = [ld for ld in loads if ld.problem]
    assert len(loads) == 4 and len(bad) >= 1, report(loads, "relaxed step 10")
    assert all("relaxed" in ld.problem and ld.region == "CLC response" for ld in bad)
    assert chapter_plan(10).regions == plan.regions
