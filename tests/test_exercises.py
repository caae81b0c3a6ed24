"""Every exercise that edits a kernel or turns a knob runs on the emulator with the outcome its
worked solution in the book describes (``gemm_kernels/exercises.py``), and each chapter's exercise
text states the shape and its solution names that outcome."""
import re
from pathlib import Path

import pytest

from gemm_kernels.exercises import EXERCISES, exercise

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=[f"ch{e.chapter}-ex{e.number}" for e in EXERCISES])
def test_exercise_outcome(ex):
    assert ex.run() == ex.outcome


def _exercise_text(chapter, number):
    page = next((ROOT / "chapters").glob(f"{chapter:02d}-*.md")).read_text()
    section = page[page.index("## Exercises"):]
    parts = re.split(r"^\*\*(\d+)\.\*\*", section, flags=re.M)
    texts = dict(zip((int(x) for x in parts[1::2]), parts[2::2]))
    return texts[number]


@pytest.mark.parametrize("ex", EXERCISES, ids=[f"ch{e.chapter}-ex{e.number}" for e in EXERCISES])
def test_exercise_text_states_shape_and_outcome(ex):
    text = _exercise_text(ex.chapter, ex.number % 100)
    m, n, k = ex.shape
    assert f"{m} x {n} x {k}" in text, f"chapter {ex.chapter} exercise {ex.number % 100}: shape not stated"
    question, _, solution = text.partition("```{admonition} Solution\n:class: dropdown")
    assert solution, f"chapter {ex.chapter} exercise {ex.number % 100}: no folded solution"
    expected = {"ok": "`ok`", "wrong": "wrong"}.get(ex.outcome, f"`{ex.outcome}`")
    assert expected in solution, f"chapter {ex.chapter} exercise {ex.number % 100}: solution does not say {expected}"


def test_every_chapter_exercise_has_a_solution():
    for page in sorted((ROOT / "chapters").glob("[0-9][0-9]-*.md")):
        section = page.read_text().split("## Exercises", 1)[1]
        numbers = re.findall(r"^\*\*(\d+)\.\*\*", section, flags=re.M)
        assert numbers, f"{page.name}: no exercises"
        assert section.count(":class: dropdown") == len(numbers), f"{page.name}: an exercise without a solution"


def test_lookup():
    assert exercise(1, 3).outcome == "DataRace"
    with pytest.raises(KeyError):
        exercise(1, 99)
