"""Small functions the chapter notebooks call, so that every listing, diff, SASS excerpt and check
on a page is produced from the package itself, never pasted.

* ``show_source(obj)``: the source of a kernel or device function, as a highlighted listing.
* ``show_diff(chapter)``: a unified diff of chapter N's kernel against chapter N-1's.
* ``show_sass(chapter, patterns)``: the lines of the chapter's real sm_100a build that match.
* ``use_backend(BACKEND)``: the one switch at the top of each chapter ("auto", "emulator",
  "blackwell"; also the environment variable ``GEMM_BOOK_BACKEND``), used by every cell below.
* ``run_and_verify(chapter, m, n, k)``: run on the chapter's backend and compare with numpy; says
  which machine ran and raises if the result is wrong.
* ``variant(chapter, replace)``: the chapter's kernel (or, from step 5, its kernel factory) with a
  few lines edited (for "Break it" exercises), run on the emulator through the chapter's own host
  entry.
* ``trace_of``, ``lane_busy``, ``busy_intervals``, ``overlap``, ``tma_bytes``, ``model_time``,
  ``mark_stages``: numbers and shading beside the timelines, and the facts the hidden cells assert
  about them, on the emulator's virtual clock (a model, not a measurement).
* ``arrival_count(chapter, barrier)``: the count a kernel initialises a barrier with.
* ``says(phrase, *values)``: a hidden cell's check that a phrase of the page states the computed
  values (``gemm_kernels/prose_lint.py``: every number in the prose is glued or said).
* ``shows(phrase, output, *expected)``: a hidden cell's check that a sentence about an output (a
  report, a table, a figure) is borne out by it (``gemm_kernels/claims_lint.py``).
"""
from __future__ import annotations

import difflib
import inspect
import os
import re
import textwrap
import types
from dataclasses import dataclass, field

import numpy as np

from . import schedule
from .chapters import CHAPTERS
from .claims_lint import shows  # noqa: F401  (re-exported for the pages' hidden cells)
from .emu.check_mode import b200_launch
from .prose_lint import says  # noqa: F401  (re-exported for the pages' hidden cells)

#: The sm_100a opcodes the early chapters teach (nvdisasm spelling).
TAUGHT_OPCODES = ("UTCHMMA", "UTCBAR", "LDTM", "UTCATOMSWS", "UTMALDG", "UTMASTG", "SYNCS")


class _Listing:
    """Code shown on a page: highlighted HTML whose long lines wrap with a hanging indent (the
    kernels' lines are up to 120 characters; the book's text column is narrower), with Markdown and
    plain-text forms for other front ends."""

    def __init__(self, text, lang, note=""):
        self.text, self.lang, self.note = text.rstrip("\n"), lang, note

    def _repr_html_(self):
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name

        html = highlight(self.text, get_lexer_by_name(self.lang),
                         HtmlFormatter(noclasses=True, nowrap=True, style="default"))
        # pygments closes its spans at every line end, so the output splits into lines safely
        rows = []
        for raw, line in zip(self.text.split("\n"), html.rstrip("\n").split("\n")):
            tint = ""
            if self.lang == "diff" and raw[:1] in "+-" and not raw.startswith(("+++", "---")):
                tint = "background:#e6ffec;" if raw.startswith("+") else "background:#ffebe9;"
            rows.append(f'<span style="display:block;padding-left:6ch;text-indent:-6ch;{tint}">'
                        f'{line or "&#8203;"}</span>')
        body = "".join(rows)
        note = f'<p style="margin:0 0 0.3em 0">{self.note}</p>' if self.note else ""
        return (f'{note}<pre style="white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;line-height:1.35;'
                f'background:#f8f8f8;color:#1a1a1a;border:1px solid #e0e0e0;border-radius:4px;padding:8px 10px;'
                f'margin:0">{body}</pre>')

    def _repr_markdown_(self):
        note = f"{self.note}\n\n" if self.note else ""
        return f"{note}```{self.lang}\n{self.text}\n```"

    def __repr__(self):
        return (self.note + "\n" if self.note else "") + self.text


def _display_code(text, lang, note=""):
    """Show code in a notebook (highlighted, wrapping); print it elsewhere."""
    listing = _Listing(text, lang, note)
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(listing)
            return
    except ImportError:  # pragma: no cover - IPython is part of the book's set-up
        pass
    print(repr(listing))


def _package_path(path):
    """``gemm_kernels/kernels/v7_warp_specialized.py`` for a file of the package."""
    return os.path.relpath(path, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _function(obj):
    """The Python function behind a chapter number, a ``cuda.jit`` kernel or device function."""
    if isinstance(obj, int):
        obj = CHAPTERS[obj].kernel
    return getattr(obj, "py_func", obj)


def source(obj):
    """Source text of a chapter's kernel (``obj`` an int), a kernel, or a device function."""
    return textwrap.dedent(inspect.getsource(_function(obj)))


def arrival_count(chapter, barrier):
    """The arrival count chapter ``chapter``'s kernel initialises a barrier with (``barrier``: its
    offset's name, e.g. ``"TMA2MMA"``), read from the kernel's ``mbarrier_init`` line and evaluated in
    its module, so a page's sentence about it is checked against the kernel itself."""
    fn = _function(chapter)
    m = re.search(rf"mbarrier_init\((?:pipeline\.barrier\(base \+ {barrier}, \w+\)|{barrier.lower()}), "
                  rf"([^)#\n]+)\)", source(chapter))
    if m is None:
        raise ValueError(f"chapter {chapter}'s kernel initialises no barrier {barrier}")
    return eval(m.group(1), dict(vars(inspect.getmodule(fn))))


def show_source(obj, *, start=None, stop=None):
    """Display the source of ``obj``; ``start``/``stop``: optional first and last line containing
    those strings, to show one part of a long function."""
    text = source(obj)
    if start or stop:
        lines = text.splitlines()
        i = next(n for n, line in enumerate(lines) if start in line) if start else 0
        j = next(n for n, line in enumerate(lines) if n >= i and stop in line) if stop else len(lines) - 1
        text = "\n".join(lines[i:j + 1])
    _display_code(text, "python")


def kernel_diff(chapter, previous=None, *, context=3):
    """Unified diff of chapter ``chapter``'s kernel source against chapter ``previous``'s (default:
    the chapter before), generated from the package sources."""
    previous = chapter - 1 if previous is None else previous
    old, new = CHAPTERS[previous], CHAPTERS[chapter]
    old_src = source(previous).splitlines(keepends=True)
    new_src = source(chapter).splitlines(keepends=True)
    return "".join(difflib.unified_diff(old_src, new_src, fromfile=f"{old.module}.py:{old.kernel_name}",
                                        tofile=f"{new.module}.py:{new.kernel_name}", n=context))


def show_diff(chapter, previous=None, *, context=3):
    """Display ``kernel_diff`` as a highlighted diff, with a count of lines added and removed."""
    diff = kernel_diff(chapter, previous, context=context)
    body = [line for line in diff.splitlines() if not line.startswith(("---", "+++"))]
    added = sum(1 for line in body if line.startswith("+"))
    removed = sum(1 for line in body if line.startswith("-"))
    _display_code(diff, "diff", note=f"{added} lines added, {removed} removed:")


# ------------------------------------------------------------------------------------------
# SASS
# ------------------------------------------------------------------------------------------

def build_chapter(chapter):
    """The chapter's kernel built for sm_100a (no GPU needed): a ``runtime.build.Build``."""
    from .runtime.build import build
    from .runtime.offline import target_device

    ch = CHAPTERS[chapter]
    with target_device((10, 0)):
        return build(ch.kernel, ch.signature)


_SASS_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*$")


def sass_lines(built, patterns=TAUGHT_OPCODES):
    """[(address, instruction)] of the SASS lines whose text contains one of ``patterns``."""
    out = []
    for line in built.sass.splitlines():
        m = _SASS_LINE.match(line)
        if m and any(p in m.group(2) for p in patterns):
            out.append((m.group(1), re.sub(r"\s+", " ", m.group(2)).rstrip(" ;")))
    return out


def show_sass(chapter, patterns=TAUGHT_OPCODES, *, limit=40):
    """Print the chapter's sm_100a SASS lines that contain ``patterns`` and a count of each."""
    built = build_chapter(chapter)
    lines = sass_lines(built, patterns)
    head = (f"chapter {chapter}: {CHAPTERS[chapter].kernel_name}, built for {built.arch}\n"
            f"{built.registers} registers/thread, {built.local_bytes} B local memory, "
            f"{built.spill_stores + built.spill_loads} B spilled\n"
            + "lines containing " + ", ".join(f"{p}: {sum(p in ins for _, ins in lines)}" for p in patterns))
    shown = [f"/*{addr}*/ {ins}" for addr, ins in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"... ({len(lines) - limit} more)")
    _display_code(head + "\n\n" + "\n".join(shown), "text")
    return built


# ------------------------------------------------------------------------------------------
# running and checking
# ------------------------------------------------------------------------------------------

def best_backend():
    """("blackwell", why) when a B200 (compute capability 10.x) is visible, else ("emulator", why)."""
    try:
        from .runtime.device import gpu_info

        info = gpu_info()
    except Exception as exc:  # a broken driver install counts as "no GPU"
        return "emulator", f"no usable CUDA driver ({type(exc).__name__})"
    if info is None:
        return "emulator", "no CUDA GPU found"
    if tuple(info.compute_capability)[0] == 10:
        return "blackwell", f"found {info.name}"
    return "emulator", f"found {info.name}, which is not a B200"


#: the environment variable that sets a chapter's ``BACKEND`` without editing the page
BACKEND_ENV = "GEMM_BOOK_BACKEND"
BACKEND_CHOICES = ("auto", "emulator", "blackwell")
_chosen = None  # (backend, why) once a chapter called use_backend


def use_backend(choice="auto"):
    """The one switch at the top of each chapter: every run, trace and break-it cell of the page
    asks ``backend()`` afterwards. ``"auto"``: a B200 when one is visible, else the emulator;
    ``"emulator"`` or ``"blackwell"`` force one (``"blackwell"`` without a B200 is refused here,
    before anything runs). Prints the choice and why; returns the backend."""
    global _chosen
    choice = (choice or "auto").strip().lower()
    if choice not in BACKEND_CHOICES:
        raise ValueError(f"BACKEND = {choice!r}: choose one of {', '.join(BACKEND_CHOICES)} "
                         f"(or set {BACKEND_ENV} to one of them)")
    found, why = best_backend()
    if choice == "blackwell" and found != "blackwell":
        raise RuntimeError(f"BACKEND = 'blackwell', but {why}: set BACKEND (or {BACKEND_ENV}) to 'auto' or "
                           f"'emulator' on this machine")
    _chosen = ("emulator", "chosen with BACKEND") if choice == "emulator" else (found, why)
    print(f"BACKEND = {choice!r}: runs and traces on the {_chosen[0]} ({_chosen[1]})")
    return _chosen[0]


def backend():
    """(backend, why) the chapter's run, trace and break-it cells use (``use_backend``; default: auto)."""
    return _chosen or best_backend()


def run_and_verify(chapter, m, n, k, *, gpu_shape=None, seed=0, **config):
    """Run chapter ``chapter`` on the chapter's backend and compare with the numpy reference.

    ``m, n, k``: the shape on the emulator; ``gpu_shape``: the shape on a B200 (default: the same). On
    the emulator a persistent chapter launches as a B200 does (``check_mode.b200_launch``) unless
    ``config`` sets its CTA or cluster count.
    Prints which machine ran, the error and the tolerance; raises AssertionError on a mismatch."""
    from .check import TOLERANCE_FORMULA, compare, random_operands, reference, tolerance

    where, why = backend()
    if where == "blackwell" and gpu_shape is not None:
        m, n, k = gpu_shape
    a, b = random_operands(m, n, k, seed=seed)
    if where == "emulator" and not {"num_ctas", "num_clusters"} & set(config):
        # a persistent chapter runs at a B200's launch (one tile per CTA at small shapes), as on the chip
        config = {**(b200_launch(CHAPTERS[chapter].entry) or {}), **config}
    d = CHAPTERS[chapter].entry(a, b, backend=where, **config)
    cmp = compare(d, a, b)
    ref = reference(a, b)
    tol = tolerance(a, b, ref)
    err = np.abs(np.asarray(d, dtype=np.float32) - ref.astype(np.float32))
    worst = np.unravel_index(np.argmax(err / tol), err.shape)
    print(f"backend: {where} ({why})")
    print(f"shape:   M={m}, N={n}, K={k}")
    print(f"max |D - numpy| = {cmp.max_abs:.3g}")
    print(f"tolerance at the worst element {tuple(int(i) for i in worst)}: {tol[worst]:.3g}")
    print(f"  ({TOLERANCE_FORMULA};")
    print(f"   over all elements it ranges {tol.min():.3g} .. {tol.max():.3g})")
    print(f"{cmp.mismatches} of {cmp.total} elements out of tolerance -> {'OK' if cmp.ok else 'FAIL'}")
    assert cmp.ok, cmp.report()
    return d


# ------------------------------------------------------------------------------------------
# variants for "Break it" exercises
# ------------------------------------------------------------------------------------------

SHARED_WRITEBACK = "subtiled_writeback"  # the device function of epilogue.py that steps 7-10 call
SCHEDULE_FUNCTIONS = ("clc_request", "clc_next")  # schedule.py's device functions a variant may edit (step 10)


@dataclass
class Variant:
    """A chapter's kernel with some lines edited, and the chapter's host entry bound to it."""

    chapter: int
    kernel: types.FunctionType
    entry: types.FunctionType
    diff: str
    edited: str = ""  # the edited source (of the kernel, or of its factory) ...
    first_line: int = 1  # ... whose first line is this line of the kernel's file (reports name these lines)
    helper_edited: str = ""  # the edited source of the shared writeback (epilogue.subtiled_writeback), if edited ...
    helper_first_line: int = 1  # ... whose first line is this line of epilogue.py
    schedule_edited: dict = field(default_factory=dict)  # schedule.py function name -> (edited source, first line)

    def show(self):
        _display_code(self.diff, "diff")

    def run(self, m, n, k, *, policy="lazy", seed=0):
        """Run on the emulator; return the exception the emulator raised, or None (then also
        print how the result compares with numpy)."""
        from .check import compare, random_operands
        from .emu import EmulatorError

        if backend()[0] != "emulator":
            print("(a planted bug runs on the emulator even with BACKEND = 'blackwell': on the GPU it may hang "
                  "or corrupt memory silently; gemm_kernels.instrument.launch_guarded is the guarded way there)")
        a, b = random_operands(m, n, k)
        try:
            d = self.entry(a, b, backend="emulator", policy=policy, seed=seed)
        except EmulatorError as exc:
            return exc
        print("no emulator error; against numpy:")
        print(textwrap.fill(compare(d, a, b).report(), width=76, initial_indent="  ", subsequent_indent="  "))
        return None


def variant(chapter, replace):
    """Chapter ``chapter``'s kernel with each ``old -> new`` of ``replace`` applied to its source
    (``old`` must occur; every occurrence is replaced), compiled in a copy of the kernel module's
    globals, with the chapter's host entry rebound to it. Steps 5-9 build their kernels with a
    factory (``make_kernel(depth, ...)``) that the host entry calls, so there the factory is edited.
    Steps 7-10 write a tile back with epilogue.subtiled_writeback: an ``old`` found in it is
    replaced in a copy that only this variant's kernel calls. For the emulator: nothing is added
    to the package."""
    ch = CHAPTERS[chapter]
    module = ch._mod()
    factory = getattr(module, "make_kernel", None)
    if factory is not None:
        name = "make_kernel"
        edited_obj = inspect.unwrap(factory)
        src = textwrap.dedent(inspect.getsource(edited_obj))
    else:
        name = ch.kernel_name
        edited_obj = _function(chapter)
        src = source(chapter)
    # the edited code keeps the file's line numbers (a report names a line the reader can find)
    first_line = inspect.getsourcelines(edited_obj)[1]
    edited = src
    # steps 7-10 write a tile back with the shared device function epilogue.subtiled_writeback: an
    # edit of its lines is applied to a copy of it that only this variant's kernel calls
    helper = module.__dict__.get(SHARED_WRITEBACK)
    helper_src = textwrap.dedent(inspect.getsource(inspect.unwrap(helper.py_func))) if helper is not None else ""
    helper_edited = helper_src
    # the scheduler's device functions (schedule.py: chapter 10's cluster launch control) the same way
    sched_src = {fn: textwrap.dedent(inspect.getsource(inspect.unwrap(getattr(schedule, fn).py_func)))
                 for fn in SCHEDULE_FUNCTIONS} if "schedule" in module.__dict__ else {}
    sched_edited = dict(sched_src)
    for old, new in replace.items():
        if old not in edited and old not in helper_edited and not any(old in v for v in sched_edited.values()):
            where = f"{ch.module}.{name}" + (f" or epilogue.{SHARED_WRITEBACK}" if helper is not None else "")
            raise ValueError(f"{old!r} does not occur in {where}" + (" or schedule.py" if sched_src else ""))
        edited = edited.replace(old, new)
        helper_edited = helper_edited.replace(old, new)
        sched_edited = {fn: v.replace(old, new) for fn, v in sched_edited.items()}
    diff = "".join(difflib.unified_diff(src.splitlines(keepends=True), edited.splitlines(keepends=True),
                                        fromfile=f"{ch.module}.py (as in the package)",
                                        tofile=f"{ch.module}.py (broken on purpose)", n=2))
    if factory is None:  # a plain function: the emulator runs the kernel's Python source as it is
        edited = "\n".join("" if line.lstrip().startswith("@cuda.jit") else line for line in edited.splitlines())
    module_globals = dict(module.__dict__)
    helper_first_line = 1
    if helper_edited != helper_src:
        helper_module = inspect.getmodule(helper.py_func)
        helper_first_line = inspect.getsourcelines(helper.py_func)[1]
        diff += "".join(difflib.unified_diff(
            helper_src.splitlines(keepends=True), helper_edited.splitlines(keepends=True),
            fromfile="epilogue.py (as in the package)", tofile="epilogue.py (broken on purpose)", n=2))
        helper_globals = dict(helper_module.__dict__)
        exec(compile("\n" * (helper_first_line - 1) + helper_edited,  # noqa: S102
                     f"<variant of {_package_path(helper_module.__file__)}>", "exec"), helper_globals)
        module_globals[SHARED_WRITEBACK] = helper_globals[SHARED_WRITEBACK]
    schedule_edited = {}
    changed = [fn for fn in sched_src if sched_edited[fn] != sched_src[fn]]
    if changed:
        # a copy of the schedule module with the edited functions, seen by this variant's kernel only
        copy = types.ModuleType(schedule.__name__)
        copy.__dict__.update(schedule.__dict__)
        for fn in changed:
            line = inspect.getsourcelines(getattr(schedule, fn).py_func)[1]
            diff += "".join(difflib.unified_diff(
                sched_src[fn].splitlines(keepends=True), sched_edited[fn].splitlines(keepends=True),
                fromfile="schedule.py (as in the package)", tofile="schedule.py (broken on purpose)", n=2))
            exec(compile("\n" * (line - 1) + sched_edited[fn],  # noqa: S102
                         f"<variant of {_package_path(schedule.__file__)}>", "exec"), copy.__dict__)
            schedule_edited[fn] = (sched_edited[fn], line)
        module_globals["schedule"] = copy
    code = compile("\n" * (first_line - 1) + edited, f"<variant of {_package_path(module.__file__)}>",
                   "exec")
    exec(code, module_globals)  # noqa: S102
    entry = inspect.unwrap(ch.entry)
    new_entry = types.FunctionType(entry.__code__, module_globals, entry.__name__, entry.__defaults__,
                                   entry.__closure__)
    new_entry.__kwdefaults__ = entry.__kwdefaults__
    return Variant(chapter, module_globals[name], new_entry, diff, edited, first_line,
                   helper_edited if helper_edited != helper_src else "", helper_first_line, schedule_edited)


# -- numbers beside a timeline (all on the emulator's virtual clock: a model, not a measurement) ------

def lane_busy(trace, lane, op, cta=0):
    """Total time (ns) during which ``lane`` of CTA ``cta`` has at least one ``op`` event running
    (overlapping events counted once)."""
    return sum(end - start for start, end in busy_intervals(trace, lane, op, cta))


def busy_intervals(trace, lane, op, cta=0):
    """The merged [start, end] intervals during which ``lane`` of CTA ``cta`` runs an ``op`` event
    (lane names as the timelines show them, e.g. "TMA", "tensor core", "warp 0")."""
    from .timeline import lane_name

    spans = sorted((e.start, e.end) for e in trace.events
                   if e.cta == cta and lane_name(re.sub(r"^CTA \d+ ", "", e.lane)) == lane and e.op == op)
    merged = []
    for st, en in spans:
        if merged and st <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], en)
        else:
            merged.append([st, en])
    return merged


def overlap(trace, first, second, cta=0):
    """Time (ns) during which both ``first`` and ``second`` run, each a (lane, op) pair: e.g. how
    long the TMA engine loads while the tensor core computes."""
    a, b = busy_intervals(trace, *first, cta=cta), busy_intervals(trace, *second, cta=cta)
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def mark_stages(trace):
    """Set ``stage`` of every TMA load from its barrier's name (``tma2mma[2]`` -> 2), so timelines
    shade loads by ring stage; return the trace."""
    for e in trace.events:
        m = re.search(r"\[(\d+)\]$", e.barrier or "")
        if e.op == "tma.load" and m:
            e.stage = int(m.group(1))
    return trace


#: keyword arguments that only the emulator understands (dropped for an on-chip trace)
_EMULATOR_ONLY = ("policy", "seed")


def trace_of(chapter, a, b, **config):
    """The timeline of chapter ``chapter`` on the chapter's backend: on the emulator its virtual
    clock; on a B200 the on-chip ``%globaltimer`` stamps (``bench.chapter_gpu_trace``). TMA loads
    are marked by ring stage."""
    if backend()[0] == "blackwell":
        from .bench import chapter_gpu_trace

        gpu_config = {k: v for k, v in config.items() if k not in _EMULATOR_ONLY}
        trace, ok, text = chapter_gpu_trace(chapter, a.shape[0], b.shape[0], a.shape[1], **gpu_config)
        assert ok, text
        return mark_stages(trace)
    return emulator_trace(chapter, a, b, **config)


def emulator_trace(chapter, a, b, **config):
    """The timeline of chapter ``chapter`` on the emulator's virtual clock, TMA loads marked by stage."""
    launched = CHAPTERS[chapter].entry(a, b, backend="emulator", trace=True, **config)
    return mark_stages(launched.launch.trace)


def tma_bytes(trace, cta=0):
    """Bytes brought into CTA ``cta``'s shared memory by TMA loads in ``trace``."""
    return sum(e.nbytes for e in trace.events if e.op == "tma.load" and e.cta == cta)


def model_time(trace):
    """(ns from the first to the last event, share of that time CTA 0's tensor core is busy)."""
    start, end = trace.span()
    return end - start, lane_busy(trace, "tensor core", "mma") / (end - start)


class _Table:
    """A table that fits the book's text column: fixed layout, wrapping cells, `code` spans."""

    HEAD = ("barrier", "arrivals that complete a phase", "who waits, for which phase",
            "the protected data may be reused when")
    WIDTHS = (20, 29, 22, 29)

    def __init__(self, rows, head=None):
        self.rows, self.head = rows, head or self.HEAD

    @staticmethod
    def _cell(text):
        import html

        parts = text.split("`")
        return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))

    def _repr_html_(self):
        cols = "".join(f'<col style="width:{w}%">' for w in self.WIDTHS)
        th = "".join(f'<th style="text-align:left;vertical-align:bottom;padding:4px 6px">{self._cell(h)}</th>'
                     for h in self.head)
        body = "".join("<tr>" + "".join(f'<td style="vertical-align:top;padding:4px 6px;overflow-wrap:anywhere;border-top:1px solid #e0e0e0">'
                                        f"{self._cell(c)}</td>" for c in row) + "</tr>" for row in self.rows)
        return (f'<table style="table-layout:fixed;width:100%;font-size:0.85em;border-collapse:collapse">'
                f"<colgroup>{cols}</colgroup><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>")

    def _repr_markdown_(self):
        lines = ["| " + " | ".join(self.head) + " |", "|" + "---|" * len(self.head)]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)

    def __repr__(self):
        return self._repr_markdown_()


def handoff_table(rows):
    """Display a barrier handoff table: rows of (barrier, arrivals, waiters and phase, reuse rule);
    text in backquotes is set as code."""
    table = _Table(rows)
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(table)
            return
    except ImportError:  # pragma: no cover
        pass
    print(repr(table))


def first_line(exc):
    """A report's first line: the defect, at its kernel line (the chain and the dump follow)."""
    return str(exc).split("\n", 1)[0]


def kernel_line(variant_, snippet):
    """The line of the kernel's file on which ``snippet`` starts in ``variant_``'s edited source (the
    line a report names: an edited kernel keeps its file's line numbers)."""
    i = variant_.edited.find(snippet)
    if i < 0:  # a line of the edited shared writeback: its line in epilogue.py
        j = variant_.helper_edited.find(snippet)
        if j < 0:
            raise ValueError(f"{snippet!r} is not in the edited source of chapter {variant_.chapter}'s kernel")
        return variant_.helper_first_line + variant_.helper_edited.count("\n", 0, j)
    return variant_.first_line + variant_.edited.count("\n", 0, i)


def names_line(exc, variant_, snippet):
    """Whether the report's first line names the kernel line of ``snippet`` in ``variant_``."""
    return f">:{kernel_line(variant_, snippet)} (" in first_line(exc)


def report(exc, width=76):
    """Print an emulator diagnostic: its class and its message, wrapped to the page."""
    print(f"{type(exc).__name__}:")
    for para in str(exc).splitlines():
        indent = len(para) - len(para.lstrip())
        print(textwrap.fill(para.strip(), width=width, initial_indent=" " * (indent + 2),
                            subsequent_indent=" " * (indent + 4)))
