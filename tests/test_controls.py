"""The timeline controls of a live notebook: after Run All they already show the timeline of their
first settings (issue 21: nothing until a knob changed), and the page gets the same as a PNG."""
import matplotlib

matplotlib.use("Agg")  # tests only

from gemm_kernels import controls  # noqa: E402


def test_controls_show_the_first_timeline_at_once():
    live = controls.controls(1, [(128, 128, 64)])
    out = live.box.children[-1]
    assert [o["output_type"] for o in out.outputs] == ["display_data"]
    assert out.outputs[0]["data"]["image/png"]  # the timeline, before any knob moved
    bundle = live._repr_mimebundle_()
    assert bundle["image/png"] and "application/vnd.jupyter.widget-view+json" in bundle
