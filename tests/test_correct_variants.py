"""No false positives: every variant of tests/correct_variants.py is correct on the chip, so the
emulator stays silent on it, and its result matches numpy, under every completion order."""
import pytest

from gemm_kernels import book_helpers
from gemm_kernels.check import compare, random_operands
from tests.correct_variants import VARIANTS

ORDERS = [("lazy", 0), ("eager", 0), ("random", 1), ("random", 2)]


@pytest.mark.slow  # 8 variants x 4 orders: about a minute on one core
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_correct_variant_is_silent(name):
    ch, edits, (m, n, k), config, _why = VARIANTS[name]
    entry = book_helpers.variant(ch, edits).entry
    a, b = random_operands(m, n, k, seed=ch)
    for policy, seed in ORDERS:
        d = entry(a, b, backend="emulator", policy=policy, seed=seed, **config)
        res = compare(d, a, b)
        assert res.ok, f"{name} ({policy}, seed {seed}): {res.report()}"


def test_enough_variants():
    assert len(VARIANTS) >= 6
