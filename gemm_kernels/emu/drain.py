"""The exit rule for asynchronous arrivals: a CTA may exit only after every arrival that the tensor
core (``tcgen05.commit``) or the TMA unit (a load's ``complete_tx``) makes on one of its mbarriers.

Why: the arrival writes the barrier's 8 bytes of shared memory. After the CTA exits, those bytes may
belong to the next CTA on the SM; for ``cta_group::2`` work the PTX ISA also says that the peer CTA
"should be active and should not have exited". A kernel that leaves the last commits of a ring in
flight (the producer's last tile released no stage, so nobody waits on the final phases of the
"empty" barriers) works on most runs and corrupts or faults on some.

The rule, decided by happens-before (so the verdict does not depend on the order one run took):
an asynchronous arrival in phase ``p`` of mbarrier ``B`` is ordered before an event ``E`` iff some
thread waited on ``B`` for phase ``p`` or a later phase (phases of one barrier complete in order, and
an arrival counts before its phase completes), and that wait is ordered before ``E``: it was made by
a thread of the exiting CTA (whose exit follows it in program order), or its warp's clock reaches
``E`` through a synchronisation (a cluster barrier, an mbarrier, ...). A wait on *another* barrier
does not order it, even one signalled by a later commit of the same thread: the PTX ISA says that a
commit's arrival happens once the tcgen05 work before it has completed, and nothing about the order
of two commits' arrivals. So in chapter 7 the writeback's wait on ``mma2ld`` (the tile's last commit)
does not order the last ``mma2tma`` commits before the exit; ``pipeline.producer_tail`` does.

``E`` is the exit of the CTA that owns ``B`` (its last thread's exit; the TMEM dealloc comes before
it, and tmem_rules already orders every MMA before the dealloc) and, for a ``cta_group::2`` commit,
the exit of both CTAs of the issuing pair as well.

Bookkeeping: the mbarrier keeps its latest asynchronous arrival (``async_phase``, ``async_op``) and,
per warp that has since waited on that phase or a later one, the warp's epoch at that wait
(``acks``): a clock that knows that epoch of the warp knows the wait (everything the warp released
or issued before the wait carries an earlier epoch: releases and issues advance it, hb.py). Checked at each CTA's exit
(``check_exit``) and at each arrival (``check_arrival``: one that lands after a CTA it concerns
exited, i.e. issued after that exit).
"""
from __future__ import annotations

from .errors import UndrainedArrival
from .source import loop_exit, text


def concerns(bar, op, cta):
    """Must ``cta`` outlive the arrival of ``op`` on ``bar``?"""
    return bar.cta is cta or cta in op.pair


def check_arrival(bar, op):
    """At an asynchronous arrival on ``bar``: every CTA it concerns is still running."""
    for cta in (bar.cta, *op.pair):
        if cta.live_threads == 0:
            raise UndrainedArrival(_report(cta, bar, op, "comes after that exit"))


def check_exit(cta):
    """At ``cta``'s exit (its last thread's): every asynchronous arrival it must outlive is ordered
    before the exit. Queued work first (an arrival still to come cannot be ordered before it)."""
    for op in cta.launch.scheduler.pending:
        for bar in op.barriers():
            if concerns(bar, op, cta):
                raise UndrainedArrival(_report(cta, bar, op, f"(for phase {bar.completed} or a later one) is "
                                                            f"still in flight"))
    exit_vc = cta.exit_vc
    undrained = {}  # owner CTA (this one first) -> its barriers with an arrival not ordered before the exit
    for owner in sorted(cta.cluster.ctas, key=lambda c: c is not cta):
        bars = [bar for bar in owner.mbarriers.values()
                if bar.async_op is not None and concerns(bar, bar.async_op, cta)
                and not any(exit_vc[slot] >= epoch for slot, epoch in bar.acks.items())]
        if bars:
            undrained[owner] = bars
    if undrained:
        first = next(iter(undrained.values()))
        bar, p = first[0], first[0].async_phase
        others = "; ".join(", ".join(b.name for b in bars if b is not bar) + _of(bars[0], cta)
                           for bars in undrained.values() if len(bars) > 1 or bars[0] is not bar)
        raise UndrainedArrival(_report(
            cta, bar, bar.async_op, f"(phase {p}) is not ordered before that exit: no wait on {bar.name} for phase "
                                    f"{p} or a later one comes before it{_missing_tail(bar)}") +
            (f" Not drained either: {others}." if others else ""))


def _missing_tail(bar):
    """Where the drain belongs: after the loop in which a thread waits on ``bar`` (the producer's ring)."""
    for thread, sid in bar.wait_sites.values():
        end = loop_exit(sid)
        if end:
            return (f" (the missing drain belongs at {end}, after the loop where {thread} waits on it at "
                    f"{text(sid)})")
    return ""


def _of(bar, cta):
    return "" if bar.cta is cta else f" of CTA {bar.cta.rank_text()}"


def _report(cta, bar, op, state):
    pair = (" A cta_group::2 commit needs both CTAs of the pair alive until it arrives (PTX ISA: the peer CTA "
            "should not have exited)." if bar.cta is not cta else "")
    later = (" A wait on a barrier that a later commit signals (such as the accumulator's) does not drain it: the "
             "PTX ISA does not order two commits' arrivals." if op.unit == "tensor core" else "")
    return (f"CTA {cta.rank_text()} exited, but the arrival of {op.arrival_text()} on mbarrier {bar.name}{_of(bar, cta)} "
            f"{state}.{pair} On the chip it may land after the CTA is gone, in shared memory that the next CTA on "
            f"the SM already uses. " + getattr(op, "drain_advice", "Drain before exit: wait on each stage's barrier "
            "once more after the last tile (pipeline.producer_tail), so that every arrival has landed.") + later)


def arrival_text(op, what):
    """``what`` issued by ``op``'s thread at its kernel line (for the reports)."""
    return f"{what} issued by {op.issuer} at {text(op.site)}"
