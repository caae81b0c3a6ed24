"""Probes for the B200 runbook: on-chip timeline stamps and the hang guard's bounded mbarrier wait.

None of the nine kernels calls these directly. ``gemm_kernels.instrument`` substitutes them for
ordinary ops in an *instrumented build* (a copy of the kernel; the kernel itself is unchanged).

* ``timeline_stamp(buf, cap, code, arg)``: the warp's lowest active lane reads ``%globaltimer``,
  claims a 32-byte slot in the device buffer ``buf`` (a counter at ``buf``, records from ``buf +
  64``) and writes (time, code, arg, %ctaid.x, %tid.x, %smid, %ctaid.y). Slots past ``cap`` are
  dropped (the counter still counts them, so the host knows how many were lost).
* ``guard_wait(bar, parity, ctr, rec, limit_ns, grace_ns, slots)``: a try_wait.parity loop that
  gives up after ``limit_ns`` of ``%globaltimer``. On giving up, the warp's lowest active lane claims
  a slot with an atomic on the device counter ``ctr`` and writes a 64-byte record into ``rec``
  (mapped, pinned HOST memory, so it can be read after the trap poisons the context), waits
  ``grace_ns`` so that other stuck warps can record themselves too, and executes ``trap``.
  ``guard_wait_cluster`` is the same with cluster-scope acquire.
* ``guard_note_base(rec, base)``: one lane per warp writes the dynamic shared-memory base into the
  record header (word 1), so the host can name a barrier by its SmemPlan region.

Their emulator twins: the stamp and the note do nothing (the emulator traces by itself), the
guarded wait is the ordinary wait (the emulator's own deadlock detection is its guard).
"""
from ..emu.context import thread as _thread
from ._declare import asm_op, u32, u64

#: the guard record's "this slot is filled" word
GUARD_MAGIC = 0x48414E47  # "HANG"
#: bytes of one guard record / one timeline record, and of either buffer's header
GUARD_RECORD_BYTES = 64
STAMP_RECORD_BYTES = 32
HEADER_BYTES = 64

_LOWEST_LANE = (" activemask.b32 m;\n neg.s32 low, m;\n and.b32 low, low, m;\n mov.u32 leq, %lanemask_eq;\n"
                " setp.ne.b32 q, low, leq;\n")

timeline_stamp = asm_op(
    "timeline_stamp",
    "{{\n .reg .pred q;\n .reg .u32 m, low, leq, idx, tmp;\n .reg .u64 t, a;\n"
    + _LOWEST_LANE +
    " @q bra TS_SKIP_${{:uid}};\n"
    " mov.u64 t, %globaltimer;\n"
    " atom.global.add.u32 idx, [{buf}], 1;\n"
    " setp.ge.u32 q, idx, {cap};\n"
    " @q bra TS_SKIP_${{:uid}};\n"
    " mul.wide.u32 a, idx, 32;\n add.u64 a, a, {buf};\n add.u64 a, a, 64;\n"
    " st.global.u64 [a], t;\n"
    " st.global.u32 [a+8], {code};\n st.global.u32 [a+12], {arg};\n"
    " mov.u32 tmp, %ctaid.x;\n st.global.u32 [a+16], tmp;\n"
    " mov.u32 tmp, %tid.x;\n st.global.u32 [a+20], tmp;\n"
    " mov.u32 tmp, %smid;\n st.global.u32 [a+24], tmp;\n"
    " mov.u32 tmp, %ctaid.y;\n st.global.u32 [a+28], tmp;\n"
    " TS_SKIP_${{:uid}}:\n}}",
    operands=(("buf", u64), ("cap", u32), ("code", u32), ("arg", u32)),
    doc="Record (%globaltimer, code, arg, CTA, thread, SM) into the timeline buffer at ``buf`` "
        "(one record per warp: its lowest active lane writes).")
timeline_stamp.twin = lambda buf, cap, code, arg: _thread().advance()


def _guard_template(scope):
    return (
        "{{\n .reg .pred p, q;\n .reg .u32 m, low, leq, idx, tmp;\n .reg .u64 t0, t1, d, a, st;\n"
        " mov.u64 t0, %globaltimer;\n"
        " GW_LOOP_${{:uid}}:\n"
        f" mbarrier.try_wait.parity{scope}.shared::cta.b64 p, [{{bar}}], {{parity}};\n"
        " @p bra GW_DONE_${{:uid}};\n"
        " mov.u64 t1, %globaltimer;\n sub.u64 d, t1, t0;\n setp.lt.u64 q, d, {limit};\n"
        " @q bra GW_LOOP_${{:uid}};\n"
        + _LOWEST_LANE +
        " @q bra GW_GRACE0_${{:uid}};\n"
        " atom.global.add.u32 idx, [{ctr}], 1;\n"
        " setp.ge.u32 q, idx, {slots};\n"
        " @q bra GW_GRACE0_${{:uid}};\n"
        " mul.wide.u32 a, idx, 64;\n add.u64 a, a, {rec};\n add.u64 a, a, 64;\n"
        " mov.u32 tmp, %ctaid.x;\n st.global.u32 [a+4], tmp;\n"
        " mov.u32 tmp, %ctaid.y;\n st.global.u32 [a+8], tmp;\n"
        " mov.u32 tmp, %ctaid.z;\n st.global.u32 [a+12], tmp;\n"
        " mov.u32 tmp, %tid.x;\n st.global.u32 [a+16], tmp;\n"
        " mov.u32 tmp, %cluster_ctarank;\n st.global.u32 [a+20], tmp;\n"
        " st.global.u32 [a+24], {bar};\n st.global.u32 [a+28], {parity};\n"
        " mbarrier.test_wait.parity.shared::cta.b64 q, [{bar}], {parity};\n"
        " selp.u32 tmp, 1, 0, q;\n st.global.u32 [a+32], tmp;\n"
        " mov.u32 tmp, %smid;\n st.global.u32 [a+36], tmp;\n"
        " st.global.u64 [a+40], d;\n st.global.u64 [a+56], t1;\n"
        " membar.sys;\n"
        f" st.volatile.global.u32 [a], {GUARD_MAGIC};\n"
        " membar.sys;\n"
        " ld.volatile.shared.b64 st, [{bar}];\n"   # the barrier's raw state word (undocumented layout)
        " st.global.u64 [a+48], st;\n"
        " membar.sys;\n"
        " GW_GRACE0_${{:uid}}:\n"
        " mov.u64 t0, %globaltimer;\n"
        " GW_GRACE_${{:uid}}:\n"
        " mov.u64 t1, %globaltimer;\n sub.u64 d, t1, t0;\n setp.lt.u64 q, d, {grace};\n"
        " @q bra GW_GRACE_${{:uid}};\n"
        " trap;\n"
        " GW_DONE_${{:uid}}:\n}}")


_GUARD_OPERANDS = (("bar", u32), ("parity", u32), ("ctr", u64), ("rec", u64), ("limit", u64), ("grace", u64),
                   ("slots", u32))

guard_wait = asm_op(
    "guard_wait", _guard_template(""), operands=_GUARD_OPERANDS,
    doc="mbarrier_wait that gives up after ``limit`` ns: records (CTA, thread, barrier, parity, "
        "elapsed, raw state) into host-mapped ``rec`` (slot claimed on device counter ``ctr``), waits "
        "``grace`` ns for other stuck warps to record, then traps.")

guard_wait_cluster = asm_op(
    "guard_wait_cluster", _guard_template(".acquire.cluster"), operands=_GUARD_OPERANDS,
    doc="guard_wait with cluster-scope acquire (for arrivals from the peer CTA).")


def _guard_twin(scope):
    def twin_fn(bar, parity, ctr, rec, limit, grace, slots):
        from .mbarrier import _wait

        _wait(bar, parity, scope)

    return twin_fn


guard_wait.twin = _guard_twin("")
guard_wait_cluster.twin = _guard_twin(".acquire.cluster")

guard_note_base = asm_op(
    "guard_note_base",
    "{{\n .reg .pred q;\n .reg .u32 m, low, leq;\n" + _LOWEST_LANE +
    " @!q st.global.u32 [{rec}+4], {base};\n}}",
    operands=(("rec", u64), ("base", u32)),
    doc="Write the dynamic shared-memory base address into word 1 of a record header (one lane per "
        "warp), so the host can name barriers by their SmemPlan regions.")
guard_note_base.twin = lambda rec, base: None
