"""Check mode: run a kernel under every completion order the emulator explores and give one verdict.

One run shows one order of the asynchronous work. The sanitizer's happens-before checks report most
bugs whatever the order, but deadlocks, stale phases and some wrong answers still depend on it; so
a reader's question "is this kernel right?" is answered by several runs: ``eager`` (async work
completes at issue), ``lazy`` (as late as possible) and ``random`` with a few seeds. The verdict is
"ok" only if every run finished without a diagnostic and matched numpy.

    python -m gemm_kernels verify --chapter 5 --check
    check_entry(entry, a, b).print()          # a chapter's host entry, or a planted-bug variant's
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import EmulatorError

#: the runs of a check: (policy, seed)
ORDERS = (("eager", 0), ("lazy", 0), ("random", 1), ("random", 2), ("random", 3))


@dataclass
class Run:
    policy: str
    seed: int
    error: EmulatorError | None = None  # the diagnostic, if the emulator stopped the kernel
    mismatch: str | None = None  # the numpy comparison's report, if the result was wrong

    @property
    def ok(self):
        return self.error is None and self.mismatch is None

    def text(self):
        order = self.policy if self.policy != "random" else f"random (seed {self.seed})"
        if self.error is not None:
            first = str(self.error).splitlines()[0]
            return f"{order}: {type(self.error).__name__}: {first}"
        if self.mismatch is not None:
            return f"{order}: wrong result: {self.mismatch}"
        return f"{order}: ok"


@dataclass
class Verdict:
    runs: list = field(default_factory=list)

    @property
    def ok(self):
        return all(r.ok for r in self.runs)

    @property
    def diagnostics(self):
        """The diagnostic classes named, in the order first seen."""
        seen = []
        for r in self.runs:
            if r.error is not None and type(r.error).__name__ not in seen:
                seen.append(type(r.error).__name__)
        return seen

    def summary(self):
        n = len(self.runs)
        if self.ok:
            return f"OK: {n} of {n} completion orders finished without a diagnostic and matched numpy."
        bad = [r for r in self.runs if not r.ok]
        named = ", ".join(self.diagnostics) or "a wrong result"
        return f"BUG: {len(bad)} of {n} completion orders failed ({named})."

    def print(self):
        print(self.summary())
        for r in self.runs:
            print("  " + r.text())


def check(run_once, orders=ORDERS):
    """``run_once(policy, seed)`` runs the kernel and returns None (right) or a mismatch report; an
    EmulatorError it raises is recorded as that run's diagnostic."""
    verdict = Verdict()
    for policy, seed in orders:
        run = Run(policy, seed)
        try:
            run.mismatch = run_once(policy, seed)
        except EmulatorError as exc:
            run.error = exc
        verdict.runs.append(run)
    return verdict


def check_entry(entry, a, b, orders=ORDERS, **config):
    """Check a host entry (``CHAPTERS[n].entry`` or a variant's ``entry``) on operands a, b."""
    from ..check import compare

    def once(policy, seed):
        d = entry(a, b, backend="emulator", policy=policy, seed=seed, **config)
        res = compare(d, a, b)
        return None if res.ok else res.report()

    return check(once, orders)


def check_variant(variant, m, n, k, orders=ORDERS):
    """For the chapters' "Break it" cells: a planted-bug variant (book_helpers.variant) under every
    order; prints the verdict and returns it."""
    from ..check import random_operands

    a, b = random_operands(m, n, k)
    verdict = check_entry(variant.entry, a, b, orders)
    verdict.print()
    return verdict
