"""Reports that lead with the cause. A wait whose parity names a phase that already completed passes
at once; what it lets through shows up later as a race, a TMEM hazard or a read of memory nothing
wrote. When a thread that passed such a wait then trips one of those checks, the report names the
wait first (its line, its parity, the phase it passed on and the phase it should have waited for),
then the damage. Nothing here runs unless a report is being raised."""
from __future__ import annotations

from .errors import DataRace, SharedMemoryHazard, StalePhaseWait, TmemHazard, UninitializedRead
from .source import text

_DAMAGE = (SharedMemoryHazard, TmemHazard, DataRace, UninitializedRead)


def passed_early(thread, bar, parity, phase, sid):
    """``thread``'s wait at site ``sid`` passed on ``phase`` of ``bar``, a phase it had already consumed
    (or, with ``phase`` -1, on the state before the barrier's first phase)."""
    thread.passed_early = (bar, parity, phase, sid)


def consumed_fresh(thread, bar):
    """``thread`` waited on a phase of ``bar`` it had not consumed before: an earlier early pass on
    ``bar`` is no longer the explanation of what follows."""
    pe = thread.passed_early
    if pe is not None and pe[0] is bar:
        thread.passed_early = None


def explain(thread, exc):
    """The report to raise for ``exc``, raised in ``thread``: a StalePhaseWait that names the early wait,
    where one explains it, else ``exc`` itself."""
    if not isinstance(exc, _DAMAGE):
        return exc
    pe = getattr(thread, "passed_early", None)
    if pe is None:
        # the damage may show in another party (the MMA issuer overwriting what a reader that passed
        # early still loads): one wait of the cluster that passed on a consumed phase explains it
        early = {}
        for cta in thread.cta.cluster.ctas:
            for t in cta.threads:
                if t.passed_early is not None and t.passed_early[2] >= 0:
                    early.setdefault((t.passed_early[0], t.passed_early[3]), t)
        if len(early) != 1:
            return exc
        thread = next(iter(early.values()))
        pe = thread.passed_early
    bar, parity, phase, sid = pe
    if phase < 0:
        if not (isinstance(exc, (UninitializedRead, SharedMemoryHazard))
                and (bar.carries_data or bar.name.startswith("tma2"))):
            # a wait for 'empty' passes so legitimately; one on a barrier that copies complete on (so far, or
            # by the kernels' naming of barriers after their handoff) does not. What it lets through is a
            # read before the copy (nothing written yet) or, where the copy was already issued, a read
            # that races with the copy's write
            return exc
        why = ("before the barrier's first phase completed: parity 1 names the state before phase 0, so the wait "
               "passed at once on a fresh barrier. A wait for 'full' starts at parity 0 (only a wait for 'empty' "
               "starts at 1)")
    else:
        why = (f"but phase {phase} (parity {phase & 1}), which that parity names, had completed and this thread had "
               f"already consumed it, so the wait passed at once instead of waiting for phase {phase + 1}: the phase "
               f"bit was not flipped (or was reset)")
    return StalePhaseWait(
        f"{thread} waited on mbarrier {bar.name} [CTA {bar.cta.rank_text()}] with parity {parity} at {text(sid)}, "
        f"{why}. What the early release let through ({type(exc).__name__}): {exc}")
