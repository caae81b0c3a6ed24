"""The PTX ISA's rules for tensor memory that a run's order would otherwise hide, checked where the
tcgen05 twins execute (gemm_kernels/ptx/tcgen05.py calls these):

* a ``tcgen05.ld``'s registers are unusable until ``tcgen05.wait::ld``: the twin returns
  ``LoadedRegisters`` that raise ``TmemHazard`` on a read before the wait;
* a ``tcgen05.ld`` of never-written cells is an ``UninitializedRead``; a ``tcgen05.ld`` not ordered
  after the MMA that wrote its columns is a ``TmemHazard`` (happens-before, any completion order);
* ``tcgen05.dealloc`` must be ordered after every MMA and tcgen05.ld of its columns, with no load
  outstanding (``TmemLifecycleError``);
* the tcgen05 fences: EmuThread.tcgen05_op (machine.py) checks them for each operation.
"""
from __future__ import annotations

import numpy as np

from .errors import MemoryFault, TmemHazard, TmemLifecycleError, UninitializedRead
from .hb import first_unordered
from .source import here, text


class PendingLoad:
    """One warp's tcgen05.ld: outstanding until its tcgen05.wait::ld."""

    __slots__ = ("col0", "col1", "lane0", "lane1", "site", "waited")

    def __init__(self, lane0, col0, ncols, site):
        self.lane0, self.lane1, self.col0, self.col1, self.site = lane0, lane0 + 32, col0, col0 + ncols, site
        self.waited = False

    def __iter__(self):  # (lane0, lane1, col0, col1) for the overlap checks
        return iter((self.lane0, self.lane1, self.col0, self.col1))


class LoadedRegisters(tuple):
    """A lane's registers from a tcgen05.ld: reading one before tcgen05.wait::ld is a TmemHazard."""

    def __new__(cls, values, load, thread):
        obj = super().__new__(cls, values)
        obj._load = load
        obj._thread = thread
        return obj

    def _check(self):
        if not self._load.waited:
            ld = self._load
            raise TmemHazard(
                f"{self._thread} used a register of the tcgen05.ld of TMEM columns {ld.col0}..{ld.col1 - 1} (at "
                f"{text(ld.site)}) at {here()}, before tcgen05.wait::ld: the load is asynchronous and the register "
                f"may not hold the value yet. Execute ptx.tmem_wait_ld() between the load and the first use.")

    def __getitem__(self, i):
        if not self._load.waited:
            self._check()
        return tuple.__getitem__(self, i)

    def __iter__(self):
        self._check()
        return tuple.__iter__(self)


def check_allocated(who, cta, col0, ncols, what, sid):
    """The columns are allocated; columns freed earlier name the dealloc (a lifetime bug, whatever
    order the run took: had the access come first, the dealloc would have been reported)."""
    for col in range(col0 - col0 % 32, col0 + ncols, 32):
        if col >= 512 or cta.tmem.owner[col // 32] is None:
            freed = cta.tmem.freed_by.get(col // 32) if col < 512 else None
            if freed is not None:
                fwarp, fsid = freed
                raise TmemLifecycleError(
                    f"{who}: {what} of TMEM column {col} of CTA {cta.rank_text()} at {text(sid)}, which {fwarp} "
                    f"already freed at {text(fsid)}: the dealloc is not ordered after this access. Free the columns "
                    f"only after a barrier that every user of them reaches.")
            raise MemoryFault(f"{who}: {what} of TMEM column {col} of CTA {cta.rank_text()} at {text(sid)}, which is "
                              f"not allocated")


def check_ld(warp, cta, lane0, col0, ncols, sid):
    """At a tcgen05.ld (once per warp): the cells were written, by an MMA ordered before the load."""
    cols = slice(col0, col0 + ncols)
    written = cta.tmem.written[lane0:lane0 + 32, cols]
    if not written.all():
        lane, col = (int(x[0]) for x in np.nonzero(~written))
        raise UninitializedRead(
            f"{warp} executed tcgen05.ld of TMEM lanes {lane0}..{lane0 + 31}, columns {col0}..{col0 + ncols - 1} at "
            f"{text(sid)}, but lane {lane0 + lane}, column {col0 + col} of CTA {cta.rank_text()} was never written: "
            f"fresh TMEM holds garbage. Did the MMAs write these columns (and the first one overwrite)?")
    tm = cta.tmem
    who = tm.mma_who[cols]
    c = first_unordered(who, tm.mma_ep[cols], warp.clock.vc)
    if c is not None:
        raise TmemHazard(
            f"{warp} executed tcgen05.ld of TMEM columns {col0}..{col0 + ncols - 1} at {text(sid)}, but the MMA that "
            f"writes column {col0 + c} (issued at {text(int(tm.mma_site[col0 + c]))} by "
            f"{cta.cluster.slot_text(int(who[c]))}) is not ordered before it: wait on the barrier its tcgen05.commit "
            f"signals (then tcgen05.fence::after_thread_sync) before the load.")
    q = lane0 // 32
    tm.ld_who[q, cols] = warp.clock.slot
    tm.ld_ep[q, cols] = warp.clock.epoch
    tm.ld_site[q, cols] = sid


def check_dealloc(warp, cta, col, ncols, sid, pair=False):
    """At a tcgen05.dealloc (once per warp): nothing may still use the columns. With ``pair``
    (cta_group::2) the allocation belongs to the CTA pair: the peer CTA's accesses to its half must be
    ordered before it too (a cluster barrier before the dealloc does that)."""
    if pair:
        peer = cta.cluster.ctas[cta.rank ^ 1]
        _check_dealloc_order(warp, peer, col, ncols, sid)
    for w in cta.warps:
        for ld in w.outstanding_ld:
            if ld.col0 < col + ncols and col < ld.col1:
                raise TmemLifecycleError(
                    f"{warp} freed TMEM columns {col}..{col + ncols - 1} of CTA {cta.rank_text()} at {text(sid)} while "
                    f"{w}'s tcgen05.ld of columns {ld.col0}..{ld.col1 - 1} (at {text(ld.site)}) is outstanding "
                    f"(no tcgen05.wait::ld yet).")
    _check_dealloc_order(warp, cta, col, ncols, sid)
    for u in range(col // 32, (col + ncols) // 32):
        cta.tmem.freed_by[u] = (warp, sid)


def _check_dealloc_order(warp, cta, col, ncols, sid):
    """Every MMA and tcgen05.ld of the columns in ``cta``'s TMEM is ordered before this dealloc."""
    tm = cta.tmem
    cols = slice(col, col + ncols)
    vc = warp.clock.vc
    checks = [(tm.mma_who[cols], tm.mma_ep[cols], tm.mma_site[cols], "the MMA")]
    for q in range(4):
        checks.append((tm.ld_who[q, cols], tm.ld_ep[q, cols], tm.ld_site[q, cols], "the tcgen05.ld"))
    for who, ep, site, what in checks:
        c = first_unordered(who, ep, vc)
        if c is not None:
            raise TmemLifecycleError(
                f"{warp} freed TMEM columns {col}..{col + ncols - 1} of CTA {cta.rank_text()} at {text(sid)}, but "
                f"{what} of column {col + c} by {cta.cluster.slot_text(int(who[c]))} at {text(int(site[c]))} is not "
                f"ordered before the dealloc: it may still be running. Free the columns only after a barrier that "
                f"every reader (after tcgen05.wait::ld and fence::before_thread_sync) and the last commit's "
                f"waiter reach (for a CTA pair: a cluster barrier, so the peer is done too).")
