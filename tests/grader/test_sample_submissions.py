"""Submissions we did not write the suites for.

* Styles (tests/submissions/styles/<style>/): correct implementations in styles unlike
  the reference — einsum everywhere, explicit loops, float64 inside with log-sum-exp.
  Each must score full marks.
* Mistakes (tests/submissions/mistakes/<skill>.toml): one change each to a correct module.
  Each must lose points in its own skill and show the hint that names the mistake. To keep
  `make test` fast, the k-th mistake of every skill is graded together in one run, and only
  the skills that have a mistake in that run are graded: the suites only call their own
  skill's module (checked in test_suites_are_right.py), so every other skill scores exactly
  what the reference scores — full marks (test_suites_are_right.py).
  `make test` grades the first FAST_BATCHES runs (a mistake of every skill in each); the rest
  are marked slow (`make test-slow`, CI): each further mistake of a skill needs a run of its
  own, since a folder holds one version of a module (36 runs for qkv's 36 mistakes).
"""

from __future__ import annotations

import sys

import pytest
from conftest import CONFIG, MODULES, SKILLS, SUBMISSIONS, grade, graded_class, student

sys.path.insert(0, str(SUBMISSIONS))
import variants  # tests/submissions/variants.py: the same variants the hint benchmark grades

STYLES = variants.styles()
MISTAKES = {skill: variants.mistakes(skill) for skill in SKILLS}
BATCHES = max((len(v) for v in MISTAKES.values()), default=0)
FAST_BATCHES = 3  # every skill has at least four mistakes (below), so each of these runs grades all of them


# a style may hold only some modules (styles/lessons: the lessons' own code listings, only for
# the exercises they cover); every skill needs MIN_STYLES of them
# skills whose every single-mistake variant fails only tests of its own function (or of the
# functions calling it, or tests naming no function: worked examples, dtype rules)
FUNCTION_CONFINED = {"qkv", "masks", "sdpa_masks"}


#: correct submissions in styles unlike the reference that every skill needs (a new skill is
#: not done until it has them: CONTRIBUTING.md, "A new skill")
MIN_STYLES = 3


@pytest.mark.parametrize("style", STYLES)
def test_style_holds_an_exercise_module(style):
    present = [m for m in MODULES.values() if (SUBMISSIONS / "styles" / style / m).exists()]
    assert present, f"styles/{style} holds no exercise module"


@pytest.mark.parametrize("skill", SKILLS)
def test_every_skill_has_correct_submissions_in_other_styles(skill):
    styles = [s for s in STYLES if (SUBMISSIONS / "styles" / s / MODULES[skill]).exists()]
    assert len(styles) >= MIN_STYLES, (
        f"skill {skill}: {MODULES[skill]} is written in {len(styles)} style(s) of tests/submissions/styles/ "
        f"({', '.join(styles) or 'none'}); write it in at least {MIN_STYLES} styles unlike the reference "
        "(CONTRIBUTING.md, 'A new skill')"
    )


@pytest.mark.parametrize("style", STYLES)
def test_correct_submission_in_another_style_scores_full_marks(style, tmp_path):
    graded = grade(SUBMISSIONS / "styles" / style, "--reveal-hidden", output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr
    present = {s for s, m in MODULES.items() if (SUBMISSIONS / "styles" / style / m).exists()}
    for skill in graded.data["skills"]:
        if skill["id"] in present:
            lost = [(t["name"], t["summary"][:160]) for t in skill["tests"] if t["status"] != "passed"]
            assert skill["score"] == skill["points"], (skill["id"], lost)


def test_every_skill_has_at_least_four_mistakes():
    short = {s: len(v) for s, v in MISTAKES.items() if len(v) < 4}
    assert not short, "; ".join(
        f"skill {s} has {n} single-mistake variant(s): write at least 4 in tests/submissions/mistakes/{s}.toml, "
        "each with its hint (CONTRIBUTING.md, 'A new skill')"
        for s, n in short.items()
    )


def _applied(batch: int) -> dict[str, dict]:
    return {skill: mistakes[batch] for skill, mistakes in MISTAKES.items() if batch < len(mistakes)}


@pytest.fixture(scope="session")
def slow_batches_graded(tmp_path_factory):
    """Every batch from FAST_BATCHES on, as one class graded once per test run by `autograder
    batch` (one student a batch, every skill: a skill without a mistake in a batch is the
    reference's, which scores what the reference scores). One batch run instead of ~35
    grading runs, each of which imported torch and collected the suites again: `make
    test-slow` saves ~2 CPU s a batch. The fast batches stay `grade` runs, and
    test_submission_paths.py checks that grade and batch score the same files the same."""

    def build(folder):
        for batch in range(FAST_BATCHES, BATCHES):
            variants.build(folder / f"batch{batch:02d}", list(_applied(batch).values()))

    return graded_class(tmp_path_factory, "mistake-batches", build)


# slow: one grading run per batch and no fewer can hold them (see the module's docstring), the slow
# ones graded as one class (slow_batches_graded); make check also grades every variant, on three
# seeds (tests/benchmarks/hint_precision.py)
@pytest.mark.parametrize("batch", [pytest.param(b, marks=pytest.mark.slow) if b >= FAST_BATCHES else b for b in range(BATCHES)])
def test_each_mistake_loses_points_in_its_skill_only_and_names_itself(batch, tmp_path, request):
    applied = _applied(batch)
    if batch >= FAST_BATCHES:
        graded = student(request.getfixturevalue("slow_batches_graded"), f"batch{batch:02d}")
        assert graded.data is not None and graded.data["status"] == "complete", (graded.output, graded.stderr[-2000:])
    else:
        folder = variants.build(tmp_path / "submission", list(applied.values()))
        only = [arg for skill in applied for arg in ("--skill", skill)]
        graded = grade(folder, "--reveal-hidden", *only, output=tmp_path / "r.json")
        assert graded.rc == 0, graded.stderr
    for skill, m in applied.items():
        points = CONFIG["skills"][skill]["points"]
        assert graded.score(skill) < points, f"{skill}/{m['id']} lost no points"
        assert m["hint"] in graded.hints(skill), (
            f"{skill}/{m['id']}: hint {m['hint']} not shown; got {sorted(graded.hints(skill))}"
        )
        if skill in FUNCTION_CONFINED:
            names = variants.functions(MODULES[skill])
            own = variants.dependents(variants.mutated_source(m), m["function"])
            elsewhere = [
                t["name"]
                for t in graded.tests(skill)
                if t["status"] != "passed"
                and variants.named_functions(t["name"], names, skill)
                and not set(variants.named_functions(t["name"], names, skill)) & own
            ]
            assert not elsewhere, f"{skill}/{m['id']} (a mistake in {m['function']}) failed tests of other functions: {elsewhere}"
