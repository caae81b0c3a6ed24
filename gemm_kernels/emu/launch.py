"""``run``: one kernel launch on the emulator."""
from __future__ import annotations

import itertools
from collections import defaultdict
from contextlib import contextmanager

import numpy as np

from ..trace import Trace
from . import context, costmodel
from .clc import ClcUnit
from .deadlock import count_cause, deadlock_cause, skipped_root
from .errors import ArrivalMismatch, CtaGroupMix, StalePhaseWait
from .machine import Cluster, _ranges
from .memory import GlobalView
from .rebind import kernel_function
from .scheduler import Scheduler, Waitable


def _dim3(v):
    if isinstance(v, int):
        return (v, 1, 1)
    v = tuple(int(x) for x in v)
    return v + (1,) * (3 - len(v))


class Launch:
    def __init__(self, grid, block, cluster, shared_bytes, policy, seed, trace, names, timing=False, costs=None):
        self.costs = costmodel.DEFAULT if costs is None else costs  # the virtual clock's unit costs
        self.timing = timing  # timing mode (gemm_kernels.perf): skip numerics and data copies, keep the clock
        self.grid = _dim3(grid)
        self.block = _dim3(block)
        self.cluster_dims = _dim3(cluster)
        self.shared_bytes = int(shared_bytes)
        self.policy = policy
        self.seed = seed
        self.trace = Trace() if trace else None
        self.names = names or []
        self.scheduler = None
        self.tensor_maps = {}
        self.cta_group = None  # 1 or 2 once a tcgen05 op ran
        self.clc = None  # the cluster launch control unit (emu/clc.py), for a launch with ``resident``
        self.multi_cta = self.grid[0] * self.grid[1] * self.grid[2] > 1
        for g, c in zip(self.grid, self.cluster_dims):
            if g % c:
                raise ValueError(f"grid {self.grid} is not a multiple of the cluster shape {self.cluster_dims}")
        nthreads = self.block[0] * self.block[1] * self.block[2]
        if not 1 <= nthreads <= 1024:
            raise ValueError(f"block of {nthreads} threads: CUDA allows 1..1024")
        if self.shared_bytes > 232448:
            raise ValueError(f"{self.shared_bytes} bytes of dynamic shared memory exceed the B200's 232448 B per CTA")

    def use_cta_group(self, group, what, thread):
        if self.cta_group is None:
            self.cta_group = group
        elif self.cta_group != group:
            raise CtaGroupMix(f"{thread} executed {what} with .cta_group::{group}, but this kernel already used "
                              f".cta_group::{self.cta_group}: all tcgen05 instructions of a kernel must use the same "
                              f"cta_group (ptxas rejects the mix)")

    def clusters(self):
        gx, gy, gz = self.grid
        cx, cy, cz = self.cluster_dims
        index = 0
        for z0, y0, x0 in itertools.product(range(0, gz, cz), range(0, gy, cy), range(0, gx, cx)):
            blocks = [(x0 + x, y0 + y, z0 + z)
                      for z, y, x in itertools.product(range(cz), range(cy), range(cx))]
            yield index, blocks
            index += 1

    def deadlock_report(self, cluster):
        """The deadlock's report; an ArrivalMismatch (an exception, not text) where a barrier's count
        too low explains the hang."""
        low = count_cause(cluster)
        if low:
            return ArrivalMismatch(low + " (The kernel then hung: " + self._deadlock_text(cluster).split("\n")[0] + ")")
        if skipped_root(cluster, self.scheduler.pending):  # a phase bit not flipped: the class of its cause
            return StalePhaseWait(self._deadlock_text(cluster))
        return self._deadlock_text(cluster)

    def _deadlock_text(self, cluster):
        first = deadlock_cause(cluster, self.scheduler.pending)
        lines = [first or f"deadlock in cluster {cluster.index}: every live thread is blocked and no queued "
                          f"asynchronous operation can complete."]
        if first:
            lines.append("  every live thread is blocked and no queued asynchronous operation can complete:")
        groups = defaultdict(list)
        for cta in cluster.ctas:
            for t in cta.threads:
                if t.exited:
                    continue
                desc = t.blocked_on[1]() if t.blocked_on else "runnable (?)"
                groups[(cta.rank_text(), desc)].append(t.tid)
        for (cta, desc), tids in groups.items():
            lines.append(f"  CTA {cta}: threads {_ranges(tids)} (warps {_ranges({t // 32 for t in tids})}) wait {desc}")
        exited = [(cta.rank_text(), [t.tid for t in cta.threads if t.exited]) for cta in cluster.ctas]
        for cta, tids in exited:
            if tids:
                lines.append(f"  CTA {cta}: threads {_ranges(tids)} have exited")
        pend = self.scheduler.pending
        if pend:
            lines.append("  queued asynchronous work that cannot start (it waits on earlier work):")
            for op in pend[:8]:
                lines.append(f"    {op.description}")
        else:
            lines.append("  no asynchronous work is in flight: nothing will ever arrive on these barriers.")
        return "\n".join(lines)


class SmTmem(Waitable):
    """The TMEM of one SM (512 columns) shared by the CTAs placed on it: a CTA's tcgen05.alloc
    waits here until another CTA on the SM frees enough columns."""

    def __init__(self, scheduler, index):
        super().__init__(scheduler)
        self.index = index
        self.freed_at = 0.0  # cycle of the last dealloc

    def released(self, cycle):
        self.freed_at = max(self.freed_at, cycle)
        self.notify()


_placement = {"sms": None}


@contextmanager
def on_sms(sms):
    """Run the launches in this block with their CTAs placed on ``sms`` SMs (CTA i on SM i mod
    ``sms``), every CTA resident at once and the CTAs of an SM sharing its 512 TMEM columns, so a
    ``tcgen05.alloc`` blocks until another CTA on its SM frees columns. Without it (the default)
    every CTA has an SM of its own and the clusters run one after another."""
    if not isinstance(sms, int) or isinstance(sms, bool) or sms < 1:
        raise ValueError(f"on_sms needs a positive number of SMs, got {sms!r}")
    before = _placement["sms"]
    _placement["sms"] = sms
    try:
        yield
    finally:
        _placement["sms"] = before


def _start_cluster(launch, cl, sched, fn, args):
    """Lay out each CTA's shared memory (the dynamic region at 0x400, the plan's names for reports)
    and give every thread of the cluster to the scheduler."""
    for cta in cl.ctas:
        cta.smem.dynamic_base = 0x400
        cta.smem.static_next = 0x400 + launch.shared_bytes
        cta.smem.set_names([(name, 0x400 + off, size) for name, off, size in launch.names])
        for t in cta.threads:
            sched.spawn(t, lambda: fn(*args))


def _run_on_sms(launch, fn, args, nthreads, sms, policy, seed, only_clusters):
    """Every cluster at once on one scheduler, CTA i on SM i mod ``sms`` with the SM's TMEM."""
    sched = Scheduler(policy, seed)
    launch.scheduler = sched
    clusters, ctas = [], []
    for index, blocks in launch.clusters():
        if only_clusters is not None and index not in only_clusters:
            continue
        cl = Cluster(launch, index, blocks, nthreads, launch.shared_bytes)
        clusters.append(cl)
        ctas += cl.ctas
    first = {}
    for i, cta in enumerate(ctas):
        sm = i % sms
        if sm in first:
            cta.tmem.share_with(first[sm].tmem)
        else:
            first[sm] = cta
            cta.tmem.sm = SmTmem(sched, sm)
        cta.sm = sm
    for cl in clusters:
        _start_cluster(launch, cl, sched, fn, args)
    sched.run(lambda: "\n".join(launch.deadlock_report(cl) for cl in clusters))
    for cta in ctas:
        cta.finish_checks()


def run(kernel, grid, block, args, *, cluster=(1, 1, 1), shared_bytes=0, policy="lazy", seed=0,
        trace=False, names=None, tensor_maps=None, timing=False, only_clusters=None, sms=None, resident=None,
        costs=None):
    """Run ``kernel`` (a ``numba.cuda.jit`` kernel or its Python function) on the emulator.

    ``args`` are numpy arrays (global memory) and integers, as the kernel receives them.
    ``names``: [(name, offset from the dynamic shared-memory base, size)] used in reports.
    ``tensor_maps``: {address: TensorMapModel} for kernels that take tensor-map addresses.
    Returns the Launch (``.trace`` holds the events when ``trace=True``).
    ``timing``/``only_clusters``: gemm_kernels.perf's timing mode (no values) and the clusters it runs.
    ``sms``: place the CTAs on this many SMs sharing TMEM (default: ``on_sms``'s, else one SM each).
    ``resident``: a launch for cluster launch control (emu/clc.py): that many clusters run at once and
    the others wait to be launched; a cluster cancelled by a try_cancel never starts.
    ``costs``: the virtual clock's unit costs (``emu.costmodel.Costs``; default ``costmodel.DEFAULT``).
    """
    sms = sms if sms is not None else _placement["sms"]
    if sms is not None and resident is not None:
        raise ValueError("run: sms (CTAs sharing an SM's TMEM) and resident (cluster launch control) "
                         "are separate placements; give one of them")
    launch = Launch(grid, block, cluster, shared_bytes, policy, seed, trace, names, timing, costs)
    if tensor_maps:
        launch.tensor_maps.update(tensor_maps)
    if resident is not None:
        launch.clc = ClcUnit(launch, resident, policy, seed)
    fn = kernel_function(kernel)
    args = tuple(a.view(GlobalView) if isinstance(a, np.ndarray) else a for a in args)
    nthreads = launch.block[0] * launch.block[1] * launch.block[2]
    previous = context.current_launch()
    context.set_launch(launch)
    try:
        if sms is not None:
            _run_on_sms(launch, fn, args, nthreads, sms, policy, seed, only_clusters)
            return launch
        for index, blocks in launch.clusters():
            if only_clusters is not None and index not in only_clusters:
                continue
            if launch.clc is not None:
                if index in launch.clc.cancelled:
                    continue  # cancelled by a try_cancel: it never starts
                launch.clc.starts(index)
            sched = Scheduler(policy, seed + index)
            launch.scheduler = sched
            cl = Cluster(launch, index, blocks, nthreads, launch.shared_bytes)
            _start_cluster(launch, cl, sched, fn, args)
            sched.run(lambda cl=cl: launch.deadlock_report(cl))
            for cta in cl.ctas:
                cta.finish_checks()
    finally:
        context.set_launch(previous)
        launch.scheduler = None
    return launch
