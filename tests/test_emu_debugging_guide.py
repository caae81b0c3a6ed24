"""Every row of book/debugging.md is true: each symptom row is mapped to a kernel that shows it, and
the diagnostic the kernel raises is one the row's "what the emulator reports" column names."""
import re
from pathlib import Path

import pytest

from gemm_kernels import CHAPTERS, book_helpers
from gemm_kernels.check import random_operands
from gemm_kernels.emu import errors as E
from gemm_kernels.exercises import RESET_PHASES
from tests import emu_kernels as K
from tests import test_emu_bugs as B

GUIDE = Path(__file__).resolve().parents[1] / "book" / "debugging.md"


def _chapter(ch, shape, **kw):
    a, b = random_operands(*shape, seed=4)
    return lambda: CHAPTERS[ch].entry(a, b, backend="emulator", **kw)


def _variant(ch, replace, shape, policy="lazy"):
    return lambda: book_helpers.variant(ch, replace).entry(*random_operands(*shape), backend="emulator",
                                                           policy=policy)


#: symptom (first cell of a row) -> a kernel run that shows it
KERNEL_FOR = {
    "the kernel never finishes": lambda: B.tma_load(2 * K.BOX_BYTES),
    "hangs at once, before the first TMA load": lambda: B.ring(1),
    "hangs in a 2-CTA kernel": _variant(8, {"ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), PAIR)":
                                            "ptx.tcgen05_commit_cg2_multicast(pipeline.barrier(base + MMA2LD, acc), 1)"},
                                        (256, 512, 128)),
    "hangs at exit in a 2-CTA kernel": lambda: B.acc_reuse(6),
    "hangs, or a launch failure, after a too-small `expect_tx`": lambda: B.tma_load(K.BOX_BYTES // 2),
    "hangs at a named barrier": lambda: B.named(1),
    "occasional wrong tiles from a TMA store": lambda: B.named(2),
    "right on the first K block, wrong after": lambda: B.stale(1),
    "wrong from the second persistent tile": _variant(6, RESET_PHASES, (256, 384, 192)),
    "a wait releases or blocks at the wrong phase": lambda: B.ring(2, "random", 1, rounds=40, stages=1),
    "the barrier completes too early or too late, or the launch fails": lambda: B.arrivals(1, 1),
    "the barrier completes with data missing": lambda: B.tma_load(K.BOX_BYTES // 2),
    "garbage in some K blocks": lambda: B.mma_reuse(1, "eager"),
    "garbage in the output": lambda: B.mma_reuse(3),
    "garbage in the output, only sometimes": lambda: B.acc_reuse(5),
    "occasional wrong values between warps": lambda: B.race(1),
    "NaN or garbage in the first tile, right later": lambda: B.acc_reuse(2),
    "right or wrong depending on timing, in TMEM": lambda: B.acc_reuse(3),
    "stale values in step 1 to 3": lambda: B.proxy_fence(1),
    "NaN or garbage everywhere": lambda: B.mma(desc_clear=1 << 46),
    "wrong shape of result, transposed blocks": lambda: B.mma(idesc=int(B.layouts.instr_desc_raw(96, 128, 0, 0, 1, 0, 0))),
    "rows 32 to 127 of the tile wrong": lambda: B.mma(quarter_bug=1, block=256),
    "occasional wrong values": lambda: B.collectives(1),
    "the next kernel fails to allocate": lambda: B.tmem_life(1),
    "`ptxas` refuses the kernel": lambda: B.tmem_life(4),
    "invalid address": lambda: B.bounds(1),
    "a barrier misbehaves after a buffer was written": lambda: B.bounds(3),
    "data lands in the wrong buffer": lambda: B.bounds(5),
    "illegal address or a hang at exit": lambda: B.peer(1),
    "usually nothing (the PTX ISA leaves it undefined: a late arrival may hit a barrier of the next CTA on the SM)":
        lambda: B.drain(1),
    "a TMA or commit never completes its barrier, only sometimes": lambda: B.acc_reuse(8),
}


def _rows():
    rows = []
    for line in GUIDE.read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| symptom"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append((cells[0], cells[-1]))
    return rows


ROWS = _rows()
DIAGNOSTICS = set(re.findall(r"^class (\w+)\(", Path(E.__file__).read_text(), re.MULTILINE))


def test_every_row_has_a_kernel():
    assert {s for s, _ in ROWS} == set(KERNEL_FOR), {s for s, _ in ROWS} ^ set(KERNEL_FOR)


@pytest.mark.parametrize("symptom, reports", ROWS, ids=[s[:40] for s, _ in ROWS])
def test_row_is_true(symptom, reports):
    named = {c for c in re.findall(r"`(\w+)`", reports) if c in DIAGNOSTICS}
    assert named, f"the row {symptom!r} names no diagnostic"
    with pytest.raises(E.EmulatorError) as ei:
        KERNEL_FOR[symptom]()
    assert type(ei.value).__name__ in named, f"{symptom}: got {type(ei.value).__name__}: {ei.value}"
