"""Threads, warps, CTAs and clusters of one emulated launch, and the synchronisation they share:
mbarriers, named barriers, warp collectives and the cluster barrier."""
from __future__ import annotations

import numpy as np

from ..trace import Event
from . import costmodel, drain
from .context import current_thread
from .errors import (
    DivergentCollective,
    EmulatorError,
    MemoryFault,
    MissingTcgen05Fence,
    MissingWarpSync,
    NamedBarrierMismatch,
    PeerNotRunning,
    TmemHazard,
    TmemLifecycleError,
)
from .hb import TC_READ, TC_WRITE, Clocks, SyncPoint, WarpClock, tc_conflict
from .mbarrier import MBarrier
from .memory import OFFSET_MASK, RANK_SHIFT, SharedMemory, Tmem
from .relaxed import settle as settle_relaxed
from .report import ranges as _ranges
from .scheduler import Waitable
from .source import here, loop_exit, site, text


class EmuThread:
    def __init__(self, cta, tid):
        self.cta = cta
        self.tid = tid
        self.warp = cta.warps[tid // 32]
        self.lane = tid % 32
        self.clock = 0.0  # cycles
        self.exited = False
        self.blocked_on = None
        self.greenlet = None
        self.scheduler = None
        self.static_allocs = 0
        self.key = (cta.cluster.index, cta.rank, tid)
        self.bulk_groups = []  # committed TMA-store groups (lists of ops)
        self.open_group = []  # TMA stores not yet committed
        self.unretired_mma = []  # tcgen05 ops since the last commit by this thread
        self.last_mma = None  # MMAs of one thread execute in issue order
        self.bulk_waitable = Waitable(cta.launch.scheduler)
        self.global_start = None  # start of a run of ordinary global loads/stores not yet traced
        self.tc_unfenced = None  # site of a tcgen05 op not yet followed by fence::before_thread_sync
        self.tc_since_sync = 0  # kinds of tcgen05 work (hb.TC_READ/TC_WRITE) since this thread's last release
        self.tc_after = None  # (sync, site, kinds) acquired with tcgen05 work behind it, not yet fenced after
        self.tc_before_src = None  # (op text, sync) of unfenced tcgen05 work that reached this thread
        self.pending_stores = []  # TMA stores not yet covered by a cp.async.bulk.wait_group.read
        self.collectives_seen = 0  # the number of the warp collective this thread passed last
        self.elected_at = -1  # the number of the last elect.sync this thread won (collectives_seen then)
        self.try_wait_episode = None  # (barrier, phase) of this thread's latest try_wait that timed out
        self.try_wait_timeouts = 0
        self.unfenced = []  # (lo, hi) of this CTA's shared memory this thread stored to since its last proxy fence
        self.passed_early = None  # (barrier, parity, phase, site) of a wait that passed on a consumed phase (cause.py)

    @property
    def launch(self):
        return self.cta.launch

    def __str__(self):
        return f"thread {self.tid} (warp {self.warp.index}, lane {self.lane}) of CTA {self.cta.rank_text()}"

    def advance(self, cycles=costmodel.ISSUE_CYCLES):
        self.clock += cycles

    def warp_role(self):
        role = self.warp.role or f"warp {self.warp.index}"
        return f"CTA {self.cta.linear} {role}" if self.launch.multi_cta else role

    def on_exit(self):
        self.warp.lane_exited(self)
        if self.pending_stores:
            op = self.pending_stores[0]
            end = loop_exit(op.site)  # where the missing wait belongs: after the loop that issues the stores
            raise MemoryFault(
                f"{self} exited while {op.description} (at {text(op.site)}) may still read its shared-memory "
                f"source: the CTA's shared memory is released at exit. Execute cp.async.bulk.wait_group.read 0 "
                f"(bulk_wait_group_read0) after the last commit_group, before the thread ends"
                + (f" (at {end}, after the loop that stores)." if end else "."))
        if self.warp.outstanding_ld and all(t.exited for t in self.warp.threads):
            ld = self.warp.outstanding_ld[0]
            raise TmemHazard(f"{self.warp} ended with the tcgen05.ld of TMEM columns {ld.col0}..{ld.col1 - 1} at "
                             f"{text(ld.site)} "
                             f"never waited on: add tcgen05.wait::ld (tmem_wait_ld) before using or discarding "
                             f"the registers.")
        self.cta.thread_exited(self)
        self.cta.cluster.thread_exited()

    # -- happens-before: a release joins this warp's clock into a synchronisation object ----------
    def release(self, into):
        """Join this warp's clock into ``into`` (a SyncPoint does this); the tcgen05 work so far is
        now behind a synchronisation."""
        self.tc_since_sync = 0
        return self.warp.clock.release(into)

    def acquire(self, vc, sync=None, carries_tc=0, unfenced=None, at=None):
        """Acquire ``vc``; ``sync()`` names the synchronisation for tcgen05-fence reports, ``carries_tc``
        the kinds of tcgen05 work behind it, ``unfenced`` such work without fence::before_thread_sync;
        ``at``: the site of the synchronisation (default: the running kernel line)."""
        self.warp.clock.acquire(vc)
        if carries_tc:
            prev = self.tc_after
            name = sync()
            self.tc_after = (name, site(2) if at is None else at, carries_tc | (prev[2] if prev else 0))
            if carries_tc & (TC_READ | TC_WRITE):
                # the latest synchronisation decides (an earlier unfenced one may since be covered by a fenced one)
                self.tc_before_src = (unfenced, name) if unfenced is not None else None

    def tcgen05_op(self, what, sid, kind):
        """A tcgen05 operation (kind: hb.TC_READ for tcgen05.ld, TC_WRITE for MMA / tcgen05.st, TC_DEALLOC
        for tcgen05.dealloc): check the fence rules against the synchronisations that ordered it; remember it for
        the next release."""
        if self.tc_after is not None and tc_conflict(kind, self.tc_after[2]):
            sync, wsid, behind = self.tc_after
            work = ("other threads' tcgen05 work" if behind & (TC_READ | TC_WRITE) else
                    "the TMA loads whose bytes completed its phase (the shared memory the MMA reads)")
            raise MissingTcgen05Fence(
                f"{self} executed {what} at {text(sid)} after {sync} at {text(wsid)}, which orders it after {work}, "
                f"without tcgen05.fence::after_thread_sync in between: by the PTX ISA an asynchronous tcgen05 "
                f"operation is ordered after a thread synchronisation only through that fence, so the tensor core "
                f"may execute it before that work. Add ptx.tcgen05_fence_after() right after the synchronisation.")
        if self.tc_before_src is not None and tc_conflict(kind, self.tc_before_src[0][2]):
            (src_thread, src_sid, _), sync = self.tc_before_src
            raise MissingTcgen05Fence(
                f"{self} executed {what} at {text(sid)}, ordered by {sync} after the tcgen05 work of {src_thread} at "
                f"{text(src_sid)}; but {src_thread} reached that synchronisation without "
                f"tcgen05.fence::before_thread_sync after its tcgen05 operation, so the synchronisation does not "
                f"order it. Add ptx.tcgen05_fence_before() before the arrive / barrier.")
        work = kind & (TC_READ | TC_WRITE)  # (TC_DEALLOC: none)
        if work:
            self.tc_unfenced = (str(self), sid, work)
            self.tc_since_sync |= work
            self.warp.tc_lanes[self.lane] = (what, sid, self.collectives_seen)

    def unordered_lanes(self):
        """At an mbarrier arrive by this thread, right after an elect.sync it won (an arrive for the warp):
        the other lanes of its warp whose tcgen05 work since their last warp-wide synchronisation
        (bar.warp.sync, a CTA or cluster barrier) is not ordered before this arrive (elect.sync orders no
        memory). Returns (lanes, (op, site) of the first) or None."""
        if self.elected_at != self.collectives_seen:
            return None  # not right after an elect.sync it won: an arrive of its own, not for the warp
        # work a lane issued after it passed this elect.sync follows the arrive in program order (the lane
        # ran ahead): no warp barrier could order it before the arrive; an arrive too early in the program
        # shows as the hazard it lets through
        tc = self.warp.tc_lanes
        others = [lane for lane, (_, _, seen) in tc.items() if lane != self.lane and seen < self.elected_at]
        return (frozenset(others), tc[others[0]][:2]) if others else None

    def lanes_not_ordered(self, bar, sid, lanes, first):
        what, op_sid = first
        raise MissingWarpSync(
            f"{self} arrived on mbarrier {bar.name} [CTA {bar.cta.rank_text()}] at {text(sid)} for its warp, but "
            f"lanes {_ranges(lanes)} of the warp issued tcgen05 work ({what} at {text(op_sid)}) that nothing orders "
            f"before this arrive, and did not arrive themselves: elect.sync picks a lane but orders no memory, so "
            f"whoever waits on the barrier is not ordered after the other lanes' work (their tcgen05.wait::ld). "
            f"Put cuda.syncwarp() (bar.warp.sync) after tcgen05.fence::before_thread_sync, before the elect.")

    def require_peer_running(self, peer, what, sid=None):
        """``what`` touches ``peer`` (another CTA of the cluster): something must have shown this thread
        that the peer runs. Shown means happens-after an operation of one of the peer's warps (its
        clock knows an epoch of a peer warp): a cluster barrier's wait, or a wait on a phase the peer
        arrived on. Known peers are remembered per warp (clocks only grow)."""
        warp = self.warp
        if peer.rank in warp.peers_seen:
            return
        cluster = self.cta.cluster
        w0 = peer.rank * cluster.warps_per_cta
        if warp.clock.vc[w0:w0 + cluster.warps_per_cta].any():
            warp.peers_seen.add(peer.rank)
            return
        where = text(sid) if sid is not None else here()
        raise PeerNotRunning(
            f"{what} by {self} at {where} touches the shared memory or barriers of the peer CTA "
            f"{peer.rank_text()} before anything has shown this thread that the peer is "
            f"running: no cluster barrier (arrive + wait) and no wait on an arrival from it comes before. "
            f"The CTAs of a cluster need not start together, and the PTX ISA leaves it to the kernel to "
            f"make sure the peer runs before its shared memory is touched; on a B200 this can hang at "
            f"start-up. Put ptx.cluster_arrive(); ptx.cluster_wait() before it (after the mbarrier inits "
            f"and fence_mbarrier_init).")

    def bulk_waited(self, ops):
        """cp.async.bulk.wait_group.read returned for ``ops``: their reads are done, and this warp
        knows it (the bulk slot of its clock)."""
        if ops:
            clock = self.warp.clock
            clock.vc[clock.bslot] = max(int(clock.vc[clock.bslot]), max(int(op.vc[op.slot]) for op in ops))
            done = set(map(id, ops))
            self.pending_stores = [op for op in self.pending_stores if id(op) not in done]

    def tcgen05_fence(self, before):
        """tcgen05.fence::before_thread_sync (before=True) or ::after_thread_sync."""
        if before:
            self.tc_unfenced = None
        else:
            settle_relaxed(self.warp.clock)  # the ISA's form after a relaxed wait (relaxed.py)
            self.tc_after = None
        self.advance()

    def flush_global(self):
        """Trace the ordinary global loads/stores since the last traced operation (lane 0 speaks
        for its warp)."""
        if self.global_start is not None:
            start, self.global_start = self.global_start, None
            if self.lane == 0 and self.launch.trace is not None:
                self.launch.trace.add(lane=self.warp_role(), op="ld/st global", start=costmodel.of(self).cycles_to_ns(start),
                                      end=costmodel.of(self).cycles_to_ns(self.clock), cta=self.cta.linear,
                                      warp=self.warp.index)

    def event(self, lane, op, start, end, **kw):
        self.flush_global()
        tr = self.launch.trace
        if tr is not None:
            tr.add(lane=lane, op=op, start=costmodel.of(self).cycles_to_ns(start), end=costmodel.of(self).cycles_to_ns(end),
                   cta=self.cta.linear, warp=self.warp.index, **kw)


class _Collective:
    def __init__(self, op, members):
        self.op = op
        self.members = members  # lane set expected
        self.args = {}
        self.result = None
        self.done = False
        self.clock = 0.0
        self.number = 0  # the warp's count of completed collectives, this one included


class Warp(Waitable):
    def __init__(self, cta, index):
        super().__init__(cta.launch.scheduler)
        self.cta = cta
        self.index = index
        self.pending = None
        self.role = None
        self.outstanding_ld = []  # tmem_rules.PendingLoad of tcgen05.ld not yet waited on
        self.clock = WarpClock(cta.cluster.clocks, cta.rank * cta.cluster.warps_per_cta + index)
        self._lanes = {}  # member mask -> frozenset of the lanes it names that exist
        self.peers_seen = set()  # ranks of the CTAs this warp knows to be running (require_peer_running)
        self.tc_lanes = {}  # lane -> (op, site, collectives passed) of tcgen05 work since the lane's last synchronisation
        self.collectives = 0  # warp collectives completed so far (elect.sync, syncwarp, ...)

    def __str__(self):
        return f"warp {self.index} of CTA {self.cta.rank_text()}"

    @property
    def threads(self):
        return self.cta.threads[32 * self.index: 32 * self.index + 32]

    def collective(self, thread, op, args, members=0xFFFFFFFF, same=True, action=None):
        """A .sync.aligned warp collective: every lane of ``members`` reaches the same op with the
        same operands (when ``same``); ``action(args_by_lane)`` runs once and returns per-lane results
        (a dict lane -> value) or one value for all."""
        lanes = self._lanes.get(members)
        if lanes is None:  # the member lanes that exist (the last warp of a block may be partial)
            n = len(self.cta.threads) - 32 * self.index
            lanes = self._lanes[members] = frozenset(i for i in range(min(32, n)) if members >> i & 1)
        if thread.lane not in lanes:
            raise DivergentCollective(f"{thread} executed {op} but is not in its member mask 0x{members:08x}")
        c = self.pending
        for nb in self.cta.named.values():
            pend = nb.warp_pending.get(self.index)
            if pend is not None and thread not in pend[0]:
                waiting = _ranges(t.lane for t in pend[0])
                raise DivergentCollective(
                    f"{self}: lanes {waiting} wait at named barrier {nb.ident} while lane {thread.lane} reached {op}: "
                    f"both are .aligned, the whole warp must execute them together (the warp diverged)")
        if c is None:
            threads = self.threads
            for lane in lanes:  # (a lane that exits later, while the others wait, is caught in lane_exited)
                if threads[lane].exited:
                    raise DivergentCollective(f"{self}: {op} needs lane {lane}, which has exited")
            c = self.pending = _Collective(op, lanes)
        elif c.op != op or c.members != lanes:
            waiting = _ranges(c.args)
            raise DivergentCollective(
                f"{self}: lanes {waiting} wait at {c.op} while lane {thread.lane} reached {op}: a "
                f".sync.aligned collective must be executed by all lanes together (the warp diverged)")
        c.args[thread.lane] = args
        c.clock = max(c.clock, thread.clock)
        if len(c.args) == len(c.members):
            if same:
                vals = set(c.args.values())
                if len(vals) > 1:
                    self.pending = None
                    detail = ", ".join(f"lane {lane}: {a}" for lane, a in sorted(c.args.items())[:6])
                    raise DivergentCollective(f"{self}: lanes gave different operands to {op} ({detail}); "
                                              f"a .sync.aligned op needs warp-uniform operands")
            c.result = action(c.args) if action else None
            c.done = True
            self.collectives += 1
            c.number = self.collectives
            self.pending = None
            self.notify()
        else:
            self.scheduler.block(self, lambda: c.done, lambda: f"at warp collective {op} "
                                 f"(lanes {_ranges(c.args)} arrived, lanes {_ranges(c.members - set(c.args))} did not)")
        thread.clock = max(thread.clock, c.clock)
        thread.collectives_seen = c.number
        if isinstance(c.result, dict):
            return c.result.get(thread.lane)
        return c.result

    def lanes_synced(self, lanes):
        """bar.warp.sync completed for ``lanes``: it orders each member lane's earlier work before every
        member's later work, so their tcgen05 work is ordered before an arrive one of them makes for the
        warp."""
        if self.tc_lanes:
            for lane in lanes:
                self.tc_lanes.pop(lane, None)

    def lane_exited(self, thread):
        for nb in self.cta.named.values():  # the warp's other lanes may wait for this one at a bar.sync
            if nb.warp_pending:
                nb._maybe_join(self)
        c = self.pending
        if c is not None and thread.lane in c.members and thread.lane not in c.args:
            raise DivergentCollective(f"{self}: lane {thread.lane} exited while lanes {_ranges(c.args)} wait "
                                      f"at {c.op}")


def trace_sync(thread, op, start, name, threads):
    """Record a CTA or cluster barrier operation of ``thread``'s warp (lane 0 speaks for it) in the
    trace's ``syncs`` (not its events: the timelines draw what they drew before)."""
    tr = thread.launch.trace
    if tr is not None and thread.lane == 0:
        tr.syncs.append(Event(lane=thread.warp_role(), op=op, start=costmodel.cycles_to_ns(start),
                              end=costmodel.cycles_to_ns(thread.clock), cta=thread.cta.linear,
                              warp=thread.warp.index, detail=name, extra={"threads": int(threads)}))


class NamedBarrier(Waitable):
    def __init__(self, cta, ident):
        super().__init__(cta.launch.scheduler)
        self.cta = cta
        self.ident = ident
        self.count = None
        self.arrived = []
        self.generation = 0
        self.clock = 0.0
        self.warps_seen = None
        self.count_site = 0  # the kernel line whose bar.sync set this generation's count
        self.warp_pending = {}  # warp index -> (lanes arrived so far, [generation the warp joined])
        self.sp = SyncPoint()  # the current generation's releases
        self.released = {}  # generation -> its SyncPoint (the last few)

    def arrive(self, thread, count, wait):
        thread.flush_global()
        if count % 32 or count <= 0:
            raise NamedBarrierMismatch(f"bar {self.ident}: thread count {count} must be a positive multiple of 32")
        if self.count is None:
            self.count = count
            self.count_site = site(1)
        elif self.count != count:
            self._count_mismatch(thread, count)
        w = thread.warp
        c = w.pending
        pend = self.warp_pending.get(w.index)
        passed = {t.lane for t in pend[0]} if pend else set()
        if c is not None and thread.lane in c.members and thread.lane not in c.args and not set(c.args) <= passed:
            # (lanes that passed this bar.arrive and ran ahead into the collective are not divergent)
            raise DivergentCollective(
                f"{w}: lane {thread.lane} reached bar {self.ident} while lanes {_ranges(c.args)} wait at {c.op}: "
                f"bar.sync/bar.arrive and {c.op} are .aligned, every lane of the warp must execute them together")
        # bar.sync / bar.arrive are .aligned: the hardware counts a warp's arrival once, for all its lanes
        # together (as if all were active), so a generation always joins whole warps.
        if pend is None:
            pend = self.warp_pending[w.index] = ([], [None])  # lanes arrived, generation the warp joined
        lanes, joined = pend
        lanes.append(thread)
        self.clock = max(self.clock, thread.clock)
        settle_relaxed(thread.warp.clock)  # bar.sync orders what a relaxed wait observed (relaxed.py)
        self.sp.release(thread)
        self._maybe_join(w)
        start = thread.clock
        if wait:
            self.cta.launch.scheduler.block(
                self, lambda: joined[0] is not None and self.generation > joined[0],
                lambda: f"at named barrier {self.ident} ({len(self.arrived)} of {self.count} threads arrived"
                        + ("" if joined[0] is not None else
                           f"; lanes {_ranges(t.lane for t in lanes)} of warp {w.index} arrived, the others not yet")
                        + ")")
            thread.clock = max(thread.clock, self.release_clock)
            self.released[joined[0]].acquire(thread, lambda: f"bar.sync {self.ident}")
        trace_sync(thread, "bar.sync" if wait else "bar.arrive", start, f"named barrier {self.ident}", count)

    def _count_mismatch(self, thread, count):
        """Two thread counts in one generation: name both lines, and say which count is wrong where the
        barrier's earlier generations show how many threads meet there."""
        here_text, there = text(site(2)), text(self.count_site)
        head = (f"named barrier {self.ident} of CTA {self.cta.rank_text()}: {thread} uses thread count {count} at "
                f"{here_text}, while this generation began with count {self.count} at {there} ({len(self.arrived)} "
                f"threads already joined)")
        group = 32 * len(self.warps_seen) if self.warps_seen else None
        if group in (count, self.count):
            wrong, at = (count, here_text) if group != count else (self.count, there)
            raise NamedBarrierMismatch(
                f"{head}. Its earlier generations joined {group} threads (warps {_ranges(self.warps_seen)}): the "
                f"count {wrong} at {at} is wrong. Every bar.sync of a group names the number of threads that meet "
                f"there ({group}).")
        raise NamedBarrierMismatch(
            f"{head}. Either one of these counts is wrong (every bar.sync of a group names the number of threads "
            f"that meet there), or two groups of threads share this barrier ID: then give each group its own ID.")

    def _maybe_join(self, w):
        pend = self.warp_pending.get(w.index)
        if pend is None:
            return
        lanes, joined = pend
        if len(lanes) < sum(1 for t in w.threads if not t.exited):
            return
        del self.warp_pending[w.index]
        joined[0] = self.generation
        self.arrived.extend(lanes)
        if self.count is not None and len(self.arrived) >= self.count:
            warps = frozenset(t.warp.index for t in self.arrived)
            if self.warps_seen is not None and warps != self.warps_seen:
                raise NamedBarrierMismatch(
                    f"named barrier {self.ident} of CTA {self.cta.rank_text()} (the generation that began at "
                    f"{text(self.count_site)}) joined warps {_ranges(self.warps_seen)} in one generation and warps "
                    f"{_ranges(warps)} in another: two groups share this barrier ID and release each other. Give "
                    f"each group its own ID.")
            self.warps_seen = warps
            for t in self.arrived:  # bar.sync orders every member's work before every member's later work
                if t.warp.tc_lanes:
                    t.warp.tc_lanes.pop(t.lane, None)
            self.release_clock = self.clock + costmodel.of(self.cta).barrier_latency_cycles
            self.released[self.generation] = self.sp
            self.released.pop(self.generation - 8, None)
            self.sp = SyncPoint()
            self.generation += 1
            self.count = None
            self.arrived = []
            self.clock = 0.0
            self.notify()


class CTA:
    def __init__(self, cluster, rank, block_index, nthreads, dynamic_bytes):
        self.cluster = cluster
        self.launch = cluster.launch
        self.rank = rank  # %cluster_ctarank
        self.block_index = block_index  # (x, y, z) in the grid
        self.linear = block_index[0] + cluster.launch.grid[0] * (block_index[1] + cluster.launch.grid[1] * block_index[2])
        self.smem = SharedMemory(self, dynamic_bytes)
        self.tmem = Tmem(self)
        self.mbarriers = {}
        self.copy_bar = {}  # TMA load destination offset -> {mbarrier: kernel line of the first copy signalling it}
        self.named = {}
        self.warps = [Warp(self, w) for w in range(-(-nthreads // 32))]
        self.threads = [EmuThread(self, t) for t in range(nthreads)]
        self.pending_mma_writes = []  # MMAs not yet executed that write this CTA's TMEM
        self.smem_readers = []  # async ops that will read this CTA's shared memory (MMAs)
        self.smem_writers = []  # async ops that will write it (TMA loads)
        self.tmem_alloc_permit_used = False
        self.live_threads = nthreads
        self.exit_vc = None  # join of the clocks of its threads as they exit
        self.remote = {}  # slot -> (epoch, site, what) of the latest access from outside this CTA

    def thread_exited(self, thread):
        if self.exit_vc is None:
            self.exit_vc = thread.warp.clock.vc.copy()
        else:
            np.maximum(self.exit_vc, thread.warp.clock.vc, out=self.exit_vc)
        self.live_threads -= 1
        if self.live_threads == 0:
            for slot, (ep, sid, what) in self.remote.items():
                if self.exit_vc[slot] < ep:
                    self._exited_fault(slot, sid, what, "is not ordered before the CTA's exit")
            drain.check_exit(self)

    def remote_access(self, thread_or_none, slot, ep, sid, what):
        """An access from outside this CTA (a DSMEM store or load, a remote arrive, an asynchronous
        arrival): it must happen before this CTA exits. Checked here if the CTA is gone, at its exit
        otherwise, so the order the run took does not matter."""
        if self.live_threads == 0:
            self._exited_fault(slot, sid, what, "comes after the CTA exited")
        prev = self.remote.get(slot)
        if prev is None or prev[0] < ep:
            self.remote[slot] = (ep, sid, what)

    def _exited_fault(self, slot, sid, what, how):
        raise MemoryFault(
            f"{what} into CTA {self.rank_text()} by {self.cluster.slot_text(slot)} at {text(sid)} {how}: after a "
            f"CTA exits its shared memory and barriers may belong to another CTA. Keep the CTA alive until its "
            f"peers are done with it (a cluster barrier before exit, or a wait on the barrier they arrive on).")

    def rank_text(self):
        bx, by, bz = self.block_index
        if self.cluster.size > 1:
            return f"({bx},{by},{bz}) [cluster {self.cluster.index} rank {self.rank}]"
        return f"({bx},{by},{bz})"

    # -- shared-memory addresses -----------------------------------------------------------------
    def resolve(self, addr, nbytes=1, what="access"):
        """A shared-window address (possibly with a peer's rank bits) -> (cta, byte offset)."""
        addr = int(addr)
        rank = (addr >> RANK_SHIFT) & 0xFF
        off = addr & OFFSET_MASK
        if rank != self.rank:
            if rank >= self.cluster.size:
                raise MemoryFault(f"{what}: shared address 0x{addr:x} names CTA rank {rank}, but the cluster has "
                                  f"{self.cluster.size} CTA(s)")
            cta = self.cluster.ctas[rank]
            t = current_thread()
            if t is not None and cta is not t.cta:
                t.require_peer_running(cta, what)
        else:
            cta = self
        cta.smem.check(off, nbytes, what)
        return cta, off

    def mbarrier(self, addr, what):
        """The live mbarrier at ``addr`` for an operation of the running thread: it must exist, and its
        initialisation must be published to that thread (by a barrier after the init and its fence)."""
        cta, off = self.resolve(addr, 8, what)
        if off % 8:
            raise MemoryFault(f"{what} at {here()}: mbarrier address 0x{int(addr):x} is not 8-byte aligned")
        bar = cta.mbarriers.get(off)
        if bar is None or not bar.valid:
            raise MemoryFault(f"{what} at {here()}: no initialised mbarrier at shared offset 0x{off:x} "
                              f"({cta.smem.name_of(off)}) of CTA {cta.rank_text()} (mbarrier.init must come first, "
                              f"and be made visible with a fence and barrier)")
        t = current_thread()
        if t is not None:
            if cta is not t.cta:
                t.require_peer_running(cta, what)
            clock = t.warp.clock
            if clock.vcm[bar.init_slot] < bar.init_ep:
                raise MemoryFault(
                    f"{what} by {t} at {here()} uses mbarrier {bar.name} of CTA {cta.rank_text()} before its "
                    f"initialisation by {bar.init_by} was published to it: mbarrier.init, then "
                    f"fence.mbarrier_init (for the async units and the cluster), then a CTA or cluster barrier "
                    f"that every user of the barrier passes, and only then the first use.")
            if cta is not t.cta:
                bar.require_fenced(f"{what} by {t} (from another CTA)")
                cta.remote_access(t, clock.slot, int(clock.epoch), site(1), what)
        return bar

    def fence_mbarrier_init(self, thread):
        for bar in self.mbarriers.values():
            if bar.init_by is thread:
                bar.fenced = True

    def init_mbarrier(self, addr, count, thread):
        cta, off = self.resolve(addr, 8, "mbarrier.init")
        if cta is not self:
            raise MemoryFault(f"mbarrier.init on a peer CTA's address 0x{int(addr):x}: init must be local")
        old = self.mbarriers.get(off)
        if old is not None and old.valid and (old.completed or old.pending != old.expected):
            raise EmulatorError(f"mbarrier.init of live mbarrier {old.name} by {thread}: invalidate it first")
        name = self.smem.name_of(off)
        bar = self.mbarriers[off] = MBarrier(self.launch.scheduler, self, off, int(count), name, thread)
        bar.init_site = site(1)  # (reports name the init line beside the arrivals: a count is set here)
        self.smem.mark_barrier(off, True)

    def named_barrier(self, ident):
        if not 0 <= ident < 16:
            raise NamedBarrierMismatch(f"named barrier ID {ident} is outside 0..15")
        nb = self.named.get(ident)
        if nb is None:
            nb = self.named[ident] = NamedBarrier(self, ident)
        return nb

    def finish_checks(self):
        if self.tmem.allocations:
            cols = ", ".join(f"{c}..{c + n - 1} (by {w})" for c, (n, w) in self.tmem.allocations.items())
            raise TmemLifecycleError(f"CTA {self.rank_text()} exited with TMEM columns still allocated: {cols}. "
                                     f"Every tcgen05.alloc needs a tcgen05.dealloc before the kernel ends.")
        if self.tmem_alloc_permit_used and not self.tmem.relinquished:
            raise TmemLifecycleError(f"CTA {self.rank_text()} allocated TMEM but never executed "
                                     f"tcgen05.relinquish_alloc_permit: a CTA that lands on this SM next "
                                     f"could block in tcgen05.alloc.")


class Cluster(Waitable):
    def __init__(self, launch, index, cta_blocks, nthreads, dynamic_bytes):
        super().__init__(launch.scheduler)
        self.launch = launch
        self.index = index
        self.size = len(cta_blocks)
        self.warps_per_cta = -(-nthreads // 32)
        self.clocks = Clocks(self.size, self.warps_per_cta)
        # per warp slot: its epoch right after its last fence.proxy.async (memory.py: a generic access of an
        # earlier epoch is not fenced against a later async-proxy write of the same bytes)
        self.proxy_fence_ep = np.zeros(self.clocks.nwarps, dtype=np.int32)
        self.ctas = [CTA(self, r, b, nthreads, dynamic_bytes) for r, b in enumerate(cta_blocks)]
        self.bar_sp = SyncPoint()
        self.bar_released = {}
        self.bar_arrived = 0
        self.bar_generation = 0
        self.bar_clock = 0.0
        self.live = self.size * nthreads

    def cluster_arrive(self, thread):
        if getattr(thread, "cluster_arrived_gen", None) == self.bar_generation:
            raise EmulatorError(f"{thread} arrived twice on the cluster barrier without waiting in between")
        thread.cluster_arrived_gen = self.bar_generation
        trace_sync(thread, "cluster.arrive", thread.clock, "cluster barrier", self.live)
        settle_relaxed(thread.warp.clock)
        self.bar_sp.release(thread)
        self.bar_arrived += 1
        self.bar_clock = max(self.bar_clock, thread.clock)
        self._maybe_release()

    def _maybe_release(self):
        if self.bar_arrived and self.bar_arrived >= self.live:
            self.bar_released[self.bar_generation] = self.bar_sp
            self.bar_sp = SyncPoint()
            for cta in self.ctas:
                for w in cta.warps:
                    w.tc_lanes.clear()
            self.bar_generation += 1
            self.bar_arrived = 0
            self.release_clock = self.bar_clock + costmodel.of(self).barrier_latency_cycles
            self.notify()

    def cluster_wait(self, thread):
        gen = getattr(thread, "cluster_arrived_gen", None)
        if gen is None:
            raise EmulatorError(f"{thread} waits on the cluster barrier without arriving first")
        self.launch.scheduler.block(self, lambda: self.bar_generation > gen,
                                    lambda: f"at the cluster barrier ({self.bar_arrived} of {self.live} "
                                            f"threads arrived)")
        thread.cluster_arrived_gen = None
        start = thread.clock
        thread.clock = max(thread.clock, self.release_clock)
        self.bar_released[gen].acquire(thread, lambda: "the cluster barrier (barrier.cluster.wait)")
        trace_sync(thread, "cluster.wait", start, "cluster barrier", self.size * len(self.ctas[0].threads))

    # -- clock slots, for reports --------------------------------------------------------------------
    def is_warp_slot(self, slot):
        return slot < self.clocks.nwarps

    def slot_text(self, slot):
        kind, w = divmod(slot, self.clocks.nwarps)
        cta, warp = divmod(w, self.warps_per_cta)
        where = f"warp {warp} of CTA {self.ctas[cta].rank_text()}"
        return [where, f"the MMAs issued by {where}", f"the TMA loads issued by {where}",
                f"the TMA stores issued by {where}"][kind]

    def thread_exited(self):
        self.live -= 1
        self._maybe_release()
