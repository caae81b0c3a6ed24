"""Where in the kernel source an operation runs: ``module:line`` of the innermost frame that is not
the emulator's, a PTX twin's or numpy's. Reports name these sites so that a learner can go to the
line. A site is interned to a small int, so that shadow memory can keep one per byte cheaply."""
from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG = os.path.dirname(_HERE)
_INTERNAL = (_HERE + os.sep, os.path.join(_PKG, "ptx") + os.sep, os.path.join(_PKG, "rebinding.py"),
             os.path.dirname(os.path.abspath(os.__file__)))
_ROOT = os.path.dirname(_PKG)

_internal_code = {}  # code object -> bool (is it emulator/PTX-twin/library code?)
_site_ids = {}  # (code, line) -> id
_site_text = ["(unknown site)"]  # id -> "module:line"


def _is_internal(code):
    v = _internal_code.get(code)
    if v is None:
        f = code.co_filename
        # ("<variant of ...>": a kernel edited by book_helpers.variant is kernel code; "<frozen ...>" is not)
        v = f.startswith(_INTERNAL) or "site-packages" in f or (f.startswith("<") and not f.startswith("<variant"))
        _internal_code[code] = v
    return v


def site(depth=1):
    """The interned site of the kernel line that (directly or through twins) called the caller."""
    f = sys._getframe(depth + 1)
    while f is not None:
        code = f.f_code
        if not _is_internal(code):
            key = (code, f.f_lineno)
            sid = _site_ids.get(key)
            if sid is None:
                path = code.co_filename
                rel = os.path.relpath(path, _ROOT) if path.startswith(_ROOT) else os.path.basename(path)
                sid = _site_ids[key] = len(_site_text)
                _site_text.append(f"{rel}:{f.f_lineno} ({code.co_name})")
            return sid
        f = f.f_back
    return 0


def text(sid):
    """``module:line (function)`` of an interned site."""
    return _site_text[sid]


def here():
    """The kernel line running now, as text (for a report raised inside a twin)."""
    return _site_text[site(2)]
