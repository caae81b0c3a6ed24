"""Cluster launch control (sm_100): cancel a cluster of this grid that has not started, and take over
its work (PTX ISA 9.7.9.x, ``clusterlaunchcontrol``).

``try_cancel`` asks the hardware scheduler, asynchronously, for a cluster that is still waiting to
be launched. Its 16-byte response lands in shared memory (with ``.multicast::cluster::all``: in
every CTA of the cluster, at the same offset) and completes 16 transaction bytes on the mbarrier at
the same offset in each CTA; the response is opaque and read with ``query_cancel``. After a CTA has
seen a failed response it must not ask again."""
from ..emu.clc import ClcRequest, own_address, read_response
from ..emu.context import thread as _thread
from ._declare import asm_op, twin, u32

clc_try_cancel_multicast = asm_op(
    "clc_try_cancel_multicast",
    "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.multicast::cluster::all.b128 "
    "[{resp}], [{bar}];",
    operands=(("resp", u32), ("bar", u32)),
    doc="Ask to cancel a cluster of this grid that has not started yet. The 16-byte response is written "
        "to shared address ``resp`` (16-byte aligned) in every CTA of this cluster, and completes 16 bytes "
        "on the mbarrier at ``bar`` (the same offset) in each of them. sm_100a.")


@twin(clc_try_cancel_multicast)
def _clc_try_cancel_multicast(resp, bar):
    t = _thread()
    resp_cta, resp_off = t.cta.resolve(resp, 16, "clusterlaunchcontrol.try_cancel response")
    bar_cta, bar_off = t.cta.resolve(bar, 8, "clusterlaunchcontrol.try_cancel barrier")
    own_address(t, resp, resp_cta, bar, bar_cta)
    t.scheduler.submit(ClcRequest(t, resp_off, bar_off))
    t.advance()


clc_query_cancel = asm_op(
    "clc_query_cancel",
    "{{ .reg .b128 r; .reg .pred p; ld.shared.b128 r, [{resp}]; "
    "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, r; selp.u32 {ok}, 1, 0, p; mov.u32 {x}, 0; "
    "@p clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 {x}, r; }}",
    operands=(("resp", u32),), results=(("ok", u32), ("x", u32)),
    doc="Read the try_cancel response at shared address ``resp`` (after its mbarrier phase completed) and "
        "decode it: (1, the x index of the cancelled cluster's first CTA), or (0, 0) when no cluster was "
        "cancelled.")


@twin(clc_query_cancel)
def _clc_query_cancel(resp):
    t = _thread()
    ok, x, _, _ = read_response(t, resp)
    t.advance()
    return ok, x
