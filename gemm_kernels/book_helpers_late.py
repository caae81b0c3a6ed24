"""Helpers for chapters 5-9 that ``book_helpers`` does not have (kept small; everything else comes
from ``book_helpers``).

From step 5 on, a chapter's kernel is built by a factory, ``make_kernel(depth, ...)``, and the host
entry calls the factory. ``book_helpers.variant`` edits the kernel that the module exports, which the
entry never runs, so "Break it" cells here edit the factory instead:

* ``factory_variant(chapter, replace)``: the chapter's ``make_kernel`` with each ``old -> new`` of
  ``replace`` applied to its source (``old`` must occur; every occurrence is replaced), compiled in a
  copy of the kernel module's globals, and the chapter's host entry rebound to it. The result is a
  ``book_helpers.Variant``: ``.show()`` prints the diff, ``.run(m, n, k, policy=...)`` runs it on
  the emulator and returns the emulator's exception (or None). Nothing is added to the package.
* ``lane_busy(trace, lane, op)``: nanoseconds of the trace during which ``lane`` runs ``op``
  (overlapping events counted once), to put numbers beside a timeline.
* ``mark_stages(trace)``: give each TMA load event the ring stage it fills (the index of the
  per-stage barrier it signals), so that the timeline shades the loads by stage.
* ``trace_of(chapter, a, b, **config)``: run a chapter on the emulator and return its trace, with
  the loads marked by stage; ``tma_bytes(trace, cta)``: the bytes that CTA's TMA loads brought in;
  ``model_time(trace)``: the span of the trace and the share of it CTA 0's tensor core is busy
  (both on the emulator's virtual clock: a cost model, not a measurement).
"""
from __future__ import annotations

import difflib
import re
import functools
import inspect
import textwrap
import types

from .book_helpers import Variant
from .chapters import CHAPTERS


def factory_variant(chapter, replace):
    ch = CHAPTERS[chapter]
    mod = ch._mod()
    factory = inspect.unwrap(mod.make_kernel)
    src = textwrap.dedent(inspect.getsource(factory))
    edited = src
    for old, new in replace.items():
        if old not in edited:
            raise ValueError(f"{old!r} does not occur in {ch.module}.make_kernel")
        edited = edited.replace(old, new)
    diff = "".join(difflib.unified_diff(src.splitlines(keepends=True), edited.splitlines(keepends=True),
                                        fromfile=f"{ch.module}.py (as in the package)",
                                        tofile=f"{ch.module}.py (broken on purpose)", n=2))
    module_globals = dict(mod.__dict__)
    exec(compile(edited, f"<variant of {ch.module}.make_kernel>", "exec"), module_globals)
    entry = inspect.unwrap(ch.entry)
    new_entry = types.FunctionType(entry.__code__, module_globals, entry.__name__, entry.__defaults__,
                                   entry.__closure__)
    new_entry.__kwdefaults__ = entry.__kwdefaults__
    kernel = functools.partial(module_globals["make_kernel"])
    return Variant(chapter, kernel, new_entry, diff)


def lane_busy(trace, lane, op, cta=0):
    """Total time (ns) during which ``lane`` of CTA ``cta`` has at least one ``op`` event running."""
    spans = sorted((e.start, e.end) for e in trace.events
                   if e.cta == cta and re.sub(r"^CTA \d+ ", "", e.lane) == lane and e.op == op)
    total, cur_s, cur_e = 0.0, None, None
    for s, e in spans:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def mark_stages(trace):
    """Set ``stage`` of every TMA load from its barrier's name (``tma2mma[2]`` -> 2); return the trace."""
    for e in trace.events:
        m = re.search(r"\[(\d+)\]$", e.barrier or "")
        if e.op == "tma.load" and m:
            e.stage = int(m.group(1))
    return trace


def trace_of(chapter, a, b, **config):
    """Run chapter ``chapter`` on the emulator with ``trace=True``; return the trace (stages marked)."""
    launched = CHAPTERS[chapter].entry(a, b, backend="emulator", trace=True, **config)
    return mark_stages(launched.launch.trace)


def tma_bytes(trace, cta=0):
    """Bytes brought into CTA ``cta``'s shared memory by TMA loads in ``trace``."""
    return sum(e.nbytes for e in trace.events if e.op == "tma.load" and e.cta == cta)


def model_time(trace):
    """(ns from the first to the last event, share of that time CTA 0's tensor core is busy)."""
    start, end = trace.span()
    return end - start, lane_busy(trace, "tensor core", "mma") / (end - start)
