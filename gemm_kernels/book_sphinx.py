"""A small Sphinx extension for the book (listed in ``_config.yml``), with two jobs:

* Plotly's JavaScript, as shipped in the ``plotly`` wheel, is copied once into the site's
  ``_static`` and loaded by every page, so the interactive trace views (``trace_view``) need no
  CDN and carry no copy of the library each;
* every executed notebook page offers its ``.ipynb`` in the download menu (sphinx-book-theme does
  that only when an online launch service is configured, which this offline book has none of).
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


def _offer_ipynb(app, pagename, templatename, context, doctree):
    executed = Path(app.outdir).parent / "jupyter_execute" / (pagename + ".ipynb")
    if not executed.exists():
        return
    target = Path(app.outdir) / "_sources" / (pagename + ".ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executed, target)
    context["ipynb_source"] = pagename + ".ipynb"


def setup(app):
    app.connect("builder-inited", _add_static)
    app.add_js_file(PLOTLY_JS)
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _offer_ipynb, priority=450)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
