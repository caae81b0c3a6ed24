"""The book's own vocabulary, and where the pages use it: what keeps the glossary complete and linked.

A reader meets names this book made up (the handoff barriers ``tma2mma``, ``mma2tma``, ``mma2ld``,
``ld2mma``, ``clc_full``/``clc_empty``; the warp roles; the emulator's completion policies) beside
the machine's and CUTLASS's terms. ``TERMS`` lists every name the glossary defines, with how a page
uses it: a code name (``code=True``) is an inline-code identifier (``tma2mma`` or ``tma2mma[s]``);
the barrier names and the policies come from the package itself (``barrier_names``,
``emu.scheduler.POLICIES``), so a new barrier cannot go undefined. A prose term is a pattern of
words ("named barriers", "the seam").

``uses(path)`` reads a page's prose (not code cells, not headings) in order and returns, for each
term, its first use and whether that use is a ``{term}`` link to the glossary. ``tests/
test_glossary.py`` checks: every term a page uses is in the glossary (``book/glossary.md``); every
glossary term is used by some chapter (or it goes); each entry names the chapter that introduces
it (its first use, in chapter order: "First used in"); and in each chapter the first use of each term is a link.
``python -m gemm_kernels.vocabulary`` links the first uses that are not links yet and rewrites the
"First used in" line of each entry.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .prose_lint import _PROSE_DIRECTIVES, _parser, _split_directive

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "glossary.md"


@dataclass(frozen=True)
class Term:
    name: str  # as the glossary lists it (the {term} role's target)
    pattern: str  # a use in prose (a code name: the identifier inside inline code)
    code: bool = False

    def regex(self):
        if self.code:
            return re.compile(rf"^{self.pattern}(?:\[[^\]]*\]|[.:][\w.:]*)?$")
        return re.compile(self.pattern)


def barrier_names():
    """The mbarriers of every chapter's shared-memory plan (its 8-byte regions), by the names the
    emulator's reports and the pages use (``mma_done`` for step 1's ``mma_done barrier``)."""
    from .chapters import CHAPTERS

    names = set()
    for c in CHAPTERS:
        module = CHAPTERS[c]._mod()
        plan = getattr(module, "plan", None)
        if plan is None and hasattr(module, "make_plan"):
            made = module.make_plan(CHAPTERS[c].config.get("pipe_depth"))
            plan = made[0] if isinstance(made, tuple) else made
        for name, _, nbytes in plan.regions:
            if nbytes == 8:
                names.add(re.sub(r"( barrier)?(\[\d+\])?$", "", name))
    return sorted(names)


def _policies():
    from .emu.scheduler import POLICIES

    return POLICIES


#: prose terms: (glossary name, pattern of a use). Case matters where a word is also an ordinary
#: word in another sense ("the SM" vs "sm"); plurals and hyphenated forms count as uses.
PROSE = (
    ("accumulator", r"\baccumulators?\b"),
    ("async proxy", r"\basync proxy\b"),
    ("box", r"\bbox(?:es)?\b"),
    ("bulk group", r"\bbulk[- ]groups?\b"),
    ("cluster", r"\bclusters?\b"),
    ("cluster launch control", r"\bcluster launch control\b"),
    ("commit", r"\bcommits?\b"),
    ("completion policy", r"\bcompletion (?:polic(?:y|ies)|orders?)\b"),
    ("cost model", r"\bcost model\b"),
    ("CTA", r"\bCTAs?\b"),
    ("CTA pair", r"\bCTA pairs?\b|\bpairs? of CTAs\b"),
    ("edge tile", r"\bedge tiles?\b"),
    ("elect", r"\belect(?:ed|s|\.sync)?\b"),
    ("epilogue", r"\bepilogues?\b"),
    ("handoff", r"\bhandoffs?\b"),
    ("instruction descriptor", r"\binstruction descriptors?\b"),
    ("K-major", r"\bK-major\b"),
    ("lane quarter", r"\blane quarters?\b"),
    ("matrix descriptor", r"\bmatrix descriptors?\b"),
    ("mbarrier", r"\bmbarriers?\b"),
    ("MMA issuer", r"\bMMA issuers?\b"),
    ("multicast", r"\bmulticast\b"),
    ("named barrier", r"\bnamed barriers?\b"),
    ("parity", r"\bparit(?:y|ies)\b"),
    ("persistent kernel", r"\bpersistent\b"),
    ("phase", r"\bphases?\b"),
    ("ring", r"\brings?\b"),
    ("role", r"\broles?\b"),
    ("SASS", r"\bSASS\b"),
    ("SM", r"\bSMs?\b"),
    ("stage", r"\bstages?\b"),
    ("staging buffer", r"\bstaging buffers?\b"),
    ("subtile", r"\bsubtiles?\b"),
    ("swizzle", r"\bswizzl(?:e|es|ed|ing)\b"),
    ("the seam", r"\bseams?\b"),
    ("tensor map", r"\btensor maps?\b"),
    ("tile scheduler", r"\btile scheduler\b|\bscheduler warp\b"),
    ("TMA", r"\bTMA\b"),
    ("TMA producer", r"\bTMA producer\b|\bproducer\b"),
    ("TMEM", r"\bTMEM\b|\btensor memory\b"),
    ("tx-count", r"\btx-counts?\b"),
    ("virtual clock", r"\bvirtual clock\b"),
    ("warpgroup", r"\bwarpgroups?\b"),
    ("wave", r"\bwaves?\b"),
    ("writeback", r"\bwriteback\b"),
)

#: code names that are not barriers or policies: the instruction families and qualifiers the
#: glossary defines
CODE = ("sm_100a", "tcgen05", "cta_group", "expect_tx")


def terms():
    """Every term the glossary must define, the package's code names first."""
    out = [Term(name, re.escape(name), code=True) for name in barrier_names()]
    out += [Term(name, re.escape(name), code=True) for name in _policies()]
    out += [Term(name, re.escape(name), code=True) for name in CODE]
    out += [Term(name, pattern) for name, pattern in PROSE]
    return out


# -- reading a page ---------------------------------------------------------------------------------

@dataclass
class Use:
    line: int
    linked: bool  # the use is a {term} role to the glossary
    text: str  # what the page shows there


def _blocks(markdown, line_offset=0):
    """Each prose block of a page, in order, as (line, [(kind, text)]): kind "text", "code" (inline
    code, shown with its backquotes as the prose lint renders it) or "term" (a {term} role: its
    target and shown text); headings and code cells are left out."""
    tokens = _parser().parse(markdown)
    in_heading = False
    for tok in tokens:
        line = (tok.map[0] if tok.map else 0) + 1 + line_offset
        if tok.type == "heading_open":
            in_heading = True
        elif tok.type == "heading_close":
            in_heading = False
        elif tok.type == "inline" and not in_heading:
            pieces = []
            for child in tok.children or []:
                if child.type == "text":
                    pieces.append(("text", child.content))
                elif child.type in ("softbreak", "hardbreak"):
                    pieces.append(("text", " "))
                elif child.type == "code_inline":
                    pieces.append(("code", child.content))
                elif child.type == "myst_role" and child.meta.get("name") == "term":
                    m = re.match(r"(.*?)\s*<([^>]+)>\s*$", child.content, re.DOTALL)
                    pieces.append(("term", (m.group(2), m.group(1)) if m else (child.content, child.content)))
                else:
                    pieces.append(("other", ""))
            yield line, pieces
        elif tok.type in ("fence", "colon_fence"):
            name, arg, body = _split_directive(tok.info, tok.content)
            if name in _PROSE_DIRECTIVES:
                if arg:
                    yield line, [("text", arg)]
                offset = line + tok.content[:tok.content.find(body)].count("\n") if body else line
                yield from _blocks(body, offset)


def uses(path, vocabulary=None, protected=()):
    """{term name: Use} of the first use of each term in a page's prose. A use inside one of the
    ``protected`` phrases (a hidden cell's ``says``/``shows`` phrase, which must keep matching the
    prose word for word) does not count: the first use after it is the one to link."""
    from .prose_lint import _covered

    vocabulary = terms() if vocabulary is None else vocabulary
    by_name = {t.name.lower(): t for t in vocabulary}
    found = {}
    for line, pieces in _blocks(Path(path).read_text()):
        text, spans = "", []  # the block as the prose lint renders it; (start, end, kind, payload)
        for kind, payload in pieces:
            shown = f"`{payload}`" if kind == "code" else payload[1] if kind == "term" else payload
            spans.append((len(text), len(text) + len(shown), kind, payload))
            text += shown
        guarded = [(a, b) for a, b, _ in _covered(text, protected)]

        def free(a, b):
            return not any(g0 <= a and b <= g1 for g0, g1 in guarded)

        hits = []  # (position, term name, Use) of every use in this block
        for a, b, kind, payload in spans:
            if kind == "term":
                t = by_name.get(payload[0].lower())
                if t is not None:
                    hits.append((a, t.name, Use(line, True, payload[1])))
            elif kind == "code" and free(a, b):
                for t in vocabulary:
                    if t.code and t.regex().match(payload):
                        hits.append((a, t.name, Use(line, False, payload)))
        for t in vocabulary:
            if not t.code:
                for m in t.regex().finditer(text):
                    inside = next((k for a, b, k, _ in spans if a <= m.start() < b), "text")
                    if inside == "text" and free(m.start(), m.end()):
                        hits.append((m.start(), t.name, Use(line, False, m.group(0))))
                        break
        for _, name, use in sorted(hits, key=lambda h: h[0]):
            found.setdefault(name, use)
    return found


# -- the glossary -----------------------------------------------------------------------------------

_ENTRY = re.compile(r"^(\S[^\n]*)\n((?:[ \t]+\S[^\n]*\n?|[ \t]*\n)+)", re.MULTILINE)


def glossary_entries(path=GLOSSARY):
    """{term: entry text} of the glossary's ``{glossary}`` directive (the term without backquotes)."""
    text = Path(path).read_text()
    m = re.search(r"^```\{glossary\}[^\n]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    if m is None:
        raise ValueError(f"{path} has no ```{{glossary}} block")
    return {e.group(1).strip().strip("`"): e.group(2) for e in _ENTRY.finditer(m.group(1))}


def chapter_pages(root=ROOT):
    return sorted((Path(root) / "chapters").glob("[0-9][0-9]-*.md"))


def introductions(root=ROOT, vocabulary=None):
    """{term: chapter page stem} of the first chapter (in order) that uses each term."""
    vocabulary = terms() if vocabulary is None else vocabulary
    first = {}
    for page in chapter_pages(root):
        for name in uses(page, vocabulary):
            first.setdefault(name, page.stem)
    return first


_INTRO = re.compile(r"^([ \t]+)First used in \{doc\}`[^`]*`\.[ \t]*$", re.MULTILINE)


def introduced_in(entry):
    """The chapter stem an entry's "First used in {doc}`...`." line names, or None."""
    m = re.search(r"First used in \{doc\}`(?:[^`<]*<)?\.\./chapters/([\w-]+)>?`", entry)
    return m.group(1) if m else None


# -- rewriting: link the first uses, state each term's chapter ---------------------------------------

def _outside_code(line, start):
    return line[:start].count("`") % 2 == 0


def _phrases_hold(path):
    """Whether every says/shows phrase of a page still occurs in its prose."""
    from . import claims_lint, prose_lint

    return not prose_lint.lint_page(path)[1] and not claims_lint.lint_page(path)[1]


def link_first_uses(path, vocabulary=None, protected=()):
    """Make the first use of each term in a chapter a ``{term}`` link (in the page's source), never
    one inside a ``protected`` phrase (the ``says``/``shows`` phrases, which must keep matching the
    prose). Returns the names linked."""
    path = Path(path)
    vocabulary = terms() if vocabulary is None else vocabulary
    linked = []
    for _ in range(len(vocabulary)):
        found = uses(path, vocabulary, protected)
        todo = [t for t in vocabulary if t.name in found and not found[t.name].linked]
        if not todo:
            break
        t, use = todo[0], found[todo[0].name]
        before = path.read_text()
        for skip in range(8):  # the n-th occurrence from the use's line: the first that keeps the phrases
            lines = before.split("\n")
            if not _link_at(lines, use, t, skip):
                raise ValueError(f"{path.name}: could not link the first use of {t.name!r} near line {use.line}")
            path.write_text("\n".join(lines))
            after = uses(path, vocabulary, protected).get(t.name)
            if after is not None and after.linked and _phrases_hold(path):
                break
            path.write_text(before)
        else:
            raise ValueError(f"{path.name}: no occurrence of {t.name!r} near line {use.line} can be linked")
        linked.append(t.name)
    return linked


def _link_at(lines, use, term, skip=0):
    """Rewrite the ``skip``-th occurrence of ``use.text`` at or after ``use.line`` into a {term} role."""
    if term.code:
        pattern = re.compile(rf"`({re.escape(use.text)})`")
    else:
        pattern = re.compile(rf"(?<![\w`<{{]){re.escape(use.text)}(?![\w>])")
    seen = 0
    for i in range(use.line - 1, min(len(lines), use.line + 40)):
        line = lines[i]
        for m in pattern.finditer(line):
            if not term.code and not _outside_code(line, m.start()):
                continue
            if line[:m.start()].rstrip().endswith(("](", "{term}`")) or "](" in line[m.end():m.end() + 2]:
                continue
            if seen < skip:
                seen += 1
                continue
            shown = m.group(1) if term.code else m.group(0)
            target = term.name
            role = (f"{{term}}`{shown}`" if shown == target else f"{{term}}`{shown} <{target}>`")
            lines[i] = line[:m.start()] + role + line[m.end():]
            return True
    return False


def write_introductions(path=GLOSSARY, root=ROOT):
    """Rewrite each entry's "First used in" line from ``introductions``."""
    intro = introductions(root)
    text = Path(path).read_text()
    out, term = [], None
    for line in text.split("\n"):
        m = re.match(r"^(\S.*)$", line)
        if m and not line.startswith(("```", ":")):
            term = line.strip().strip("`")
        if _INTRO.match(line) and term in intro:
            stem = intro[term]
            line = f"{_INTRO.match(line).group(1)}First used in {{doc}}`chapter {int(stem[:2])} <../chapters/{stem}>`."
        out.append(line)
    Path(path).write_text("\n".join(out))


if __name__ == "__main__":  # pragma: no cover
    import sys

    from .claims_lint import _shows_calls
    from .prose_lint import _hidden_cell_phrases, _texts

    for page in chapter_pages():
        _, cells = _texts(page.read_text())
        protected = _hidden_cell_phrases(cells) + [p for _, p in _shows_calls(cells)]
        done = link_first_uses(page, protected=protected)
        print(f"{page.name}: linked {', '.join(done) or 'nothing new'}", file=sys.stderr)
    write_introductions()
