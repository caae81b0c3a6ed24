"""The emulator's diagnostics: one exception type per class of bug, each with a message a learner
can act on. On a B200 each of these is a silent wrong answer, a hang, or an "unspecified launch
failure"; here each names the CTA, warp, thread, barrier or buffer, and the phase or byte range."""


class EmulatorError(Exception):
    """Base class of every diagnostic the emulator raises."""


class Deadlock(EmulatorError):
    """Every live thread is blocked and no queued asynchronous work can complete."""


class StalePhaseWait(EmulatorError):
    """An mbarrier parity wait succeeded on a phase this thread had already consumed: the phase bit
    was not flipped (or was reset) and the wait released early."""


class ArrivalMismatch(EmulatorError):
    """More arrivals, or arrivals of a different count, than the barrier was initialised with."""


class ExpectTxMismatch(EmulatorError):
    """The bytes that arrived on an mbarrier differ from the bytes announced with expect_tx."""


class SharedMemoryHazard(EmulatorError):
    """Shared memory read by an in-flight asynchronous operation (MMA, TMA store) was written
    before that operation completed."""


class MissingProxyFence(EmulatorError):
    """Bytes written by ordinary (generic-proxy) stores were read by TMA or the tensor core
    without fence.proxy.async by the writing thread."""


class TmemHazard(EmulatorError):
    """TMEM columns were read while an MMA still writes them (or by a tcgen05.ld not ordered after
    it), written while a tcgen05.ld of them is outstanding, or a tcgen05.ld's registers were used
    before tcgen05.wait::ld."""


class TmemLifecycleError(EmulatorError):
    """TMEM alloc/dealloc by the wrong warp, partial warp, leak, missing relinquish, double free,
    or a CTA-pair dealloc while the peer is still working."""


class UndrainedArrival(EmulatorError):
    """A CTA exits (or, for cta_group::2 work, its peer does) while an asynchronous arrival on one
    of its mbarriers (a tcgen05.commit, a TMA load's complete_tx) is not ordered before the exit:
    no thread waited for that phase of the barrier before it. On the chip the arrival may land in
    shared memory that the next CTA on the SM already owns; drain the pipeline before exit."""


class LaneQuarterViolation(EmulatorError):
    """A warp's tcgen05.ld/st touched TMEM lanes outside its lane quarter (32*(warp%4) ...)."""


class DivergentCollective(EmulatorError):
    """A .sync.aligned warp collective (elect.sync, tcgen05.alloc/ld, ...) was reached by only part
    of a warp, by lanes at different operations, or with operands that differ between lanes."""


class NamedBarrierMismatch(EmulatorError):
    """One named-barrier ID used with different thread counts in the same generation, or by two
    groups of warps that release each other (successive generations formed by different warps)."""


class CtaGroupMix(EmulatorError):
    """A kernel mixed tcgen05 operations of .cta_group::1 and .cta_group::2."""


class DescriptorError(EmulatorError):
    """A matrix or instruction descriptor decodes to something the hardware rejects."""


class MemoryFault(EmulatorError):
    """An address outside the launch's shared memory, TMEM, or a tensor map's bounds where that is
    illegal; a write over a live mbarrier or from one named shared-memory region into the next; an
    access to the shared memory of a CTA that has exited."""


class UninitializedRead(EmulatorError):
    """Shared memory or TMEM read (by a thread, a TMA store, an MMA operand or accumulator, a
    tcgen05.ld) before anything wrote it: on the chip those bytes hold whatever was there before."""


class DataRace(EmulatorError):
    """Two warps access the same shared bytes, at least one writing, and no synchronisation
    (mbarrier phase, named barrier, cluster barrier) orders them: the result depends on timing."""


class MissingTcgen05Fence(EmulatorError):
    """A tcgen05 operation ordered by a thread synchronisation without
    tcgen05.fence::after_thread_sync after it, or tcgen05 work published by a synchronisation
    without tcgen05.fence::before_thread_sync before it."""


class PeerNotRunning(EmulatorError):
    """An operation that touches a peer CTA's shared memory or barriers (tcgen05.alloc/dealloc of
    .cta_group::2, a DSMEM store, a remote arrive, a multicast commit, a TMA load that completes on a
    peer's barrier) before anything (a cluster barrier's arrive + wait, or a wait that saw the peer's
    arrival) has shown the issuing thread that the peer CTA is running. The PTX ISA leaves that to the
    kernel: a cluster's CTAs need not start together, and an access into a CTA that has not started
    can hang or be lost."""


class WaitScopeMismatch(EmulatorError):
    """A CTA-scope mbarrier wait (try_wait.parity's default .acquire.cta) consumed a phase that a thread
    of another CTA arrived on (a remote arrive through mapa): by the PTX memory model a CTA-scope
    acquire does not synchronise with another CTA's arrive. Wait with cluster scope."""


class MissingWarpSync(EmulatorError):
    """One lane arrives on an mbarrier for its warp (after elect.sync) while other lanes of the warp
    issued tcgen05 work (a tcgen05.ld) that no warp barrier orders before the arrive: by the PTX ISA
    elect.sync orders no memory, so the barrier's waiter is not ordered after that work."""


class RelaxedWaitNoAcquire(EmulatorError):
    """An ordinary shared-memory access (or a ``clusterlaunchcontrol.query_cancel`` read) of data that an
    mbarrier phase publishes, after a ``.relaxed`` wait on that phase: by the PTX memory model a relaxed
    wait orders no memory, so the load may see the bytes before the phase's writer produced them (ptxas
    may even hoist it above the wait). Wait with ``.acquire.cta`` or ``.acquire.cluster``."""
