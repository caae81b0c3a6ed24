"""A small Sphinx extension for the book (listed in ``_config.yml``), with four jobs:

* Plotly's JavaScript, as shipped in the ``plotly`` wheel, is copied once into the site's
  ``_static`` and loaded by every page, so the interactive trace views (``trace_view``) need no
  CDN and carry no copy of the library each;
* every executed notebook page offers its ``.ipynb``, with its outputs, in the download menu
  (sphinx-book-theme does that only when an online launch service is configured, which this
  offline book has none of; and a page rebuilt from the execution cache gets its outputs back);
* in those downloads the checking cells (tagged ``remove-cell``, ``remove-input`` or
  ``hide-input``: glue, asserts, ``bh.says``) are collapsed, as the page hides them: JupyterLab and
  Notebook 7 read ``metadata.jupyter.source_hidden`` (and ``outputs_hidden``); and the Markdown
  reads as the page does (``readable_markdown``): glued values as text, hunt answers and
  solutions folded (``<details>``), glossary and page links as their text;
* a glossary link that names code (``tma2mma``) is set in the code font (``code_term_links``);
* the pages load without a JavaScript error (``tests/test_book.py`` opens one in Chromium): the
  theme's colour mode gets a valid default, and an inline script that sphinx-thebe adds twice
  (a ``const`` declared twice is a SyntaxError) is kept once.
"""
from __future__ import annotations

import re
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


_DROPDOWN = re.compile(r"^```\{admonition\}[ \t]*([^\n]*)\n((?::[\w-]+:[^\n]*\n)*)\n?(.*?)^```[ \t]*$",
                       re.MULTILINE | re.DOTALL)
_GLUE = re.compile(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`")
_TITLED_ROLE = re.compile(r"\{(?:term|doc|ref)\}`([^`<]*?)\s*<[^>`]*>`")
_PLAIN_ROLE = re.compile(r"\{(?:term|doc|ref)\}`([^`]*)`")


def _glued_text(value, fmt):
    """A glued value's text as the page's {glue:text} role shows it (strings without their quotes)."""
    text = value.get("data", {}).get("text/plain", "")
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if fmt:
        try:
            return format(float(text), fmt)
        except ValueError:
            return text
    return text


def readable_markdown(nb, glued):
    """Make the Markdown cells of a downloaded notebook read as the page does: a ``{glue:text}``
    reference becomes the glued value (``glued``: name -> the glue output), a dropdown admonition
    (hunt answers, exercise solutions) a folded ``<details>`` block, any other admonition a quote,
    a ``{term}``/``{doc}`` link its text. Returns the number of references replaced."""
    count = 0

    def glue(m):
        nonlocal count
        if m.group(1) not in glued:
            return m.group(0)
        count += 1
        return _glued_text(glued[m.group(1)], m.group(2))

    def admonition(m):
        title, options, body = m.group(1).strip(), m.group(2), m.group(3).rstrip()
        if "dropdown" in options:
            return f"<details><summary>{title}</summary>\n\n{body}\n\n</details>"
        quoted = "\n".join("> " + line if line else ">" for line in body.split("\n"))
        return f"> **{title}**\n>\n{quoted}"

    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        src = _GLUE.sub(glue, cell.source)
        src = _DROPDOWN.sub(admonition, src)
        src = _PLAIN_ROLE.sub(r"\1", _TITLED_ROLE.sub(r"\1", src))
        cell.source = src
    return count


def _glued(executed, nb):
    """name -> glue output of an executed page: myst-nb's ``.glue.json`` beside it, else the
    notebook's own glue outputs."""
    import json

    path = executed.with_suffix(".glue.json")
    if path.exists():
        return json.loads(path.read_text())
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                prefix = o["metadata"]["scrapbook"].get("mime_prefix", "")
                out[name] = {"data": {k[len(prefix):]: v for k, v in o.get("data", {}).items()}}
    return out


def _offer_ipynb(app, pagename, templatename, context, doctree):
    import nbformat

    executed = Path(app.outdir).parent / "jupyter_execute" / (pagename + ".ipynb")
    if not executed.exists():
        return
    target = Path(app.outdir) / "_sources" / (pagename + ".ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    nb = _with_cached_outputs(app, executed) or nbformat.read(str(executed), as_version=4)
    hide_checking_cells(nb)
    readable_markdown(nb, _glued(executed, nbformat.read(str(executed), as_version=4)))
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


#: a glossary link's text that names code (one word with a digit, ``_``, ``.``, ``:`` or ``[``:
#: ``tma2mma``, ``tcgen05.commit``, ``ld2mma[a]``), set in the code font as the same name elsewhere
_CODE_NAME = re.compile(r"(?=[\w.:\[\]]*[\d_.:\[])[\w.:\[\]]+")


def code_term_links(doctree):
    """Set the text of each ``{term}`` link that names code in the code font (a ``{term}`` role
    cannot hold inline code); returns how many."""
    from docutils import nodes

    count = 0
    for node in list(doctree.findall(nodes.inline)):
        if "std-term" in node.get("classes", []) and _CODE_NAME.fullmatch(node.astext()):
            node.replace_self(nodes.literal(node.astext(), node.astext(), classes=node["classes"]))
            count += 1
    return count


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
    app.connect("doctree-resolved", lambda app, doctree, docname: code_term_links(doctree))
    # after myst-nb adds its per-page scripts (priority 500, registered earlier), and before any
    # handler that returns a template name (html-page-context stops at the first one that does)
    app.connect("html-page-context", _scripts_once, priority=550)
    app.connect("builder-inited", _add_static)
    app.add_js_file(PLOTLY_JS)
    # before sphinx-book-theme builds its header buttons (priority 501)
    app.connect("html-page-context", _offer_ipynb, priority=450)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
