"""The glossary (book/glossary.md) defines the book's own vocabulary, generated from what the pages
use (gemm_kernels/vocabulary.py): every term a page uses is defined, every defined term is used by a
chapter, each entry names the chapter that first uses it, and each chapter links its first use of
every term to the glossary (issue 31: the glossary defined names no chapter used and none of the
handoffs, rings, roles and emulator terms the chapters did)."""
import re
from pathlib import Path

import pytest

from gemm_kernels import vocabulary as voc
from gemm_kernels.claims_lint import _shows_calls
from gemm_kernels.prose_lint import _hidden_cell_phrases, _texts, book_pages

ROOT = Path(__file__).resolve().parents[1]
TERMS = voc.terms()
ENTRIES = voc.glossary_entries()
PAGES = [p for p in book_pages(ROOT) if p.name != "glossary.md"]


def _protected(page):
    _, cells = _texts(page.read_text())
    return _hidden_cell_phrases(cells) + [p for _, p in _shows_calls(cells)]


def test_the_vocabulary_comes_from_the_package():
    from gemm_kernels.emu.scheduler import POLICIES
    from gemm_kernels.trace import ROLES

    names = {t.name for t in TERMS}
    # every mbarrier of every chapter's plan, every completion policy, every warp role
    assert {"tma2mma", "mma2tma", "mma2ld", "ld2mma", "clc_full", "clc_empty", "mma_done"} <= set(voc.barrier_names())
    assert set(voc.barrier_names()) | set(POLICIES) <= names
    roles = {re.sub(r" \d+$", "", r) for r in ROLES.values()} - {"all warps"}
    assert roles <= names, f"warp roles the glossary lacks: {roles - names}"


def test_glossary_defines_exactly_the_vocabulary():
    names = {t.name for t in TERMS}
    assert set(ENTRIES) == names, (f"in the glossary, not in the vocabulary: {sorted(set(ENTRIES) - names)}; "
                                   f"in the vocabulary, not in the glossary: {sorted(names - set(ENTRIES))}")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_book_name_a_page_uses_is_defined(page):
    """The package's handoffs are named from a unit to the next (`tma2mma`): any such code name on a
    page, and every vocabulary term, must have its glossary entry."""
    codes = set()
    for _, pieces in voc._blocks(page.read_text()):
        codes |= {text for kind, text in pieces if kind == "code"}
    handoffs = {re.sub(r"\[.*\]$", "", c) for c in codes if re.fullmatch(r"[a-z]+2[a-z]+(\[[^\]]*\])?", c)}
    missing = handoffs - set(ENTRIES)
    missing |= set(voc.uses(page)) - set(ENTRIES)
    assert not missing, f"{page.name} uses {sorted(missing)}, which the glossary lacks"


def test_every_term_is_used_by_a_chapter_and_names_its_first():
    first = voc.introductions()
    unused = sorted(set(ENTRIES) - set(first))
    assert not unused, f"glossary terms no chapter uses (remove them): {unused}"
    wrong = {name: (voc.introduced_in(entry), first[name]) for name, entry in ENTRIES.items()
             if voc.introduced_in(entry) != first[name]}
    assert not wrong, f"'First used in' lines to fix (python -m gemm_kernels.vocabulary): {wrong}"


#: (chapter, term) whose first use sits in a section another piece of work rewrites now (issue 31: the
#: integrator rewrites chapter 10's SASS section, where chapter 10 first says "SASS"); link it there after
NOT_YET = {("10-any-shape.md", "SASS")}


@pytest.mark.parametrize("page", voc.chapter_pages(), ids=lambda p: p.name)
def test_first_use_in_each_chapter_links_to_the_glossary(page):
    unlinked = {name: use.line for name, use in voc.uses(page, TERMS, _protected(page)).items()
                if not use.linked and (page.name, name) not in NOT_YET}
    assert not unlinked, (f"{page.name}: first uses that are not {{term}} links (python -m gemm_kernels.vocabulary "
                          f"links them): {unlinked}")


def test_uses_finds_first_uses_links_and_skips_checked_phrases(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# The seam\n\nA {term}`ring <ring>` of stages; the seam, then a `tma2mma[s]` wait and\n"
                    "a named\nbarrier. Four stages.\n")
    found = voc.uses(page, TERMS, protected=["Four stages"])
    assert found["ring"].linked and not found["stage"].linked and found["stage"].text == "stages"
    assert found["the seam"].text == "seam" and found["tma2mma"].text == "tma2mma[s]"
    assert found["named barrier"].text == "named barrier"  # across a line break
    assert "wave" not in found
