"""Where in the kernel source an operation runs: its source stack, limited to kernel code, like a Python
traceback. Reports name these sites so that a learner can go to the line. An operation issued inside
the package's shared device helpers is named by the kernel line that called the outermost helper, then
each helper line down to the PTX wrapper: ``kernels/v10_any_shape.py:213 (gemm_v10_kernel), in
schedule.py:79 (clc_next), in pipeline.py:75 (wait_cluster)``. Which code is a helper is derived, not
listed: every device function that a kernel reaches through the emulator's rebinding and that lives
outside the kernel's own file (``mark_helper``, called by ``rebind.py``). A site is interned to a small
int, so that shadow memory can keep one per byte cheaply."""
from __future__ import annotations

import dis
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG = os.path.dirname(_HERE)
_INTERNAL = (_HERE + os.sep, os.path.join(_PKG, "ptx") + os.sep, os.path.join(_PKG, "rebinding.py"),
             os.path.dirname(os.path.abspath(os.__file__)))
_ROOT = os.path.dirname(_PKG)

_KERNELS = os.path.join(_PKG, "kernels") + os.sep
_HOST = tuple(os.path.join(_PKG, "kernels", p) for p in ("host.py", "tensor_maps.py", "__init__.py"))

_INTERNAL_CODE, _HELPER_CODE, _KERNEL_CODE = 0, 1, 2
_code_kind = {}  # code object -> one of the three kinds above
_site_ids = {}  # (code, line[, helper code, helper line]) -> id
_site_text = ["(unknown site)"]  # id -> "module:line"


def _kind(code):
    """Emulator / PTX-twin / library code, a shared device helper, or kernel code."""
    v = _code_kind.get(code)
    if v is None:
        f = code.co_filename
        # ("<variant of ...>": a kernel edited by book_helpers.variant is kernel code; "<frozen ...>" is not)
        if f.startswith(_INTERNAL) or "site-packages" in f or (f.startswith("<") and not f.startswith("<variant")):
            v = _INTERNAL_CODE
        elif f.startswith(_PKG + os.sep) and not f.startswith(_KERNELS) or f.startswith(_HOST):
            # the package's host side (the launch in kernels/host.py, book_helpers, ...): an operation
            # completed by the emulator's scheduler, not by a kernel line, must not be named after it
            v = _INTERNAL_CODE
        else:
            v = _KERNEL_CODE
        _code_kind[code] = v
    return v


def mark_helper(code):
    """``code`` is a device function a kernel calls from another file: a shared helper (its lines follow
    the kernel's calling line in a site)."""
    f = code.co_filename
    # (the package's device functions, and book_helpers.variant's edited copies of them; a test's own
    # device functions stay kernel code)
    if f.startswith(_PKG + os.sep) and not f.startswith(_INTERNAL) or f.startswith("<variant of gemm_kernels"):
        _code_kind[code] = _HELPER_CODE


def _is_internal(code):
    return _kind(code) == _INTERNAL_CODE


def _where(code, line):
    path = code.co_filename
    rel = (os.path.relpath(path, _ROOT) if path.startswith(_ROOT)
           else path if path.startswith("<") else os.path.basename(path))
    return f"{rel}:{line} ({code.co_name})"


_site_keys = [None]  # id -> (code, line[, helper code, helper line])


def intern(code, line, *stack):
    """The site id of ``line`` of ``code``, with ``stack``: (helper code, line) pairs from the outermost
    helper it calls down to the innermost."""
    key = (code, line, *stack)
    sid = _site_ids.get(key)
    if sid is None:
        sid = _site_ids[key] = len(_site_text)
        _site_keys.append(key)
        _site_text.append(", in ".join(_where(c, n) for c, n in ((code, line), *stack)))
    return sid


def site(depth=1):
    """The interned site of the kernel line that (directly or through twins and shared helpers)
    called the caller."""
    return site_of_frame(sys._getframe(depth + 1))


def site_of_frame(f):
    """The interned site of the kernel line that frame ``f`` (or a frame below it) runs: for a blocked
    thread, its greenlet's suspended frame gives the kernel line it waits at."""
    helpers = []  # innermost first
    kinds = _code_kind
    while f is not None:
        code = f.f_code
        kind = kinds.get(code)
        if kind is None:
            kind = _kind(code)
        if kind == _KERNEL_CODE:
            return intern(code, f.f_lineno, *reversed(helpers))
        if kind == _HELPER_CODE:
            helpers.append((code, f.f_lineno))
        f = f.f_back
    if helpers:  # no kernel frame: the outermost helper leads
        helpers.reverse()
        return intern(*helpers[0], *helpers[1:])
    return 0


def thread_site(thread):
    """The kernel line a blocked thread waits at, as text, or "" when it is not known."""
    g = getattr(thread, "greenlet", None)
    f = getattr(g, "gr_frame", None)
    sid = site_of_frame(f) if f is not None else 0
    return _site_text[sid] if sid else ""


def text(sid):
    """``module:line (function)`` of an interned site."""
    return _site_text[sid]


def here():
    """The kernel line running now, as text (for a report raised inside a twin)."""
    return _site_text[site(2)]


def _line_code(sid):
    """(code, line, instructions) of kernel line ``sid``, or None when it is not a known site."""
    key = _site_keys[sid] if 0 < sid < len(_site_keys) else None
    if key is None:
        return None
    try:
        return key[0], key[1], list(dis.get_instructions(key[0]))
    except TypeError:
        return None


def _locals_read(ins, line):
    """The local variables line ``line`` reads, in order (a tuple argval names a pair of them)."""
    return [i.argval for i in ins if i.opname.startswith("LOAD_FAST") and i.positions and i.positions.lineno == line]


def _assignments(ins, name):
    """The lines that assign local variable ``name``, in order."""
    return sorted({i.positions.lineno for i in ins if i.opname.startswith("STORE_FAST") and i.positions
                   and i.positions.lineno and (i.argval == name or isinstance(i.argval, tuple) and name in i.argval)})


def operand_origin(sid):
    """For a report: where the first local variable passed on the kernel line ``sid`` (an operation's
    first operand, e.g. an MMA's D address) was last assigned before that line, read from the kernel's
    bytecode: "<name>, set at <line>", or "" when the line passes no such variable."""
    found = _line_code(sid)
    loads = _locals_read(found[2], found[1]) if found else []
    if not loads:
        return ""
    code, line, ins = found
    name = loads[0][0] if isinstance(loads[0], tuple) else loads[0]
    before = [n for n in _assignments(ins, name) if n < line]
    return f"{name}, set at {_where(code, before[-1])}" if before else ""


def loop_exit(sid):
    """For a report of a missing drain: the first kernel line after the outermost loop that contains
    line ``sid`` (read from the bytecode: a loop is a backward jump over that line), as text; "" when the
    line is in no loop."""
    found = _line_code(sid)
    if not found:
        return ""
    code, line, ins = found
    at = [i.offset for i in ins if i.positions and i.positions.lineno == line]
    if not at:
        return ""
    w = min(at)
    loops = [(i.argval, i.offset) for i in ins if "BACKWARD" in i.opname and i.argval <= w < i.offset]
    if not loops:
        return ""
    end = min(loops)[1]
    after = [i.positions.lineno for i in ins if i.offset > end and i.positions and i.positions.lineno
             and i.positions.lineno > line]
    return _where(code, after[0]) if after else ""


def parity_origin(sid):
    """For a report of a wait that can never pass: the variable that carries the wait's parity on kernel
    line ``sid`` (the last local variable the line reads) and every line of the kernel that assigns it,
    read from the bytecode: " (its parity is <name>, set at <line>, <line>)", or ""."""
    found = _line_code(sid)
    loads = _locals_read(found[2], found[1]) if found else []
    if not loads:
        return ""
    code, _, ins = found
    name = loads[-1][-1] if isinstance(loads[-1], tuple) else loads[-1]
    stores = _assignments(ins, name)
    if not stores:
        return ""
    return f" (its parity is {name}, set at " + ", ".join(_where(code, n) for n in stores) + ")"
