"""The claims lint: a sentence that says what an output shows is checked against that output.

The prose lint (``prose_lint``) keeps hand-written numbers out of the text. Most of what misleads a
reader is not a number but a sentence about a cell's output that the output does not bear out:
"the report names warp 1" over a report that names warp 2, "the table compares it at its depth"
over a table of another depth. So a sentence that describes an output, a table, a report or a
figure (``CLAIM`` finds them: "the report names", "the table compares", "the picture draws",
"limited by", "from the ... figure", ...) must be asserted by a hidden cell of the same section:

    bh.shows("names the hazard from the load's side", report_text, "tcgen05.ld", "warp 2")

``shows(phrase, output, *expected, absent=())`` raises unless every ``expected`` string occurs in
the output's text (whitespace-insensitive) and no ``absent`` one does; ``output`` may also be a bool
that a cell computed from the output (``all(d == 4 for d, ... in rows)``). The lint reads the phrase
statically (a string literal, like ``says``): the phrase must lie inside the claim's sentence, and
the ``shows`` call must sit in a code cell of the same section (between two headings), after the
output it checks. A ``shows`` phrase that no longer occurs in the page is an error too.

``lint_page(path)`` returns (claims without a check, stale phrases); ``lint_book(root)`` every page's.
Sentences found before the lint existed and not yet checked are listed in
``tests/data/prose_claims_baseline.json``; the list only shrinks (``tests/test_prose_claims.py``).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from .prose_lint import _normalise, _parser, _texts, book_pages, write_rows

_OUTPUT = (r"(?:report|table|picture|plot|figure|timeline|trace|diagram|view|output|listing|chart|panel|"
           r"legend|diff|SASS|histogram|map)s?")
_VERB = (r"(?:names?|shows?|compares?|draws?|prints?|lists?|says|gives?|puts?|counts?|marks?|points?|"
         r"finds?|has|contains?|reads?|blames?|traces?)")
#: What makes a sentence a claim about an output.
CLAIM = re.compile(
    rf"\b(?:the|this|its|each|every|that|their|both)\s+(?:[\w'-]+\s+){{0,3}}?{_OUTPUT}\s+(?:above\s+|below\s+)?{_VERB}\b"
    r"|\bthe emulator (?:still )?(?:names|reports|says|answers|blames|finds)\b"
    r"|\bthe report(?:'s first line)? (?:leads with|says|ends with)\b"
    r"|\blimited by\b|\blimit(?:s|ing)? (?:the|this|each|every) step\b"
    r"|\bfrom the (?:[\w'-]+\s+){0,4}?(?:figure|plot|table|timeline|report|diagram)\b"
    rf"|\b(?:as|which|what) the (?:[\w'-]+\s+){{0,3}}?{_OUTPUT} (?:above |below )?{_VERB}\b",
    re.IGNORECASE)

#: A sentence ends at ., ! or ? followed by space (not inside "e.g." or "i.e." or a number).
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<![0-9])[.!?](?=\s+[A-Z(`*\"'])")


@dataclass(frozen=True)
class Claim:
    page: str
    line: int
    trigger: str
    sentence: str

    def __str__(self):
        return f"{self.page}:{self.line}: '{self.trigger}' in: {self.sentence}"


def _sentences(text):
    """(start, end) of each sentence of a paragraph's text."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append((start, m.end()))
        start = m.end()
    out.append((start, len(text)))
    return out


def _heading_lines(markdown):
    """The line numbers (1-based) of the page's headings: the section boundaries."""
    return sorted((tok.map[0] + 1) for tok in _parser().parse(markdown)
                  if tok.type == "heading_open" and tok.map)


def _section(line, headings):
    return sum(1 for h in headings if h <= line)


def _shows_calls(cells):
    """[(line of the cell, phrase)] of every ``*.shows("phrase", ...)`` call in the page's cells."""
    out = []
    for line, source in cells:
        body = "\n".join(s for s in source.split("\n") if not s.startswith((":", "%", "!")))
        try:
            tree = ast.parse(body)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
                    and getattr(node.func, "attr", getattr(node.func, "id", None)) == "shows"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                out.append((line, node.args[0].value))
    return out


def _phrase_pattern(phrase):
    return r"\s+".join(re.escape(word) for word in phrase.split())


def lint_page(path):
    """(claims with no ``shows`` check in their section, ``shows`` phrases the page no longer says)."""
    path = Path(path)
    markdown = path.read_text()
    headings = _heading_lines(markdown)
    texts, cells = _texts(markdown)
    calls = [(_section(line, headings), phrase) for line, phrase in _shows_calls(cells)]
    used, claims = set(), []
    for block in texts:
        text = re.sub(r"\s", " ", block.text)
        section = _section(block.line, headings)
        covered = []
        for sec, phrase in calls:
            for m in re.finditer(_phrase_pattern(phrase), text, re.IGNORECASE):
                used.add(phrase)
                if sec == section:
                    covered.append((m.start(), m.end()))
        for a, b in _sentences(text):
            sentence = text[a:b]
            # "what the emulator reports" (a table's column, a pointer to a report) claims nothing itself
            trigger = next((m for m in CLAIM.finditer(sentence) if block.prose[a + m.start()]
                            and not re.search(r"\bwhat\s+$", sentence[:m.start()], re.IGNORECASE)), None)
            if trigger is None or sentence.rstrip(" *").endswith("?"):  # a question claims nothing
                continue
            if any(a <= s < b for s, _ in covered):
                continue
            claims.append(Claim(path.name, block.line, trigger.group(0), _normalise(sentence).strip()))
    stale = [phrase for _, phrase in calls if phrase not in used]
    return claims, stale


def lint_book(root):
    """{page: (unchecked claims, stale phrases)} for every page of the book."""
    root = Path(root)
    return {str(p.relative_to(root)): lint_page(p) for p in book_pages(root)}


# -- what the hidden cells call ------------------------------------------------------------------

def _text_of(output):
    if isinstance(output, BaseException):
        return f"{type(output).__name__}: {output}"
    if isinstance(output, (list, tuple)):
        return "\n".join(_text_of(o) for o in output)
    return str(output)


def shows(phrase, output, *expected, absent=()):
    """Check that a sentence of the page (``phrase``, a fragment of it) is borne out by ``output``:
    every string of ``expected`` occurs in the output's text and none of ``absent`` does (whitespace
    and line breaks match any whitespace), or, when ``output`` is a bool, that it is True (a fact a
    cell computed from the output). Raises ``AssertionError`` naming the phrase and what the output
    lacks; returns the phrase."""
    if isinstance(output, bool):
        if expected or absent:
            raise TypeError("shows(phrase, True/False) takes no expected strings")
        if not output:
            raise AssertionError(f"the page says {phrase!r}, but the output does not bear it out "
                                 f"(the checked condition is False); rewrite the sentence")
        return phrase
    if not (expected or absent):
        raise TypeError(f"shows({phrase!r}, output): name what the output must contain (or pass a bool)")
    text = re.sub(r"\s+", " ", _text_of(output))
    missing = [s for s in expected if not re.search(_phrase_pattern(s), text)]
    present = [s for s in absent if re.search(_phrase_pattern(s), text)]
    if missing or present:
        what = []
        if missing:
            what.append(f"lacks {missing}")
        if present:
            what.append(f"contains {present}")
        raise AssertionError(f"the page says {phrase!r}, but the output {' and '.join(what)}; rewrite the "
                             f"sentence (the output begins: {text[:300]!r})")
    return phrase


# -- the baseline: claims found before the lint existed ------------------------------------------

BASELINE = Path(__file__).resolve().parents[1] / "tests" / "data" / "prose_claims_baseline.json"


def claim_key(page, claim):
    return [page, claim.trigger, claim.sentence]


def write_baseline(root, path=BASELINE):
    """Record the book's unchecked claims (``python -m gemm_kernels.claims_lint``)."""
    return write_rows(path, [claim_key(page, c) for page, (found, _) in lint_book(root).items() for c in found])


if __name__ == "__main__":  # pragma: no cover
    print(write_baseline(Path(__file__).resolve().parents[1]), "claims recorded in", BASELINE)
