"""mbarrier: the transaction barrier in shared memory (PTX ISA 9.7.13.15).

An mbarrier counts arrivals and transaction bytes. Its phase completes when all expected threads
have arrived and all announced bytes have landed; a thread waits for a phase by its parity."""
from ..emu import costmodel
from ..emu.context import thread as _thread
from ..emu.source import site as _site
from ._declare import asm_op, twin, u32

mbarrier_init = asm_op(
    "mbarrier_init", "mbarrier.init.shared::cta.b64 [{bar}], {count};",
    operands=(("bar", u32), ("count", u32)),
    doc="Initialise the 8-byte mbarrier at shared address ``bar`` to expect ``count`` arrivals per "
        "phase; its current phase is 0 (parity 0) with tx-count 0.")


@twin(mbarrier_init)
def _mbarrier_init(bar, count):
    t = _thread()
    t.cta.init_mbarrier(bar, count, t)
    t.advance()


fence_mbarrier_init = asm_op(
    "fence_mbarrier_init", "fence.mbarrier_init.release.cluster;",
    doc="Make prior mbarrier.init visible to the async proxy (TMA, tcgen05.commit) and to the other "
        "CTAs of the cluster; follow it with a CTA or cluster barrier.")


@twin(fence_mbarrier_init)
def _fence_mbarrier_init():
    t = _thread()
    t.cta.fence_mbarrier_init(t)
    t.advance()


def _arrive(t, bar_addr, nbytes, what):
    bar = t.cta.mbarrier(bar_addr, what)
    bar.signal_from(t)
    if nbytes:
        bar.expect_tx(int(nbytes), at=t.clock, thread=t, site=_site())
    bar.arrive(t, 1, at=t.clock)
    if t.lane == 0 or nbytes:
        t.event(_role(t), "arrive", t.clock, t.clock + 1, barrier=bar.name, phase=bar.completed, nbytes=int(nbytes),
                extra={"bar_cta": bar.cta.linear, "ptx": what})
    t.advance()


def _role(t):
    return t.warp_role()


mbarrier_arrive = asm_op(
    "mbarrier_arrive", "mbarrier.arrive.shared::cta.b64 _, [{bar}];", operands=(("bar", u32),),
    doc="Arrive once (release, CTA scope) on the mbarrier at ``bar``.")


@twin(mbarrier_arrive)
def _mbarrier_arrive(bar):
    _arrive(_thread(), bar, 0, "mbarrier.arrive")


mbarrier_arrive_expect_tx = asm_op(
    "mbarrier_arrive_expect_tx", "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar}], {nbytes};",
    operands=(("bar", u32), ("nbytes", u32)),
    doc="Announce ``nbytes`` more transaction bytes for the current phase, then arrive once. TMA "
        "copies signalled on this barrier count the bytes down.")


@twin(mbarrier_arrive_expect_tx)
def _mbarrier_arrive_expect_tx(bar, nbytes):
    _arrive(_thread(), bar, nbytes, "mbarrier.arrive.expect_tx")


mbarrier_expect_tx = asm_op(
    "mbarrier_expect_tx", "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{bar}], {nbytes};",
    operands=(("bar", u32), ("nbytes", u32)),
    doc="Announce ``nbytes`` more transaction bytes for the current phase, without arriving.")


@twin(mbarrier_expect_tx)
def _mbarrier_expect_tx(bar, nbytes):
    t = _thread()
    t.cta.mbarrier(bar, "mbarrier.expect_tx").expect_tx(int(nbytes), at=t.clock, thread=t, site=_site())
    t.advance()


mbarrier_arrive_expect_tx_cluster = asm_op(
    "mbarrier_arrive_expect_tx_cluster",
    "mbarrier.arrive.expect_tx.relaxed.cluster.shared::cluster.b64 _, [{bar}], {nbytes};",
    operands=(("bar", u32), ("nbytes", u32)),
    doc="mbarrier_arrive_expect_tx on an mbarrier given by a ``.shared::cluster`` address (a peer CTA's, "
        "through ``mapa``): announce ``nbytes`` that an asynchronous unit will complete there, and arrive "
        "(relaxed, cluster scope: it publishes no data; the bytes it announces are ordered by their own "
        "complete_tx). Chapter 10's scheduler announces each multicast CLC response this way.")


@twin(mbarrier_arrive_expect_tx_cluster)
def _mbarrier_arrive_expect_tx_cluster(bar, nbytes):
    _arrive(_thread(), bar, nbytes, "mbarrier.arrive.expect_tx (cluster)")


mbarrier_arrive_remote = asm_op(
    "mbarrier_arrive_remote", "mbarrier.arrive.shared::cluster.b64 _, [{bar}];",
    operands=(("bar", u32),),
    doc="Arrive once (release at the default CTA scope) on an mbarrier given by a ``.shared::cluster`` "
        "address (a peer's, through ``mapa``): the form CUTLASS uses to hand a CLC response slot back "
        "(its reads are ordered before the arrival without the GPU-scope fence of the .cluster form).")


@twin(mbarrier_arrive_remote)
def _mbarrier_arrive_remote(bar):
    _arrive(_thread(), bar, 0, "mbarrier.arrive (remote)")


mbarrier_arrive_cluster = asm_op(
    "mbarrier_arrive_cluster", "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{bar}];",
    operands=(("bar", u32),),
    doc="Arrive once (release, cluster scope) on an mbarrier given by a ``.shared::cluster`` address, "
        "typically a peer CTA's barrier obtained with ``mapa``.")


@twin(mbarrier_arrive_cluster)
def _mbarrier_arrive_cluster(bar):
    _arrive(_thread(), bar, 0, "mbarrier.arrive (cluster)")


mbarrier_arrive_relaxed_cluster = asm_op(
    "mbarrier_arrive_relaxed_cluster", "mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [{bar}];",
    operands=(("bar", u32),),
    doc="Arrive once, relaxed (no memory ordering), at cluster scope, on an mbarrier given by a "
        "``.shared::cluster`` address (a peer CTA's, through ``mapa``). The form the PTX ISA gives for "
        "handing TMEM back after ``tcgen05.wait::ld`` and ``tcgen05.fence::before_thread_sync``: the "
        "tcgen05 fence orders the loads, so no release fence is needed (the release form costs a "
        "MEMBAR.ALL.GPU per arriving thread).")


@twin(mbarrier_arrive_relaxed_cluster)
def _mbarrier_arrive_relaxed_cluster(bar):
    _arrive(_thread(), bar, 0, "mbarrier.arrive.relaxed (cluster)")


def _wait(bar_addr, parity, scope):
    t = _thread()
    bar = t.cta.mbarrier(bar_addr, f"mbarrier.try_wait.parity{scope}")
    parity = int(parity) & 1
    start = t.clock
    if bar.phase_done(parity):
        observed = bar.completed
    else:
        # the phase this thread's wait observed is the one whose completion woke it: by the time the
        # scheduler runs it again, later phases may have completed too (it must not acquire those)
        woke = [0]

        def ready():
            if bar.phase_done(parity):
                woke[0] = bar.completed
                return True
            return False

        t.scheduler.block(bar, ready,
                          lambda: f"on {bar.describe()}; waiting for parity {parity}{bar.lapped(t, parity)}")
        observed = woke[0]
    done_at = bar.consume(t, parity, cluster_scope=bool(scope), observed=observed, relaxed=".relaxed" in scope)
    t.clock = max(t.clock, done_at + costmodel.of(t).barrier_latency_cycles)
    if t.lane == 0:
        t.event(_role(t), "wait", start, t.clock, barrier=bar.name, phase=bar.completed - 1,
                extra={"parity": parity})
    return 1


def _wait_loop(scope="", hint=""):
    """The PTX of a loop around try_wait.parity (``scope``: the acquire qualifiers; ``hint``: a
    suspend-time operand), as an asm_op template."""
    return ("{{\n .reg .pred p;\n LAB_WAIT_${{:uid}}:\n"
            f" mbarrier.try_wait.parity{scope}.shared::cta.b64 p, [{{bar}}], {{parity}}{hint};\n"
            " @!p bra LAB_WAIT_${{:uid}};\n}}")


mbarrier_wait = asm_op(
    "mbarrier_wait", _wait_loop(), operands=(("bar", u32), ("parity", u32)),
    doc="Block until the phase with parity ``parity`` of the mbarrier at ``bar`` has completed "
        "(acquire, CTA scope): a loop around try_wait.parity. Waiting on the current phase blocks; "
        "waiting on the other parity (the phase before) returns at once.")
mbarrier_wait.twin = lambda bar, parity: _wait(bar, parity, "") and None

#: the suspend-time hint of mbarrier_wait_sleep, in ns (CUTLASS's retry path uses this value)
SUSPEND_HINT_NS = 10_000_000
mbarrier_wait_sleep = asm_op(
    "mbarrier_wait_sleep", _wait_loop(hint=f", {SUSPEND_HINT_NS}"), operands=(("bar", u32), ("parity", u32)),
    doc="As mbarrier_wait, with a suspend-time hint on each try_wait: a thread whose phase is not "
        "complete may be suspended (up to the hint) instead of spinning, leaving issue slots to the "
        "warps that do the work. For long waits (the writeback waiting for a whole tile's MMAs).")
mbarrier_wait_sleep.twin = lambda bar, parity: _wait(bar, parity, "") and None

mbarrier_wait_cluster = asm_op(
    "mbarrier_wait_cluster", _wait_loop(".acquire.cluster"),
    operands=(("bar", u32), ("parity", u32)),
    doc="As mbarrier_wait, with acquire at cluster scope: use it when the arrivals come from the "
        "other CTA of the cluster (remote arrivals, multicast commits, cta_group::2 TMA).")
mbarrier_wait_cluster.twin = lambda bar, parity: _wait(bar, parity, ".acquire.cluster") and None

mbarrier_wait_relaxed_cluster = asm_op(
    "mbarrier_wait_relaxed_cluster", _wait_loop(".relaxed.cluster"),
    operands=(("bar", u32), ("parity", u32)),
    doc="As mbarrier_wait, at cluster scope and relaxed: the PTX ISA's form for a wait on a barrier that "
        "the other CTA of a pair also completes (its remote arrivals, the leader's multicast commits, "
        "cta_group::2 TMA loads), followed by tcgen05.fence::after_thread_sync where tcgen05 work follows. "
        "It orders no ordinary memory accesses (the fences and the barrier's transaction count order the "
        "data); ptxas emits the same instructions as for the CTA-scope acquire (no L1 invalidation), "
        "but may schedule later ordinary loads above it: a wait followed by ld.shared of published "
        "data must acquire (chapter 10's CLC response).")
mbarrier_wait_relaxed_cluster.twin = lambda bar, parity: _wait(bar, parity, ".relaxed.cluster") and None

mbarrier_wait_sleep_relaxed_cluster = asm_op(
    "mbarrier_wait_sleep_relaxed_cluster", _wait_loop(".relaxed.cluster", hint=f", {SUSPEND_HINT_NS}"),
    operands=(("bar", u32), ("parity", u32)),
    doc="mbarrier_wait_relaxed_cluster with mbarrier_wait_sleep's suspend-time hint.")
mbarrier_wait_sleep_relaxed_cluster.twin = lambda bar, parity: _wait(bar, parity, ".relaxed.cluster") and None

mbarrier_try_wait = asm_op(
    "mbarrier_try_wait",
    "{{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [{bar}], {parity};\n"
    " selp.u32 {ok}, 1, 0, p;\n}}",
    results=(("ok", u32),), operands=(("bar", u32), ("parity", u32)),
    doc="One try_wait.parity: 1 if the phase with parity ``parity`` has completed, else 0 (after a "
        "hardware time limit). The emulator's twin models the limit: while the phase is incomplete it may "
        "return 0 (see _try_wait); a loop that retries until it gets 1 is correct, a kernel that ignores "
        "the 0 goes on before the phase completed.")

#: the emulated clock cycles a try_wait spends before its time limit expires (the hardware's limit is
#: implementation-defined; this only moves the thread's clock)
TRY_WAIT_LIMIT_CYCLES = 2000


def _try_wait(bar_addr, parity, scope=""):
    """One try_wait.parity. While the named phase is incomplete it returns 0 at the time limit, once per
    (thread, barrier, incomplete phase): always for the thread's first such wait under the lazy and eager
    orders, and with probability 1/2 (the seeded order's generator) otherwise, so the same seed gives the
    same run. A retry of the same phase blocks until it completes (a thread that spins on a phase that
    never completes ends in a Deadlock report, as a hang); a kernel that ignores the 0 reads what the
    phase was to guard before it landed, and the emulator's checks name that read."""
    t = _thread()
    bar = t.cta.mbarrier(bar_addr, f"mbarrier.try_wait.parity{scope}")
    if not bar.phase_done(int(parity) & 1):
        episode = (bar, bar.completed)
        if t.try_wait_episode != episode:
            t.try_wait_episode = episode
            first = not t.try_wait_timeouts
            if (first and t.scheduler.policy != "random") or t.scheduler.rng.random() < 0.5:
                t.try_wait_timeouts += 1
                t.advance(TRY_WAIT_LIMIT_CYCLES)
                return 0
    return _wait(bar_addr, parity, scope)


mbarrier_try_wait.twin = lambda bar, parity: _try_wait(bar, parity, "")

mbarrier_inval = asm_op(
    "mbarrier_inval", "mbarrier.inval.shared::cta.b64 [{bar}];", operands=(("bar", u32),),
    doc="Invalidate the mbarrier at ``bar`` so its 8 bytes may be reused or re-initialised.")


@twin(mbarrier_inval)
def _mbarrier_inval(bar):
    t = _thread()
    b = t.cta.mbarrier(bar, "mbarrier.inval")
    b.valid = False
    b.cta.smem.mark_barrier(b.offset, False)
    t.advance()
