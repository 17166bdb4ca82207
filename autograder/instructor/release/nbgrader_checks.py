"""What the nbgrader notebooks check, skill by skill (instructors only), read from the course.

The course keeps them beside each skill's suites (``[paths] suites`` of grading.toml), so a new
course or skill edits ``grading.toml`` and ``tests/suites/`` only::

    tests/suites/<skill>/nbgrader.toml         the checks and the lesson quotes (written by hand)

It is not shipped to students or to Gradescope (``runner/identity.suite_files`` ships only
``test_*.py``, the helper modules, ``hints.toml`` and ``snapshots/``).

The checks are the student's guide, not the score. nbgrader runs test cells in the student's
own kernel, where code can redefine whatever a check calls, so no check decides a point:
each notebook's one score cell gets the course autograder's score of its skill, computed
during ``nbgrader autograde`` by ``templates/nbgrader_score.py`` (the grader, bundled in the
course folder, grades the submission's solution cells in its own sandboxed workers). The
checks cells (0 points) show the student, while they work and in their feedback, which
functions already match the reference on the lessons' examples.

A check is a call (and the statements that build its inputs) that runs as written in the
notebook; its expected value is computed at release time by running the same code against
the reference solution and is embedded as a literal (the snapshot approach), so no test
cell re-implements an exercise. Visible checks use the lessons' worked examples; hidden
checks (other shapes, leading dimensions, masks, dtypes, errors) go in ``### BEGIN HIDDEN
TESTS`` blocks, run when graded and never shown in the feedback.

``nbgrader.toml``::

    lesson = [["Week 7 §4", "the lesson's heading — a short passage"], ...]   # quoted in the first cell

    [[target]]                      # one checks cell: an exercise function or class
    name = "scale_scores"
    cite = "Week 7 §8"              # the lesson section, shown in the cell

    [[target.visible]]              # one check; as many as needed, visible and hidden
    setup = "x = rand(2, 3, seed=1)"   # optional: statements that build the inputs
    call = "scale_scores(x, 2)"        # an expression: what the student's code returns
    rtol = 1e-6                        # optional tolerances (these are the defaults)
    atol = 1e-8

    [[target.hidden]]
    call = "scale_scores(rand(3, 5, seed=2), 16)"

Names available to every check come from the locked setup cell: the template's
(``templates/nbgrader_setup.py``: ``rand``, ``rand_bool``, ``grads``, ``raises``,
``load_weights`` — parameters by name, buffers keep their own —, ``torch``, ``math``) and the
course's own (``tests/suites/nbgrader_setup.py``, pasted into it: a lesson's worked example).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ...config import Config

CHECKS_FILE = "nbgrader.toml"


class NotebookError(ValueError):
    """The checks or the reference do not make a valid notebook; the message names the skill and cell."""


@dataclass(frozen=True)
class Check:
    call: str  # an expression: what the student's code returns
    setup: str = ""  # statements that build the inputs
    rtol: float = 1e-6
    atol: float = 1e-8


@dataclass(frozen=True)
class Target:
    name: str  # the exercise function or class the cell tests
    cite: str  # the lesson section, shown in the cell
    visible: tuple[Check, ...]
    hidden: tuple[Check, ...]


@dataclass(frozen=True)
class SkillChecks:
    lesson: tuple[tuple[str, str], ...]  # (citation, the lesson's heading and a short passage)
    targets: tuple[Target, ...]


def checks_path(config: Config, skill_id: str) -> Path:
    return config.suites_dir / skill_id / CHECKS_FILE


def _rel(config: Config, path: Path) -> str:
    try:
        return path.relative_to(config.root).as_posix()
    except ValueError:
        return str(path)


def load(config: Config, skill_id: str) -> SkillChecks:
    """The skill's ``nbgrader.toml``; a missing file or a wrong key is a NotebookError naming
    the file, the key and the fix."""
    path = checks_path(config, skill_id)
    where = _rel(config, path)
    if not path.is_file():
        raise NotebookError(
            f"skill {skill_id}: no nbgrader checks — write {where} (its format: autograder/instructor/release/nbgrader_checks.py)"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise NotebookError(f"{where}: not valid TOML: {exc}") from None

    def fail(key: str, problem: str) -> NotebookError:
        return NotebookError(f"{where}: {key}: {problem}")

    unknown = set(data) - {"lesson", "target"}
    if unknown:
        raise fail(sorted(unknown)[0], "unknown key (the keys are lesson and [[target]])")
    lesson = data.get("lesson", [])
    if not isinstance(lesson, list) or not all(
        isinstance(q, list) and len(q) == 2 and all(isinstance(x, str) for x in q) for q in lesson
    ):
        raise fail("lesson", 'a list of ["citation", "passage"] pairs')
    targets = []
    for i, raw in enumerate(data.get("target", [])):
        key = f"target[{i}]"
        if not isinstance(raw.get("name"), str) or not isinstance(raw.get("cite"), str):
            raise fail(key, "needs name and cite (strings)")
        extra = set(raw) - {"name", "cite", "visible", "hidden"}
        if extra:
            raise fail(f"{key}.{sorted(extra)[0]}", "unknown key (name, cite, [[target.visible]], [[target.hidden]])")
        parts = {}
        for part in ("visible", "hidden"):
            checks = []
            for j, check in enumerate(raw.get(part, [])):
                ck = f"{key}.{part}[{j}]"
                bad = set(check) - {"call", "setup", "rtol", "atol"}
                if bad or not isinstance(check.get("call"), str):
                    raise fail(
                        ck, f"needs call (a string); setup, rtol and atol are optional{f' — not {sorted(bad)}' if bad else ''}"
                    )
                checks.append(Check(**check))
            parts[part] = tuple(checks)
        if not parts["visible"]:
            raise fail(key, f"{raw['name']}: at least one [[target.visible]] check")
        targets.append(Target(raw["name"], raw["cite"], parts["visible"], parts["hidden"]))
    if not targets:
        raise fail("target", "no [[target]]: one per exercise function or class")
    return SkillChecks(tuple((c, t) for c, t in lesson), tuple(targets))
