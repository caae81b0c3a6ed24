"""A ``.relaxed`` mbarrier wait acquires nothing (PTX ISA, memory consistency model).

``mbarrier.try_wait.parity.relaxed.cluster`` tells a thread that a phase completed, but it is not an
acquire: the loads after it are not ordered after the writes the phase's arrivals released (ptxas is
free to move a load above it, and does: issue 27). What orders them is a later point that turns the
observation into an acquire. The emulator keeps the phase a relaxed wait observed beside the warp's
clock (``WarpClock.relaxed``) and joins it only at such a point (``settle``):

* ``tcgen05.fence::after_thread_sync`` and every tcgen05 operation (the ISA's form for a CTA pair:
  relaxed wait, then the tcgen05 fence, then the MMA or tcgen05.ld; an operation without the fence is
  then reported by the tcgen05 fence rule, as after an acquire wait);
* the issue of asynchronous work (a TMA load or store, a try_cancel): its writes are ordered by the
  async proxy's own completion mechanism (stronger than the ISA states; ARCHITECTURE.md);
* ``bar.sync`` / ``barrier.cluster.arrive`` (a barrier orders the thread's earlier accesses, the
  observation included; also stronger than the ISA, which asks for a fence).

An ordinary shared-memory access that a settled relaxed wait would have ordered, and nothing else did,
is a ``RelaxedWaitNoAcquire`` naming the wait and the acquiring form that orders it."""
from __future__ import annotations

from .errors import RelaxedWaitNoAcquire
from .source import text


def observe(thread, bar, phase, sp, sid):
    """A relaxed wait by ``thread`` at kernel site ``sid`` saw phase ``phase`` of ``bar`` complete; ``sp``
    is that phase's synchronisation (hb.SyncPoint), kept until a point that orders it."""
    thread.warp.clock.relaxed.append((thread, bar, phase, sp, sid))


def settle(clock):
    """Join the phases the warp's relaxed waits observed into its clock (an ordering point)."""
    pending = clock.relaxed
    if pending:
        clock.relaxed = []
        for thread, bar, phase, sp, sid in pending:
            if sp.tc:
                thread.acquire(sp.vc, lambda b=bar, p=phase: f"the wait on mbarrier {b.name} (phase {p})", sp.tc,
                               sp.unfenced, at=sid)
            else:
                clock.acquire(sp.vc)


def covering(clock, slot, epoch):
    """The relaxed wait (thread, barrier, phase, SyncPoint, site) of this warp, not yet settled, whose
    phase published the access of clock slot ``slot`` at ``epoch``; None if none did."""
    for entry in clock.relaxed:
        vc = entry[3].vc
        if vc is not None and vc[slot] >= epoch:
            return entry
    return None


def report(entry, access, writer):
    """The report: ``access`` (what read, where) was let through by relaxed wait ``entry`` only;
    ``writer`` (who wrote the data, where) released it in the phase that wait observed."""
    thread, bar, phase, _, sid = entry
    cluster = bar.cta.cluster.size > 1
    form = (".acquire.cluster (pipeline.wait_acquire_cluster or ptx.mbarrier_wait_cluster)" if cluster
            else ".acquire.cta (ptx.mbarrier_wait, try_wait.parity's default)")
    raise RelaxedWaitNoAcquire(
        f"the wait at {text(sid)} is relaxed (mbarrier.try_wait.parity.relaxed.cluster on mbarrier {bar.name} "
        f"[CTA {bar.cta.rank_text()}], phase {phase}), and {access} reads data that {writer} published in that "
        f"phase: a relaxed wait acquires nothing, so the load is not ordered after the write (ptxas may even "
        f"move it above the wait, and the load then sees the bytes' old content). Wait with {form} there, "
        f"where {thread} waits.")
