"""The book: its table of contents, its set-up commands, and a strict build with figure counts.

The slow test builds the whole book (every notebook page executed) into a temporary folder with
Jupyter Book 1.x in strict mode (-W -n --keep-going), exactly as the README's build command does,
and then checks the HTML: the pages that draw figures must contain them, and MathJax must be the
bundled offline copy.
"""
from __future__ import annotations

import os
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
    # every chapter draws at least one timeline from an emulator trace
    **{f"chapters/{name}.html": 1 for name in (
        "01-one-tile", "02-k-loop", "03-grid", "04-tma", "05-pipeline", "06-persistent",
        "07-warp-specialization", "08-two-cta", "09-two-consumers")},
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


def test_nine_chapters_in_order():
    chapters = [f for f in _toc_files() if f.startswith("chapters/")]
    assert len(chapters) == 9
    assert [int(Path(c).name[:2]) for c in chapters] == list(range(1, 10))


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


@pytest.mark.slow
def test_book_builds_strict_with_figures(tmp_path):
    env = dict(os.environ)
    # MPLBACKEND=Agg (set by some CI images and test set-ups) makes matplotlib's non-interactive
    # backend win over the notebook's inline backend: plt.show() then draws nothing, every figure
    # silently disappears, and the build still "succeeds". The kernel must choose its own backend.
    env.pop("MPLBACKEND", None)
    env["PYTHONUNBUFFERED"] = "1"

    cmd = _jupyter_book_cmd() + ["build", str(ROOT), "--path-output", str(tmp_path), "-W", "-n", "--keep-going"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, "strict book build failed:\n" + log[-8000:]

    html = tmp_path / "_build" / "html"
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
