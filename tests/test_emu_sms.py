"""CTAs placed on a given number of SMs (``emu.on_sms``): the CTAs of an SM share its 512 TMEM
columns, so a CTA's tcgen05.alloc blocks until another CTA on that SM frees columns (chapter 3's
claim). By default every CTA has an SM of its own and nothing blocks."""
import numpy as np
import pytest

from gemm_kernels import book_helpers as bh
from gemm_kernels import emu
from gemm_kernels.check import random_operands, reference, tolerance
from gemm_kernels.kernels import v3_grid as v3

FIT = 512 // v3.TMEM_COLS  # accumulators of step 3 that fit in one SM's TMEM


@pytest.fixture(scope="module")
def operands():
    return random_operands(128 * (FIT + 1), 128, 64)  # one CTA more than fit on an SM


def _allocs_blocked(trace):
    return [e for e in trace.events if e.op == "tmem.alloc"]


def test_a_fifth_cta_waits_for_columns_on_one_sm(operands):
    a, b = operands
    with emu.on_sms(1):
        launched = v3.gemm_v3(a, b, backend="emulator", trace=True)
    trace = launched.launch.trace
    blocked = _allocs_blocked(trace)
    assert [e.cta for e in blocked] == [FIT], blocked
    first_read_done = min(e.end for e in trace.events if e.op == "tmem.ld" and e.cta < FIT)
    assert blocked[0].end >= first_read_done > blocked[0].start
    ref = reference(a, b)
    assert np.all(np.abs(launched.d.astype(np.float64) - ref) <= tolerance(a, b, ref))


def test_enough_sms_and_the_default_never_block(operands):
    a, b = operands
    with emu.on_sms(2):
        assert not _allocs_blocked(bh.trace_of(3, a, b))
    assert not _allocs_blocked(bh.trace_of(3, a, b))  # the default: an SM per CTA


def test_bad_sm_count():
    with pytest.raises(ValueError, match="positive number of SMs"):
        with emu.on_sms(0):
            pass
