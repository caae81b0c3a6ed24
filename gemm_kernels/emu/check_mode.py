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

import html
import inspect
from dataclasses import dataclass, field

from ..check import compare, random_operands

from .errors import EmulatorError

#: the runs of a check: (policy, seed)
ORDERS = (("eager", 0), ("lazy", 0), ("random", 1), ("random", 2), ("random", 3))

#: a B200's SMs: a persistent kernel launches one CTA per SM (one cluster per pair of SMs)
B200_SMS = 148


def b200_launch(entry):
    """The launch a B200 makes for a persistent host entry: min(148, tiles) CTAs, or min(74, tiles)
    clusters of two (the entries cap the grid at the number of tiles), as config for ``entry``; None for
    a kernel that is not persistent. On the emulator the persistent chapters default to a few CTAs that
    each take several tiles; at the test shapes a B200 gives each CTA one tile, where a bug that balances
    out over many tiles (a release to the wrong stage) shows."""
    params = inspect.signature(entry).parameters
    if "num_clusters" in params:
        return {"num_clusters": B200_SMS // 2}
    if "num_ctas" in params:
        return {"num_ctas": B200_SMS}
    return None


@dataclass
class Run:
    policy: str
    seed: int
    error: EmulatorError | None = None  # the diagnostic, if the emulator stopped the kernel
    mismatch: str | None = None  # the numpy comparison's report, if the result was wrong
    launch: str = ""  # the launch geometry, where a check runs more than one

    @property
    def ok(self):
        return self.error is None and self.mismatch is None

    def text(self):
        order = self.policy if self.policy != "random" else f"random (seed {self.seed})"
        if self.launch:
            order += f", {self.launch}"
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

    def groups(self):
        """[(orders, outcome)]: runs with the same outcome (the same diagnostic and first line, or
        "ok") together, in the order first seen, so a report repeated under every order reads once."""
        out = {}
        for r in self.runs:
            order, _, outcome = r.text().partition(": ")
            out.setdefault(outcome, []).append(order)
        return [(orders, outcome) for outcome, orders in out.items()]

    def _repr_html_(self):
        groups = self.groups()
        first_orders, first = groups[0]
        head = (f"<p style='margin:0'><b>{html.escape(self.summary())}</b></p>"
                f"<p style='margin:0.3em 0 0 1em'>{html.escape(', '.join(first_orders))}: {html.escape(first)}</p>")
        rest = "".join(f"<p style='margin:0.3em 0 0 1em'>{html.escape(', '.join(o))}: {html.escape(t)}</p>"
                       for o, t in groups[1:])
        if rest:
            n = sum(len(o) for o, _ in groups[1:])
            head += (f"<details style='margin-left:1em'><summary>the other {n} completion order"
                     f"{'s' if n > 1 else ''}, with {'another report' if len(groups) == 2 else 'other reports'}"
                     f"</summary>{rest}</details>")
        return f"<div style='font-family:monospace;font-size:12px;white-space:pre-wrap'>{head}</div>"

    def __repr__(self):
        lines = [self.summary()] + [f"  {', '.join(o)}: {t}" for o, t in self.groups()]
        return "\n".join(lines)

    def show(self):
        """Display the verdict: in a notebook each distinct report once (orders that gave another
        behind a toggle); elsewhere printed, one line per distinct report."""
        try:
            from IPython import get_ipython  # why inside: IPython is heavy and only a notebook needs it
            from IPython.display import display  # (same)

            if get_ipython() is not None:
                display(self)
                return
        except ImportError:  # pragma: no cover
            pass
        print(repr(self))


def check(run_once, orders=ORDERS, launch="", verdict=None):
    """``run_once(policy, seed)`` runs the kernel and returns None (right) or a mismatch report; an
    EmulatorError it raises is recorded as that run's diagnostic."""
    verdict = Verdict() if verdict is None else verdict
    for policy, seed in orders:
        run = Run(policy, seed, launch=launch)
        try:
            run.mismatch = run_once(policy, seed)
        except EmulatorError as exc:
            run.error = exc
        verdict.runs.append(run)
    return verdict


def check_entry(entry, a, b, orders=ORDERS, b200=False, **config):
    """Check a host entry (``CHAPTERS[n].entry`` or a variant's ``entry``) on operands a, b. With ``b200``
    a persistent kernel runs every order twice: at the emulator's default launch (a few CTAs, several
    tiles each) and at a B200's (``b200_launch``)."""
    def runner(extra):
        def once(policy, seed):
            d = entry(a, b, backend="emulator", policy=policy, seed=seed, **config, **extra)
            res = compare(d, a, b)
            return None if res.ok else res.report()
        return once

    geometry = b200_launch(entry) if b200 else None
    if geometry is None:
        return check(runner({}), orders)
    verdict = check(runner({}), orders, launch="emulator launch")
    (name, count), = geometry.items()
    what = "CTAs" if name == "num_ctas" else "clusters"
    return check(runner(geometry), orders, launch=f"B200 launch (min({count}, tiles) {what})", verdict=verdict)


def check_variant(variant, m, n, k, orders=ORDERS):
    """For the chapters' "Break it" cells: a planted-bug variant (book_helpers.variant) under every
    order; shows the verdict (each distinct report once) and returns it."""
    a, b = random_operands(m, n, k)
    verdict = check_entry(variant.entry, a, b, orders)
    verdict.show()
    return verdict
