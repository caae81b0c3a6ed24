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


@pytest.mark.parametrize("size", [4096, 8192])
@pytest.mark.parametrize("ch", [c for c in sorted(CHAPTERS) if c >= 3])
def test_chapter_on_b200_full(ch, size):
    if ch == 3 and size == 8192:
        pytest.skip("chapter 3 is checked at 4096^3")
    a, b = random_operands(size, size, size, seed=ch)
    res = compare(CHAPTERS[ch].entry(a, b, backend="blackwell"), a, b)
    assert res.ok, res.report()
