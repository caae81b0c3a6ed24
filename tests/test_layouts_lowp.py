"""Step 11's instruction descriptors against the PTX ISA's bit tables (9.7.16.4.2: the f8f6f4 kind
shares the kind::f16 table; the block-scaled kinds have their own), field by field, and their raw
cores as sm_100a device functions. CUTLASS's encoders are compared in tests/test_sf_layout_cutlass.py."""
import itertools

import numpy as np
import pytest
from numba import cuda, types

from gemm_kernels import layouts as L


def _field(v, lo, width):
    return (v >> lo) & ((1 << width) - 1)


@pytest.mark.parametrize("kind, ab, scale", [("mxf8f6f4", "e4m3", "ue8m0"), ("mxf8f6f4", "e5m2", "ue8m0"),
                                             ("mxf4nvf4", "e2m1", "ue4m3"), ("mxf4nvf4", "e2m1", "ue8m0")])
def test_block_scaled_fields_sit_where_the_isa_puts_them(kind, ab, scale):
    codes = L.F8F6F4_CODES if kind == "mxf8f6f4" else L.MXF4_CODES
    per_mma = L.SCALE_VECTOR[(kind, scale)][1]
    ids = {1: (0, 1, 2, 3), 2: (0, 2), 4: (0,)}[per_mma]
    for (m, group), n, sfa, sfb in itertools.product(((128, 1), (128, 2), (256, 2)), (16, 64, 248, 256), ids, ids):
        if group == 2 and n % 16:
            continue
        v = L.make_instr_desc_block_scaled(m, n, kind=kind, a_dtype=ab, b_dtype=ab, scale_dtype=scale,
                                           sfa_id=sfa, sfb_id=sfb, cta_group=group)
        assert _field(v, 4, 2) == sfb          # Matrix B Scale Factor Data ID
        assert _field(v, 7, 3) == codes[ab]    # atype
        assert _field(v, 10, 2 if kind == "mxf4nvf4" else 3) == codes[ab]  # btype
        assert _field(v, 17, 6) == n >> 3
        assert _field(v, 23, 1) == L.SCALE_CODES[scale]
        assert _field(v, 27, 2) == m >> 7
        assert _field(v, 29, 2) == sfa         # Matrix A Scale Factor Data ID
        # reserved bits 0-1, 3, 6, 24-26 (and 31 for mxf8f6f4; K=64 dense for mxf4nvf4), no
        # sparsity, negation, transpose
        assert v & (0b11 | 1 << 3 | 1 << 6 | 0b111 << 24 | 1 << 31 | 1 << 2 | 0b1111 << 13) == 0
        d = L.decode_instr_desc_block_scaled(v, kind)
        assert (d["m"], d["n"], d["sfa_id"], d["sfb_id"], d["scale_dtype"]) == (m, n, sfa, sfb, scale)
        assert int(L.instr_desc_block_scaled_dev.py_func(m, n, codes[ab], codes[ab], L.SCALE_CODES[scale],
                                                         sfa, sfb)) == v


def test_sf_ids_replace_only_the_id_fields():
    base = L.make_instr_desc_block_scaled(128, 256, kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e5m2",
                                          scale_dtype="ue8m0")
    for sfa, sfb in itertools.product(range(4), range(4)):
        want = L.make_instr_desc_block_scaled(128, 256, kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e5m2",
                                              scale_dtype="ue8m0", sfa_id=sfa, sfb_id=sfb)
        got = L.instr_desc_sf_ids_dev.py_func(np.uint32(want ^ (3 << 4) ^ (3 << 29)), sfa, sfb)
        assert isinstance(got, np.uint32) and int(got) == want
    assert int(L.instr_desc_sf_ids_dev.py_func(base, 0, 0)) == base


def test_f8f6f4_uses_the_f16_table_with_fp8_codes():
    for a, b in itertools.product(("e4m3", "e5m2"), repeat=2):
        v = L.make_instr_desc_f8f6f4(128, 256, a_dtype=a, b_dtype=b)
        assert _field(v, 4, 2) == 1 and _field(v, 7, 3) == L.F8F6F4_CODES[a] and _field(v, 10, 3) == L.F8F6F4_CODES[b]
        assert _field(v, 17, 6) == 256 >> 3 and _field(v, 24, 5) == 128 >> 4
    assert L.make_instr_desc_f8f6f4(128, 128) == 0x08200010  # e4m3 x e4m3 -> f32 is f16's code 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(kind="f8", a_dtype="e4m3", b_dtype="e4m3", scale_dtype="ue8m0"), "block-scaled kinds"),
    (dict(kind="mxf8f6f4", a_dtype="e2m1", b_dtype="e4m3", scale_dtype="ue8m0"), "a_dtype 'e2m1'"),
    (dict(kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e4m3", scale_dtype="ue4m3"), "scales by"),
    (dict(kind="mxf4nvf4", a_dtype="e2m1", b_dtype="e4m3", scale_dtype="ue4m3"), "b_dtype 'e4m3'"),
    (dict(kind="mxf4nvf4", a_dtype="e2m1", b_dtype="e2m1", scale_dtype="ue4m3", sfa_id=2), "sfa_id = 2"),
    (dict(kind="mxf4nvf4", a_dtype="e2m1", b_dtype="e2m1", scale_dtype="ue8m0", sfb_id=1), "sfb_id = 1"),
    (dict(kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e4m3", scale_dtype="ue8m0", sfa_id=4), "sfa_id = 4"),
])
def test_block_scaled_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        L.make_instr_desc_block_scaled(128, 128, **kwargs)


@pytest.mark.parametrize("m, n, group, match", [(64, 128, 1, "M = 64"), (128, 12, 1, "N = 12"),
                                                (256, 128, 1, "M = 256"), (256, 24, 2, "N = 24"),
                                                (128, 128, 3, "cta_group")])
def test_block_scaled_bad_shape(m, n, group, match):
    with pytest.raises(ValueError, match=match):
        L.make_instr_desc_block_scaled(m, n, kind="mxf8f6f4", a_dtype="e4m3", b_dtype="e4m3",
                                       scale_dtype="ue8m0", cta_group=group)


def test_f8f6f4_bad_input():
    with pytest.raises(ValueError, match="'e2m1'"):
        L.make_instr_desc_f8f6f4(128, 128, a_dtype="e2m1")
    with pytest.raises(ValueError, match="N = 12"):
        L.make_instr_desc_f8f6f4(128, 12)


@pytest.mark.parametrize("name, argtys", [
    ("instr_desc_block_scaled_dev", (types.int64,) * 7),
    ("instr_desc_sf_ids_dev", (types.uint32, types.int64, types.uint32)),
])
def test_new_cores_compile_for_sm100a_unsigned(name, argtys):
    from gemm_kernels.runtime.offline import target_device

    _dev, raw = L.DEVICE_FUNCTIONS[name]
    with target_device((10, 0, "a")):
        ptx, got = cuda.compile_ptx(raw, argtys, device=True, cc=(10, 0, "a"))
    assert got == types.uint32
    assert ".f64" not in ptx and ".f32" not in ptx
