"""The first line of a deadlock report: the root wait, found by following the wait-for chain.

The barrier most threads wait on is usually a symptom (consumers starve on 'full' because the
producer is stuck elsewhere). So the report starts there and asks, step by step, who was expected
to provide what the current phase lacks, and what that party waits on itself:

* missing arrivals are expected from the threads that arrived on the barrier (or issued a commit or
  copy to it) in earlier phases and have not arrived in this one; with no history (phase 0), from the
  other lanes of the warps that did arrive in this phase, or, where one elected lane arrives for its
  warp, from the warps of the same role (in either CTA of a pair) that have not; failing that, from
  the warps whose role the barrier's name gives as its source (the kernels name a barrier after its
  handoff, ``mma2tma``: the MMA issuer signals it), and then from every thread blocked on another
  mbarrier (threads parked at a CTA or cluster barrier wait for the others: they are not culprits);
* missing transaction bytes are expected from queued copies that target the barrier, else from the
  threads that announced them with ``expect_tx`` (who would issue the copy);
* a queued commit or copy that targets the barrier ends the chain (it waits on earlier work).

The chain stops at a wait that nothing can complete: a cycle (the providers wait on a barrier
already in the chain), a dead end (the providers have exited, or nobody is left to provide), or a
wait on something other than an mbarrier. That last wait is the root and is reported first; the
chain follows on the next line. Everything here runs only after a deadlock was detected.
"""
from __future__ import annotations

import re
from collections import Counter

from .machine import _ranges
from .mbarrier import MBarrier, _blocked_site
from .source import parity_origin, text, thread_site

#: the side of a handoff a barrier's name starts with -> the warp roles (trace.ROLES) that signal it
_SOURCE_ROLES = {"tma": ("TMA producer",), "mma": ("MMA issuer", "MMA issuer 1"), "ld": ("writeback", "writeback 1")}


def _who(threads):
    """'thread 0 (warp 0) of CTA ...' or '32 threads (threads 32-63, warps 1) of CTA ...', per CTA."""
    by_cta = {}
    for t in threads:
        by_cta.setdefault(t.cta, []).append(t)
    parts = []
    for cta, ts in by_cta.items():
        if len(ts) == 1:
            parts.append(f"thread {ts[0].tid} (warp {ts[0].warp.index}) of CTA {cta.rank_text()}")
        else:
            parts.append(f"{len(ts)} threads (threads {_ranges({t.tid for t in ts})}, warps "
                         f"{_ranges({t.warp.index for t in ts})}) of CTA {cta.rank_text()}")
    return " and ".join(parts)


def _at(threads):
    """' at <kernel line>' of the first of ``threads`` that is parked at a known line, or ''."""
    for t in threads:
        where = thread_site(t)
        if where:
            return f" at {where}"
    return ""


def _count(bar):
    """Where the barrier's count was set: ' (its count, N, set at <init line>)'."""
    return f" (count {bar.expected}, set at {text(bar.init_site)})" if bar.init_site else ""


def _skipped(bar, waiters):
    """' (...)' when the first waiter's previous wait on ``bar`` consumed phase c and it now waits for
    c + 2: phase c + 1 completed unseen (a phase bit not flipped after a wait), else ''."""
    c = bar.consumed.get(waiters[0].key)
    if c is None or bar.completed != c + 2:
        return ""
    return (f" (its previous wait on it consumed phase {c}; parity {c & 1} again names phase {c + 2}, so phase {c + 1} "
            f"completed unseen: the phase bit was not flipped after that wait)")


def _missing(bar):
    lacks = []
    if bar.pending:
        lacks.append(f"{bar.pending} of {bar.expected} arrivals")
    if bar.tx > 0:
        lacks.append(f"{bar.tx} transaction bytes")
    return " and ".join(lacks) or "nothing (its waiters name the other parity)"


def _queued_for(bar, pending):
    """Queued asynchronous work that would arrive on (or deliver bytes to) ``bar``."""
    return [op for op in pending if getattr(op, "bar", None) is bar or bar in getattr(op, "bars", ())]


def _by_analogy(bar, by_key, arrived):
    """With no history on ``bar`` itself: the providers of the same barrier in a peer CTA of the cluster
    (CTAs run the same code). They are reported as they are, not mapped to ``bar``'s CTA: whether a
    CTA's own thread or the leader CTA's provides a barrier is the kernel's choice."""
    for cta in bar.cta.cluster.ctas:
        peer = cta.mbarriers.get(bar.offset) if cta is not bar.cta else None
        if peer is None or peer.name != bar.name or not peer.signalled:
            continue
        cand = []
        for key in peer.signalled:
            t = by_key.get(key)
            if t is not None and t not in arrived and t not in cand:
                cand.append(t)
        if cand:
            return cand, peer
    return [], None


def _sibling(bar, cand):
    """'; they signal <ring barrier at another stage> instead, at <line>' when the candidates have signalled
    another barrier of the same ring (``name[i]``) but never this one: a stage index, else ''."""
    ring = (bar.name or "").split("[", 1)[0]
    if "[" not in (bar.name or ""):
        return ""
    keys = {t.key for t in cand}
    for other in bar.cta.mbarriers.values():
        if other is bar or (other.name or "").split("[", 1)[0] != ring:
            continue
        for k, sid in other.signal_site.items():
            if k in keys:
                return (f"; they signal {other.name} of the same ring instead, at {text(sid)}: is the stage index "
                        f"there right?")
    return ""


def _unfilled(bar):
    """'; no copy was ever issued to it, while <ring barrier at another stage> got its first copy at <line>
    ...' for a fresh barrier of a ring whose other stages' copies were issued: the loop that fills the
    ring stopped short of this stage. Else ''."""
    if bar.completed or bar.copy_dsts or "[" not in (bar.name or ""):
        return ""
    ring = bar.name.split("[", 1)[0]
    for other in bar.cta.mbarriers.values():
        if other is bar or not other.copy_dsts or other.name.split("[", 1)[0] != ring:
            continue
        cta, lo = min(other.copy_dsts, key=lambda d: d[1])
        sid = cta.copy_bar.get(lo, {}).get(other)
        if sid:
            return (f"; no copy was ever issued to it, while {other.name} of the same ring got its first copy at "
                    f"{text(sid)}: does the loop that fills the ring reach this stage?")
    return ""


def _providers(bar, cluster_threads, by_key):
    """(threads expected to provide what the current phase lacks, how they were found)."""
    arrived = set(bar.arrived_by)
    if bar.pending:
        known = [by_key[k] for k in bar.signalled if k in by_key]
        cand = [t for t in known if t not in arrived]
        if cand:
            return cand, "they arrived on it, or issued a copy or commit to it, in earlier phases"
        warps = {t.warp for t in arrived}
        if arrived and len(warps) == len(bar.arrived_by) and any(w.role for w in warps):
            # one elected lane arrives for its warp: the missing parties are warps of the same role
            roles = {w.role for w in warps}
            cand = [t for t in cluster_threads if t.warp.role in roles and t.warp not in warps]
            if cand:
                how = f"one elected lane per warp arrives; these {', '.join(sorted(roles))} warps have not"
                own = cand[0].cta.mbarriers.get(bar.offset)
                at = own.signal_site.get(next((t.key for t in cand if t.key in own.signalled), None)) \
                    if own is not None and own is not bar else None
                if at:  # they signal the barrier at this offset in their own CTA: the address names the wrong CTA
                    how += (f"; they arrive on mbarrier {own.name} of their own CTA {own.cta.rank_text()} instead, at "
                            f"{text(at)}: an arrival meant for CTA {bar.cta.rank_text()}'s barrier must use its "
                            f"address there (mapa)")
                return cand, how
        else:
            cand = [t for t in cluster_threads if t.warp in warps and t not in arrived]
            if cand:
                return cand, "the other lanes of the warps that arrived in this phase"
        cand, peer = _by_analogy(bar, by_key, arrived)
        if cand:
            at = peer.signal_site.get(cand[0].key)
            return cand, (f"nothing has arrived on this one yet; they arrived on the same barrier of CTA "
                          f"{peer.cta.rank_text()}" + (f", at {text(at)}" if at else ""))
        if known:  # everybody who ever arrived did so in this phase: the count is higher than the arrivals
            return [], "all arrived already: the count is higher than the number of threads that arrive"
        live = [t for t in cluster_threads if not t.exited and t.blocked_on and t.blocked_on[0] is not bar]
        m = re.match(r"([a-z]+)2[a-z]", bar.name or "")
        roles = _SOURCE_ROLES.get(m.group(1), ()) if m else ()
        cand = [t for t in live if t.warp.role in roles and t.warp.cta is bar.cta] or \
            [t for t in live if t.warp.role in roles]
        if cand:
            return cand, f"nobody has arrived on it yet; by its name, the {cand[0].warp.role} signals it" + \
                (_sibling(bar, cand) or _unfilled(bar))
        # threads parked at a CTA or cluster barrier wait for the others to get there: not the culprits
        cand = [t for t in live if isinstance(t.blocked_on[0], MBarrier)] or live
        return cand, "nobody has arrived on it yet: every running thread that does not wait on it" + _unfilled(bar)
    announcers = list(dict.fromkeys(t for t, _, _ in bar.expect_sites))
    return announcers, "they announced the bytes with expect_tx"


def _step(bar, waiters, cluster_threads, by_key, pending):
    """One link of the chain: (its text, the mbarrier its providers wait on, or None where the chain ends)."""
    head = (f"{_who(waiters)} wait{'s' if len(waiters) == 1 else ''} on mbarrier {bar.name} [CTA "
            f"{bar.cta.rank_text()}] for phase {bar.completed} (parity {bar.completed & 1}){_at(waiters)}, which "
            f"lacks {_missing(bar)}{_count(bar) if bar.pending and bar.expected > 1 else ''}{_skipped(bar, waiters)}")
    queued = _queued_for(bar, pending)
    if queued:
        return head + f"; queued work would provide them but cannot start: {queued[0].description}", None
    provs, how = _providers(bar, cluster_threads, by_key)
    if " of their own CTA " in how:  # the arrivals went to another CTA's barrier: that is the root
        return head + f"; they were to come from {_who(provs)} ({how})", None
    if bar.tx > 0 and not bar.pending:
        announced = sum(n for _, _, n in bar.expect_sites)
        head += (f" (announced {announced} B: {bar.announcements()}; the copies delivered {announced - bar.tx} B and no copy to it "
                 f"is in flight)")
    if not provs:
        why = f"; the threads that would provide them {how}" if how.startswith("all arrived") else \
            "; no running thread and no asynchronous work in flight can provide them"
        return head + why, None
    live = [t for t in provs if not t.exited]
    if not live:
        return head + f"; they were to come from {_who(provs)} ({how}), which {'has' if len(provs) == 1 else 'have'} " \
                      f"exited", None
    blocked = Counter(t.blocked_on[0] for t in live if t.blocked_on)
    if not blocked:
        return head + f"; they were to come from {_who(live)} ({how})", None
    nxt, _ = blocked.most_common(1)[0]
    party = [t for t in live if t.blocked_on and t.blocked_on[0] is nxt]
    verb = "waits" if len(party) == 1 else "wait"
    if nxt is bar:
        return head + (f"; they were to come from {_who(party)} ({how}), which {verb} on this barrier itself: "
                       f"nothing else can provide them, so the wait names a phase its own later work completes"
                       f"{_moved_copy(bar) or parity_origin(_blocked_site(party[0]))}"), None
    if isinstance(nxt, MBarrier):
        what = (f"mbarrier {nxt.name} [CTA {nxt.cta.rank_text()}] for phase {nxt.completed}{_at(party)}, which lacks "
                f"{_missing(nxt)}")
    else:
        what = party[0].blocked_on[1]() + _at(party)
    text = head + f"; they were to come from {_who(party)} ({how}), which now {verb} {'on ' if isinstance(nxt, MBarrier) else ''}{what}"
    return text, (nxt if isinstance(nxt, MBarrier) else None)


def _moved_copy(bar):
    """" (copies into <buffer> complete on two barriers ...)" when a buffer that copies completing on
    ``bar`` wrote was also filled by copies signalling another barrier: a buffer belongs to one stage,
    so the copy that first paired it with a second barrier (its barrier, or stage index) is the slip,
    and some phase waits for bytes that went elsewhere. Else ''."""
    for cta, lo in sorted(bar.copy_dsts, key=lambda d: d[1]):
        pairing = cta.copy_bar.get(lo, {})
        if len(pairing) > 1:
            (first, _), (second, sid) = list(pairing.items())[:2]
            return (f" (copies into {cta.smem.name_of(lo)} complete on {first.name} and, from the copy issued at "
                    f"{text(sid)}, on {second.name}: a buffer belongs to one stage's barrier, so check the barrier, "
                    f"or stage index, that this copy and its expect_tx name)")
    return ""


def count_cause(cluster):
    """An ArrivalMismatch message when a blocked wait shows its barrier's count too low (the phases
    since the thread's previous wait came one per warp), else ''. Its hang is the count's doing."""
    for cta in cluster.ctas:
        for t in cta.threads:
            bar = t.blocked_on[0] if not t.exited and t.blocked_on else None
            if isinstance(bar, MBarrier):
                low = bar.count_too_low(t, bar.completed - 1)
                if low:
                    return low
    return ""


def skipped_root(cluster, pending):
    """True when the root wait of the hang skipped a phase (its previous wait on the barrier consumed
    phase c, it waits for c + 2, and c + 1 completed unseen): a phase bit not flipped. That hang is the
    order's version of a ``StalePhaseWait`` (another order lets the same wait pass at once on the
    consumed phase), so it is reported with that class, whichever order the run took."""
    root = _root(cluster, pending)
    return root is not None and bool(_skipped(*root))


def _waiting(cluster):
    waiting = {}
    for cta in cluster.ctas:
        for t in cta.threads:
            if not t.exited and t.blocked_on and isinstance(t.blocked_on[0], MBarrier):
                waiting.setdefault(t.blocked_on[0], []).append(t)
    return waiting


def _root(cluster, pending):
    """(the root barrier, its waiters) of the wait-for chain, or None."""
    found = _chain(cluster, pending)
    return None if found is None else (found[0][-1], _waiting(cluster)[found[0][-1]])


def _chain(cluster, pending):
    """(barriers in the chain, each step's text, how it ended), or None when no thread waits on an mbarrier."""
    cluster_threads = [t for cta in cluster.ctas for t in cta.threads]
    by_key = {t.key: t for t in cluster_threads}
    waiting = _waiting(cluster)
    if not waiting:
        return None
    bar = max(waiting.items(), key=lambda kv: len(kv[1]))[0]
    steps, seen, end = [], [], "a dead end"
    while bar is not None:
        seen.append(bar)
        text, nxt = _step(bar, waiting[bar], cluster_threads, by_key, pending)
        steps.append(text)
        if nxt is not None and nxt in seen:
            end = f"a cycle back to mbarrier {nxt.name}"
            if nxt.completed == 0 and bar.completed == 0 and not bar.arrived_by and not nxt.arrived_by:
                steps[-1] += (" (a cycle on fresh barriers: if this wait means 'the slot is free', it must pass at once "
                              "on a fresh barrier, so wait with parity 1, not 0)")
            break
        bar = nxt
    return seen, steps, end


def deadlock_cause(cluster, pending):
    """The root wait (first line) and the chain that led to it (second line), or None when no thread
    waits on an mbarrier."""
    found = _chain(cluster, pending)
    if found is None:
        return None
    seen, steps, end = found
    first = f"deadlock in cluster {cluster.index}: {steps[-1]}."
    if len(steps) == 1:
        return first
    chain = " <- ".join(f"mbarrier {b.name} phase {b.completed}" for b in seen)
    return first + f"\n  wait-for chain from the barrier most threads wait on ({end}): {chain}; " + \
        "; then ".join(steps[:-1]) + "."
