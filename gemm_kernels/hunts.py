"""Hunt mode: kernels with a planted bug and no label. The page runs each on the emulator and shows
only the report; the reader finds the line from it, and the answer is folded below.

Each ``Hunt`` is a few lines of a chapter's kernel edited (``book_helpers.variant``), the shape it
runs at, and the report the emulator gives (its class name): ``tests/test_hunts.py`` runs each and
checks the report, and checks that the page's folded answer names that report and the line, and
that nothing outside the answer gives the edit away.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Hunt:
    chapter: int
    label: str  # "A", "B": the page's name for the suspect, which says nothing about the bug
    shape: tuple  # (M, N, K) on the emulator
    outcome: str  # the emulator diagnostic's class name
    replace: dict  # old -> new, applied with book_helpers.variant
    line: str  # the edited kernel line as the answer quotes it (a part of the new text)
    config: dict = field(default_factory=dict)  # keyword arguments of the chapter's entry

    def variant(self):
        from .book_helpers import variant

        return variant(self.chapter, self.replace)

    def run(self):
        """Run on the emulator; return the emulator's exception (None if the run passed)."""
        from .check import random_operands
        from .emu import EmulatorError

        a, b = random_operands(*self.shape)
        try:
            self.variant().entry(a, b, backend="emulator", **{"policy": "lazy", **self.config})
        except EmulatorError as exc:
            return exc
        return None

    def show(self):
        """What the page shows: the shape, and the report (never the edit)."""
        from .book_helpers import report

        m, n, k = self.shape
        print(f"suspect {self.label}: chapter {self.chapter}'s kernel with a planted bug, "
              f"run at {m} x {n} x {k} on the emulator")
        exc = self.run()
        if exc is None:
            raise AssertionError(f"hunt {self.chapter}{self.label}: the planted bug gave no report")
        report(exc)
        return exc


HUNTS = [
    # chapter 4
    Hunt(4, "A", (128, 128, 128), "SharedMemoryHazard",
         {"            ptx.mbarrier_wait(mma2tma, phase)  # the tiles are free again\n": ""},
         "ptx.mbarrier_wait(mma2tma, phase)"),
    Hunt(4, "B", (128, 128, 128), "UninitializedRead",
         {"ptx.mbarrier_wait(mma2ld, 0)": "ptx.mbarrier_wait(mma2ld, 1)"},
         "ptx.mbarrier_wait(mma2ld, 1)"),
    # chapter 5
    Hunt(5, "A", (128, 128, 320), "ExpectTxMismatch",
         {"                    tma2mma = pipeline.expect_tx(base + TMA2MMA, stage, 2 * TILE_BYTES)\n":
          "                    tma2mma = pipeline.expect_tx(base + TMA2MMA, stage, TILE_BYTES)\n"},
         "pipeline.expect_tx(base + TMA2MMA, stage, TILE_BYTES)"),
    Hunt(5, "B", (128, 128, 320), "StalePhaseWait",
         {"stage, tma_phase = pipeline.advance(stage, tma_phase, DEPTH)":
          "stage, _ = pipeline.advance(stage, tma_phase, DEPTH)"},
         "stage, _ = pipeline.advance(stage, tma_phase, DEPTH)"),
    # chapter 6
    Hunt(6, "A", (512, 384, 128), "StalePhaseWait",
         {"            _, acc_phase = pipeline.advance(0, acc_phase, 1)  # one accumulator: a ring of depth 1\n": ""},
         "_, acc_phase = pipeline.advance(0, acc_phase, 1)", config={"policy": "eager"}),
    Hunt(6, "B", (512, 384, 192), "StalePhaseWait",
         {"                    _, mma_phase = pipeline.advance(0, mma_phase, 1)  # one mma2tma barrier: a ring of depth 1\n": ""},
         "_, mma_phase = pipeline.advance(0, mma_phase, 1)"),
    # chapter 7
    Hunt(7, "A", (512, 384, 64), "TmemHazard",
         {"if sub == subtiles - 1:  # every column read: the MMA warp may refill the accumulator":
          "if sub == 0:  # every column read: the MMA warp may refill the accumulator"},
         "if sub == 0:"),
    Hunt(7, "B", (256, 256, 64), "UninitializedRead",
         {"            acc_phase = uint32(0)\n            more, t = schedule.static_first(":
          "            acc_phase = uint32(1)\n            more, t = schedule.static_first("},
         "acc_phase = uint32(1)"),
    # chapter 8
    Hunt(8, "A", (512, 768, 64), "Deadlock",
         {"ptx.mapa(pipeline.barrier(base + LD2MMA, acc), 0)": "ptx.mapa(pipeline.barrier(base + LD2MMA, acc), rank)"},
         "ptx.mapa(pipeline.barrier(base + LD2MMA, acc), rank)"),
    Hunt(8, "B", (512, 768, 64), "ArrivalMismatch",
         {"ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 2 * 4)":
          "ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)"},
         "ptx.mbarrier_init(pipeline.barrier(base + LD2MMA, s), 4)"),
    # chapter 9
    Hunt(9, "A", (512, 256, 128), "TmemHazard",
         {"lanes = tmem + ((32 * (warp % 4)) << 16) + CONSUMER_N * c":
          "lanes = tmem + ((32 * (warp % 4)) << 16)"},
         "lanes = tmem + ((32 * (warp % 4)) << 16)"),
    Hunt(9, "B", (512, 256, 128), "TmemHazard",
         {"d_tmem = tmem + CONSUMER_N * c": "d_tmem = tmem"},
         "d_tmem = tmem"),
]


def hunts(chapter):
    """The chapter's hunts, in the page's order."""
    return [h for h in HUNTS if h.chapter == chapter]


def hunt(chapter, label):
    for h in HUNTS:
        if (h.chapter, h.label) == (chapter, label):
            return h
    raise KeyError(f"chapter {chapter} has no hunt {label!r} in gemm_kernels.hunts")
