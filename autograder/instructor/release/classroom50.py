"""``dist/classroom50/``: one Classroom 50 autograder per assignment (``[release] platforms``
lists ``classroom50``).

    classroom50/README.md                 how to install them in the course's config repository
    classroom50/runtime.json              the grade job's runtime (`gh teacher assignment add --runtime`)
    classroom50/<assignment>/autograder.py  the entry point Classroom 50's runner invokes (templates/classroom50/)
    classroom50/<assignment>/assignment.json  its skills, their visible tests and weights, the points

Classroom 50 (foundation50/classroom50, GitHub Classroom's open-source successor; its wiki's
"Advanced Autograding" page defines the contract) runs ``autograder.py`` in the student's own
repository, so what ships here is as public as the student tree: visible tests and points
only, never a hidden test, a solution or the seed key. ``make release`` runs the leak audit
over this folder as over dist/student (:func:`autograder.instructor.release.build.release`).

One folder per ``[release.assignments]`` entry (copy it to ``CLASSROOM/autograders/<slug>/``
of the config repository; the Classroom 50 slug may differ from our name); without
assignments, one folder ``exercises/`` that grades every skill.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

from ...config import Config
from .context import ReleaseContext
from .files import write_tree

TEMPLATE = Path(__file__).resolve().parent / "templates" / "classroom50" / "autograder.py"
ARTIFACT = "classroom50"
ALL = "exercises"  # the folder when grading.toml has no [release.assignments]
#: the grade job's runtime: the Python our grader and the Gradescope bundle use (Classroom 50's default is 3.14)
RUNTIME = {"runs-on": "ubuntu-latest", "python": "3.11"}
MAX_SCALE = 1000


def scale_for(weights: list[float]) -> int:
    """The smallest whole number that makes every weight a whole number of units (Classroom 50
    stores integer scores): 4 for quarter points."""
    scale = 1
    for weight in weights:
        denominator = Fraction(weight).limit_denominator(MAX_SCALE).denominator
        scale = math.lcm(scale, denominator)
    if scale > MAX_SCALE:
        raise ValueError(
            f"the test weights need 1/{scale} of a point to be whole numbers; use weights in steps of at least 1/{MAX_SCALE}"
        )
    return scale


def official(config: Config) -> tuple[str, str]:
    """(long, short) name of where the official score comes from, for the Release text."""
    if "gradescope" in config.platforms:
        return "the course's autograder on Gradescope", "the course's Gradescope autograder"
    return (
        "the course's autograder (the instructors grade your submitted commit with the hidden tests too)",
        "the course's autograder",
    )


def assignment_record(ctx: ReleaseContext, name: str | None) -> dict:
    """What ``autograder.py`` reads beside it: visible tests and weights only."""
    full = ctx.config
    config = full.for_assignment(name) if name else full
    skills = {}
    for sid, skill in config.skills.items():
        tests = {
            test: weight for suite in skill.suites if suite.visibility == "visible" for test, weight in suite.weights.items()
        }
        skills[sid] = {
            "title": skill.title,
            "module": f"exercises/{skill.module}",
            "full_points": skill.points,
            "visible_points": sum(tests.values()),
            "tests": tests,
        }
    long, short = official(full)
    return {
        "format": "attention-autograder/classroom50@1",
        "course": full.course,
        "version": ctx.version,
        "assignment": name,
        "skills": skills,
        "visible_points": sum(s["visible_points"] for s in skills.values()),
        "full_points": config.total_points,
        "scale": scale_for([w for s in skills.values() for w in s["tests"].values()]),
        "official": long,
        "official_short": short,
    }


def readme(ctx: ReleaseContext, names: list[str]) -> str:
    rows = "\n".join(
        f"| `{n}/` | {', '.join(f'`{s}`' for s in ctx.config.assignments.get(n, tuple(ctx.config.skills)))} |" for n in names
    )
    return f"""# Classroom 50 autograders — {ctx.config.course}, release {ctx.version}

One autograder per assignment, for courses on [Classroom 50](https://github.com/foundation50/classroom50)
(GitHub Classroom's open-source successor). Each grades the **visible tests only**, with the grader
that the student repository (`dist/student`) already carries, and writes the `result.json` of the
wiki's "Advanced Autograding" page. Its score is the student's own check, recorded with each
submission: it is computed in the student's repository, by the grader copy the student can edit,
so it is never a grade. The official score comes from {official(ctx.config)[0]}. Nothing here is secret: the leak
audit of `make release` checked this folder (no hidden test, solution or seed key).

| folder | skills |
|---|---|
{rows}

Install (in the course's private `classroom50` config repository, for classroom `CLASSROOM`):

1. Copy `<assignment>/` (both files) to `CLASSROOM/autograders/<slug>/`, where `<slug>` is the
   Classroom 50 assignment (it may differ from the folder name; the files inside name ours).
2. Register the assignment with this folder's `runtime.json` (Python 3.11, as the grader is tested):
   `gh teacher assignment add ORG CLASSROOM <slug> --template <the student repository> --runtime runtime.json`.
3. Leave `allowed_files` unset (or keep `autograder/`, `tests/suites/`, `docs/`, `grading.toml`,
   `requirements.txt` and `exercises/`): the grader runs from the student's checkout.
4. The student repository also ships `.github/workflows/feedback.yml` (feedback on every commit).
   With both, choose the submission type **tag** (`gh student submit`), so that a push runs only the
   feedback workflow and a submission only the autograder (see the wiki's "Managing Actions Cost"):
   the commit `gh student submit` pushes with its `submit/*` tag is skipped by the feedback
   workflow (it finds the tag on its commit), so each submission is graded once.

Scores: Classroom 50 stores whole numbers, so each test is recorded in units of 1/`scale` point
(`assignment.json`; 4 = quarter points); the Release text shows the points. The job stops after
15 minutes: the install (CPU torch, pinned) and the grading each have their own limit inside it.
"""


def build(ctx: ReleaseContext) -> list[Path]:
    names = list(ctx.config.assignments) or [ALL]
    template = TEMPLATE.read_bytes()
    files: dict[str, bytes] = {
        "README.md": readme(ctx, names).encode("utf-8"),
        "runtime.json": (json.dumps(RUNTIME, indent=2) + "\n").encode(),
    }
    for name in names:
        record = assignment_record(ctx, None if name == ALL and not ctx.config.assignments else name)
        files[f"{name}/autograder.py"] = template
        files[f"{name}/assignment.json"] = (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return write_tree(Path(ctx.out) / ARTIFACT, files)
