"""Step 11's layouts against CUTLASS's C++ headers, on the CPU: the packed scale-factor layout of
gemm_kernels.quant (the byte offset of every scale factor) against
``cutlass::detail::Sm1xxBlockScaledConfig<vec>::tile_atom_to_shape_SFA/SFB``, and the block-scaled
and f8f6f4 instruction descriptors of gemm_kernels.layouts against ``UMMA::make_instr_desc_block_scaled``
and ``UMMA::make_instr_desc``. tests/cutlass_oracle/sf_oracle.cpp prints CUTLASS's values; it is
compiled like the oracle of tests/test_layouts_cutlass.py (same headers, same skips, which the full CI
run turns into failures).
"""
from pathlib import Path

import numpy as np
import pytest

from gemm_kernels import layouts as L
from gemm_kernels import quant as Q
from tests.test_layouts_cutlass import run_oracle

ORACLE_SRC = Path(__file__).parent / "cutlass_oracle" / "sf_oracle.cpp"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    return run_oracle(ORACLE_SRC, tmp_path_factory, ("SF", "SFB", "BSIDESC", "F8IDESC"))


@pytest.mark.parametrize("which", ["SF", "SFB"])
def test_every_scale_factor_offset_matches_cutlass(oracle, which):
    rows_seen = oracle[which]
    assert len(rows_seen) == 7 * 2  # seven shapes, two scale vectors each
    compared = 0
    for vec, rows, k, *offsets in rows_seen:
        vec, rows, k = int(vec), int(rows), int(k)
        cols = k // vec
        cutlass = np.array(offsets, dtype=np.int64).reshape(rows, cols)
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        ours = Q.sf_offset(r, c, cols)
        assert np.array_equal(ours, cutlass), (which, vec, rows, k)
        # and the packed bytes of a quantised operand sit where CUTLASS says
        fmt = {32: "mxfp8", 16: "nvfp4"}[vec]
        x = np.random.default_rng(rows + k).standard_normal((rows, k)).astype(np.float32)
        q = Q.quantize(x, fmt)
        assert np.array_equal(q.scales_packed[cutlass], Q.codes_of(q.scales))
        compared += rows * cols
    assert compared == sum((r * k // 32) + (r * k // 16) for r, k in
                           ((128, 128), (256, 512), (200, 96), (130, 160), (1, 32), (384, 256), (64, 64)))


def test_block_scaled_instr_desc_matches_cutlass(oracle):
    rows = oracle["BSIDESC"]
    assert len(rows) == 8 * 5
    compared = 0
    for a, b, sf, m, n, value in rows:
        m, n, value = int(m), int(n), int(value, 16)
        kind = "mxf4nvf4" if a == "e2m1" else "mxf8f6f4"
        for group in (1, 2):
            try:
                ours = L.make_instr_desc_block_scaled(m, n, kind=kind, a_dtype=a, b_dtype=b, scale_dtype=sf,
                                                      cta_group=group)
            except ValueError:
                continue
            assert ours == value, (a, b, sf, m, n, group, hex(ours), hex(value))
            compared += 1
        d = L.decode_instr_desc_block_scaled(value, kind)
        assert (d["m"], d["n"], d["a_dtype"], d["b_dtype"], d["scale_dtype"]) == (m, n, a, b, sf)
        assert d["reserved"] == 0 and d["sfa_id"] == d["sfb_id"] == 0
    # M=128: ::1 for every N (5) and ::2 for N % 16 == 0 (4); M=256: ::2 for 4 N
    assert compared == 5 * (5 + 4) + 3 * 4


def test_f8f6f4_instr_desc_matches_cutlass(oracle):
    rows = oracle["F8IDESC"]
    assert len(rows) == 4 * 4
    compared = 0
    for a, b, m, n, value in rows:
        m, n, value = int(m), int(n), int(value, 16)
        for group in (1, 2):
            try:
                ours = L.make_instr_desc_f8f6f4(m, n, a_dtype=a, b_dtype=b, cta_group=group)
            except ValueError:
                continue
            assert ours == value, (a, b, m, n, group, hex(ours), hex(value))
            compared += 1
    assert compared >= 12
