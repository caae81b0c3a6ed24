"""The book: its table of contents, its set-up commands, and a strict build with figure counts.

The slow test builds the whole book (every notebook page executed) into a temporary folder with
Jupyter Book 1.x in strict mode (-W -n --keep-going), exactly as the README's build command does,
and then checks the HTML: the pages that draw figures must contain them, and MathJax must be the
bundled offline copy.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

# Pages whose notebooks draw figures, and the least number of <img> tags each built page must have.
# A chapter that draws figures adds itself here.
FIGURE_PAGES = {
    "book/machine.html": 2,
    "book/benchmarking.html": 1,
    # every chapter draws at least one timeline from an emulator trace and its execution structure;
    # steps 4 and 7 draw one structure figure per idea
    **{f"chapters/{name}.html": 2 for name in (
        "01-one-tile", "02-k-loop", "03-grid", "05-pipeline", "06-persistent", "08-two-cta",
        "09-two-consumers", "10-any-shape")},
    "chapters/04-tma.html": 3,
    "chapters/07-warp-specialization.html": 3,
}

BUILD_TIMEOUT_S = 3600


def _toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def _source(name: str) -> Path:
    for ext in (".md", ".ipynb"):
        if (ROOT / (name + ext)).exists():
            return ROOT / (name + ext)
    return ROOT / (name + ".md")


def test_toc_files_exist():
    files = _toc_files()
    assert files[0] == "intro", "the root page must sit at the top level (single-page HTML, PDF)"
    missing = [f for f in files if not _source(f).exists()]
    assert not missing, f"listed in _toc.yml but missing: {missing}"
    assert len(files) == len(set(files)), "a page is listed twice in _toc.yml"


def test_chapters_in_order():
    from gemm_kernels import CHAPTERS

    chapters = [f for f in _toc_files() if f.startswith("chapters/")]
    assert [int(Path(c).name[:2]) for c in chapters] == sorted(CHAPTERS)


def test_notebook_pages_have_jupytext_header():
    """A page with {code-cell} directives is executed only if it declares a kernel."""
    for name in _toc_files():
        text = _source(name).read_text()
        if "{code-cell}" in text:
            assert text.startswith("---\n") and "kernelspec:" in text.split("---", 2)[1], (
                f"{name}: has code cells but no jupytext front matter with a kernelspec")


def _jupyter_book_cmd() -> list[str]:
    # Jupyter Book 1.x has no `python -m jupyter_book`; call its CLI entry point with this interpreter,
    # so the build (and the notebook kernel, which jupyter_client starts with sys.executable) uses the
    # same environment as the tests.
    return [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())"]


CHAPTER_PAGES = [f"chapters/{name}.html" for name in (
    "01-one-tile", "02-k-loop", "03-grid", "04-tma", "05-pipeline", "06-persistent",
    "07-warp-specialization", "08-two-cta", "09-two-consumers", "10-any-shape")]


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    """The whole book built once, strict, into a temporary folder: (html folder, build log)."""
    out = tmp_path_factory.mktemp("book")
    env = dict(os.environ)
    # MPLBACKEND=Agg (set by some CI images and test set-ups) makes matplotlib's non-interactive
    # backend win over the notebook's inline backend: plt.show() then draws nothing, every figure
    # silently disappears, and the build still "succeeds". The kernel must choose its own backend.
    env.pop("MPLBACKEND", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["GEMM_BOOK_BACKEND"] = "emulator"  # the published pages are the emulator's, on any machine

    cmd = _jupyter_book_cmd() + ["build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, "strict book build failed:\n" + log[-8000:]
    return out / "_build" / "html", log


@pytest.mark.slow
def test_book_builds_strict_with_figures(built_book):
    html, _ = built_book
    for name in _toc_files():
        assert (html / (name + ".html")).exists(), f"{name}.html was not built"

    too_few = {}
    for page, least in FIGURE_PAGES.items():
        count = (html / page).read_text().count("<img")
        if count < least:
            too_few[page] = (count, least)
    assert not too_few, f"pages with fewer figures than expected (found, expected): {too_few}"

    # Offline MathJax: the bundled copy is there and the pages load it, not a CDN.
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()
    intro = (html / "intro.html").read_text()
    assert "_static/mathjax/tex-chtml.js" in intro
    assert "cdn.jsdelivr.net/npm/mathjax" not in intro


@pytest.mark.slow
def test_every_chapter_has_an_interactive_view_and_plotly_once(built_book):
    html, _ = built_book
    assert (html / "_static" / "plotly.min.js").exists()
    library_size = (html / "_static" / "plotly.min.js").stat().st_size
    for page in CHAPTER_PAGES:
        text = (html / page).read_text()
        assert re.search(r'class="gk-interactive[ "]', text), f"{page}: no interactive trace view"
        assert len(re.findall(r'<script[^>]+src="[^"]*_static/plotly\.min\.js', text)) == 1, (
            f"{page}: plotly.js must be loaded exactly once, from _static")
        assert "cdn.plot.ly" not in text and "cdn.jsdelivr" not in text
        assert len(text) < library_size, f"{page}: looks like it carries its own copy of plotly.js"


@pytest.mark.slow
def test_every_chapter_offers_its_notebook(built_book):
    html, _ = built_book
    for page in CHAPTER_PAGES:
        name = page[:-len(".html")]
        assert (html / "_sources" / (name + ".ipynb")).exists(), f"{name}.ipynb is not in the site"
        assert f"_sources/{name}.ipynb" in (html / page).read_text(), f"{page}: no .ipynb download link"


@pytest.mark.slow
def test_chapter_pages_in_headless_chromium(built_book):
    """A reader's browser, offline: every chapter page loads with no JavaScript error and no network
    request, and its interactive view is drawn by plotly.js with its time-cursor slider (the
    debugger itself is driven in tests/test_trace_view.py)."""
    import chromium_page

    if chromium_page.chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (apt-get install -y chromium) for this test")
        pytest.skip("no chromium on PATH (Debian: apt-get install -y chromium)")
    html, _ = built_book
    drawn = "document.querySelectorAll('.gk-interactive .main-svg').length"
    slider = "document.querySelectorAll('.gk-interactive .gk-cursor').length"
    for page in CHAPTER_PAGES:
        report = chromium_page.load((html / page).as_uri(), [drawn, slider])
        assert not report.errors, f"{page}: {report.errors}"
        assert not report.requests, f"{page} asked the network for {report.requests}"
        assert report.values[drawn], f"{page}: plotly did not draw the interactive view"
        assert report.values[slider] == 1, f"{page}: the time cursor's slider is missing"


def _claimed_break_it_reports() -> dict[int, set[str]]:
    """{chapter: report classes} from the debugging guide's sentence "The chapters' "Break it"
    sections show the real reports: chapter 1 `X`, chapter 5 and 7 `Y`, ...". """
    text = " ".join((ROOT / "book" / "debugging.md").read_text().split())
    sentence = text[text.index("show the real reports:"):].split(".", 1)[0]
    claims: dict[int, set[str]] = {}
    for chapters, names in re.findall(r"chapters? ([\d ,and]+?) ((?:`\w+`(?: and )?)+)", sentence):
        for ch in re.findall(r"\d+", chapters):
            claims.setdefault(int(ch), set()).update(re.findall(r"`(\w+)`", names))
    return claims


def test_debugging_guide_claims_are_parsed():
    from gemm_kernels.chapters import CHAPTERS

    claims = _claimed_break_it_reports()
    # chapter 3's "Break it" gets no report (numpy catches it); every other chapter is named, the last
    # included (the list stopped at chapter 9 after chapter 10 was written: issue 31)
    assert set(claims) == set(CHAPTERS) - {3}, f"the guide's Break-it sentence names chapters {sorted(claims)}"


@pytest.mark.slow
def test_break_it_reports_named_by_the_debugging_guide_are_printed(built_book):
    """The guide says which report each chapter's "Break it" shows; each must appear in that
    chapter's executed outputs (the .ipynb the page offers), so a stale claim fails."""
    html, _ = built_book
    missing = {}
    for ch, names in _claimed_break_it_reports().items():
        (page,) = [p for p in CHAPTER_PAGES if p.startswith(f"{ch:02d}-") or p.startswith(f"chapters/{ch:02d}-")]
        nb = json.loads((html / "_sources" / (page[:-len(".html")] + ".ipynb")).read_text())
        outputs = json.dumps([c.get("outputs", []) for c in nb["cells"] if c["cell_type"] == "code"])
        absent = {n for n in names if n not in outputs}
        if absent:
            missing[ch] = sorted(absent)
    assert not missing, f"reports the debugging guide promises but the chapters do not print: {missing}"


def test_downloads_collapse_the_checking_cells():
    import nbformat

    from gemm_kernels.book_sphinx import hide_checking_cells

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print(1)"),
        nbformat.v4.new_code_cell("bh.says('x', 1)", metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell("table()", metadata={"tags": ["remove-input"]}),
        nbformat.v4.new_markdown_cell("text", metadata={"tags": ["remove-cell"]}),
    ])
    assert hide_checking_cells(nb) == 2
    assert "jupyter" not in nb.cells[0].metadata
    assert nb.cells[1].metadata["jupyter"] == {"source_hidden": True, "outputs_hidden": True}
    assert nb.cells[2].metadata["jupyter"] == {"source_hidden": True}  # its output is the point


TINY_PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# A page

{text}

```{{code-cell}} ipython3
print("the output the download must keep")
```

```{{code-cell}} ipython3
:tags: [remove-cell]

assert 1 + 1 == 2, "a checking cell the download collapses"
```
"""


@pytest.mark.slow
def test_a_page_rebuilt_from_the_cache_still_offers_its_outputs(tmp_path):
    """myst-nb writes a page's notebook without outputs when it renders the page from the execution
    cache (its text changed, its code did not); book_sphinx puts the cached outputs back into the
    .ipynb the page offers. A one-page book, built twice: the second build edits only text."""
    (tmp_path / "_config.yml").write_text(
        "title: tiny\nonly_build_toc_files: true\nexecute:\n  execute_notebooks: cache\n"
        "sphinx:\n  extra_extensions:\n    - gemm_kernels.book_sphinx\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    page = tmp_path / "page.md"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MPLBACKEND", None)
    outputs = []
    for text in ("First words.", "Other words, same code."):
        page.write_text(TINY_PAGE.format(text=text))
        proc = subprocess.run(_jupyter_book_cmd() + ["build", str(tmp_path)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        nb = json.loads((tmp_path / "_build" / "html" / "_sources" / "page.ipynb").read_text())
        outputs.append(json.dumps([c.get("outputs", []) for c in nb["cells"] if c["cell_type"] == "code"]))
    assert "Using cached notebook" in proc.stdout + proc.stderr  # the second build took the cached path
    assert "the output the download must keep" in outputs[0]
    assert outputs[1] == outputs[0]
    # the checking cell is in the download (Run All needs it) and collapsed, as on the page
    (check,) = [c for c in nb["cells"] if "remove-cell" in c["metadata"].get("tags", [])]
    assert check["metadata"]["jupyter"] == {"source_hidden": True, "outputs_hidden": True}
    (shown,) = [c for c in nb["cells"] if c["cell_type"] == "code" and "print(" in "".join(c["source"])]
    assert "jupyter" not in shown["metadata"]
