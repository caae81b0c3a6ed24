"""How results are checked against numpy, and with what tolerance.

Inputs are fp16, uniform in [-1, 1). The reference sums the exact fp16 products in fp32 and
rounds the sum once to fp16. The kernels also accumulate in fp32 but in another order (the
tensor core's, or numpy's blocked order on the emulator), so before rounding the two sums differ by
a few fp32 ulps of the partial sums, at most about K * 2^-24 * sum|a_i b_i|; after rounding to fp16
they can land on neighbouring fp16 values. We accept one fp16 ulp of the reference value (2^-10
relative) plus that fp32 term: anything larger is a real error (a wrong tile, stage or phase gives
errors of order 1)."""
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


def tolerance(a, b, ref):
    k = a.shape[1]
    abs_sum = np.abs(a.astype(np.float32)) @ np.abs(b.astype(np.float32)).T
    ulp16 = np.spacing(np.abs(ref).astype(np.float16)).astype(np.float32)
    return ulp16 + k * 2.0 ** -24 * abs_sum + 2.0 ** -24


def compare(d, a, b):
    ref = reference(a, b)
    if np.shape(d) != ref.shape or np.asarray(d).dtype != np.float16:
        raise ValueError(f"result is {np.asarray(d).dtype} {np.shape(d)}; expected float16 {ref.shape}")
    d32 = np.asarray(d).astype(np.float32)
    r32 = ref.astype(np.float32)
    err = np.abs(d32 - r32)
    err = np.where(np.isnan(d32), np.inf, err)
    tol = tolerance(a, b, ref)
    rel = err / np.maximum(np.abs(r32), 1e-3)
    return Comparison(float(err.max()), float(rel.max()), float((err / tol).max()), int((err > tol).sum()), err.size)
