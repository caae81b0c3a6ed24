"""Fences between proxies and around tcgen05 operations."""
from ..emu.context import thread as _thread
from ._declare import asm_op, twin, u64

fence_proxy_async = asm_op(
    "fence_proxy_async", "fence.proxy.async.shared::cta;",
    doc="Order this thread's prior ordinary (generic-proxy) shared-memory accesses before later "
        "async-proxy accesses (TMA, tcgen05.mma). Every thread that wrote operands with st.shared "
        "executes it before the barrier that lets the TMA or MMA issuer go.")


@twin(fence_proxy_async)
def _fence_proxy_async():
    t = _thread()
    t.cta.smem.fence_proxy_async(t)
    t.advance()


fence_proxy_tensormap_acquire = asm_op(
    "fence_proxy_tensormap_acquire", "fence.proxy.tensormap::generic.acquire.sys [{tmap}], 128;",
    operands=(("tmap", u64),),
    doc="Acquire a 128-byte tensor map that the host wrote into global memory, before its first use "
        "by TMA in this CTA.")
fence_proxy_tensormap_acquire.twin = lambda tmap: _thread().advance()

tcgen05_fence_before = asm_op(
    "tcgen05_fence_before", "tcgen05.fence::before_thread_sync;",
    doc="Order this thread's prior asynchronous tcgen05 operations before its next synchronising "
        "operation (mbarrier arrive, bar.sync).")
tcgen05_fence_before.twin = lambda: _thread().tcgen05_fence(before=True)

tcgen05_fence_after = asm_op(
    "tcgen05_fence_after", "tcgen05.fence::after_thread_sync;",
    doc="Order this thread's later asynchronous tcgen05 operations after its prior synchronising "
        "operation (typically a successful mbarrier wait).")
tcgen05_fence_after.twin = lambda: _thread().tcgen05_fence(before=False)
