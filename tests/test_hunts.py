"""Hunt mode (``gemm_kernels/hunts.py``): each planted bug gives the report its page's folded answer
names, the answer quotes the edited line, and nothing outside the answers gives the edit away."""
import re
from pathlib import Path

import pytest

from gemm_kernels.hunts import HUNTS, hunt, hunts

ROOT = Path(__file__).resolve().parents[1]
IDS = [f"ch{h.chapter}-{h.label}" for h in HUNTS]


@pytest.mark.slow
@pytest.mark.parametrize("h", HUNTS, ids=IDS)
def test_hunt_gives_its_report(h):
    exc = h.run()
    assert type(exc).__name__ == h.outcome, f"{exc!r}"


def _hunt_section(chapter):
    page = next((ROOT / "chapters").glob(f"{chapter:02d}-*.md")).read_text()
    assert "\n## Hunt\n" in page, f"chapter {chapter} has no Hunt section"
    return page.split("\n## Hunt\n", 1)[1].split("\n## ", 1)[0]


def _answers(section):
    """{label: answer text} of the folded answers, and the section without them."""
    blocks = re.findall(r"```\{admonition\} Answer (\w+)\n:class: dropdown\n(.*?)\n```", section, re.S)
    outside = re.sub(r"```\{admonition\} Answer \w+\n.*?\n```", "", section, flags=re.S)
    return dict(blocks), outside


@pytest.mark.parametrize("h", HUNTS, ids=IDS)
def test_hunt_page_shows_the_report_and_folds_the_answer(h):
    section = _hunt_section(h.chapter)
    answers, outside = _answers(section)
    assert f'hunt({h.chapter}, "{h.label}").show()' in outside, "the page does not run this suspect"
    answer = answers.get(h.label)
    assert answer, f"chapter {h.chapter}: no folded answer {h.label}"
    assert f"`{h.outcome}`" in answer, f"answer {h.label} does not name the report {h.outcome}"
    assert h.line in answer, f"answer {h.label} does not quote the edited line {h.line!r}"
    for new in h.replace.values():  # the edit itself is not on the page outside the answers
        for line in filter(None, (s.strip() for s in new.splitlines())):
            assert line not in outside, f"chapter {h.chapter}: {line!r} gives hunt {h.label} away"


def test_every_chapter_from_four_hunts():
    assert sorted({h.chapter for h in HUNTS}) == [4, 5, 6, 7, 8, 9]
    for chapter in range(4, 10):
        labels = [h.label for h in hunts(chapter)]
        assert len(labels) >= 2 and len(set(labels)) == len(labels)
        answers, _ = _answers(_hunt_section(chapter))
        assert sorted(answers) == sorted(labels), f"chapter {chapter}: answers {sorted(answers)}"


def test_lookup():
    assert hunt(4, "A").outcome == "SharedMemoryHazard"
    with pytest.raises(KeyError):
        hunt(4, "Z")
