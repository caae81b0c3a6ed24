"""The prose lint: no number in the book's text is written by hand.

A number in a sentence (digits, or a number word such as "four", "twice", "half", also inside
"four-stage") goes stale when the kernel changes and nothing notices. So every number in a page's
prose must be one of:

1. **glued**: ``{glue:text}`name``` from a cell that computes it (the number is not in the
   Markdown at all);
2. **said**: inside a phrase that a hidden cell of the same page checks with
   ``bh.says("four kinds of mbarrier", len(kinds))`` (the phrase a string literal, so that the lint
   can read it; whitespace and line breaks in it match any whitespace of the page). At execution ``says`` reads the numbers in
   the phrase and raises unless they equal the values given (so a stale sentence fails the build);
   this lint reads the phrase statically (the first argument must be a string literal) and accepts
   the numbers inside each occurrence of the phrase on that page; a phrase that no longer occurs in
   the page's prose is itself an error (``says`` of a sentence that was rewritten);
3. **a true constant**: a phrase in ``CONSTANTS`` below (a fact of the machine or of CUDA, such as
   "32 lanes"), each with the package value it must equal (``tests/test_prose_numbers.py`` checks
   them);
4. **a reference**: a citation (``CITATIONS``: "PTX ISA 9.7.16.5", "version 9.2", "(December
   2025)", a URL); "chapter 7", "steps 5 and 6", "Exercise 2", an exercise's "**2.**": a name of
   a part of the book, not a count (chapter numbers must exist in ``CHAPTERS``); or a definitional index ("phase 0",
   "parity 1", "thread 0", ``INDICES``). Idioms in which a number word counts nothing ("one of",
   "at once", "the one that", ``IDIOMS``) are not numbers either.

Not prose, so not linted: code cells and code blocks, inline code, math, roles and directives'
options, link targets, labels, comments, and names that contain digits (``fp16``, ``B200``,
``sm_100a``, ``gemm_v7``): a digit glued to letters is part of a name, not a number.

``lint_page(path)`` returns the findings of one page; ``lint_book(root)`` of every page in
``_toc.yml`` and the root page.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

#: Number words. Ordinals ("first") are not counted: they order things, they do not count them.
NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "hundred": 100, "thousand": 1000,
    "million": 10**6, "billion": 10**9, "dozen": 12, "single": 1, "once": 1, "twice": 2,
    "thrice": 3, "double": 2, "doubles": 2, "doubled": 2, "half": 0.5, "halve": 0.5, "halves": 0.5,
    "halved": 0.5, "quarter": 0.25, "triple": 3, "tripled": 3,
}

_WORD_RE = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
#: A number: hex, a decimal (with thousands separators), or a number word. A digit with a letter,
#: underscore or dot glued in front, or a letter/underscore after it, is part of a name.
NUMBER = re.compile(
    r"(?<![\w.])0x[0-9a-fA-F]+\b"
    r"|(?<![\w.])\d+(?:[.,]\d+)*(?![\w])"
    rf"|\b(?:{_WORD_RE})\b", re.IGNORECASE)

#: References to parts of the book: "chapter 7", "steps 5 and 6", "chapters 7-9", "Exercise 2".
REFERENCE = re.compile(
    r"\b(?P<kind>chapters?|steps?|exercises?)\s+(?P<nums>\d+(?:\s*(?:,|and|or|to|-|–|through)\s*\d+)*)",
    re.IGNORECASE)

#: Idioms in which a number word does not count anything ("one of", "at once", "the one that").
IDIOMS = re.compile(
    r"\b(?:one another|one by one|one after (?:another|the other)|no one|(?:the|this|that|which|each|"
    r"any|every|same|other|first|last|next|previous|later|right|wrong|only) one\b|one of\b|at once|once (?:more|again)|"
    r"in half|double-click)", re.IGNORECASE)

#: Definitional indices: a barrier starts in phase 0, a parity is 0 or 1, thread 0, lane 0 and
#: CTA 0, stage 0 and chunk 0 are "the first" (a ring "wraps to 0"), barrier ID 0 is the CTA barrier (`bar.sync 0`, `__syncthreads`), rank 0
#: leads a CTA pair (the even CTA issues `cta_group::2`). A section number of the PTX ISA is a
#: citation ("PTX ISA 9.7.16.5"), not a count. Any other index ("warp 4") is a kernel's choice and must be glued or said.
INDICES = re.compile(r"\b(?:phase 0|parit(?:y|ies) [01](?: (?:or|and) [01])?|(?:thread|lane|CTA|ID|rank|stage|chunk) 0|wraps to 0)\b"
                     r"|\bPTX ISA\s*\(?§?\s*\d+(?:\.\d+)+\)?",
                     re.IGNORECASE)

#: Citations: a section or version number of three or more dotted parts ("9.7.16.5", "4.8.1": no
#: count has that form), a section sign ("§10.16"), a "version 9.2", a date ("31 March 2026", "(2020)"), an arXiv number, a
#: URL, a course number ("CMU 15-442/642"). They name a source; they count nothing of the kernel.
_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|"
           "December")
CITATIONS = re.compile(
    r"(?<![\w.])\d+(?:\.\d+){2,}(?![\w.])"
    r"|\bversion \d+(?:\.\d+)*\b"
    r"|§\s*\d+(?:\.\d+)*"
    rf"|\b(?:\d{{1,2}} )?(?:{_MONTHS}) (?:19|20)\d\d\b|\((?:19|20)\d\d\)"
    r"|\barXiv:? ?\d{4}\.\d{4,5}\b|https?://[^\s>)]+"
    r"|\bCMU (?:course )?\d+-\d+(?:/\d+)?")

#: True constants: a phrase -> (where its value comes from, the value). tests/test_prose_numbers.py
#: checks each value against the package, so the list cannot drift; keep it short.
CONSTANTS = {
    "32 lanes": ("a warp: gemm_kernels.emu.cuda_surface.EmuCuda.warpsize", 32),
    "32 threads": ("a warp: gemm_kernels.emu.cuda_surface.EmuCuda.warpsize", 32),
    "128 lanes": ("TMEM lanes: gemm_kernels.emu.memory.TMEM_LANES", 128),
    "512 columns": ("TMEM columns: gemm_kernels.emu.memory.TMEM_COLS", 512),
    "2-CTA": ("a cta_group::2 pair, CUTLASS's name for it: the bits of v8_two_cta.PAIR", 2),
}


@dataclass(frozen=True)
class Finding:
    page: str
    line: int
    number: str
    context: str

    def __str__(self):
        return f"{self.page}:{self.line}: '{self.number}' in: {self.context}"


@dataclass
class _Text:
    """One block's prose: its text and, per character, whether it is prose (not code or a role)."""
    line: int
    text: str
    prose: list


def _inline_text(token):
    """A paragraph's text with, per character, whether it counts as prose."""
    text, prose = [], []

    def add(s, is_prose):
        text.append(s)
        prose.extend([is_prose] * len(s))

    for child in token.children or []:
        if child.type == "text":
            add(child.content, True)
        elif child.type in ("softbreak", "hardbreak"):
            add(" ", True)
        elif child.type == "code_inline":
            add("`" + child.content + "`", False)
        elif child.type == "myst_role" and child.meta.get("name") == "term":
            # a glossary link ({term}`shown <target>`) shows prose, linted like the rest, unless it
            # shows a code name (`tma2mma`, `tcgen05.mma.cta_group::2`: one word with digits or _.:[)
            shown = re.sub(r"\s*<[^>]*>\s*$", "", child.content)
            add(shown, " " in shown or not re.search(r"[\d_.:\[]", shown))
        elif child.type in ("myst_role", "math_inline", "math_single", "html_inline"):
            add(child.markup or child.content or "", False)
            add("\u2063", False)
        elif child.type == "image":
            add("\u2063", False)
    return "".join(text), prose


def _parser():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.deflist import deflist_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.front_matter import front_matter_plugin
    from mdit_py_plugins.myst_blocks import myst_block_plugin
    from mdit_py_plugins.myst_role import myst_role_plugin

    return (MarkdownIt("commonmark").enable("table")
            .use(front_matter_plugin).use(myst_block_plugin).use(myst_role_plugin)
            .use(colon_fence_plugin).use(deflist_plugin).use(dollarmath_plugin)
            .use(amsmath_plugin))


_PROSE_DIRECTIVES = {"admonition", "note", "important", "tip", "warning", "seealso", "attention", "glossary",
                     "caution", "hint", "dropdown", "margin", "sidebar", "epigraph"}


def _split_directive(info, content):
    """A directive's name, argument and body (its ``:option:`` lines dropped)."""
    m = re.match(r"\{([\w-]+)\}\s*(.*)", info.strip())
    if not m:
        return None, "", content
    lines = content.split("\n")
    while lines and re.match(r"\s*:[\w-]+:", lines[0]):
        lines.pop(0)
    return m.group(1), m.group(2), "\n".join(lines)


def _texts(markdown, line_offset=0):
    """Every piece of prose in a Markdown text, and every code cell's source."""
    texts, cells = [], []
    tokens = _parser().parse(markdown)
    for i, tok in enumerate(tokens):
        line = (tok.map[0] if tok.map else 0) + 1 + line_offset
        if tok.type == "inline":
            text, prose = _inline_text(tok)
            texts.append(_Text(line, text, prose))
        elif tok.type in ("fence", "colon_fence"):
            name, arg, body = _split_directive(tok.info, tok.content)
            if name == "code-cell":
                cells.append((line, tok.content))
            elif name in _PROSE_DIRECTIVES:
                if arg:
                    texts.append(_Text(line, arg, [True] * len(arg)))
                inner_offset = line + tok.content[:tok.content.find(body)].count("\n") if body else line
                sub_texts, sub_cells = _texts(body, inner_offset)
                texts += sub_texts
                cells += sub_cells
            # other fences (code blocks, {glue}, {math}, {figure} paths) are not prose
    return texts, cells


def _hidden_cell_phrases(cells):
    """The phrases of every ``*.says("phrase", ...)`` call in the page's code cells."""
    phrases = []
    for _, source in cells:
        body = "\n".join(line for line in source.split("\n")
                         if not line.startswith((":", "%", "!")))
        try:
            tree = ast.parse(body)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
                    and getattr(node.func, "attr", getattr(node.func, "id", None)) == "says"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                phrases.append(node.args[0].value)
    return phrases


def _normalise(s):
    return re.sub(r"\s+", " ", s.replace("\u2063", " "))


def _covered(text, phrases):
    """Character spans of ``text`` covered by any phrase (whitespace-insensitive)."""
    spans = []
    for phrase in phrases:
        pattern = r"\s+".join(re.escape(word) for word in phrase.split())
        for m in re.finditer(pattern, text):
            spans.append((m.start(), m.end(), phrase))
    return spans


def _chapter_numbers():
    from .chapters import CHAPTERS
    return set(CHAPTERS)


def lint_page(path, *, chapters=None):
    """Findings (numbers written by hand) of one page, and the ``says`` phrases it never uses."""
    path = Path(path)
    chapters = _chapter_numbers() if chapters is None else chapters
    texts, cells = _texts(path.read_text())
    phrases = _hidden_cell_phrases(cells)
    used = set()
    findings = []
    for block in texts:
        text = block.text
        spans = _covered(text, list(CONSTANTS) + phrases)
        used.update(p for _, _, p in spans)
        spans += [(m.start(), m.end(), None) for m in IDIOMS.finditer(text)]
        spans += [(m.start(), m.end(), None) for m in INDICES.finditer(text)]
        spans += [(m.start(), m.end(), None) for m in CITATIONS.finditer(text)]
        label = re.match(r"(\d+)\.(?=\s)", text)  # an exercise's number, "**2.** Change ..."
        if label:
            spans.append((0, label.end(1), None))
        for m in REFERENCE.finditer(text):
            nums = [int(n) for n in re.findall(r"\d+", m.group("nums"))]
            if m.group("kind").lower().startswith("exercise") or all(n in chapters for n in nums):
                spans.append((m.start("nums"), m.end("nums"), None))
        for m in NUMBER.finditer(text):
            if not block.prose[m.start()]:
                continue
            if any(a <= m.start() and m.end() <= b for a, b, _ in spans):
                continue
            lo, hi = max(0, m.start() - 40), min(len(text), m.end() + 40)
            findings.append(Finding(path.name, block.line, m.group(0), _normalise(text[lo:hi])))
    unused = [p for p in phrases if p not in used]
    return findings, unused


def book_pages(root):
    """The book's pages: the root page and every file in ``_toc.yml``."""
    root = Path(root)
    toc = (root / "_toc.yml").read_text()
    names = re.findall(r"^\s*(?:root|-\s*file):\s*(\S+)", toc, re.MULTILINE)
    return [root / f"{name}.md" for name in names]


def lint_book(root):
    """{page: (findings, unused says phrases)} for every page of the book."""
    return {str(p.relative_to(root)): lint_page(p) for p in book_pages(root)}


# -- what the hidden cells call ------------------------------------------------------------------

def numbers_in(phrase):
    """The numbers a phrase states, in order ("four 8 KiB buffers" -> [4, 8]); inline code and
    idioms ("one of") state none."""
    out = []
    phrase = re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), phrase)  # inline code is not prose
    idioms = [(m.start(), m.end()) for m in IDIOMS.finditer(phrase)]
    for m in NUMBER.finditer(phrase):
        if any(a <= m.start() and m.end() <= b for a, b in idioms):
            continue
        s = m.group(0)
        if s.lower() in NUMBER_WORDS:
            out.append(NUMBER_WORDS[s.lower()])
        elif s.lower().startswith("0x"):
            out.append(int(s, 16))
        else:
            s = s.replace(",", "")
            out.append(float(s) if "." in s else int(s))
    return out


def says(phrase, *values, rel=0.0):
    """Check that ``phrase`` (a sentence fragment of the page) states ``values``: its numbers, in
    order, must equal them (within ``rel`` for decimals the page rounds). Raises ``AssertionError``
    naming the phrase and the computed values otherwise. Returns the phrase."""
    stated = numbers_in(phrase)
    if not re.search(r"[A-Za-z]{3,}", NUMBER.sub("", phrase)):
        raise AssertionError(f"{phrase!r}: a phrase needs words besides its numbers, so that it "
                             f"covers this sentence and no other")
    if len(stated) != len(values):
        raise AssertionError(f"the prose says {phrase!r} ({len(stated)} number(s)) but the cell "
                             f"checks {len(values)} value(s): {values}")
    for s, v in zip(stated, values):
        ok = abs(s - v) <= rel * abs(v) if rel else s == v
        if not ok:
            raise AssertionError(f"the prose says {phrase!r}, but the computed value is {v} "
                                 f"(stated: {s}); rewrite the sentence")
    return phrase


# -- the baseline: numbers written by hand before the lint existed -------------------------------

#: Findings the sweep has not reached yet, as (page, number, context). The test fails on any
#: finding not listed (a new hand-written number) and on any listed one that no longer occurs (the
#: list only shrinks). Editing a sentence changes its context, so its numbers must then be glued.
BASELINE = Path(__file__).resolve().parents[1] / "tests" / "data" / "prose_numbers_baseline.json"


def finding_key(page, finding):
    return [page, finding.number, finding.context]


def write_rows(path, keys):
    """Write a baseline: a JSON list with a row per line (so that a diff shows each finding)."""
    import json

    rows = ",\n".join(json.dumps(k, ensure_ascii=False) for k in keys)
    Path(path).write_text(f"[\n{rows}\n]\n")
    return len(keys)


def write_baseline(root, path=BASELINE):
    """Record the book's current findings as the baseline (``python -m gemm_kernels.prose_lint``)."""
    return write_rows(path, [finding_key(page, f) for page, (found, _) in lint_book(root).items() for f in found])


if __name__ == "__main__":  # pragma: no cover
    print(write_baseline(Path(__file__).resolve().parents[1]), "findings recorded in", BASELINE)
