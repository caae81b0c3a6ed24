"""The planted-bug corpus (tests/planted_bugs.py): every bug is reported with one of its expected
classes, and the report's first line names its defective kernel line (within two lines, or between
the two operations a missing barrier should order); every correct twin (the unedited chapter kernel)
passes silently. The fast set runs each bug under one completion order, rotating through the
policies; the slow set under a second one. ``tools/planted_bugs_report.py`` runs all of them and
prints the per-class table.

Known gaps (``GAPS``): bugs whose culprit line the emulator cannot name yet, with the reason. They
must still be reported with a right class; the culprit assertion is an expected failure for them.
"""
import pytest

from tests.planted_bugs import BUGS, CONFIGS, POLICIES, SHAPES, PlantedBug, run

#: bug name -> why its report's first line does not name the defective line (yet)
GAPS = {
    "v4-no-release-wait": "a missing wait: the report names the TMA load and the MMA it races with, not the gap",
    "v4-expect-one-tile": "the MMA reads bytes the second copy still writes; the expect_tx line is named only "
                          "when the surplus bytes land after the phase (eager)",
    "v5-refill-chunk-off-by-one": "the emulator cannot know which chunk a copy was meant to load",
    "v5-refill-stage-0": "the report names the MMA and the load that overwrites its stage, not the wrong index",
    "v5-prologue-one-short": "the deadlock names the wait on the stage the prologue left empty",
    "v6-refill-signals-next-stage": "the deadlock names the wait on the stage whose copies signalled another",
    "v7-no-producer-tail": "the report names the commit left undrained, not where the producer's loop ends",
    "v7-ld2mma-count-128": "the deadlock names the writeback's wait, two steps from the init",
    "v7-every-lane-arrives": "the over-arrival names the init and the waits, not the arrive of every lane",
    "v7-store-from-other-lane": "the report names the store left reading at exit, not the lane test",
    "v7-no-final-store-wait": "the report names the store left reading at exit",
    "v7-release-stage-0": "the deadlock names the producer's wait on the stage never released",
    "v7-ld2mma-arrive-acc-0": "the deadlock names the MMA warp's wait on the accumulator never released",
    "v7-named-barrier-count-96": "under random orders the released group's TMA store is reported as a missing fence",
    "v8-leader-announces-own-bytes": "as v4-expect-one-tile",
    "v8-acc-commit-to-leader-only": "the deadlock names the peer's writeback wait, not the commit's CTA mask",
    "v8-release-to-leader-only": "the deadlock names the peer producer's wait, not the commit's CTA mask",
    "v8-ld2mma-arrive-own-cta": "the deadlock names the leader's wait, not the peer's arrive on its own barrier",
    "v8-copies-complete-on-own-barrier": "the deadlock names the wait, not the copy that signalled the wrong CTA",
    "v8-no-producer-tail": "as v7-no-producer-tail",
    "v9-one-named-barrier": "the generation mismatch is seen at the second barrier",
    "v9-shared-accumulator": "the TMEM hazard names the MMA and the load, not the accumulator offset",
    "v9-store-only-warpgroup-0": "a wrong result only: numpy catches it",
    "v9-ld2mma-count-4": "the count too low shows after the wait it lets through",
    "v9-ld2mma-arrive-own-cta": "as v8-ld2mma-arrive-own-cta",
    "v9-consumer-no-acc-phase-flip": "the stale wait's damage is seen first in the other consumer",
}


def _check(b: PlantedBug, policy, seed):
    o = run(b, policy, seed)
    assert o.kind in b.expect, (f"{b.name} under {policy}/{seed}: expected {' or '.join(b.expect)}, got {o.kind}: "
                                f"{o.first_paragraph[:600]}")
    if o.kind in ("ok", "wrong"):
        return
    if b.name in GAPS and not o.culprit_named:
        pytest.xfail(GAPS[b.name])
    assert o.culprit_named, (f"{b.name} under {policy}/{seed}: the first line does not name kernel line(s) "
                             f"{o.culprit_lines}: {o.first_paragraph[:800]}")


@pytest.mark.parametrize("i", range(len(BUGS)), ids=[b.name for b in BUGS])
def test_planted_bug_one_policy(i):
    _check(BUGS[i], *POLICIES[i % len(POLICIES)])


@pytest.mark.slow
@pytest.mark.parametrize("i", range(len(BUGS)), ids=[b.name for b in BUGS])
def test_planted_bug_another_policy(i):
    _check(BUGS[i], *POLICIES[(i + 2) % len(POLICIES)])


@pytest.mark.parametrize("chapter", sorted(SHAPES))
def test_correct_twins_are_silent(chapter):
    """The unedited kernel at the corpus's shape and configuration, under the random order."""
    twin = PlantedBug("twin", chapter, "", {}, ("ok",), ())
    o = run(twin, "random", chapter, twin=True)
    assert o.kind == "ok", f"chapter {chapter} {CONFIGS.get(chapter, {})}: {o.kind}: {o.first_paragraph[:600]}"


def test_corpus_is_well_formed():
    """At least 40 bugs across chapters 4-9, unique names, every slip category, every edit applies and
    every culprit snippet occurs once in the edited source."""
    from gemm_kernels.book_helpers import variant
    from tests.planted_bugs import CATEGORIES, culprit_lines

    assert len(BUGS) >= 40 and len({b.name for b in BUGS}) == len(BUGS)
    assert {b.chapter for b in BUGS} == {4, 5, 6, 7, 8, 9}
    assert {b.category for b in BUGS} == set(CATEGORIES)
    assert set(GAPS) <= {b.name for b in BUGS}
    for b in BUGS:
        v = variant(b.chapter, b.replace)
        culprit_lines(v, b.culprit)
        for snip in b.culprit:
            assert v.edited.count(snip) == 1, (b.name, snip)
