"""``dist/nbgrader/``: an nbgrader course for classes that grade in JupyterHub.

    dist/nbgrader/nbgrader_config.py
    dist/nbgrader/source/<assignment>/<skill>.ipynb     (one notebook per skill)
    dist/nbgrader/README.md

Each notebook: a markdown cell quoting the lesson (sections cited), the locked setup cell
(``templates/nbgrader_setup.py``: silences warnings — nbgrader scores a cell with any
stderr as 0 — and defines the test helpers), the solution cell (``solutions/<skill>.py``
as it is, with its ``### BEGIN SOLUTION`` markers, which nbgrader's ``ClearSolutions``
turns into stubs), then one *checks cell* per exercise function or class and one *point
cell* per test of the grader.

Checks cells (0 points; autograded so that their ``### BEGIN HIDDEN TESTS`` blocks are
kept for grading and removed for students): the checks (each skill's ``nbgrader.toml``
beside its suites, read by ``nbgrader_checks``) run the student's code in the student's
kernel, against expected values computed here from the reference and embedded; each cell
records whether its function passed every check.

Point cells — one piece of scoring, one score on every path: each test of grading.toml
(weight > 0) gets a cell with its weight as points, which computes the grader's rule
(``autograder/testing/credit.py``: weight × passed kinds / kinds, 0 when a required kind
fails, rounded to 4 decimals as ``runner/scoring.py`` rounds) over the test's kinds, a kind
passing when every function it uses passed its checks cell. A property test (grading.toml
``properties``) is scored as the grader scores it, whatever the values: its kinds pass when
the functions kept their properties in their checks cells (every call returned, with the
reference's dtypes and errors), and it scores 0 when none of the skill's other tests earned
points (their cells come first). Which functions each kind uses is measured by grading the reference with
one function broken at a time (``nbgrader_units``, stored in each skill's ``nbgrader_units.json``).
The cell's last line is the score: nbgrader reads a number there as partial credit. The
weights are binary fractions, so every max score is exact. What still differs from the
grader — rules, and mistakes that break only some of a function's kinds — is listed in
the course README (``readme``).

Cells, metadata (schema v3) and JSON are written with nbformat; the same commit gives the
same bytes.

``source/`` holds the solutions and the hidden tests: it is the instructors' copy (nbgrader
makes the student version with ``nbgrader generate_assignment``). nbgrader's feedback HTML
would show the hidden tests (it renders ``autograded/`` as it is): ``nbgrader_config.py``
carries ``templates/nbgrader_feedback.py``, which sets ``GenerateFeedback.preprocessors`` so
that ``nbgrader generate_feedback`` removes them (nbgrader's ``ClearHiddenTests``) and hides
what a failed hidden check printed.
"""

from __future__ import annotations

import math
import re
import textwrap
from fractions import Fraction
from pathlib import Path

import torch

from ...config import Config, Skill
from . import nbgrader_checks
from .context import ReleaseContext
from .nbgrader_checks import Check, NotebookError, Target

TEMPLATES = Path(__file__).with_name("templates")
SETUP = (TEMPLATES / "nbgrader_setup.py").read_text(encoding="utf-8")  # the framework's part of the setup cell
#: the line of SETUP that the course's own names for its checks replace (its nbgrader_setup.py, beside the suites)
COURSE_SETUP_LINE = "# (the course's names for its checks: nbgrader_setup.py beside the suites, in place of this line)\n"
FEEDBACK = TEMPLATES / "nbgrader_feedback.py"  # appended to nbgrader_config.py: feedback without the hidden tests
AUTOGRADE = TEMPLATES / "nbgrader_autograde.py"  # appended too: a checksum warning only for a changed locked cell
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
__all__ = ["NotebookError", "build", "notebook"]


def build(ctx: ReleaseContext) -> list[Path]:
    import nbformat

    config = ctx.config
    settings = config.nbgrader_release
    root = Path(ctx.out) / "nbgrader"
    written = []
    # the whole course as one assignment, and each [release.assignments] entry as its own
    # (its skills' notebooks, so its points are its skills' points): generate whichever you hand out
    groups = {settings.assignment: list(config.skills)} | {name: list(skills) for name, skills in config.assignments.items()}
    texts = {sid: nbformat.writes(notebook(config, skill)) for sid, skill in config.skills.items()}
    for assignment, skills in groups.items():
        for sid in skills:
            path = root / "source" / assignment / f"{sid}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(texts[sid], encoding="utf-8")
            written.append(path)
    (root / "nbgrader_config.py").write_text(nbgrader_config(ctx), encoding="utf-8")
    (root / "README.md").write_text(readme(ctx), encoding="utf-8")
    return sorted(written + [root / "nbgrader_config.py", root / "README.md"])


# --------------------------------------------------------------------------- points
def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def units(config: Config, skill: Skill, targets: tuple[Target, ...]) -> dict[str, dict]:
    """The skill's grader tests (weight > 0), in grading.toml's order, with the kinds its
    ``nbgrader_units.json`` (beside its suites) holds, as measured (module docstring of ``nbgrader_units``)."""
    measured = nbgrader_checks.load_units(config, skill.id)
    weights = {name: w for suite in skill.suites for name, w in suite.weights.items() if w}
    stale = "; rerun `python -m autograder.instructor.release.nbgrader_units`"
    if {n: u["weight"] for n, u in measured.items()} != weights:
        path = nbgrader_checks.units_path(config, skill.id)
        raise NotebookError(f"{skill.id}: {path.name} does not list grading.toml's tests and weights{stale}")
    names = {t.name for t in targets}
    for name, unit in measured.items():
        used = {f for k in unit["kinds"] + unit["required"] for f in k["uses"]}
        if used - names or not unit["kinds"]:
            raise NotebookError(f"{skill.id}.{name}: kinds use functions without checks ({sorted(used - names)}){stale}")
    return {name: measured[name] for name in weights}


def exact_points(skill: Skill, weights: dict[str, float]) -> dict[str, float]:
    """Each test cell gets its grader weight as it is. nbgrader adds the cells' points as
    floats, so the weights must be binary fractions (quarters, eighths, …: 0.1 is not one)
    for the skill's and the course's max score to come out exact (100, not 99.99999999999999)."""
    for name, weight in weights.items():
        if Fraction(weight).denominator > 1024:
            raise NotebookError(
                f"{skill.id}.{name}: weight {weight!r} is not a multiple of 1/1024, so nbgrader's max score would not be exact"
            )
    if math.fsum(weights.values()) != skill.points or sum(weights.values()) != skill.points:
        raise NotebookError(f"{skill.id}: the test weights add up to {sum(weights.values())!r}, not {skill.points!r}")
    return dict(weights)


# --------------------------------------------------------------------------- literals
def literal(value, indent: int = 0) -> str:
    """Python source that rebuilds ``value`` (tensors, numbers, tuples, strings)."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        return f"torch.tensor({_nested(value.detach().cpu().tolist(), indent)}, dtype=torch.{dtype})"
    if isinstance(value, (tuple, list)):
        parts = [literal(v, indent + 4) for v in value]
        inner = (",\n" + " " * (indent + 4)).join(parts)
        return f"(\n{' ' * (indent + 4)}{inner},\n{' ' * indent})"
    return _scalar(value)


def _scalar(value) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "math.nan"
        if math.isinf(value):
            return "math.inf" if value > 0 else "-math.inf"
        return repr(value)
    raise NotebookError(f"cannot embed a {type(value).__name__} as an expected value")


def _nested(data, indent: int) -> str:
    if not isinstance(data, list):
        return _scalar(data)
    flat = "[" + ", ".join(_nested(d, indent) for d in data) + "]"
    if len(flat) <= 100 or not data or not isinstance(data[0], list):
        return flat
    pad = " " * (indent + 4)
    return "[\n" + ",\n".join(pad + _nested(d, indent + 4) for d in data) + ",\n" + " " * indent + "]"


# --------------------------------------------------------------------------- cells
def setup_source(config: Config) -> str:
    """The locked setup cell: the template's helpers, with the course's own names for its
    checks (``<suites>/nbgrader_setup.py``: its worked examples, say) in place of one line."""
    path = config.suites_dir / "nbgrader_setup.py"
    course = path.read_text(encoding="utf-8") if path.is_file() else ""
    if SETUP.count(COURSE_SETUP_LINE) != 1:
        raise NotebookError(f"templates/nbgrader_setup.py must hold the line {COURSE_SETUP_LINE.strip()!r} once")
    return SETUP.replace(COURSE_SETUP_LINE, course)


def reference_namespace(config: Config, skill: Skill) -> dict:
    """The kernel of a notebook whose solution cell holds the reference."""
    ns: dict = {"__name__": f"nbgrader_reference_{skill.id}"}
    exec(compile(setup_source(config), "setup-cell", "exec"), ns)  # our own template and the course's names
    source = (config.solutions_dir / skill.module).read_text(encoding="utf-8")
    exec(compile(source, str(config.solutions_dir / skill.module), "exec"), ns)  # the reference
    return ns


def _check_code(check: Check, ns: dict, where: str) -> str:
    local = dict(ns)
    try:
        if check.setup:
            exec(compile(check.setup, where, "exec"), local)  # our own checks
        want = eval(compile(check.call, where, "eval"), local)
    except Exception as exc:  # any failure of the reference stops the release, named
        raise NotebookError(f"{where}: the reference fails `{check.call}`: {type(exc).__name__}: {exc}") from None
    if _has_nan(want):  # a fully blocked row, say: outside the exercise contract (EXERCISES.md)
        raise NotebookError(f"{where}: the reference returns NaN for `{check.call}` — choose inputs inside the contract")
    tol = "" if (check.rtol, check.atol) == (1e-6, 1e-8) else f", rtol={check.rtol!r}, atol={check.atol!r}"
    lines = [check.setup] if check.setup else []
    lines += [
        f"got = {check.call}",
        f"want = {literal(want)}",
        "checks.properties(got, want)",
        f"assert check(got, want, {check.call!r}{tol})",
    ]
    return "with checks:\n" + textwrap.indent("\n".join(lines), "    ")


def _has_nan(value) -> bool:
    if isinstance(value, torch.Tensor):
        return bool(value.is_floating_point() and torch.isnan(value).any())
    if isinstance(value, (tuple, list)):
        return any(_has_nan(v) for v in value)
    return isinstance(value, float) and math.isnan(value)


def checks_source(skill: Skill, target: Target, ns: dict) -> str:
    where = f"{skill.id}.{target.name}"
    parts = [
        (
            f"# Checks of {target.name} ({target.cite}). No points of their own: "
            "the point cells at the end score the grader's tests\n"
            "# from whether every check here passed. Expected values: the reference's, computed when this course was released."
        ),
        f"checks = Checks({target.name!r})",
    ]
    parts += [_check_code(c, ns, where) for c in target.visible]
    if target.hidden:
        # the visible checks' results are printed before the hidden block: the feedback shows what
        # the cell printed up to there (templates/nbgrader_feedback.py), never what came after
        parts += ["checks.report_visible()", HIDDEN_BEGIN, *(_check_code(c, ns, where) for c in target.hidden), HIDDEN_END]
    parts.append("checks.report()")
    return "\n".join(parts)


def credit_source(name: str, unit: dict, points: float, others: list[str] | None = None) -> str:
    """A point cell: one grader test, its points, and the grader's rule over its kinds —
    for a property test (``others``: the skill's other tests), the property rule too.
    The last line is the score (nbgrader reads a number there as the cell's partial credit)."""

    def table(kinds: list[dict]) -> str:
        return "{" + ", ".join(f"{k['label']!r}: {k['uses']!r}" for k in kinds) + "}"

    required = f", required={table(unit['required'])}" if unit["required"] else ""
    if others is None:
        return (
            f"# {name} ({unit['visibility']} test of the grader): {points:g} points × passed kinds / kinds"
            + (", 0 if a required kind fails" if unit["required"] else "")
            + ".\n"
            "# A kind passes when every function it uses passed its checks cell above.\n"
            f"credit({points!r}, {table(unit['kinds'])}{required}, test={name!r})"
        )
    return (
        f"# {name} ({unit['visibility']} property test of the grader): {points:g} points × passed kinds / kinds"
        + (", 0 if a required kind fails" if unit["required"] else "")
        + ",\n# 0 if none of the skill's other tests earned points. A kind passes when every function it uses\n"
        "# kept its properties in its checks cell above (returned, with the reference's dtypes and errors).\n"
        f"credit({points!r}, {table(unit['kinds'])}{required}, test={name!r}, properties=True, others={others!r})"
    )


def _meta(grade_id: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def lesson_markdown(config: Config, skill: Skill, points: dict[str, float], lesson: tuple[tuple[str, str], ...]) -> str:
    quotes = "\n".join(f"> **{cite}** — {text}  " for cite, text in lesson)
    rows = "\n".join(f"| `{name}` | {pts:g} |" for name, pts in points.items())
    return (
        f"# {skill.title}\n\n"
        f"{config.course} · skill `{skill.id}` · {skill.points:g} points · lessons: {', '.join(skill.sections)}\n\n"
        f"{quotes}\n\n"
        "Fill in every cell marked `# YOUR CODE HERE` (the docstrings say what each function takes and returns), "
        "then run all cells: each checks cell below tests one function on the lesson's worked example. "
        "Grading also runs hidden checks (other shapes, leading dimensions, masks, dtypes, errors), "
        "so make your code follow the docstrings, not just the examples.\n\n"
        "The points are the course autograder's: one point cell per test of the autograder, with its points, scored by "
        "its rule — points × passed kinds / kinds, 0 if a required kind fails — where a kind passes when every function "
        "it uses passed its checks cell.\n\n"
        f"| autograder test | points |\n|---|---|\n{rows}\n"
    )


def notebook(config: Config, skill: Skill):
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    checks = nbgrader_checks.load(config, skill.id)  # tests/suites/<skill>/nbgrader.toml
    targets = checks.targets
    tests = units(config, skill, targets)
    points = exact_points(skill, {name: unit["weight"] for name, unit in tests.items()})
    ns = reference_namespace(config, skill)
    cells = [
        new_markdown_cell(
            lesson_markdown(config, skill, points, checks.lesson),
            id=f"{skill.id}-lesson",
            metadata=_meta(f"{skill.id}_lesson", locked=True),
        ),
        new_code_cell(
            setup_source(config).rstrip("\n"), id=f"{skill.id}-setup", metadata=_meta(f"{skill.id}_setup", locked=True)
        ),
        new_code_cell(
            (config.solutions_dir / skill.module).read_text(encoding="utf-8").rstrip("\n"),
            id=f"{skill.id}-solution",
            metadata=_meta(f"{skill.id}_solution", solution=True),
        ),
    ]
    for target in targets:  # 0 points: hidden checks must sit in grade cells, and these cells' results feed the point cells
        grade_id = f"checks_{snake(target.name)}"
        cells.append(
            new_code_cell(
                checks_source(skill, target, ns),
                id=f"{skill.id}-{grade_id}".replace("_", "-"),
                metadata=_meta(grade_id, grade=True, locked=True, points=0),
            )
        )
    cells.append(
        new_markdown_cell(
            f"## Points: the autograder's tests of `{skill.id}`",
            id=f"{skill.id}-points",
            metadata=_meta(f"{skill.id}_points", locked=True),
        )
    )
    # the skill's other tests first: a property test's cell reads their scores (the property rule)
    others = [name for name in tests if name not in skill.properties]
    for name, unit in sorted(tests.items(), key=lambda item: item[0] in skill.properties):
        cells.append(
            new_code_cell(
                credit_source(name, unit, points[name], others if name in skill.properties else None),
                id=f"{skill.id}-{name}".replace("_", "-")[:64],
                metadata=_meta(name, grade=True, locked=True, points=points[name]),
            )
        )
    nb = new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb


# --------------------------------------------------------------------------- course files
def nbgrader_config(ctx: ReleaseContext) -> str:
    s = ctx.config.nbgrader_release
    return f"""# nbgrader course: attention exercises, release {ctx.version} (commit {ctx.commit}).
# Generated by `make release` from solutions/, grading.toml and, beside each skill's suites, its nbgrader checks
# (nbgrader.toml) and measured units (nbgrader_units.json).
import os

c = get_config()  # noqa: F821 - provided by nbgrader
here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = {s.course_id!r}
c.CourseDirectory.root = here
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db")
c.Execute.timeout = {int(s.cell_timeout_s)}  # seconds per cell: a loop that never ends costs one cell
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
""" + "\n\n".join(path.read_text(encoding="utf-8") for path in (FEEDBACK, AUTOGRADE))


def readme(ctx: ReleaseContext) -> str:
    s = ctx.config.nbgrader_release
    return f"""# nbgrader course — attention exercises {ctx.version}

Instructors only: `source/` holds the reference solutions and the hidden tests (so does the
`gradebook.db` nbgrader creates, and every `autograded/` notebook). Students get `release/`.

This folder is the release's copy: the next `make release` replaces it, with any nbgrader
state in it (the release refuses while it holds some). Run nbgrader in a course folder of its
own, created and later updated from this one with the state kept:

    make nbgrader-course DIR=../attention-course      # from the instructors' repository
    cd ../attention-course                            # with nbgrader 0.9.6 and torch on PATH
    nbgrader generate_assignment {s.assignment} --force     # → release/{s.assignment}/ for students
    # collect submissions into submitted/<student>/{s.assignment}/<skill>.ipynb, then
    nbgrader autograde {s.assignment} --force
    nbgrader generate_feedback {s.assignment} --force     # → feedback/<student>/{s.assignment}/*.html for students
    nbgrader export --to grades.csv

Feedback: hand students only `feedback/`, made by `nbgrader generate_feedback` (or the
formgrader's "Generate Feedback") with this folder's `nbgrader_config.py`, which sets
`GenerateFeedback.preprocessors`: nbgrader's `ClearHiddenTests` removes the hidden tests from
the test cells, and `HiddenTestOutputs` keeps a failed visible check's message (one line) but
replaces a failed hidden check's traceback and message with a fixed sentence and drops what a
test cell with hidden checks printed. Without that config (another `nbgrader_config.py`, or
`--config` elsewhere) the HTML shows the hidden tests' inputs and expected values.

One notebook per skill. Its points are the course autograder's (`python -m autograder grade`):
one point cell per autograder test, with that test's points from grading.toml, scored by the
autograder's rule — points × passed kinds / kinds, 0 when a required kind fails. A kind passes
when every function it uses passed its checks cell (the notebook's fixed checks of that
function, hidden ones included); which functions each kind uses was measured by grading the
reference with one function broken at a time. Every weight is a binary fraction, so the max
score is exactly {ctx.config.total_points:g}.

Where the two can still differ, and why:
- Rules (the autograder's gates: {_gates(ctx)}): they need the autograder's sandbox (the torch
  operations a submission ran); nbgrader does not enforce them, so a submission that breaks one
  scores 0 for that skill in the autograder and its points here.
- A mistake that breaks only some of a function's kinds (only float32, only a finite fill, a
  changed dtype, an input modified in place): here a function passes or fails as a whole, so
  such a mistake costs every kind that uses the function, or none if the fixed checks miss it.
- Property tests (grading.toml `properties`: dtype kept, inputs unchanged, errors raised,
  state_dict, batch independence): both credit them whatever the values, and neither when no
  other test of the skill earned points. Here a property kind passes when every function it
  uses kept its properties in its checks cell (each call returned, with the reference's dtypes
  and errors); a property the checks cannot see (an input changed in place, batch examples
  mixed) is not charged here.

Each point cell's score is rounded to 4 decimals as the autograder rounds each test's, so on
code where the two agree test by test they agree to the last digit.

nbgrader runs the tests in the student's kernel (no sandbox): use the Gradescope bundle or
`make grade` for grades that must resist tampering.
"""


def _gates(ctx: ReleaseContext) -> str:
    return ", ".join(f"{s.id}: `{g}`" for s in ctx.config.skills.values() for g in s.gates) or "none"
