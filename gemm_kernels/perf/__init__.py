"""A B200 performance model of GEMM designs: ``Design`` (design.py) is what it predicts, and
``predict(design, m, n, k)`` (explore.py) the figure with its range, the limiting unit and the time
split. A design one of the book's kernels implements runs that kernel's share of a full-size
problem on the emulator's virtual clock in timing mode (``share``); any other runs the analytic
share (``analytic``); the chip around both (``chip``) supplies the SM count, waves, the schedule,
L2/HBM and launch overhead. Every physical parameter, with its source, is in ``params``. A MODEL,
never a measurement."""

MODEL_LABEL = ("MODEL: B200 performance model (gemm_kernels.perf: emulator virtual clock + chip model, "
               "published physical parameters), not a measurement")

from .design import CHAPTER_DESIGNS, Design, chapter_design  # noqa: E402  (the label first: bench imports it)
from .explore import describe, predict  # noqa: E402

__all__ = ["CHAPTER_DESIGNS", "Design", "MODEL_LABEL", "chapter_design", "describe", "predict"]
