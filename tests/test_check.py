"""The tolerance (gemm_kernels.check) pinned from both sides: what an fp32-accumulating kernel may
produce passes, a planted 2-ulp error at small K and an fp16 accumulator fail, and at large K the
bound sits where its derivation puts it (an error just inside passes, just outside fails)."""
from __future__ import annotations

import numpy as np
import pytest

from gemm_kernels.check import compare, random_operands, reference, spacing16


def _fp16(x):
    return np.asarray(x, dtype=np.float64).astype(np.float16)


def _step(d, ulps):
    """``d`` moved ``ulps`` fp16 steps away from zero (each step the spacing at its magnitude)."""
    out = d.copy()
    for _ in range(ulps):
        out = np.where(out >= 0, np.nextafter(out, np.float16(np.inf)), np.nextafter(out, np.float16(-np.inf)))
    return out.astype(np.float16)


@pytest.mark.parametrize("k, magnitude", [(64, 1), (192, 4)])
def test_neighbouring_fp16_value_passes_two_ulps_fail(k, magnitude):
    """A kernel whose fp32 sum rounds to the neighbouring fp16 value is right; 2 ulps is wrong
    wherever the fp16 rounding dominates the tolerance: at K = 64 for |D| >= 1, at K = 192 (where
    the fp32 term is 3 x 191 x 2^-24 x ~48, about 1.6e-3) for |D| >= 4."""
    a, b = random_operands(64, 64, k, seed=1)
    ref = reference(a, b)
    assert compare(_step(ref, 1), a, b).ok
    big = np.abs(ref.astype(np.float32)) >= magnitude
    assert big.sum() > 100
    two = np.where(big, _step(ref, 2), ref)
    res = compare(two, a, b)
    assert res.mismatches == big.sum(), res.report()
    # one element is enough
    i = np.unravel_index(np.argmax(np.abs(ref.astype(np.float32))), ref.shape)
    one = ref.copy()
    one[i] = _step(ref, 2)[i]
    assert compare(one, a, b).mismatches == 1


def _accumulate(a, b, dtype, order=slice(None)):
    """D with every product rounded to ``dtype`` and summed in ``dtype``, one k at a time."""
    acc = np.zeros((a.shape[0], b.shape[0]), dtype)
    for kk in range(a.shape[1])[order]:
        acc = (acc + (a[:, kk:kk + 1].astype(dtype) * b[:, kk].astype(dtype)[None, :]).astype(dtype)).astype(dtype)
    return acc.astype(np.float16)


@pytest.mark.parametrize("m, n, k", [(128, 128, 64), (256, 384, 128), (512, 384, 192)])
def test_fp32_in_any_order_passes_fp16_accumulation_fails(m, n, k):
    """The chapters' test shapes: sequential fp32 sums (forwards and backwards: orders unlike
    numpy's) are within tolerance; an fp16 accumulator is not."""
    a, b = random_operands(m, n, k, seed=2)
    assert compare(_accumulate(a, b, np.float32), a, b).ok
    assert compare(_accumulate(a, b, np.float32, slice(None, None, -1)), a, b).ok
    res = compare(_accumulate(a, b, np.float16), a, b)
    assert not res.ok and res.mismatches > res.total // 4, res.report()


def _derived_bound(a, b, ref):
    """The bound as its derivation states it, computed here independently of check.tolerance:
    drift = (g(K-1, 2^-23) + g(K-1, 2^-24)) sum|a b|, plus the fp16 spacing at |ref| + spacing + drift."""
    k = a.shape[1]

    def g(n, u):
        return n * u / (1 - n * u)

    p = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T
    drift = (g(k - 1, 2.0 ** -23) + g(k - 1, 2.0 ** -24)) * p
    r = np.abs(ref.astype(np.float64))
    reach = r + spacing16(r) + drift
    return drift + np.spacing(reach.astype(np.float16)).astype(np.float64)


@pytest.mark.parametrize("k", [4096, 16384])
def test_large_k_bound_just_inside_passes_just_outside_fails(k):
    """At large K the fp32 term dominates (many fp16 ulps): the fp16 value just inside the derived
    bound passes, the next one up (one fp16 step, a small fraction of the bound) fails."""
    a, b = random_operands(8, 8, k, seed=3)
    ref = reference(a, b)
    bound = _derived_bound(a, b, ref)
    r64 = ref.astype(np.float64)
    inside = _fp16(r64 + bound)
    inside = np.where(inside.astype(np.float64) - r64 > bound, np.nextafter(inside, np.float16(-np.inf)), inside)
    outside = np.nextafter(inside, np.float16(np.inf))
    assert np.all(inside.astype(np.float64) - r64 <= bound) and np.all(outside.astype(np.float64) - r64 > bound)
    step = (outside.astype(np.float64) - inside.astype(np.float64)) / bound
    assert step.max() < 0.05, "the test must sit close to the bound"
    assert compare(inside.astype(np.float16), a, b).ok
    res = compare(outside.astype(np.float16), a, b)
    assert res.mismatches == res.total, res.report()


def test_the_bound_holds_for_an_adversarial_sum():
    """All products positive (the largest sum|a b|), summed sequentially in fp32 at K = 16384: the
    error against the exact sum stays within one gamma(K-1, 2^-24) * sum|a b|, as the derivation
    assumes of any order."""
    rng = np.random.default_rng(4)
    k = 16384
    a = np.abs(rng.uniform(-1, 1, (4, k))).astype(np.float16)
    b = np.abs(rng.uniform(-1, 1, (4, k))).astype(np.float16)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    seq = _accumulate(a, b, np.float32).astype(np.float64)  # rounded to fp16 at the end
    p = exact  # all products positive: sum|a b| = the sum
    gamma = (k - 1) * 2.0 ** -24 / (1 - (k - 1) * 2.0 ** -24)
    assert np.all(np.abs(seq - exact) <= gamma * p + spacing16(exact))
