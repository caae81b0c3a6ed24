"""How results are checked against numpy, and with what tolerance.

Inputs are fp16, uniform in [-1, 1). The reference (``reference``) sums the fp16 products in fp32
(numpy's float32 matrix product) and rounds the sum once to fp16. A kernel also accumulates in fp32,
in another order (the tensor core's, or numpy's blocked order on the emulator), and rounds once.

The tolerance is a bound, derived here, on how far two such results can be apart; anything larger
is a real error (a wrong tile, stage or phase gives errors of order 1, an fp16 accumulator errors of
many fp16 ulps). For one output element with products p_i = a_i b_i, i < K (each exact in fp32: 11 x
11 significand bits), P = sum |p_i| and exact sum S:

1. Any order of K - 1 floating-point additions with unit roundoff u has |s - S| <= gamma(K - 1, u) P,
   gamma(n, u) = n u / (1 - n u) (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
   ed., section 4.2). The reference rounds to nearest: u = 2^-24. The tensor core's accumulation is
   not documented; tensor cores measured so far chop instead of rounding (Fasi, Higham, Mikaitis
   and Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ Comput. Sci. 2021), which at
   worst doubles u, so the kernel's sum gets u = 2^-23. The two fp32 sums are then at most
   ``drift = (gamma(K-1, 2^-23) + gamma(K-1, 2^-24)) P`` apart.
2. Each is rounded once to fp16, to the nearest value: half an fp16 spacing at its magnitude each.
   Neither sum exceeds ``reach = |R| + spacing(R) + drift`` in magnitude (R the reference), so
   together the roundings add at most ``spacing16(reach)``.

``tolerance = drift + spacing16(reach)``. At small K the fp16 rounding dominates (about one fp16
ulp of the result: a planted 2-ulp error fails); the fp32 term grows as K P ~ K^2 / 4 and dominates
at large K. ``TOLERANCE_FORMULA`` says it in one line.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def random_operands(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (n, k)).astype(np.float16)
    return a, b


def reference(a, b):
    return (a.astype(np.float32) @ b.astype(np.float32).T).astype(np.float16)


@dataclass
class Comparison:
    max_abs: float
    max_rel: float
    worst_excess: float  # max over elements of |err| / tolerance
    mismatches: int
    total: int

    @property
    def ok(self):
        return self.mismatches == 0

    def report(self):
        return (f"max |D - ref| = {self.max_abs:.3g}, max relative = {self.max_rel:.3g}, "
                f"worst error / tolerance = {self.worst_excess:.2f}, "
                f"{self.mismatches} of {self.total} elements out of tolerance -> {'OK' if self.ok else 'FAIL'}")


#: unit roundoff of the reference's fp32 sums (round to nearest) and of the kernel's (chopping allowed)
U_REFERENCE = 2.0 ** -24
U_KERNEL = 2.0 ** -23
TOLERANCE_FORMULA = ("drift + spacing16(|ref| + spacing16(ref) + drift), drift = (gamma(K-1, 2^-23) + "
                     "gamma(K-1, 2^-24)) * sum|a_i b_i|, gamma(n, u) = n u / (1 - n u)")


def gamma(n, u):
    """Higham's gamma_n: the relative error bound of n floating-point operations with unit roundoff u."""
    if n * u >= 1:
        raise ValueError(f"the bound needs n u < 1 (n = {n}, u = {u})")
    return n * u / (1 - n * u)


def spacing16(x):
    """The distance from |x| to the next fp16 value up (fp16's ulp at that magnitude), as float64."""
    return np.spacing(np.abs(np.asarray(x, dtype=np.float64)).astype(np.float16)).astype(np.float64)


def tolerance(a, b, ref):
    """The largest |D - ref| an fp32-accumulating kernel can produce for these inputs (derivation
    above), per element, as float64."""
    k = a.shape[1]
    abs_sum = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T
    drift = (gamma(k - 1, U_KERNEL) + gamma(k - 1, U_REFERENCE)) * abs_sum
    r = np.abs(np.asarray(ref, dtype=np.float64))
    reach = r + spacing16(r) + drift
    return drift + spacing16(reach)


def compare(d, a, b):
    ref = reference(a, b)
    if np.shape(d) != ref.shape or np.asarray(d).dtype != np.float16:
        raise ValueError(f"result is {np.asarray(d).dtype} {np.shape(d)}; expected float16 {ref.shape}")
    d64 = np.asarray(d).astype(np.float64)
    r64 = ref.astype(np.float64)
    err = np.abs(d64 - r64)
    err = np.where(np.isnan(d64), np.inf, err)
    tol = tolerance(a, b, ref)
    rel = err / np.maximum(np.abs(r64), 1e-3)
    return Comparison(float(err.max()), float(rel.max()), float((err / tol).max()), int((err > tol).sum()), err.size)
