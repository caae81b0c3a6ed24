"""Cooperative execution of CUDA threads, and the queue of asynchronous work.

Each emulated CUDA thread is a greenlet: a Python call stack that runs until it blocks (on an
mbarrier, a named barrier, a warp collective, ...) and then hands control back to the scheduler.
Only one runs at a time, so the emulator has no locks and is deterministic for a given policy and
seed. Asynchronous operations (TMA copies, MMAs, commits, bulk stores) are queued and completed
under a policy:

* ``eager``  - at issue, as if the unit were infinitely fast;
* ``lazy``   - as late as possible: only when no thread can run;
* ``random`` - at random moments, in a random legal order (seeded).

A deadlock is detected exactly: no thread can run and no queued work can complete.
"""
from __future__ import annotations

import random as _random
import traceback
from collections import deque

import greenlet

from . import source
from .cause import explain
from .errors import Deadlock, EmulatorError, MemoryFault

POLICIES = ("eager", "lazy", "random")


class Waitable:
    """Something threads block on. ``notify()`` re-checks the waiters' conditions."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.waiters = []

    def notify(self):
        if not self.waiters:
            return
        still = []
        for thread, cond in self.waiters:
            if cond():
                self.scheduler._make_runnable(thread)
            else:
                still.append((thread, cond))
        self.waiters = still


class AsyncOp:
    """One queued asynchronous operation. Subclasses set ``unit`` and implement ``execute``."""

    unit = "async"

    def __init__(self, issuer, description):
        self.issuer = issuer  # EmuThread
        self.description = description
        self.done = False
        self.predecessor = None  # an AsyncOp that must complete first (in-order units)

    #: CTAs that must outlive this operation's arrivals besides the barriers' own (drain.py)
    pair = ()

    def barriers(self):
        """The mbarriers this operation will arrive on (drain.py)."""
        return ()

    def ready(self):
        return self.predecessor is None or self.predecessor.done

    def execute(self):  # pragma: no cover - abstract
        raise NotImplementedError


def _out_of_bounds(thread, exc):
    """The MemoryFault for a numpy IndexError raised by kernel code (a global or local array indexed
    out of range), naming the innermost kernel line of the traceback."""
    where = "the kernel"
    for frame, line in traceback.walk_tb(exc.__traceback__):
        if not source._is_internal(frame.f_code):
            where = source.text(source.intern(frame.f_code, line))
    return MemoryFault(f"{thread} indexed an array out of range at {where}: {exc}. On the chip the access lands "
                       f"outside the array (an illegal-address fault, or another buffer's data).")


class Scheduler:
    def __init__(self, policy="lazy", seed=0):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
        self.policy = policy
        self.rng = _random.Random(seed)
        self.runnable = deque()
        self.threads = []
        self.live = 0
        self.pending = []  # queued AsyncOps
        self.current = None
        self._main = None
        self.steps = 0

    # -- threads ---------------------------------------------------------------------------
    def spawn(self, thread, fn):
        def body():
            try:
                fn()
            except IndexError as exc:  # an array index out of range in kernel code: a fault, with its line
                thread.exited = True
                self.live -= 1
                raise _out_of_bounds(thread, exc) from None
            except BaseException as exc:
                thread.exited = True
                self.live -= 1
                cause = explain(thread, exc)
                if cause is not exc:
                    raise cause from exc
                raise  # the kernel's own error: report it, not the exit checks it would trip
            thread.exited = True
            self.live -= 1
            thread.on_exit()

        thread.greenlet = greenlet.greenlet(body)
        thread.scheduler = self
        self.threads.append(thread)
        self.live += 1
        self.runnable.append(thread)

    def _make_runnable(self, thread):
        thread.blocked_on = None
        self.runnable.append(thread)

    def block(self, waitable, cond, describe):
        """Block the running thread until ``cond()`` holds. ``describe()`` explains the wait for
        a deadlock report."""
        if cond():
            return
        thread = self.current
        thread.blocked_on = (waitable, describe)
        waitable.waiters.append((thread, cond))
        self._main.switch()

    # -- asynchronous work ---------------------------------------------------------------------
    def submit(self, op):
        if self.policy == "eager" and op.ready():
            self._execute(op)
        else:
            self.pending.append(op)

    def _execute(self, op):
        op.done = True
        op.execute()
        # an op may have become ready because this one completed (in-order units)
        if self.policy == "eager":
            for other in list(self.pending):
                if other.ready() and not other.done:
                    self.pending.remove(other)
                    self._execute(other)

    def _complete_one(self, pick_random):
        ready = [op for op in self.pending if op.ready()]
        if not ready:
            return False
        op = self.rng.choice(ready) if pick_random else ready[0]
        self.pending.remove(op)
        self._execute(op)
        return True

    def drain(self):
        while self.pending:
            if not self._complete_one(False):
                break

    # -- the loop ----------------------------------------------------------------------------
    def run(self, deadlock_report):
        self._main = greenlet.getcurrent()
        while self.live > 0:
            self.steps += 1
            if self.policy == "random" and self.pending and self.rng.random() < 0.25:
                self._complete_one(True)
            if self.runnable:
                if self.policy == "random" and len(self.runnable) > 1:
                    i = self.rng.randrange(len(self.runnable))
                    self.runnable.rotate(-i)
                thread = self.runnable.popleft()
                if thread.exited:
                    continue
                self.current = thread
                thread.greenlet.switch()
                self.current = None
                continue
            if self._complete_one(self.policy == "random"):
                continue
            report = deadlock_report()
            raise report if isinstance(report, EmulatorError) else Deadlock(report)
        # work nobody waited for (e.g. a final TMA store) still happens before the kernel ends
        self.drain()
