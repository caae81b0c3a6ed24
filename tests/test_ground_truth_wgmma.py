"""Ground truth for the emulator's operand-address model (``emu.tensor_core.operand_addresses``,
which the MMA explorer shows and every emulated tcgen05.mma uses): which shared-memory bytes a
Hopper wgmma reads through a matrix descriptor, for the swizzle modes none, 32B, 64B and 128B with
a few LBO/SBO values (``tests/hopper/wgmma_operands.py``; the descriptor family is the one
Blackwell's MMAs use, the swizzle field's bit positions aside).

* On the CPU: the probe kernel compiles for sm_90a (NVRTC), and the replay machinery is checked on
  the model itself (encode D as the warpgroup's registers, decode it, recover every read position).
* ``tests/data/h200_wgmma_operands.json``, recorded on an H200 on 2026-12-01 (24 cases), is replayed
  here in CI: every case's D (both runs) must equal what the model computes from the same
  shared-memory image.
* ``-m hopper`` on an sm_90 GPU: the same comparison live.
"""
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.hopper import wgmma_operands as wo  # noqa: E402

RECORDING = os.path.join(ROOT, "tests", "data", "h200_wgmma_operands.json")


def _registers(d):
    """The inverse of ``wo.accumulator``: D as the warpgroup's registers."""
    regs = np.zeros((wo.THREADS, 8), dtype=np.float32)
    for t in range(wo.THREADS):
        w, lane = divmod(t, 32)
        for i in range(8):
            j, q = divmod(i, 4)
            regs[t, i] = d[16 * w + lane // 4 + 8 * (q // 2), 8 * j + 2 * (lane % 4) + (q % 2)]
    return regs.ravel()


def test_probe_kernel_compiles_for_sm90a():
    assert len(wo.compile_cubin("sm_90a")) > 1000


def test_descriptor_conversion():
    d90 = wo.sm90_desc(256, 1024, "64B") | 0x123
    d100 = wo.to_sm100(d90)
    from gemm_kernels.layouts import decode_smem_desc

    f = decode_smem_desc(d100)
    assert (f["start_addr"], f["lbo"], f["sbo"], f["swizzle"], f["fixed_bits_46_48"]) == (0x1230, 256, 1024,
                                                                                         "64B", 1)
    with pytest.raises(ValueError, match="multiple of 16"):
        wo.sm90_desc(8, 1024, "none")


@pytest.mark.parametrize("case", wo.cases()[:6] + wo.cases()[-6:], ids=lambda c: c[0])
def test_replay_machinery_on_the_model(case):
    """Each probed element's position comes back from two runs' D through the register layout;
    each row reads 16 distinct halfwords."""
    base = 0x400
    d_lo, d_hi = (wo.model_accumulator(case, base, run) for run in (0, 1))
    back = [wo.accumulator(_registers(d)) for d in (d_lo, d_hi)]
    np.testing.assert_array_equal(back[0], d_lo)
    pos = wo.read_positions(case, *back)
    rows = wo.M if case[1] == "A" else wo.N
    assert pos.shape == (rows, wo.K)
    assert all(len(set(r)) == wo.K for r in pos.tolist())
    assert pos.min() >= 0 and pos.max() < wo.PROBE_BYTES // 2


def test_swizzled_k_major_reads_ignore_lbo_in_the_model():
    """What the recording will confirm or refute: for a swizzled K-major operand whose 16 K
    elements fit in one swizzle row, LBO plays no part."""
    by = {}
    for case in wo.cases():
        if case[2] != "none":
            d = (wo.model_accumulator(case, 0x400, 0), wo.model_accumulator(case, 0x400, 1))
            by.setdefault((case[1], case[2], case[4]), []).append(wo.read_positions(case, *d))
    for key, reads in by.items():
        for r in reads[1:]:
            np.testing.assert_array_equal(r, reads[0], err_msg=str(key))


def _recorded():
    with open(RECORDING) as f:
        doc = json.load(f)
    return [pytest.param(c, id=c["name"]) for c in doc["cases"]]


def _compare(entry):
    case = next(c for c in wo.cases() if c[0] == entry["name"])
    for run in (0, 1):
        got = wo.accumulator(entry[f"regs_run{run}"])
        want = wo.model_accumulator(case, entry["smem_base"], run)
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)[:4].tolist()
            pos_got = wo.read_positions(case, wo.accumulator(entry["regs_run0"]), wo.accumulator(entry["regs_run1"]))
            raise AssertionError(f"{entry['name']} run {run}: the H200's D differs from the model's at "
                                 f"{bad}; the wgmma read halfwords {pos_got[:2].tolist()} (first rows)")


@pytest.mark.parametrize("entry", _recorded())
def test_recorded_wgmma_reads_match_the_model(entry):
    _compare(entry)


def test_the_recording_is_an_h200s_and_covers_every_case():
    with open(RECORDING) as f:
        doc = json.load(f)
    assert "H200" in doc["metadata"]["gpu"]["name"], doc["metadata"]["gpu"]
    assert [c["name"] for c in doc["cases"]] == [c[0] for c in wo.cases()]


@pytest.mark.hopper
def test_live_wgmma_reads_match_the_model():
    for entry in wo.record()["cases"]:
        _compare(entry)
