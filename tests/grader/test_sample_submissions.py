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
from conftest import CONFIG, MODULES, SKILLS, SUBMISSIONS, grade

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


# slow: one grading run per batch and no fewer can hold them (see the module's docstring); make check
# also grades every variant, on three seeds (tests/benchmarks/hint_precision.py)
@pytest.mark.parametrize("batch", [pytest.param(b, marks=pytest.mark.slow) if b >= FAST_BATCHES else b for b in range(BATCHES)])
def test_each_mistake_loses_points_in_its_skill_only_and_names_itself(batch, tmp_path):
    applied = {skill: mistakes[batch] for skill, mistakes in MISTAKES.items() if batch < len(mistakes)}
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
