"""The MMA explorer (``gk-explorer``): its descriptors are the ones the kernels build, its bytes
come from the emulator's operand-address model, and the page element works offline in headless
Chromium (pick the pair's shape, a K step and a stage; the shown bits follow)."""
import json
import os

import numpy as np
import pytest

from gemm_kernels import mma_explorer as mx
from gemm_kernels.kernels.descriptors import DESC_HI, DESC_LO_K_STEP, DESC_LO_LBO


@pytest.fixture(scope="module")
def explorer():
    return mx.Explorer()


def test_descriptors_are_the_kernels(explorer):
    """The split form the MMA warp of chapters 7-9 builds (DESC_HI, the low word advanced by
    DESC_LO_K_STEP per K step) gives the same 64 bits for every shape, stage and K step."""
    for shape, data in zip(explorer.shapes, explorer.data):
        for k in range(shape.k_steps):
            for s in range(shape.stages):
                m = data["mmas"][k][s]
                for op, offs in (("A", shape.a_stage), ("B", shape.b_stage)):
                    lo = ((((mx.SMEM_BASE + offs[s]) & 0x3FFFF) >> 4) | DESC_LO_LBO) + k * DESC_LO_K_STEP
                    assert int(m[op]["desc"], 16) == (DESC_HI << 32) | lo, (shape.label, k, s, op)


def test_each_mma_reads_32_bytes_of_every_row(explorer):
    """An M x N x 16 MMA reads 16 fp16 (two 16-byte chunks) of each of its rows; the K steps of a
    stage read disjoint chunks and together all of each 128-byte line."""
    for shape, data in zip(explorer.shapes, explorer.data):
        for op, rows in (("A", shape.m // shape.cta_group), ("B", shape.n // shape.cta_group)):
            seen = np.zeros((rows, 8), dtype=int)
            for k in range(shape.k_steps):
                bits = np.array([c == "1" for c in data["mmas"][k][0][op]["chunks"]]).reshape(rows, 8)
                assert (bits.sum(axis=1) == 2).all()
                seen += bits
            assert (seen == 1).all()
    pair = explorer.data[1]["mmas"][0][0]["tmem"]
    assert [c["d_rows"] for c in pair["ctas"]] == [[0, 127], [128, 255]]


def test_bad_choice_is_refused():
    with pytest.raises(ValueError, match="k_step must be in"):
        mx.one_mma(mx.shapes()[0], 4, 0)


PROBE = """(function(){var el=document.querySelector('.gk-explorer');var first=JSON.parse(el.dataset.state);
el.gkSet(1,3,5);var pair=JSON.parse(el.dataset.state);
var small=[].slice.call(el.querySelectorAll('td,th,label,div,text')).filter(function(n){return n.textContent.trim()&&n.children.length===0;})
 .map(function(n){return parseFloat(getComputedStyle(n).fontSize);});
return JSON.stringify({first:first,pair:pair,minfont:Math.min.apply(null,small)});})()"""


@pytest.mark.slow
def test_explorer_in_headless_chromium(explorer, tmp_path):
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    import chromium_page

    if chromium_page.chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (apt-get install -y chromium) for this test")
        pytest.skip("no chromium on PATH (Debian: apt-get install -y chromium)")
    page = tmp_path / "explorer.html"
    page.write_text("<html><body>" + explorer._repr_html_() + "</body></html>")
    report = chromium_page.load(page.as_uri(), [PROBE])
    assert not report.errors and not report.requests, (report.errors, report.requests)
    got = json.loads(report.values[PROBE])
    want = explorer.data[1]["mmas"][3][5]
    assert got["pair"]["a"] == want["A"]["desc"] and got["pair"]["b"] == want["B"]["desc"]
    assert got["pair"]["idesc"] == want["idesc"] and got["pair"]["ctas"] == 2
    assert got["first"]["achunks"] == 2 * 128 and got["first"]["ctas"] == 1
    assert got["minfont"] >= 13, got
