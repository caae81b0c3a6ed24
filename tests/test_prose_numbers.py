"""The prose lint (``gemm_kernels/prose_lint.py``): every number in a page's text is glued, said by
a hidden cell (``bh.says``), a checked constant or a reference to a chapter; findings left from
before the lint are listed in ``tests/data/prose_numbers_baseline.json``, which only shrinks."""
import collections
import json
import textwrap
from pathlib import Path

import pytest

from gemm_kernels import prose_lint as pl
from gemm_kernels.emu import memory

ROOT = Path(__file__).resolve().parents[1]


def test_constants_are_true():
    from gemm_kernels.emu.cuda_surface import EmuCuda
    from gemm_kernels.kernels import v8_two_cta

    actual = {"32 lanes": EmuCuda.warpsize, "32 threads": EmuCuda.warpsize,
              "128 lanes": memory.TMEM_LANES, "512 columns": memory.TMEM_COLS,
              "2-CTA": bin(v8_two_cta.PAIR).count("1")}
    assert set(actual) == set(pl.CONSTANTS), "each constant needs its check here"
    for phrase, value in actual.items():
        assert pl.numbers_in(phrase) == [value] == [pl.CONSTANTS[phrase][1]], phrase


def test_says_checks_the_numbers_of_its_phrase():
    assert pl.says("four kinds of mbarrier (16 at the defaults)", 4, 16)
    assert pl.says("a four-stage ring", 4)
    assert pl.says("about 1.4 times", 1.38, rel=0.05)
    with pytest.raises(AssertionError, match="computed value is 16"):
        pl.says("four kinds of mbarrier (12 at the defaults)", 4, 16)
    with pytest.raises(AssertionError, match="2 number"):
        pl.says("four kinds (12)", 4)
    with pytest.raises(AssertionError, match="needs words"):
        pl.says("2 x 8", 2, 8)  # would cover every "2 x 8" of the page


PAGE = textwrap.dedent('''\
    ---
    jupytext: {}
    ---
    # Step 7: a page

    The ring has {glue:text}`depth` stages, `PIPE_DEPTH = 6` in code, a warp of 32 lanes, $2^{10}$,
    as chapter 5 and steps 5 and 6 said. See [the 3 rules](#target-9).

    The producer runs a four-stage ring and keeps **12** barriers.

    ```{code-cell} ipython3
    :tags: [remove-cell]
    x = 7  # 8 in a comment
    bh.says("four kinds of mbarrier", 4)
    bh.says("a phrase that left the page", 3)
    ```

    There are four kinds of mbarrier; fp16, B200, sm_100a and gemm_v7 are names.

    ```{admonition} Solution 2
    :class: dropdown

    It waits twice.
    ```
    ''')


def test_lint_finds_hand_written_numbers_only(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    findings, unused = pl.lint_page(page, chapters={5, 6, 7})
    found = [(f.line, f.number) for f in findings]
    # the link text "the 3 rules" is prose; "four-stage" and "12" are the examples;
    # "Solution 2" (an admonition title) and "twice" in its body are prose too
    assert found == [(6, "3"), (9, "four"), (9, "12"), (20, "2"), (23, "twice")], found
    assert unused == ["a phrase that left the page"]


def test_lint_rejects_references_to_missing_chapters(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("As chapter 12 shows.\n")
    assert [f.number for f in pl.lint_page(page, chapters={1, 2})[0]] == ["12"]


def test_book_has_no_new_hand_written_number():
    baseline = collections.Counter(tuple(k) for k in json.loads(pl.BASELINE.read_text()))
    found = collections.Counter()
    unused = []
    for page, (findings, stale) in pl.lint_book(ROOT).items():
        found.update(tuple(pl.finding_key(page, f)) for f in findings)
        unused += [f"{page}: bh.says({p!r}) but the page no longer says it" for p in stale]
    new = found - baseline
    gone = baseline - found
    lines = [f"{page}: '{num}' written by hand in: ...{ctx}... (glue it or assert it with "
             f"bh.says in a hidden cell; see gemm_kernels/prose_lint.py)" for page, num, ctx in new]
    lines += [f"{page}: '{num}' in ...{ctx}... is fixed: remove it from {pl.BASELINE.name} "
              f"(python -m gemm_kernels.prose_lint rewrites it)" for page, num, ctx in gone]
    assert not (lines or unused), "\n".join(lines + unused)



def test_citations_are_not_counts(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("PTX ISA, version 9.2: section 9.7.16.5 (31 March 2026), arXiv 2512.02189,\n"
                    "<https://arxiv.org/abs/2512.02189>, CMU 15-442/642, a paper (2020).\n"
                    "But 9.2 GB and 4 stages in 2026 are numbers.\n")
    assert [f.number for f in pl.lint_page(page, chapters=set())[0]] == ["9.2", "4", "2026"]
