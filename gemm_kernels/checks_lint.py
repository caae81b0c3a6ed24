"""No checking code in sight: the statements that check a page against its own outputs (``assert``,
myst-nb's ``glue``, ``bh.says``, ``bh.shows``) live in cells the page removes (``remove-cell``) or
whose input it hides (``remove-input``), never in a cell the reader sees.

``visible_checks(path)`` lists the check statements of a page's shown cells: (line in the page,
the statement's first line). ``hide_checks(path)`` moves each top-level check of a shown cell into
a ``remove-cell`` cell right after it (a check defines nothing the cell's later lines use, and it
runs after them, so the cell's output is unchanged); a check nested in a loop or a condition is left
where it is and still listed, to be moved by hand. ``tests/test_hidden_checks.py`` keeps every page
free of them.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

CHECK_CALLS = {"glue", "says", "shows"}
HIDING_TAGS = ("remove-cell", "remove-input", "hide-input")

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _split_cell(body):
    """(option lines, code) of a code cell's body."""
    lines = body.split("\n")
    options = []
    while lines and re.match(r"\s*:[\w-]+:", lines[0]):
        options.append(lines.pop(0))
    if options and lines and not lines[0].strip():
        options.append(lines.pop(0))
    return options, "\n".join(lines)


def _hidden(options):
    return any(tag in line for line in options if line.strip().startswith(":tags:") for tag in HIDING_TAGS)


def _is_check(stmt):
    if isinstance(stmt, ast.Assert):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        return getattr(f, "attr", getattr(f, "id", None)) in CHECK_CALLS
    return False


def _checks(code):
    """(top-level check statements, nested check statements) of a cell's code."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [], []
    top = [s for s in tree.body if _is_check(s)]
    nested = [n for s in tree.body if not _is_check(s) for n in ast.walk(s) if n is not s and _is_check(n)]
    return top, nested


def visible_checks(path):
    """[(page line, statement's first line)] of every check in a cell the page shows."""
    text = Path(path).read_text()
    out = []
    for m in _CELL.finditer(text):
        options, code = _split_cell(m.group(1))
        if _hidden(options):
            continue
        top, nested = _checks(code)
        first = text.count("\n", 0, m.start(1)) + 1 + len(options)
        lines = code.split("\n")
        for s in top + nested:
            out.append((first + s.lineno - 1, lines[s.lineno - 1].strip()))
    return sorted(out)


def _shows_anything(lines):
    """Whether code lines do something a reader should see (more than imports and comments)."""
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return True
    return any(not isinstance(s, (ast.Import, ast.ImportFrom)) for s in tree.body)


def hide_checks(path):
    """Move the top-level checks of every shown cell into a ``remove-cell`` cell after it; returns
    how many statements moved."""
    path = Path(path)
    text = path.read_text()
    moved = 0
    out, pos = [], 0
    for m in _CELL.finditer(text):
        options, code = _split_cell(m.group(1))
        top, _ = _checks(code)
        if _hidden(options) or not top:
            continue
        lines = code.split("\n")
        taken = set()
        chunks = []
        for s in top:
            span = range(s.lineno - 1, s.end_lineno)
            taken.update(span)
            chunks.append("\n".join(lines[i] for i in span))
        # comment lines right above a moved statement go with it
        kept = [line for i, line in enumerate(lines) if i not in taken]
        while kept and not kept[-1].strip():
            kept.pop()
        out.append(text[pos:m.start(1)])
        if not _shows_anything(kept):  # nothing left but imports and comments: hide the whole cell
            rest = [o for o in options if not o.strip().startswith(":tags:")]
            out.append(":tags: [remove-cell]\n" + "\n".join(rest) + ("\n" if rest and rest[-1].strip() else "\n")
                       + code.rstrip("\n") + "\n")
            out.append(text[m.end(1):m.end()])
        else:
            new_cell = "\n".join(options) + ("\n" if options else "") + "\n".join(kept) + "\n"
            hidden = "```{code-cell} ipython3\n:tags: [remove-cell]\n\n" + "\n".join(chunks) + "\n```"
            out.append(new_cell)
            out.append(text[m.end(1):m.end()])
            out.append("\n\n" + hidden)
        pos = m.end()
        moved += len(top)
    out.append(text[pos:])
    path.write_text("".join(out))
    return moved


if __name__ == "__main__":  # pragma: no cover
    import sys

    for name in sys.argv[1:]:
        print(name, hide_checks(name), "checks moved; left:", visible_checks(name))
