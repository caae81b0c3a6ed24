"""The claims lint (``gemm_kernels/claims_lint.py``): a sentence that says what an output, a table, a
report or a figure shows is checked by a ``bh.shows`` call in a hidden cell of its section; claims
left from before the lint are listed in ``tests/data/prose_claims_baseline.json``, which only shrinks."""
import collections
import json
import textwrap
from pathlib import Path

import pytest

from gemm_kernels import claims_lint as cl

ROOT = Path(__file__).resolve().parents[1]


def test_shows_checks_the_output():
    report = "TmemHazard: warp 2 (threads 64..95) issued tcgen05.ld of columns 0..31"
    assert cl.shows("the report names warp 2", report, "warp 2", "tcgen05.ld")
    assert cl.shows("the table compares like with like", True)
    with pytest.raises(AssertionError, match=r"lacks \['warp 1'\]"):
        cl.shows("the report names warp 1", report, "warp 1")
    with pytest.raises(AssertionError, match="contains"):
        cl.shows("from the tensor core's side", report, "warp 2", absent=["tcgen05.ld"])
    with pytest.raises(AssertionError, match="does not bear it out"):
        cl.shows("the table compares it at its depth", False)
    with pytest.raises(TypeError):
        cl.shows("the report names", report)  # names nothing to look for: a check that cannot fail
    # an exception counts as its report; line breaks in the output match a space in the needle
    assert cl.shows("names the line", ValueError("at\nline 7"), "at line 7")


PAGE = textwrap.dedent('''\
    ---
    jupytext: {}
    ---
    # A page

    ```{code-cell} ipython3
    print(report)
    ```

    ```{code-cell} ipython3
    :tags: [remove-cell]
    bh.shows("the report names the load", report, "tma.load")
    bh.shows("a sentence that left the page", True)
    ```

    The report names the load. The table compares nothing here, e.g. in the `table names` code.

    ## Another section

    The report names the load again, but the check above is in another section.
    The step is limited by shared memory. A figure of 1395 TFLOP/s is a number, not a claim.
    ''')


def test_lint_finds_unchecked_claims_only(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    claims, stale = cl.lint_page(page)
    assert [(c.line, c.trigger) for c in claims] == [
        (16, "The table compares"), (20, "The report names"), (20, "limited by")], claims
    assert claims[0].sentence.startswith("The table compares nothing here, e.g. in")
    assert stale == ["a sentence that left the page"]


def test_book_has_no_new_unchecked_claim():
    baseline = collections.Counter(tuple(k) for k in json.loads(cl.BASELINE.read_text()))
    found = collections.Counter()
    stale = []
    for page, (claims, gone_phrases) in cl.lint_book(ROOT).items():
        found.update(tuple(cl.claim_key(page, c)) for c in claims)
        stale += [f"{page}: bh.shows({p!r}) but the page no longer says it" for p in gone_phrases]
    new, gone = found - baseline, baseline - found
    lines = [f"{page}: '{trigger}' in '{sentence}' says what an output shows: check it with "
             f"bh.shows in a hidden cell of its section (gemm_kernels/claims_lint.py)"
             for page, trigger, sentence in new]
    lines += [f"{page}: '{sentence}' is checked now: remove it from {cl.BASELINE.name} "
              f"(python -m gemm_kernels.claims_lint rewrites it)" for page, _, sentence in gone]
    assert not (lines or stale), "\n".join(lines + stale)
