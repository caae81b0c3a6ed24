"""Threads, warps, CTAs and clusters of one emulated launch, and the synchronisation they share:
mbarriers, named barriers, warp collectives and the cluster barrier."""
from __future__ import annotations

from . import costmodel
from .errors import (DivergentCollective, EmulatorError, MemoryFault, NamedBarrierMismatch,
                     TmemLifecycleError)
from .mbarrier import MBarrier
from .memory import OFFSET_MASK, RANK_SHIFT, SharedMemory, Tmem
from .scheduler import Waitable


def _ranges(ids):
    ids = sorted(ids)
    out, start, prev = [], None, None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)


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
        self.cta.cluster.thread_exited()

    def flush_global(self):
        """Trace the ordinary global loads/stores since the last traced operation (lane 0 speaks
        for its warp)."""
        if self.global_start is not None:
            start, self.global_start = self.global_start, None
            if self.lane == 0 and self.launch.trace is not None:
                self.launch.trace.add(lane=self.warp_role(), op="ld/st global", start=costmodel.cycles_to_ns(start),
                                      end=costmodel.cycles_to_ns(self.clock), cta=self.cta.linear,
                                      warp=self.warp.index)

    def event(self, lane, op, start, end, **kw):
        self.flush_global()
        tr = self.launch.trace
        if tr is not None:
            tr.add(lane=lane, op=op, start=costmodel.cycles_to_ns(start), end=costmodel.cycles_to_ns(end),
                   cta=self.cta.linear, warp=self.warp.index, **kw)


class _Collective:
    def __init__(self, op, members):
        self.op = op
        self.members = members  # lane set expected
        self.args = {}
        self.result = None
        self.done = False
        self.clock = 0.0


class Warp(Waitable):
    def __init__(self, cta, index):
        super().__init__(cta.launch.scheduler)
        self.cta = cta
        self.index = index
        self.pending = None
        self.role = None
        self.outstanding_ld = []  # (lane0, lane1, col0, col1) of tcgen05.ld not yet waited on
        self._lanes = {}  # member mask -> frozenset of the lanes it names that exist

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
            self.pending = None
            self.notify()
        else:
            self.scheduler.block(self, lambda: c.done, lambda: f"at warp collective {op} "
                                 f"(lanes {_ranges(c.args)} arrived, lanes {_ranges(c.members - set(c.args))} did not)")
        thread.clock = max(thread.clock, c.clock)
        if isinstance(c.result, dict):
            return c.result.get(thread.lane)
        return c.result

    def lane_exited(self, thread):
        for nb in self.cta.named.values():  # the warp's other lanes may wait for this one at a bar.sync
            if nb.warp_pending:
                nb._maybe_join(self)
        c = self.pending
        if c is not None and thread.lane in c.members and thread.lane not in c.args:
            raise DivergentCollective(f"{self}: lane {thread.lane} exited while lanes {_ranges(c.args)} wait "
                                      f"at {c.op}")


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
        self.warp_pending = {}  # warp index -> (lanes arrived so far, [generation the warp joined])

    def arrive(self, thread, count, wait):
        thread.flush_global()
        if count % 32 or count <= 0:
            raise NamedBarrierMismatch(f"bar {self.ident}: thread count {count} must be a positive multiple of 32")
        if self.count is None:
            self.count = count
        elif self.count != count:
            raise NamedBarrierMismatch(
                f"named barrier {self.ident} of CTA {self.cta.rank_text()}: {thread} uses thread count {count} "
                f"while {len(self.arrived)} threads already arrived with count {self.count}; two groups of "
                f"threads share this barrier ID: give each group its own ID")
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
        self._maybe_join(w)
        if wait:
            self.cta.launch.scheduler.block(
                self, lambda: joined[0] is not None and self.generation > joined[0],
                lambda: f"at named barrier {self.ident} ({len(self.arrived)} of {self.count} threads arrived"
                        + ("" if joined[0] is not None else
                           f"; lanes {_ranges(t.lane for t in lanes)} of warp {w.index} arrived, the others not yet")
                        + ")")
            thread.clock = max(thread.clock, self.release_clock)

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
                    f"named barrier {self.ident} of CTA {self.cta.rank_text()} joined warps {_ranges(self.warps_seen)} "
                    f"in one generation and warps {_ranges(warps)} in another: two groups share this barrier ID "
                    f"and release each other. Give each group its own ID.")
            self.warps_seen = warps
            self.release_clock = self.clock + costmodel.BARRIER_LATENCY_CYCLES
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
        self.named = {}
        self.warps = [Warp(self, w) for w in range(-(-nthreads // 32))]
        self.threads = [EmuThread(self, t) for t in range(nthreads)]
        self.pending_mma_writes = []  # MMAs not yet executed that write this CTA's TMEM
        self.smem_readers = []  # async ops that will read this CTA's shared memory (MMAs)
        self.smem_writers = []  # async ops that will write it (TMA loads)
        self.tmem_alloc_permit_used = False

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
        else:
            cta = self
        cta.smem.check(off, nbytes, what)
        return cta, off

    def mbarrier(self, addr, what):
        cta, off = self.resolve(addr, 8, what)
        if off % 8:
            raise MemoryFault(f"{what}: mbarrier address 0x{int(addr):x} is not 8-byte aligned")
        bar = cta.mbarriers.get(off)
        if bar is None or not bar.valid:
            raise MemoryFault(f"{what}: no initialised mbarrier at shared offset 0x{off:x} of CTA {cta.rank_text()} "
                              f"(mbarrier.init must come first, and be made visible with a fence and barrier)")
        return bar

    def init_mbarrier(self, addr, count, thread):
        cta, off = self.resolve(addr, 8, "mbarrier.init")
        if cta is not self:
            raise MemoryFault(f"mbarrier.init on a peer CTA's address 0x{int(addr):x}: init must be local")
        old = self.mbarriers.get(off)
        if old is not None and old.valid and (old.completed or old.pending != old.expected):
            raise EmulatorError(f"mbarrier.init of live mbarrier {old.name} by {thread}: invalidate it first")
        name = self.smem.name_of(off)
        self.mbarriers[off] = MBarrier(self.launch.scheduler, self, off, int(count), name, thread)

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
        self.ctas = [CTA(self, r, b, nthreads, dynamic_bytes) for r, b in enumerate(cta_blocks)]
        self.bar_arrived = 0
        self.bar_generation = 0
        self.bar_clock = 0.0
        self.live = self.size * nthreads

    def cluster_arrive(self, thread):
        if getattr(thread, "cluster_arrived_gen", None) == self.bar_generation:
            raise EmulatorError(f"{thread} arrived twice on the cluster barrier without waiting in between")
        thread.cluster_arrived_gen = self.bar_generation
        self.bar_arrived += 1
        self.bar_clock = max(self.bar_clock, thread.clock)
        self._maybe_release()

    def _maybe_release(self):
        if self.bar_arrived and self.bar_arrived >= self.live:
            self.bar_generation += 1
            self.bar_arrived = 0
            self.release_clock = self.bar_clock + costmodel.BARRIER_LATENCY_CYCLES
            self.notify()

    def cluster_wait(self, thread):
        gen = getattr(thread, "cluster_arrived_gen", None)
        if gen is None:
            raise EmulatorError(f"{thread} waits on the cluster barrier without arriving first")
        self.launch.scheduler.block(self, lambda: self.bar_generation > gen,
                                    lambda: f"at the cluster barrier ({self.bar_arrived} of {self.live} "
                                            f"threads arrived)")
        thread.cluster_arrived_gen = None
        thread.clock = max(thread.clock, self.release_clock)

    def thread_exited(self):
        self.live -= 1
        self._maybe_release()
