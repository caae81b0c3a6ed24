"""On a real B200 (skipped elsewhere): every chapter at its emulator shapes and at full sizes."""
import pytest

from gemm_kernels import CHAPTERS
from gemm_kernels.check import compare, random_operands

pytestmark = pytest.mark.blackwell


@pytest.mark.parametrize("ch", sorted(CHAPTERS))
def test_chapter_on_b200_small(ch):
    m, n, k = CHAPTERS[ch].test_shape
    a, b = random_operands(m, n, k, seed=ch)
    res = compare(CHAPTERS[ch].entry(a, b, backend="blackwell"), a, b)
    assert res.ok, res.report()


@pytest.mark.parametrize("ch, size", [(c, s) for c in sorted(CHAPTERS) if c >= 3 for s in (4096, 8192)
                                      if (c, s) != (3, 8192)])  # chapter 3 (no reuse) only at 4096^3
def test_chapter_on_b200_full(ch, size):
    a, b = random_operands(size, size, size, seed=ch)
    res = compare(CHAPTERS[ch].entry(a, b, backend="blackwell"), a, b)
    assert res.ok, res.report()
