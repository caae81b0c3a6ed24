"""The mbarrier, as PTX ISA 9.7.13.15 specifies it.

State: the number of completed phases, pending and expected arrivals, and the transaction count.
A phase completes when its pending arrivals reach zero and its tx-count is zero. A parity wait
succeeds iff the named phase has completed; the hardware can tell only the current phase (not yet
complete) from the one just before it, so a wait with the parity of the current phase blocks and a
wait with the other parity passes at once.

What the emulator adds: it remembers which phase each thread last consumed, so a wait that
passes on a phase the same thread already consumed (a phase bit that was not flipped, or was
reset between persistent tiles) is reported as ``StalePhaseWait`` instead of releasing early.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from . import cause, drain
from . import relaxed as relaxed_rule
from .errors import ArrivalMismatch, ExpectTxMismatch, MemoryFault, StalePhaseWait, WaitScopeMismatch
from .hb import SyncPoint
from .report import ranges as _ranges
from .scheduler import Waitable
from .source import here, site, site_of_frame, text

MAX_COUNT = (1 << 20) - 1
KEEP_PHASES = 8  # completed phases whose synchronisation is kept (a late thread acquires the one it saw)

#: observers of every mbarrier state change, in the order they happen: callables
#: ``fn(barrier, what, cycles, value)`` with ``what`` "init" (value: the arrival count), "arrive" (the
#: count), "expect_tx" or "complete_tx" (bytes), at virtual time ``cycles``. Add one with ``observing``
#: (gemm_kernels.trace_view records the book's barrier timelines so).
OBSERVERS = []


@contextmanager
def observing(fn):
    """Call ``fn`` on every mbarrier state change while the block runs."""
    OBSERVERS.append(fn)
    try:
        yield
    finally:
        OBSERVERS.remove(fn)


def _observe(bar, what, cycles, value):
    for fn in OBSERVERS:
        fn(bar, what, cycles, value)


def _blocked_site(thread):
    f = getattr(thread.greenlet, "gr_frame", None)
    return site_of_frame(f) if f is not None else 0


class MBarrier(Waitable):
    def __init__(self, scheduler, cta, offset, count, name, init_by):
        super().__init__(scheduler)
        if not 1 <= count <= MAX_COUNT:
            raise ArrivalMismatch(f"mbarrier {name}: init count {count} outside [1, 2^20-1]")
        self.cta = cta
        self.offset = offset
        self.name = name
        self.expected = count
        self.pending = count
        self.tx = 0
        self.completed = 0  # number of completed phases; the current phase has parity completed & 1
        self.arrived_by = []  # threads that arrived in the current phase (for deadlock reports)
        self.one_each = False  # the last phase completed with one arrival from each of `expected` threads
        self.arrived_threads = set()  # threads' own arrivals in the current phase (while one_each)
        self.prev_arrivers = []  # the threads (or issuers of async arrivals) that completed the last phase
        self.phase_time = 0.0  # virtual time of the latest arrival / byte in the current phase
        self.completion_time = {}  # phase index -> virtual time it completed
        self.consumed = {}  # thread key -> last phase index that thread's wait consumed
        self.signalled = {}  # thread key -> phase index current when it last arrived/issued work here
        self.signal_site = {}  # thread key -> the kernel line of that arrival or work
        self.init_by = init_by
        self.fenced = False  # fence.mbarrier_init by the initialising thread since the init
        self.valid = True
        self.waits = 0  # successful waits so far (over-arrival check)
        self.meant = {}  # thread key -> the phase its last wait meant, counting its waits in order
        self.copy_dsts = set()  # (CTA, offset) of the buffers TMA loads completing on it wrote
        self.wait_sites = {}  # thread key -> (thread, the kernel line of its first successful wait here)
        self.warp_meant = {}  # warp clock slot -> (collective, phase meant by its lanes' first wait after it)
        self.last_completer = None  # (warp, lane, phase, waits) of the arrival that completed the last phase
        self.sp = SyncPoint()  # the current phase's releases (happens-before)
        self.done_sp = {}  # phase index -> its SyncPoint (the last few)
        self.init_slot = init_by.warp.clock.slot  # the init is published to whoever knows this epoch
        self.init_ep = int(init_by.warp.clock.epoch)
        self.expect_sites = []  # (thread, site, nbytes) of this phase's expect_tx announcements
        self.remote = None  # (thread, site) of the current phase's first arrival by a thread of another CTA
        self.unordered = []  # (thread, site, lanes, first op) of arrives not ordered after lanes' tcgen05 work
        self.done_remote = {}  # phase index -> that, for the last few completed phases
        self.history = []  # the arrivals (threads, or issuers of async work) of the last few phases
        self.carries_data = False  # copies complete bytes on it (expect_tx): a 'full' barrier (cause.py)
        self.announced = {}  # thread key -> the phase of its latest expect_tx (copy_after_its_phase)
        self.init_site = 0  # the kernel line of the mbarrier.init (set by the CTA, for reports)
        # the exit rule (drain.py): the latest asynchronous arrival, and who waited past it
        self.async_phase = -1  # the phase it landed in
        self.async_op = None  # the commit or TMA load that made it
        self.acks = {}  # warp slot -> the warp's epoch at its first wait on phase >= async_phase
        if OBSERVERS:
            _observe(self, "init", init_by.clock, count)

    def require_fenced(self, user):
        """The asynchronous units and the other CTAs of the cluster see an mbarrier's initialisation
        only after fence.mbarrier_init (PTX ISA: mbarrier.init is a generic-proxy write)."""
        if not self.fenced:
            raise MemoryFault(
                f"{user} at {here()} uses mbarrier {self.name} of CTA {self.cta.rank_text()}, but {self.init_by} "
                f"initialised it without fence.mbarrier_init afterwards: the TMA unit, the tensor core and the "
                f"other CTAs of the cluster may see the barrier's bytes before the init. Execute "
                f"ptx.fence_mbarrier_init() after the mbarrier.init calls, before the barrier that publishes them.")

    # -- state changes -----------------------------------------------------------------------
    def signal_from(self, thread):
        """``thread`` issued an arrival or asynchronous work that will complete on this barrier (at the
        kernel line a deadlock report names, when that thread was expected to signal another barrier)."""

        self.signalled[thread.key] = self.completed
        self.signal_site[thread.key] = site(1)

    def arrive(self, thread, count=1, at=0.0, async_vc=None, tcgen05=False, op=None):
        """An arrival by ``thread`` (or, with ``async_vc``, by the asynchronous work ``op`` it issued)."""
        if OBSERVERS:
            _observe(self, "arrive", at, count)
        if async_vc is None:
            if thread.warp.tc_lanes:
                unordered = thread.unordered_lanes()
                if unordered is not None:
                    self.unordered.append((thread, site(2), *unordered))
            self.sp.release(thread)
            if self.one_each:
                self._check_second_arrival(thread, count)
            if self.remote is None and thread.cta is not self.cta:
                self.remote = (thread, site(2))
        else:
            self.sp.release_async(async_vc, tcgen05)
            self._async_arrival(op)
            if self.remote is None and thread is not None and thread.cta is not self.cta:
                # a tcgen05.commit multicast by the other CTA of a pair: its arrive is the other CTA's too
                self.remote = (f"the tcgen05.commit issued by {thread}", op.site)
        self.pending -= count
        if self.pending < 0:
            where = op.description if async_vc is not None and op is not None else f"{thread} at {here()}"
            raise ArrivalMismatch(
                f"mbarrier {self.name} [CTA {self.cta.rank_text()}] (phase {self.completed}): "
                f"{self.expected - self.pending} arrivals for its count of {self.expected}, set at "
                f"{text(self.init_site)}; the last by {where}. Initialise it with the number of arrivals each "
                f"phase gets, or let fewer threads arrive.")
        self.arrived_by.append(thread)
        self.phase_time = max(self.phase_time, at)
        if self.pending == 0 and self.tx == 0:
            self._check_over_arrival(thread)
        self._maybe_complete()

    def _check_second_arrival(self, thread, count):
        """A thread's second arrival in one phase, on a barrier whose last phase was completed by one
        arrival from each of ``expected`` different threads. The rule: (1) the count is above 1 (with a
        count of 1 every arrival completes its phase); (2) the barrier's history shows the pattern "one
        arrival per thread per phase": its last completed phase got exactly ``expected`` arrivals, of count
        1, from ``expected`` different threads; (3) this thread already arrived, itself (not through a
        commit or copy it issued), in the current phase. The hardware counts arrivals, not threads, so the
        second arrival stands in for a thread that has not arrived: the phase completes before that thread
        is done, and one arrival is left over for the next phase (an H200 failed the launch on an
        over-arrival, tests/hopper/h200_sanitizer_cases.json). A kernel whose set of arriving threads
        legitimately changes from phase to phase would break (2); none of the chapters or the bug
        catalogue's corrected kernels does. Not covered: the first phase (no history yet)."""
        if count != 1:
            return
        if thread in self.arrived_threads:
            raise ArrivalMismatch(
                f"{thread} arrived on mbarrier {self.name} [CTA {self.cta.rank_text()}] a second time in phase "
                f"{self.completed} at {here()}; its last phase was completed by one arrival from each of "
                f"{self.expected} threads. The barrier counts arrivals, not threads: this one stands in for a "
                f"thread that has not arrived, so the phase completes early (and on an H200 an over-arrival "
                f"failed the launch). Likely cause: a wait missing between this thread's two arrivals (it ran "
                f"ahead into the next phase's work without waiting for the barrier that releases it); otherwise "
                f"the arrive is executed twice per phase.")
        self.arrived_threads.add(thread)

    def _check_over_arrival(self, thread):
        """Arrivals beyond the count: the PTX ISA leaves them undefined. On an H200 a whole warp arriving
        on a barrier initialised for one arrival failed the launch in 3 of 3 runs (CUDA_ERROR_LAUNCH_FAILED,
        tests/hopper/h200_sanitizer_cases.json), so the emulator stops at the first sign: two lanes of one warp completing
        two phases back to back with no successful wait on this barrier in between."""
        prev = self.last_completer
        if (prev is not None and prev[0] is thread.warp
                and prev[2] == self.completed - 1 and prev[3] == self.waits):
            if prev[1] != thread.lane:
                raise ArrivalMismatch(
                    f"mbarrier {self.name} [CTA {self.cta.rank_text()}] expects {self.expected} arrival(s) per "
                    f"phase, but lane {prev[1]} and lane {thread.lane} of {thread.warp} completed phases "
                    f"{self.completed - 1} and {self.completed} back to back at {here()}, with no wait on it in "
                    f"between: more threads arrive than the count it was initialised with (the whole warp "
                    f"executed mbarrier.arrive?). On an H200 this failed the launch. Initialise it with the number "
                    f"of arriving threads, or let one elected lane arrive; if the arrivals are meant for "
                    f"successive phases, a wait for phase {self.completed - 1} is missing between them.")
        self.last_completer = (thread.warp, thread.lane, self.completed, self.waits)

    def expect_tx(self, nbytes, at=0.0, thread=None, site=0):
        if OBSERVERS:
            _observe(self, "expect_tx", at, nbytes)
        self.tx += nbytes
        self.carries_data = True
        self.phase_time = max(self.phase_time, at)
        if thread is not None:
            self.expect_sites.append((thread, site, nbytes))
            self.announced[thread.key] = self.completed

    def _async_arrival(self, op):
        """``op``'s arrival lands in the current phase: from now on only a wait on this phase or a later
        one orders it before an exit (drain.py)."""
        drain.check_arrival(self, op)
        self.async_phase = self.completed
        self.async_op = op
        if self.acks:
            self.acks = {}

    def complete_tx(self, nbytes, source, at=0.0, vc=None, op=None):
        if OBSERVERS:
            _observe(self, "complete_tx", at, nbytes)
        phase = getattr(op, "phase", None)
        if phase is not None and phase < self.completed:
            self._landed_late(op)
        self.tx -= nbytes
        self.phase_time = max(self.phase_time, at)
        self.sp.release_async(vc, smem=True)
        self._async_arrival(op)
        if self.tx < 0 and self.pending == 0:
            raise ExpectTxMismatch(
                f"mbarrier {self.name} (phase {self.completed}): {source} delivered {nbytes} bytes, but this phase's "
                f"expect_tx announced fewer (announced: {self.announcements()}; {nbytes + self.tx} were still expected). "
                f"The phase may complete before all the data landed, and the extra bytes count against the next "
                f"phase; on an H200 (tests/hopper/h200_sanitizer_cases.json) the phase completed early in 2 of 3 "
                f"runs and never completed in the third, where a wait hangs. Announce every byte the copies "
                f"deliver (or signal each copy on its own stage's barrier).")
        self._maybe_complete()

    def copy_after_its_phase(self, thread, op):
        """``thread`` issues TMA load ``op`` signalling this barrier, having announced bytes only in an earlier
        phase that has completed: that phase completed without this copy's bytes (too few announced), and
        they count against the current one. Raises ExpectTxMismatch."""
        last = self.announced.get(thread.key)
        if last is None or last >= self.completed or any(t is thread for t, _, _ in self.expect_sites):
            return

        sites = getattr(self, "last_expect", []) if last == self.completed - 1 else None
        raise ExpectTxMismatch(
            f"mbarrier {self.name} [CTA {self.cta.rank_text()}] completed phase {last} before {thread} issued "
            f"{op.description} at {here()}, although {thread} announced that phase's bytes "
            f"({self.announcements(sites) if sites is not None else 'its expect_tx'}): the bytes announced are fewer "
            f"than its copies deliver, so this copy counts against phase {self.completed} and whoever waited for "
            f"phase {last} read the buffer before the copy wrote it. Announce every byte that completes on the "
            f"barrier.")

    def _landed_late(self, op):
        """A TMA load issued in phase ``op.phase`` lands after that phase completed: the phase was announced
        fewer bytes than its copies deliver (whatever the order: a copy still in flight at the wait is
        ``completed_early``'s report; one that lands later counts its bytes against the next phase, and
        the wait for its own phase released the reader before the write)."""
        sites = getattr(self, "last_expect", []) if op.phase == self.completed - 1 else None
        raise ExpectTxMismatch(
            f"mbarrier {self.name} [CTA {self.cta.rank_text()}] completed phase {op.phase} before {op.description} "
            f"landed, although that copy completes on it: the bytes announced for the phase "
            f"({self.announcements(sites) if sites is not None else 'see its expect_tx'}) are fewer than its copies "
            f"deliver, so its {op.tmap.box_bytes} bytes count against phase {self.completed} and whoever waited for "
            f"phase {op.phase} read the buffer before the copy wrote it. Announce every byte that completes on the "
            f"barrier.")

    def announcements(self, sites=None):
        """This phase's expect_tx announcements (or those of ``sites``), for reports: "N B by <thread> at
        <line>; ..." or "none"."""

        sites = self.expect_sites if sites is None else sites
        return "; ".join(f"{n} B by {t} at {text(sid)}" for t, sid, n in sites) or "none"

    def completed_early(self, copy):
        """The ExpectTxMismatch report when ``copy`` (a TMA load issued in phase ``copy.phase`` of this
        barrier, still in flight) finds that phase already complete: it was announced too few bytes."""
        if copy.phase >= self.completed:
            return None

        return ExpectTxMismatch(
            f"mbarrier {self.name} [CTA {self.cta.rank_text()}] completed phase {copy.phase} before {copy.description} "
            f"landed, although that copy completes on it: the bytes announced for the phase "
            f"({self.announcements(getattr(self, 'last_expect', []))}) are fewer than its copies deliver. So the "
            f"operation at {here()} that waited for the phase reads bytes the copy still writes. Announce every byte "
            f"that completes on the barrier.")

    def _check_unordered_lanes(self):
        """An arrive for a warp whose other lanes' tcgen05 work no warp barrier ordered before it: reported
        when the phase completes, unless those lanes arrived in this phase themselves."""
        arrived = {(t.warp, t.lane) for t in self.arrived_by}
        for thread, sid, lanes, first in self.unordered:
            missing = [lane for lane in lanes if (thread.warp, lane) not in arrived]
            if missing:
                thread.lanes_not_ordered(self, sid, missing, first)
        self.unordered = []

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            if self.unordered:
                self._check_unordered_lanes()
            self.completion_time[self.completed] = self.phase_time
            self.completion_time.pop(self.completed - KEEP_PHASES, None)
            self.done_sp[self.completed] = self.sp
            self.done_sp.pop(self.completed - KEEP_PHASES, None)
            self.sp = SyncPoint()
            self.last_expect = self.expect_sites  # (the completed phase's announcements, for reports)
            self.expect_sites = []
            if self.remote is not None or self.done_remote:
                self.done_remote[self.completed] = self.remote
                self.done_remote.pop(self.completed - KEEP_PHASES, None)
                self.remote = None
            self.completed += 1
            self.pending = self.expected
            self.prev_arrivers = list(dict.fromkeys(self.arrived_by))
            self.history.append(self.arrived_by)  # (the last few phases' arrivals: a count too low, consume)
            if len(self.history) > 64:
                del self.history[0]
            self.one_each = (self.expected > 1 and len(self.arrived_by) == self.expected
                             and len(self.prev_arrivers) == self.expected)
            self.arrived_threads = set()
            self.arrived_by = []
            self.notify()

    # -- waits --------------------------------------------------------------------------------
    def phase_done(self, parity):
        """What try_wait.parity returns: the named phase is the current one (false) or the one
        before it (true)."""
        return (parity & 1) != (self.completed & 1)

    def consume(self, thread, parity, cluster_scope=True, observed=None, relaxed=False):
        """Book-keeping after a successful wait; raises on a stale phase, and on a CTA-scope wait
        (``cluster_scope`` false) for a phase that a thread of another CTA arrived on. A ``relaxed`` wait
        acquires nothing: its phase is kept for a later ordering point (relaxed.py). ``observed``: the
        number of completed phases when the wait saw its phase complete (a thread woken by phase p's
        completion acquires phase p, even if later phases completed before it ran again)."""
        # the phase the hardware reported complete to this thread (-1: before init)
        phase = (self.completed if observed is None else observed) - 1
        key = thread.key
        if not cluster_scope and self.done_remote:
            remote = self.done_remote.get(phase)
            if remote is not None:
                self._narrow_scope(thread, parity, phase, *remote)
        last = self.consumed.get(key)
        # Stale: the thread already consumed this phase AND has since issued work that completes a
        # later phase of this barrier (so it is waiting for its own work, which is not done yet).
        # Re-waiting a consumed phase with nothing new in flight is harmless and not reported.
        if phase >= 0 and last is not None and last >= phase and self.signalled.get(key, -1) > phase:
            raise StalePhaseWait(
                f"{thread} waited on mbarrier {self.name} with parity {parity} at {here()}; the barrier's last "
                f"completed phase is {phase} (parity {phase & 1}), which this thread had already "
                f"consumed, so the wait released at once instead of waiting for phase {phase + 1}. "
                f"Flip the phase bit after every completion you consume (and carry it across "
                f"persistent tiles instead of resetting it).")
        # Skipped: counting this thread's waits in order, the phase it waits for is two or more phases
        # behind the barrier; the parity names that phase too, so the chip may release it there.
        if last is not None and last >= phase or phase < 0:  # passed at once (see cause.py)

            cause.passed_early(thread, self, parity, phase, site(1))
        elif thread.passed_early is not None:
            cause.consumed_fresh(thread, self)
        wslot = thread.warp.clock.slot
        meant = self._next_meant(key, parity, wslot, thread.collectives_seen)
        if phase >= meant + 2:
            low = self.count_too_low(thread, phase)
            if low:
                raise ArrivalMismatch(low)

            what = f"phase {meant}" if meant >= 0 else "the state before its first phase"
            raise StalePhaseWait(
                f"{thread} waited on mbarrier {self.name} with parity {parity} at {here()}; counting its waits on "
                f"this barrier in order, this wait is for {what}, but the barrier had already completed "
                f"phases up to {phase} before the wait. Parity {parity} names {what} as well as phase {phase}, "
                f"so on the chip this wait may return at {what} or hang, depending on timing; this run was lucky. Wait "
                f"on every phase in turn, or use a barrier that completes once per use (a one-bit parity can only "
                f"tell the current phase from the one before it).")
        self.consumed[key] = phase
        if phase >= self.async_phase >= 0:  # this wait orders the latest asynchronous arrival (drain.py)
            clock = thread.warp.clock
            if clock.slot not in self.acks:
                # (what the warp released or issued before this wait carries an earlier epoch: hb.py)
                self.acks[clock.slot] = clock.vcm[clock.slot]
        if phase >= 0:
            sp = self.done_sp.get(phase)
            if sp is not None:
                if relaxed:
                    relaxed_rule.observe(thread, self, phase, sp, site(1))
                elif sp.tc:  # (the name is built only where a tcgen05-fence report may need it)
                    sp.acquire(thread, lambda: f"the wait on mbarrier {self.name} (phase {phase})")
                else:
                    thread.warp.clock.acquire(sp.vc)
        self.meant[key] = meant
        if key not in self.wait_sites:  # (the first is enough: a ring's waits sit on one line of a loop)

            self.wait_sites[key] = (thread, site(1))
        pos = self.warp_meant.get(wslot)
        if pos is None or pos[0] != thread.collectives_seen:
            self.warp_meant[wslot] = (thread.collectives_seen, meant)
        self.waits += 1
        return self.completion_time.get(phase, 0.0)

    def _narrow_scope(self, thread, parity, phase, arriver, sid):
        raise WaitScopeMismatch(
            f"{thread} waited at {here()} with CTA scope (try_wait.parity, whose default is .acquire.cta) on "
            f"mbarrier {self.name} [CTA {self.cta.rank_text()}], parity {parity}; phase {phase}, the phase it "
            f"consumed, got an arrival from {arriver} of another CTA, at {text(sid)}. A CTA-scope wait does not "
            f"synchronise with another CTA's arrive (PTX memory model: the two operations must each be in the "
            f"other's scope). Use the cluster form: ptx.mbarrier_wait_relaxed_cluster, with "
            f"tcgen05.fence::after_thread_sync after it where tcgen05 work follows (the ISA's form for a CTA "
            f"pair; the same SASS), or ptx.mbarrier_wait_cluster (.acquire.cluster) when the other CTA's "
            f"ordinary stores must be visible after the wait.")

    def count_too_low(self, thread, phase):
        """The report, when the phases up to ``phase`` that completed since ``thread``'s previous wait
        came from parties that each arrived once (a different warp, or a different lane, per arrival):
        more of them arrive for each use of the barrier than its count. Else '' (the same party arriving
        in two of those phases is a skipped wait, reported as such)."""
        prev = self.meant.get(thread.key)
        if prev is None or phase - prev < 2 or phase - prev > len(self.history):
            return ""
        arrivals = [t for arr in self.history[len(self.history) - (phase - prev):] for t in arr]
        if len(set(arrivals)) != len(arrivals) or len(arrivals) < 2:
            return ""

        warps = list(dict.fromkeys(t.warp for t in arrivals))
        by_cta = {}
        for w in warps:
            by_cta.setdefault(w.cta, []).append(w.index)
        who = "; ".join(f"warps {_ranges(ix)} of CTA {c.rank_text()}" for c, ix in by_cta.items())
        parties = (f"{len(warps)} warps arrive for each use, one lane each ({who})" if len(warps) == len(arrivals)
                   else f"{len(arrivals)} threads arrive for each use ({who}; the whole warp executed mbarrier.arrive?)")
        where = here() if thread.scheduler.current is thread else text(_blocked_site(thread))
        return (f"mbarrier {self.name} [CTA {self.cta.rank_text()}] counts {self.expected} arrival(s) per phase, set at "
                f"{text(self.init_site)}, but {parties}: between two waits of {thread} (the second at {where}) it "
                f"completed phases {prev + 1} to {phase}, where one phase was meant. "
                + (f"Initialise it with the number of arrivals each use gets ({len(arrivals)})." if len(warps) == len(arrivals)
                   else "Let one elected lane per warp arrive, or initialise it with the number of arriving threads."))

    def _next_meant(self, key, parity, wslot, seen):
        """The phase a thread's wait on ``parity`` means, assuming it waits on this barrier's phases in
        order (the next phase of that parity after the one its previous wait meant). A lane's first wait
        on a barrier that another lane of its warp has waited on (the elected lane waited alone, as in
        CUTLASS's producer, and the others join in the tail) takes the warp's position: the warp's
        collectives (elect.sync every k-block) keep its lanes together, so the wait means the warp's
        position or the phase after it, whichever the parity names. The position is the phase of the warp's first
        wait on this barrier after the latest warp collective (``seen``: the last one this lane passed),
        where the warp's lanes were together; lanes that nothing keeps in step (no collective), which may
        each wait on many phases, start from the first. A lane with its own history keeps its own count
        (a lane that fell behind is reported)."""
        prev = self.meant.get(key)
        if prev is None:
            pos = self.warp_meant.get(wslot)
            if pos is not None and pos[0] <= seen:
                w = pos[1]
                return w if (w & 1) == (parity & 1) else w + 1
            prev = -2  # a first wait means phase -1 (parity 1: "before init") or 0
        return prev + 1 if ((prev + 1) & 1) == (parity & 1) else prev + 2

    def lapped(self, thread, parity):
        """For a deadlock report: a thread whose waits went phase by phase, but that fell two or more
        phases behind: the phase it means completed long ago, and its parity now names the current
        phase (a parity can name only the current phase or the one before it)."""
        if thread.key not in self.meant:
            return ""  # its first wait on this barrier: nothing to count from
        m = self._next_meant(thread.key, parity, thread.warp.clock.slot, thread.collectives_seen)
        if m > self.completed - 2:
            return ""
        return (f" (counting this thread's waits on it phase by phase, this wait means phase {m}, which completed "
                f"long ago: the thread fell more than one phase behind, and parity {parity & 1} now names the "
                f"current phase {self.completed}; a parity can name only the current phase or the one before it)")

    def describe(self):
        return (f"mbarrier {self.name} [CTA {self.cta.rank_text()} smem 0x{self.offset:x}]: phase "
                f"{self.completed} (parity {self.completed & 1}) has {self.expected - self.pending} of "
                f"{self.expected} arrivals, tx-count {self.tx}")


def readers_outnumber_count(mma, cta, thread, reader_slot, reader_site, col, hit_quarter):
    """The cause of a TMEM hazard (an MMA into columns whose tcgen05.ld by ``reader_slot`` is not ordered
    before it) when it is a count too low: the MMA's issuer last consumed a phase of a barrier of its CTA
    that only accumulator readers arrived on, that phase completed without the unordered reader's warp
    and without any warp of its lane quarter, and more warps read the accumulator (in every CTA the MMA writes) than the barrier counts. Then the
    phase completed before all the readers were done: the report leads with the init's count. Else ''."""

    cols = slice(mma.d_col, mma.d_col + mma.n)
    readers = set()
    for c in mma.ctas:
        readers.update(int(s) for s in np.unique(c.tmem.ld_who[:, cols]) if s >= 0)
    for bar in thread.cta.mbarriers.values():
        phase = bar.consumed.get(thread.key)
        if phase is None or phase < 0 or len(readers) <= bar.expected:
            continue
        i = len(bar.history) - (bar.completed - phase)
        if not 0 <= i < len(bar.history):
            continue
        arrivers = [t for t in bar.history[i] if t is not None and hasattr(t, "warp")]
        slots = {t.warp.clock.slot for t in arrivers}
        if not arrivers or not slots <= readers or reader_slot in slots:
            continue
        # a warp reaches only its lane quarter (warp index % 4): if an arriving warp covers the reader's
        # quarter, the reader is a second warp on those lanes (a wrong offset), not a missing arrival
        if (cta, hit_quarter) in {(t.cta, t.warp.index % 4) for t in arrivers}:
            continue

        def warps(slots):
            by_cta = {}
            for s in sorted(slots):
                c, ix = divmod(s % cta.cluster.clocks.nwarps, cta.cluster.warps_per_cta)
                by_cta.setdefault(c, []).append(ix)
            return "; ".join(f"warp{'s' * (len(ix) > 1)} {_ranges(ix)} of CTA {cta.cluster.ctas[c].rank_text()}"
                             for c, ix in by_cta.items())

        who, done = warps(readers), warps(slots)
        return (f"mbarrier {bar.name} [CTA {bar.cta.rank_text()}] counts {bar.expected} arrival(s) per phase, set at "
                f"{text(bar.init_site)}, but {len(readers)} warps read the accumulator it releases (TMEM columns "
                f"{mma.d_col}..{mma.d_col + mma.n - 1}: {who}): its phase {phase} completed with the arrivals of "
                f"{done} alone, so {thread}, which waited on it, issued an MMA at {text(mma.site)} into those columns "
                f"while the tcgen05.ld of column {col} by {cta.cluster.slot_text(reader_slot)} at {text(reader_site)} "
                f"was not ordered before it. Initialise it with the number of arrivals each use gets (one per "
                f"reading warp: {len(readers)}).")
    return ""
