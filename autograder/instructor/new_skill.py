"""``make new-skill NAME=… [POINTS=10] [ASSIGNMENT=…]``: a new skill, scaffolded in one step.

It writes, and touches nothing of ``autograder/`` or the grader's own tests:

* ``grading.toml``: ``[skills.<name>]`` (title to write, points, module, sections to fill)
  with a visible and a hidden suite, their one test each worth half the points, and the
  skill in ``[release.assignments] <ASSIGNMENT>`` when given (created when missing) —
  through ``grading_toml.add_skill`` (tomlkit: the rest of the file keeps its bytes);
* ``solutions/<name>.py``: a placeholder function ``example`` between solution markers;
  ``exercises/<name>.py`` from it (``make stubs``);
* ``tests/suites/<name>/``: ``test_<name>_visible.py`` (control inputs from a snapshot),
  ``test_<name>_hidden.py`` (the reference on random inputs, by kind), ``hints.toml``,
  ``snapshot_cases.py``, then ``snapshots/<name>.json`` (``make snapshots SKILL=<name>``)
  and ``snapshots/reference_cpu.toml`` (``make reference-cpu SKILL=<name>``);
* ``tests/suites/<name>/nbgrader.toml``: the nbgrader notebook's checks of ``example`` (the
  student's guide; the notebook's score is the course autograder's);
* ``tests/submissions/mistakes/<name>.toml``: the file for the skill's single-mistake
  variants, with no variant yet.

The scaffold grades (reference full marks, stub 0) and releases as it is; ``make check``
then fails, naming what is still to write: at least four named mistakes (and their hints)
and the skill in three correct styles of ``tests/submissions/styles/``. CONTRIBUTING.md,
"A new skill", is the checklist.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import SKILL_ID, ConfigError, load
from . import grading_toml


class Refused(Exception):
    """The skill cannot be added as asked: the message names the fix."""


def _solution(name: str) -> str:
    return f'''"""{name}: TODO — what this exercise asks, and the lesson section it follows.

Scaffolded by `make new-skill NAME={name}`: replace `example` with the skill's functions (each
body between the solution markers, a `# TODO:` line above them that the stub keeps), then
`make stubs snapshots SKILL={name}` (CONTRIBUTING.md, "A new skill").
"""

import torch


def example(x: torch.Tensor) -> torch.Tensor:
    """A placeholder to replace: x doubled, x [...] → [...]."""
    # TODO: return x doubled
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION
'''


def _visible(name: str) -> str:
    return f'''"""Skill {name}, visible tests (shipped to students): the lesson's worked examples, and
control inputs whose expected values the reference computed at release time
(snapshots/{name}.json, from snapshot_cases.py), so that printing an example's numbers
earns nothing. Scaffolded by `make new-skill`: replace the placeholder test."""

from __future__ import annotations

from autograder.testing import Snapshots, Tol, expect

SNAP = Snapshots(__file__)
TOL = Tol(1e-5, 1e-6)  # TODO: the measured tolerances (tests/benchmarks/tolerance_cases/, make tolerances SKILL={name})


def test_{name}_example_on_control_inputs(sub):
    c = SNAP["example"]
    expect.close(sub.{name}.example(c["x"]), c["want"], what="example(x) on control inputs", tol=TOL)
'''


def _hidden(name: str) -> str:
    return f'''"""Skill {name}, hidden tests (never shipped): the reference on fresh random inputs, by
kind, and properties. Scaffolded by `make new-skill`: replace the placeholder test."""

from __future__ import annotations

from autograder.testing import Tol, expect, randn

TOL = Tol(1e-5, 1e-6)  # TODO: the measured tolerances, as in the visible suite


def test_{name}_example_matches_reference_on_random_inputs(sub, ref, rng, credit):
    for case in credit.kinds(["2-D", "3-D"], draws=2):
        with case:
            x = randn(rng, *((4, 5) if case.kind == "2-D" else (2, 3, 6)))
            expect.close(sub.{name}.example(x), ref.{name}.example(x), what=f"example(x {{list(x.shape)}})", tol=TOL)
'''


def _snapshot_cases(name: str) -> str:
    return f'''"""Snapshot cases of the visible {name} suite: seeded inputs and the reference's outputs on
them (`make snapshots SKILL={name}` → snapshots/{name}.json). Instructors only."""

from __future__ import annotations

from autograder.testing import randn


def example(rng, ref):
    x = randn(rng, 3, 4)
    return {{"x": x, "want": ref.{name}.example(x)}}


CASES = [example]
'''


def _hints(name: str) -> str:
    return f"""# Named mistakes for skill {name}: [<id>] text, section (the lesson section to reread) and
# function (the function whose output carries the mistake). See autograder/testing/README.md,
# "The hint rule"; `make new-test … HINT=` adds one with its test.
"""


def _nbgrader(name: str) -> str:
    return f"""# nbgrader checks of skill {name}: what its notebook in dist/nbgrader tests (format:
# autograder/instructor/release/nbgrader_checks.py). Instructors only: never shipped.

lesson = [["TODO §", "TODO: the lesson heading and a short passage the notebook quotes"]]

[[target]]
name = "example"
cite = "TODO §"

[[target.visible]]
call = "example(torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64))"

[[target.hidden]]
call = "example(rand(2, 3, 4, seed=1))"
"""


def _mistakes(name: str) -> str:
    return f"""# Single-mistake variants of skill {name} (tests/submissions/variants.py): at least four,
# each losing points in this skill only with its hint (make check grades them on 3 seeds).
#
# [[mistake]]
# id = "…"
# base = "solutions"
# file = "{name}.py"
# find = "…"            # occurs exactly once in the base file
# replace = "…"
# function = "…"        # the one function the change breaks
# hint = "{name}/…"     # its entry in tests/suites/{name}/hints.toml
"""


def plan(root: Path, name: str) -> dict[Path, str]:
    """{path: text} of every file the scaffold writes but grading.toml and generated data."""
    suite = root / "tests" / "suites" / name
    return {
        root / "solutions" / f"{name}.py": _solution(name),
        suite / f"test_{name}_visible.py": _visible(name),
        suite / f"test_{name}_hidden.py": _hidden(name),
        suite / "snapshot_cases.py": _snapshot_cases(name),
        suite / "hints.toml": _hints(name),
        suite / "nbgrader.toml": _nbgrader(name),
        root / "tests" / "submissions" / "mistakes" / f"{name}.toml": _mistakes(name),
    }


def scaffold(root: Path, name: str, points: float = 10, assignment: str | None = None, measure: bool = True) -> list[Path]:
    """Add skill ``name`` to the course in ``root``; the paths written."""
    from .release import reference_cpu, snapshots, stubs

    if not SKILL_ID.match(name):
        raise Refused(f"NAME={name!r}: a skill id is lower case letters, digits and _, starting with a letter (e.g. rope)")
    if points <= 0:
        raise Refused(f"POINTS={points:g}: a skill's points must be above 0")
    config_path = root / "grading.toml"
    files = plan(root, name)
    there = [p for p in files if p.exists()] + [p for p in (root / "exercises" / f"{name}.py",) if p.exists()]
    if there:
        raise Refused(f"{there[0].relative_to(root)} exists already — pick another NAME, or remove the skill's files first")
    half = points / 2
    suites = {
        f"tests/suites/{name}/test_{name}_visible.py": {f"test_{name}_example_on_control_inputs": half},
        f"tests/suites/{name}/test_{name}_hidden.py": {f"test_{name}_example_matches_reference_on_random_inputs": points - half},
    }
    try:
        text = grading_toml.add_skill(config_path.read_text(encoding="utf-8"), name, points, f"{name}.py", suites, assignment)
    except grading_toml.EditRefused as exc:
        raise Refused(str(exc)) from None
    for path, body in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    config_path.write_text(text, encoding="utf-8")
    written = [config_path, *files]
    config = load(config_path)
    written += stubs.write(config)
    written += snapshots.write(config, [name])
    if measure:
        written += reference_cpu.write(config, [name])
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder.instructor.new_skill", description=__doc__.split("\n\n")[0])
    p.add_argument("--name", required=True, help="the skill id, e.g. rope (its module: <name>.py)")
    p.add_argument("--points", type=float, default=10, help="its points (default 10)")
    p.add_argument("--assignment", help="the [release.assignments] entry it joins (created when missing)")
    p.add_argument("--root", type=Path, default=Path.cwd())
    a = p.parse_args(argv)
    root = a.root.resolve()
    try:
        written = scaffold(root, a.name, a.points, a.assignment)
    except (Refused, ConfigError) as exc:
        print(f"new-skill: refused: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(root) if path.is_relative_to(root) else path}")
    print(
        f"next (CONTRIBUTING.md, 'A new skill'): title and sections in grading.toml; the functions in solutions/{a.name}.py; "
        f"the tests; then `make stubs snapshots reference-cpu SKILL={a.name}`, four mistakes, three styles, `make check`"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
