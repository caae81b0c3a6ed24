"""The registry of the steps: each chapter's host entry, kernel, signature and limits.

``CHAPTERS[n]`` is a ``Chapter``; its ``entry(a, b, *, backend=None, **config)`` computes D = A @ B.T.
Steps whose kernels are not written yet are absent (the book says so)."""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Chapter:
    number: int
    title: str
    module: str
    entry_name: str
    kernel_name: str
    tile: tuple  # (M, N, K) multiples the shapes must respect
    test_shape: tuple  # a shape that runs in seconds on the emulator and has several tiles where it can

    def _mod(self):
        return importlib.import_module(f"gemm_kernels.kernels.{self.module}")

    @property
    def entry(self):
        return getattr(self._mod(), self.entry_name)

    @property
    def kernel(self):
        return getattr(self._mod(), self.kernel_name)

    @property
    def signature(self):
        return self._mod().SIGNATURE

    @property
    def limits(self):
        return self._mod().LIMITS

    @property
    def config(self):
        import inspect

        params = inspect.signature(self.entry).parameters
        # a default of None means "chosen at the call" (chapter 10's tile width and depth, by shape):
        # the chapter's configuration is then the one its module names for the book's figures
        named = getattr(self._mod(), "CONFIG_DEFAULTS", {})
        return {k: named.get(k, p.default) if p.default is None else p.default
                for k, p in params.items() if p.kind is p.KEYWORD_ONLY}


CHAPTERS = {
    1: Chapter(1, "One synchronous tcgen05 tile", "v1_one_tile", "gemm_v1", "gemm_v1_kernel", (128, 128, 64),
               (128, 128, 64)),
    2: Chapter(2, "The K-loop", "v2_k_loop", "gemm_v2", "gemm_v2_kernel", (128, 128, 64), (128, 128, 192)),
    3: Chapter(3, "A grid of CTAs", "v3_grid", "gemm_v3", "gemm_v3_kernel", (128, 128, 64), (256, 384, 128)),
    4: Chapter(4, "TMA loads and stores", "v4_tma", "gemm_v4", "gemm_v4_kernel", (128, 128, 64), (256, 384, 192)),
    5: Chapter(5, "A pipelined ring of stages", "v5_pipeline", "gemm_v5", "gemm_v5_kernel", (128, 128, 64),
               (256, 256, 320)),
    6: Chapter(6, "A persistent kernel", "v6_persistent", "gemm_v6", "gemm_v6_kernel", (128, 128, 64),
               (512, 384, 192)),
    7: Chapter(7, "Warp specialization", "v7_warp_specialized", "gemm_v7", "gemm_v7_kernel", (128, 128, 64),
               (512, 384, 192)),
    8: Chapter(8, "The two-CTA cluster", "v8_two_cta", "gemm_v8", "gemm_v8_kernel", (256, 256, 64),
               (512, 768, 192)),
    9: Chapter(9, "Two MMA consumers", "v9_two_consumers", "gemm_v9", "gemm_v9_kernel", (512, 256, 64),
               (1024, 512, 192)),
    10: Chapter(10, "Any shape, no seam", "v10_any_shape", "gemm_v10", "gemm_v10_kernel", (1, 1, 8),
                (300, 261, 200)),
}
