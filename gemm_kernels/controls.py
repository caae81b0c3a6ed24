"""Controls for a live notebook: pipe depth, completion policy and seed, and shape, each of which
re-runs the chapter's kernel on the emulator and redraws its timeline (``ipywidgets``).

A live notebook shows the timeline of the first settings at once, inside the widgets. In the built
book the same output shows it as a plain figure: the
output carries both the widgets and a PNG, and ``_config.yml`` tells myst-nb to prefer the PNG
(``nb_mime_priority_overrides``) and to load no widget JavaScript (``nb_ipywidgets_js``), so the
page stays offline. JupyterLab prefers the widgets.
"""
from __future__ import annotations

import base64
import io

from .chapters import CHAPTERS

POLICIES = ("lazy", "eager", "random")


def _figure(chapter, shape, policy, seed, depth, max_ctas, title):
    from .book_helpers import mark_stages
    from .check import random_operands
    from .timeline import draw_timeline

    a, b = random_operands(*shape)
    config = {"policy": policy, "seed": seed, "trace": True}
    if depth is not None:
        config["pipe_depth"] = depth
    launched = CHAPTERS[chapter].entry(a, b, backend="emulator", **config)
    m, n, k = shape
    label = f"{title or f'step {chapter}'}: {m} x {n} x {k}, policy {policy}" + (
        f" (seed {seed})" if policy == "random" else "") + (f", PIPE_DEPTH {depth}" if depth else "")
    return draw_timeline(mark_stages(launched.launch.trace), title=label, max_ctas=max_ctas).figure


class _Live:
    """Widgets for a live front end, with a PNG of the first settings for a static page."""

    def __init__(self, box, png):
        self.box, self.png = box, png

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.box._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["image/png"] = base64.b64encode(self.png).decode()
        bundle["text/plain"] = "timeline controls (run the notebook to use them)"
        return bundle


def controls(chapter, shapes, *, depths=None, max_ctas=1, title=""):
    """Timeline controls for chapter ``chapter``: ``shapes`` a list of (M, N, K) the kernel accepts,
    ``depths`` the pipeline depths to offer (None: the chapter has no depth knob)."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    shape = w.Dropdown(options=[(f"{m} x {n} x {k}", (m, n, k)) for m, n, k in shapes], description="shape")
    policy = w.Dropdown(options=POLICIES, description="policy")
    seed = w.BoundedIntText(value=0, min=0, max=10_000, description="seed")
    knobs = [shape, policy, seed]
    depth = None
    if depths:
        import inspect

        default = inspect.signature(inspect.unwrap(CHAPTERS[chapter].entry)).parameters["pipe_depth"].default
        depth = w.SelectionSlider(options=list(depths), value=default if default in depths else depths[0],
                                  description="pipe depth")
        knobs.append(depth)
    out = w.Output()

    def current():
        return (shape.value, policy.value, seed.value, depth.value if depth else None)

    def redraw(_change=None):
        with out:
            out.clear_output(wait=True)
            fig = _figure(chapter, *current(), max_ctas, title)
            plt.show()
            plt.close(fig)

    fig = _figure(chapter, *current(), max_ctas, title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    # the first settings' timeline is in the widget from the start: after Run All a live notebook
    # shows it at once, as the page does (it was empty until a knob changed)
    from IPython.display import Image

    out.append_display_data(Image(data=buf.getvalue(), format="png"))
    for knob in knobs:
        knob.observe(redraw, names="value")
    box = w.VBox([w.HBox(knobs[:2]), w.HBox(knobs[2:]), out])
    return _Live(box, buf.getvalue())
