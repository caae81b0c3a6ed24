"""A small Sphinx extension for the book (listed in ``_config.yml``), with four jobs:

* Plotly's JavaScript, as shipped in the ``plotly`` wheel, is copied once into the site's
  ``_static`` and loaded by every page, so the interactive trace views (``trace_view``) need no
  CDN and carry no copy of the library each;
* every executed notebook page offers its ``.ipynb``, with its outputs, in the download menu
  (sphinx-book-theme does that only when an online launch service is configured, which this
  offline book has none of; and a page rebuilt from the execution cache gets its outputs back);
* in those downloads the checking cells (tagged ``remove-cell``, ``remove-input`` or
  ``hide-input``: glue, asserts, ``bh.says``) are collapsed, as the page hides them: JupyterLab and
  Notebook 7 read ``metadata.jupyter.source_hidden`` (and ``outputs_hidden``);
* the pages load without a JavaScript error (``tests/test_book.py`` opens one in Chromium): the
  theme's colour mode gets a valid default, and an inline script that sphinx-thebe adds twice
  (a ``const`` declared twice is a SyntaxError) is kept once.
"""
from __future__ import annotations

import shutil
from pathlib import Path

PLOTLY_JS = "plotly.min.js"


def plotly_js_path():
    """The minified plotly.js inside the installed ``plotly`` wheel."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: reinstall plotly (pinned in requirements.txt)")
    return path


def _add_static(app):
    static = Path(app.doctreedir) / "gk_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copy2(plotly_js_path(), static / PLOTLY_JS)
    app.config.html_static_path.append(str(static))


#: Tags with which a page hides a cell's source (and, for the first, its output too).
HIDDEN_CELL_TAGS = {"remove-cell": True, "hide-cell": True, "remove-input": False, "hide-input": False}


def hide_checking_cells(nb):
    """Collapse, in a notebook front end, the cells the page hides: their source (and, for
    ``remove-cell``, their outputs) is marked hidden, the cell itself stays so that Run All
    computes what the visible cells and the glued text use. Returns the number of cells hidden."""
    hidden = 0
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        hits = [HIDDEN_CELL_TAGS[t] for t in tags if t in HIDDEN_CELL_TAGS]
        if cell.cell_type != "code" or not hits:
            continue
        jupyter = cell.metadata.setdefault("jupyter", {})
        jupyter["source_hidden"] = True
        if any(hits):
            jupyter["outputs_hidden"] = True
        hidden += 1
    return hidden


def _offer_ipynb(app, pagename, templatename, context, doctree):
    import nbformat

    executed = Path(app.outdir).parent / "jupyter_execute" / (pagename + ".ipynb")
    if not executed.exists():
        return
    target = Path(app.outdir) / "_sources" / (pagename + ".ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    nb = _with_cached_outputs(app, executed) or nbformat.read(str(executed), as_version=4)
    hide_checking_cells(nb)
    nbformat.write(nb, str(target))
    context["ipynb_source"] = pagename + ".ipynb"


def _with_cached_outputs(app, executed):
    """The executed notebook with its outputs taken from the execution cache, when myst-nb wrote it
    without any (it does for a page whose text changed but whose code did not: the page itself is
    rendered from the cache, but the notebook it writes has no outputs); None when it has outputs."""
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code or any(c.get("outputs") for c in code):
        return None
    config = getattr(app.env, "mystnb_config", None)  # myst-nb resolves the cache folder there
    cache_path = getattr(config, "execution_cache_path", "") if config is not None else ""
    if not cache_path:
        return None
    from jupyter_cache import get_cache

    try:
        _, merged = get_cache(cache_path).merge_match_into_notebook(nb)
    except KeyError:  # no cached run of this code: the notebook really has no outputs
        return None
    for cell in merged.cells:  # glue()'s hidden outputs, which myst-nb leaves out of a fresh build's copy
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if "scrapbook" not in o.get("metadata", {})]
    return merged


def _theme_defaults(app, config):
    # pydata-sphinx-theme's template logs a console error for an empty mode, its default here
    config.html_context.setdefault("default_mode", "auto")


def _scripts_once(app, pagename, templatename, context, doctree):
    seen, kept = set(), []
    for script in context.get("script_files", []):
        # the same file or inline body twice (an inline one's file is None or ""), whatever its
        # priority, is loaded once
        key = (str(getattr(script, "filename", script) or ""),
               tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    import os

    from .trace_view import BOOK_BUILD_ENV

    # the kernels that execute the pages inherit this: their trace views rely on the one copy of
    # plotly.js the site loads, instead of carrying their own
    os.environ[BOOK_BUILD_ENV] = "1"
    app.connect("config-inited", _theme_defaults)
    # after myst-nb adds its per-page scripts (priority 500, registered earlier), and before any
    # handler that returns a template name (html-page-context stops at the first one that does)
    app.connect("html-page-context", _scripts_once, priority=550)
    app.connect("builder-inited", _add_static)
    app.add_js_file(PLOTLY_JS)
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _offer_ipynb, priority=450)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
