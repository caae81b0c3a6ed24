"""Ground truth for step 10's edge tiles (tests/hopper/i23_cases.py): TMA loads past M, past K and
wholly below a matrix, and stores clipped at M and at an N inside a padded pitch. The H200's outputs
are in tests/data/h200_ground_truth_i23.json (recorded 2026-12-01); the emulator reproduces them byte
for byte under two completion policies. What the recording taught: loads fill zeros from column N
exactly, but a store writes the last 16-byte chunk of each row whole, past N into the pitch (the
PTX ISA does not say so). The emulator's own runs are also checked against those rules directly."""
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from gemm_kernels.emu.tma import swizzle_offsets  # noqa: E402
from gemm_kernels.runtime import ensure_numpy_compat  # noqa: E402
from tests.hopper import i23_cases as cases  # noqa: E402
from tests.hopper.micro_kernels import check_emulator, tma_matrix  # noqa: E402

ensure_numpy_compat()

DOC = json.load(open(cases.DATA))


def _unswizzle(raw, box, mode):
    """A box's bytes as loaded (swizzled, at a 1024-aligned address) -> the box in row order."""
    rows, cols = box
    lin = np.arange(rows * cols * 2)
    return raw[swizzle_offsets(lin, mode)].view(np.uint16).reshape(rows, cols)


def test_emulator_edge_loads_fill_zeros_and_count_whole_boxes():
    got = cases.CASE_BY_NAME["edge_loads"].run("emulator")
    assert got["status"][0] == 1, "the barrier completes with three whole boxes announced"
    mat = tma_matrix(np.uint16, *cases.LD_SHAPE)
    m, k = cases.LD_SHAPE
    boxes = got["smem"].reshape(len(cases.LD_COORDS), -1)
    for (c0, r0), raw in zip(cases.LD_COORDS, boxes):
        box = _unswizzle(raw, cases.LD_BOX, "128B")
        want = np.zeros(cases.LD_BOX, np.uint16)
        rr, cc = max(0, min(m - r0, cases.LD_BOX[0])), max(0, min(k - c0, cases.LD_BOX[1]))
        want[:rr, :cc] = mat[r0:r0 + rr, c0:c0 + cc]
        assert (box == want).all(), f"box at (col {c0}, row {r0})"


def test_emulator_edge_stores_clip_at_m_and_the_16_byte_chunk_after_n():
    got = cases.CASE_BY_NAME["edge_stores"].run("emulator")
    full = got["global"]
    m, n = cases.ST_SHAPE
    assert (full[m:] == cases.MARK).all(), "rows past M are never written"
    assert (full[:m] != cases.MARK).all(), "the clipped box wrote D and the rest of each row's last 16-byte chunk"
    # element (r, c) of the box is read from staging byte swizzle(2 (r * 32 + c)): box 0's word there + 1
    lin = 2 * (np.arange(m)[:, None] * cases.ST_BOX[1] + np.arange(cases.ST_PITCH)[None, :])
    first = swizzle_offsets(lin, "64B") // 2 + 1
    assert (full[:m] == first).all(), "D holds box 0's first rows and columns (64B swizzle undone)"


def test_emulator_ragged_loads_fill_zeros_from_n_exactly():
    got = cases.CASE_BY_NAME["ragged_loads"].run("emulator")
    boxes = got["smem"].reshape(len(cases.RG_LD_COORDS), -1)
    mat = tma_matrix(np.uint16, cases.RG_ROWS, cases.RG_PITCH)
    first = _unswizzle(boxes[0], cases.RG_BOX, "64B")
    assert (first[:cases.RG_ROWS, :13] == mat[:, :13]).all()
    assert (first[:, 13:] == 0).all() and (first[cases.RG_ROWS:] == 0).all(), "the padding loads as zeros"
    assert (_unswizzle(boxes[1], cases.RG_BOX, "64B") == 0).all(), "a box past N inside the pitch is all zeros"


def test_emulator_ragged_stores_write_to_the_end_of_the_16_byte_chunk():
    got = cases.CASE_BY_NAME["ragged_stores"].run("emulator")
    m = cases.RG_ROWS
    for name, first_col in (("global_a", 0), ("global_b", 16)):
        full = got[name]
        written = full[:m] != cases.MARK
        assert written[:, first_col:24].all() and not written[:, 24:].any() and not written[:, :first_col].any(), name
        assert (full[m:] == cases.MARK).all()


def test_a_ragged_store_whose_last_chunk_leaves_the_array_is_refused():
    """The last row of a 13-column uint16 map whose memory ends at column 13: the store would write
    columns 13-15 past the end, so the emulator refuses, naming the pitch to give."""
    from gemm_kernels import emu
    from gemm_kernels.emu.errors import MemoryFault

    buf = np.zeros(4 * 16 + 13, np.uint16)
    view = np.lib.stride_tricks.as_strided(buf, shape=(5, 13), strides=(32, 2))
    tm = emu.TensorMapModel(view, 8, 16, "32B", name="D")
    with pytest.raises(MemoryFault, match="16-byte chunk.*Give the array 16 columns of pitch"):
        tm.write_box(0, 0, np.ones(8 * 16, np.uint16).view(np.uint8))


@pytest.mark.parametrize("name,policy", [(c.name, policy) for c in cases.CASES for policy in ("lazy", "eager")])
def test_emulator_replays_h200(name, policy):
    if policy == "lazy":  # once per case: the recording is of this GPU's cases
        assert "H200" in DOC["gpu"]["name"], DOC["gpu"]
        assert set(DOC["cases"]) == {c.name for c in cases.CASES}
    case = cases.CASE_BY_NAME[name]
    rec = DOC["cases"][name]
    assert "outputs" in rec, f"the H200 run of {name} failed: {rec.get('error')}"
    problems = check_emulator(case, rec, policy)
    assert not problems, f"the emulator differs from the H200 ({case.what}):\n{problems}"
