"""Happens-before, ThreadSanitizer style: vector clocks for the warps of a cluster and for the
asynchronous work they issue, and shadow memory that remembers who last wrote and read each byte.

Why: a race shows in a run only if the run's order happens to expose it. With clocks, two accesses
conflict when neither is ordered before the other by a synchronisation: the same bug is reported
under ``eager``, ``lazy`` and ``random``, whichever order the run took.

Slots (one int per slot in every clock), per warp w of the cluster (W warps in all):
* ``w``        the warp's own program order (lanes of a warp share it: races between lanes of one
               warp are not modelled; a wait acquires the phase whose completion woke it, so a lane
               that runs again late does not order the warp after later phases: mbarrier.consume);
* ``W + w``    the MMAs the warp issued (completed for others through tcgen05.commit's arrival);
* ``2W + w``   the warp's TMA loads (completed through complete_tx on their mbarrier);
* ``3W + w``   the warp's bulk (TMA store) groups, completed by ``cp.async.bulk.wait_group``.
A release joins the warp's clock into the synchronisation object and then advances the warp's own
entry; an acquire joins the object's clock into the warp's. Issuing asynchronous work advances the
warp's own entry too: the work's clock carries the epoch before it, so whoever waits for its
completion is not taken to know what the warp did after the issue. mbarrier phases, named-barrier
generations, the cluster barrier and bulk-group waits are the synchronisations.
"""
from __future__ import annotations

import numpy as np

from .relaxed import settle

MMA, TMA, BULK = "mma", "tma", "bulk"
TC_READ, TC_WRITE = 1, 2  # kinds of tcgen05 work: tcgen05.ld reads TMEM; MMA, tcgen05.st write it
TC_DEALLOC = 4  # tcgen05.dealloc: ordered after work of every kind, and issues no work itself
TC_SMEM = 8  # behind a synchronisation: TMA loads' writes to shared memory (an MMA reads them: fence after)


def tc_conflict(op_kind, behind):
    """Does a tcgen05 operation of ``op_kind`` need ordering after work of kinds ``behind``? (Two
    reads need none.)"""
    if behind & TC_WRITE:
        return True
    if op_kind & TC_WRITE and behind & TC_SMEM:  # an MMA reads the shared memory the TMA loads wrote
        return True
    return bool(op_kind & (TC_WRITE | TC_DEALLOC) and behind & TC_READ)


class Clocks:
    """The slot layout of one cluster."""

    def __init__(self, nctas, nwarps):
        self.nwarps = nctas * nwarps
        self.size = 4 * self.nwarps

    def fresh(self):
        return np.zeros(self.size, dtype=np.int32)


class WarpClock:
    """One warp's vector clock and its counters of asynchronous work."""

    __slots__ = ("aslot", "bslot", "epochs", "last", "relaxed", "slot", "tslot", "vc", "vcm")

    def __init__(self, clocks, index):
        self.vc = clocks.fresh()
        self.vcm = memoryview(self.vc)  # fast scalar reads; the array is only ever updated in place
        self.slot = index
        self.aslot = clocks.nwarps + index
        self.tslot = 2 * clocks.nwarps + index
        self.bslot = 3 * clocks.nwarps + index
        self.vc[index] = 1
        self.last = None  # the clock acquired last (the lanes of a warp acquire the same one in turn)
        self.epochs = {MMA: 0, TMA: 0, BULK: 0}  # operations issued so far, per unit
        # phases a .relaxed wait of the warp observed, not acquired (relaxed.py): (thread, SyncPoint, barrier,
        # phase, site of the wait); they join the clock only at a point that orders them (relaxed.settle)
        self.relaxed = []

    @property
    def epoch(self):
        return self.vc[self.slot]

    def release(self, into):
        """Join this warp's clock into ``into`` (an array, or None for a new one); advance; return it."""
        if into is None:
            into = self.vc.copy()
        else:
            np.maximum(into, self.vc, out=into)
        self.vc[self.slot] += 1
        return into

    def acquire(self, vc):
        """(A synchronisation's clock is final once anyone can acquire it, so acquiring the same one
        again adds nothing.)"""
        if vc is not None and vc is not self.last:
            np.maximum(self.vc, vc, out=self.vc)
            self.last = vc

    def async_op(self, unit):
        """The clock of a new asynchronous operation on ``unit`` (MMA, TMA or BULK) issued now: it knows
        what the warp knows, and its own completion is a new epoch of the unit's slot. Returns
        (slot, vc)."""
        if self.relaxed:  # the issue orders what a relaxed wait observed (relaxed.py)
            settle(self)
        vc = self.vc.copy()
        slot = {MMA: self.aslot, TMA: self.tslot, BULK: self.bslot}[unit]
        self.epochs[unit] += 1
        vc[slot] = self.epochs[unit]
        self._after_issue()
        return slot, vc

    def async_so_far(self):
        """The clock of a tcgen05.commit issued now: it covers every earlier MMA of the warp."""
        if self.relaxed:
            settle(self)
        vc = self.vc.copy()
        vc[self.aslot] = self.epochs[MMA]
        self._after_issue()
        return vc

    def _after_issue(self):
        """The warp's work after an issue is a new epoch: the issued operation carries the warp's epoch to
        whoever waits for its completion, and that must not cover what the warp does later."""
        self.vc[self.slot] += 1


def join(a, b):
    if a is None:
        return None if b is None else b.copy()
    if b is not None:
        np.maximum(a, b, out=a)
    return a


class SyncPoint:
    """One phase of an mbarrier, one generation of a named or cluster barrier: the clock that its
    releases joined, and whether tcgen05 work stands behind it (for the tcgen05 fence rules)."""

    __slots__ = ("tc", "unfenced", "vc")

    def __init__(self):
        self.vc = None
        self.tc = 0  # TC_READ / TC_WRITE: tcgen05 work the releasing threads issued since their previous release
        self.unfenced = None  # (thread text, site, kind) of such work not followed by fence::before_thread_sync

    def release(self, thread):
        if thread.tc_since_sync:
            self.tc |= thread.tc_since_sync
            if thread.tc_unfenced is not None and self.unfenced is None:
                self.unfenced = thread.tc_unfenced
        self.vc = thread.release(self.vc)

    def release_async(self, vc, tcgen05=False, smem=False):
        """An arrival by asynchronous work (a TMA's complete_tx, with ``smem``; a commit, with ``tcgen05``:
        fenced by definition)."""
        self.vc = join(self.vc, vc)
        if tcgen05:
            self.tc |= TC_WRITE
        if smem:
            self.tc |= TC_SMEM

    def acquire(self, thread, name):
        thread.acquire(self.vc, name, self.tc, self.unfenced)


def first_unordered(who, ep, vc, skip=None):
    """The index of the first shadow record (``who``: a slot or < 0 for none, ``ep``: its epoch) that
    clock ``vc`` does not know, i.e. an access not ordered before the one checking; None if all are.
    ``skip``: a slot whose records are never a conflict (the accessor's own)."""
    bad = (who >= 0) & (ep > vc[np.maximum(who, 0)])
    if skip is not None:
        bad &= who != skip
    if not bad.any():
        return None
    i = np.flatnonzero(bad)[0]
    return int(i) if bad.ndim == 1 else tuple(int(x) for x in np.unravel_index(i, bad.shape))
