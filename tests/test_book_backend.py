"""The one BACKEND switch at the top of each chapter: present in every chapter, read from the
environment, refused when it names a machine that is not there, and used by every trace."""
import re
from pathlib import Path

import pytest

from gemm_kernels import book_helpers as bh

ROOT = Path(__file__).resolve().parents[1]
SWITCH = 'BACKEND = os.environ.get("GEMM_BOOK_BACKEND", "auto")'


def _code_cells(text):
    return re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("page", sorted((ROOT / "chapters").glob("[0-9][0-9]-*.md")), ids=lambda p: p.stem)
def test_every_chapter_starts_with_the_switch(page):
    cells = _code_cells(page.read_text())
    assert SWITCH in cells[0], f"{page.name}: the first code cell must be the BACKEND switch"
    assert "bh.use_backend(BACKEND)" in cells[1], f"{page.name}: the imports must apply the switch"
    # runs and traces go through the switch (book_helpers), not a hard-coded backend. Planted bugs
    # (bh.variant) run on the emulator by design: on a GPU they may hang.
    for cell in cells:
        if re.search(r"""backend\s*=\s*["']emulator["']""", cell) and "bh.variant(" not in cell:
            pytest.fail(f"{page.name}: a cell hard-codes the emulator:\n{cell}")


def test_use_backend_choices(monkeypatch):
    assert bh.use_backend("emulator") == "emulator"
    assert bh.backend()[0] == "emulator"
    with pytest.raises(ValueError, match="choose one of auto, emulator, blackwell"):
        bh.use_backend("b200")
    monkeypatch.setattr(bh, "best_backend", lambda: ("emulator", "no CUDA GPU found"))
    with pytest.raises(RuntimeError, match="no CUDA GPU found"):
        bh.use_backend("blackwell")
    assert bh.use_backend("auto") == "emulator"


def test_trace_follows_the_switch(monkeypatch):
    """On a B200 the trace cells draw the on-chip %globaltimer timeline."""
    from gemm_kernels import bench
    from gemm_kernels.check import random_operands
    from gemm_kernels.trace import Trace

    calls = []

    def fake_gpu_trace(chapter, m, n, k, **config):
        calls.append((chapter, m, n, k, config))
        return Trace(source="B200 %globaltimer (measured)"), True, "ok"

    monkeypatch.setattr(bench, "chapter_gpu_trace", fake_gpu_trace)
    monkeypatch.setattr(bh, "_chosen", ("blackwell", "test"))
    a, b = random_operands(128, 128, 320)
    trace = bh.trace_of(5, a, b, pipe_depth=2, policy="random")
    assert trace.source.startswith("B200") and calls == [(5, 128, 128, 320, {"pipe_depth": 2})]
    monkeypatch.setattr(bh, "_chosen", ("emulator", "test"))
    assert bh.trace_of(1, *random_operands(128, 128, 64)).source.startswith("emulator")
