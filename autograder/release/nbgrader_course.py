"""``dist/nbgrader/``: an nbgrader course for classes that grade in JupyterHub.

    dist/nbgrader/nbgrader_config.py
    dist/nbgrader/source/<assignment>/<skill>.ipynb     (one notebook per skill)
    dist/nbgrader/README.md

Each notebook: a markdown cell quoting the lesson (sections cited), the locked setup cell
(``templates/nbgrader_setup.py``: silences warnings — nbgrader scores a cell with any
stderr as 0 — and defines the test helpers), the solution cell (``solutions/<skill>.py``
as it is, with its ``### BEGIN SOLUTION`` markers, which nbgrader's ``ClearSolutions``
turns into stubs), then one autograded test cell per exercise function or class. The
checks (``nbgrader_checks``) run the student's code in the student's kernel; expected
values are computed here from the reference and embedded, hidden checks sit in
``### BEGIN HIDDEN TESTS`` blocks, and every test cell ends in an ``assert`` (a trailing
expression would be read as partial credit).

Points come from grading.toml: every test's weight goes to the cell of the function its
name mentions (the longest such name, then the first), the weight of tests that name none (course numbers,
dtype, rules) is shared evenly by the skill's cells, so the cells of a skill add up to its
points. Cells, metadata (schema v3) and JSON are written with nbformat; the same commit
gives the same bytes.

``source/`` holds the solutions and the hidden tests: it is the instructors' copy (nbgrader
makes the student version with ``nbgrader generate_assignment``). nbgrader's feedback HTML
would show the hidden tests (it renders ``autograded/`` as it is): ``nbgrader_config.py``
carries ``templates/nbgrader_feedback.py``, which sets ``GenerateFeedback.preprocessors`` so
that ``nbgrader generate_feedback`` removes them (nbgrader's ``ClearHiddenTests``) and hides
what a failed hidden check printed.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import torch

from ..config import Config, Skill
from .context import ReleaseContext
from .nbgrader_checks import LESSON, TARGETS, Check, Target

TEMPLATES = Path(__file__).with_name("templates")
SETUP = (TEMPLATES / "nbgrader_setup.py").read_text(encoding="utf-8")
FEEDBACK = TEMPLATES / "nbgrader_feedback.py"  # appended to nbgrader_config.py: feedback without the hidden tests
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


class NotebookError(ValueError):
    """The checks or the reference do not make a valid notebook; the message names the skill and cell."""


def build(ctx: ReleaseContext) -> list[Path]:
    import nbformat

    config = ctx.config
    settings = config.nbgrader_release
    root = Path(ctx.out) / "nbgrader"
    written = []
    for skill in config.skills.values():
        nb = notebook(config, skill)
        path = root / "source" / settings.assignment / f"{skill.id}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(nbformat.writes(nb), encoding="utf-8")
        written.append(path)
    (root / "nbgrader_config.py").write_text(nbgrader_config(ctx), encoding="utf-8")
    (root / "README.md").write_text(readme(ctx), encoding="utf-8")
    return sorted(written + [root / "nbgrader_config.py", root / "README.md"])


# --------------------------------------------------------------------------- points
def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def cell_points(skill: Skill, targets: list[Target]) -> dict[str, float]:
    """grading.toml's weights of the skill spread over its cells (see the module docstring)."""
    names = {t.name: snake(t.name) for t in targets}
    own: dict[str, Fraction] = {t.name: Fraction(0) for t in targets}
    shared = Fraction(0)
    for suite in skill.suites:
        for test, weight in suite.weights.items():
            hits = [n for n, s in names.items() if s in test]
            if hits:
                # the longest name, then the one named first ("merge_heads_..._split_heads" → merge_heads)
                own[max(hits, key=lambda n: (len(names[n]), -test.index(names[n])))] += Fraction(weight).limit_denominator(10_000)
            else:
                shared += Fraction(weight).limit_denominator(10_000)
    exact = {n: own[n] + shared / len(targets) for n in own}
    rounded = {n: round(float(v), 2) for n, v in exact.items()}
    last = targets[-1].name  # rounding leftovers go to the last cell, so the sum is exact
    rounded[last] = round(float(skill.points) - sum(v for n, v in rounded.items() if n != last), 2)
    if any(v <= 0 for v in rounded.values()):
        raise NotebookError(f"{skill.id}: a cell would get no points: {rounded}")
    return rounded


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
def reference_namespace(config: Config, skill: Skill) -> dict:
    """The kernel of a notebook whose solution cell holds the reference."""
    ns: dict = {"__name__": f"nbgrader_reference_{skill.id}"}
    exec(compile(SETUP, "setup-cell", "exec"), ns)  # noqa: S102 - our own template
    source = (config.solutions_dir / skill.module).read_text(encoding="utf-8")
    exec(compile(source, str(config.solutions_dir / skill.module), "exec"), ns)  # noqa: S102 - the reference
    return ns


def _check_code(check: Check, ns: dict, where: str) -> str:
    local = dict(ns)
    try:
        if check.setup:
            exec(compile(check.setup, where, "exec"), local)  # noqa: S102 - our own checks
        want = eval(compile(check.call, where, "eval"), local)  # noqa: S307
    except Exception as exc:
        raise NotebookError(f"{where}: the reference fails `{check.call}`: {type(exc).__name__}: {exc}") from None
    if _has_nan(want):  # a fully blocked row, say: outside the exercise contract (EXERCISES.md)
        raise NotebookError(f"{where}: the reference returns NaN for `{check.call}` — choose inputs inside the contract")
    tol = "" if (check.rtol, check.atol) == (1e-6, 1e-8) else f", rtol={check.rtol!r}, atol={check.atol!r}"
    lines = [check.setup] if check.setup else []
    lines += [f"got = {check.call}", f"want = {literal(want)}", f"assert check(got, want, {check.call!r}{tol})"]
    return "\n".join(lines)


def _has_nan(value) -> bool:
    if isinstance(value, torch.Tensor):
        return bool(value.is_floating_point() and torch.isnan(value).any())
    if isinstance(value, (tuple, list)):
        return any(_has_nan(v) for v in value)
    return isinstance(value, float) and math.isnan(value)


def checks_source(skill: Skill, target: Target, ns: dict) -> str:
    where = f"{skill.id}.{target.name}"
    parts = [f"# Tests of {target.name} ({target.cite}). Expected values: the reference's, computed when this course was released."]
    parts += [_check_code(c, ns, where) for c in target.visible]
    if target.hidden:
        parts += [HIDDEN_BEGIN, *(_check_code(c, ns, where) for c in target.hidden), HIDDEN_END]
    source = "\n".join(parts)
    body = [n for n in ast.parse(source).body]
    if not body or not isinstance(body[-1], ast.Assert):
        raise NotebookError(f"{where}: a test cell must end in an assert")
    return source


def _meta(grade_id: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def lesson_markdown(config: Config, skill: Skill, points: dict[str, float]) -> str:
    quotes = "\n".join(f"> **{cite}** — {text}  " for cite, text in LESSON.get(skill.id, []))
    rows = "\n".join(f"| `{name}` | {pts:g} |" for name, pts in points.items())
    return (
        f"# {skill.title}\n\n"
        f"{config.course} · skill `{skill.id}` · {skill.points:g} points · lessons: {', '.join(skill.sections)}\n\n"
        f"{quotes}\n\n"
        "Fill in every cell marked `# YOUR CODE HERE` (the docstrings say what each function takes and returns), "
        "then run all cells: each test cell below checks one function on the lesson's worked example. "
        "Grading also runs hidden checks (other shapes, leading dimensions, masks, dtypes, errors), "
        "so make your code follow the docstrings, not just the examples.\n\n"
        f"| function | points |\n|---|---|\n{rows}\n"
    )


def notebook(config: Config, skill: Skill):
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    targets = TARGETS.get(skill.id)
    if not targets:
        raise NotebookError(f"skill {skill.id}: no nbgrader checks in autograder/release/nbgrader_checks.py — add TARGETS[{skill.id!r}]")
    points = cell_points(skill, targets)
    ns = reference_namespace(config, skill)
    cells = [
        new_markdown_cell(lesson_markdown(config, skill, points), id=f"{skill.id}-lesson", metadata=_meta(f"{skill.id}_lesson", locked=True)),
        new_code_cell(SETUP.rstrip("\n"), id=f"{skill.id}-setup", metadata=_meta(f"{skill.id}_setup", locked=True)),
        new_code_cell((config.solutions_dir / skill.module).read_text(encoding="utf-8").rstrip("\n"), id=f"{skill.id}-solution",
                      metadata=_meta(f"{skill.id}_solution", solution=True)),
    ]
    for target in targets:
        grade_id = f"test_{snake(target.name)}"
        cells.append(new_code_cell(checks_source(skill, target, ns), id=f"{skill.id}-{grade_id}".replace("_", "-"),
                                   metadata=_meta(grade_id, grade=True, locked=True, points=points[target.name])))
    nb = new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb


# --------------------------------------------------------------------------- course files
def nbgrader_config(ctx: ReleaseContext) -> str:
    s = ctx.config.nbgrader_release
    return f'''# nbgrader course: attention exercises, release {ctx.version} (commit {ctx.commit}).
# Generated by `make release` from solutions/, grading.toml and autograder/release/nbgrader_checks.py.
import os

c = get_config()  # noqa: F821 - provided by nbgrader
here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = {s.course_id!r}
c.CourseDirectory.root = here
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db")
c.Execute.timeout = {int(s.cell_timeout_s)}  # seconds per cell: a loop that never ends costs one cell
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
''' + FEEDBACK.read_text(encoding="utf-8")


def readme(ctx: ReleaseContext) -> str:
    s = ctx.config.nbgrader_release
    return f"""# nbgrader course — attention exercises {ctx.version}

Instructors only: `source/` holds the reference solutions and the hidden tests (so does the
`gradebook.db` nbgrader creates, and every `autograded/` notebook). Students get `release/`.

    cd dist/nbgrader                                  # with nbgrader 0.9.6 and torch on PATH
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

One notebook per skill; points per test cell come from grading.toml. nbgrader runs the tests
in the student's kernel (no sandbox): use the Gradescope bundle or `make grade` for grades
that must resist tampering.
"""


# --------------------------------------------------------------------------- proving it works
@dataclass
class RoundTrip:
    scores: dict[str, float]  # student → exported score
    max_score: float
    seconds: dict[str, float]  # generate_assignment, autograde, [generate_feedback,] export
    release: Path  # release/<assignment>: what students get
    feedback: Path | None = None  # feedback/: each student's HTML, when asked for


def round_trip(course: Path, work: Path, submissions: dict[str, Path | None], assignment: str, *, feedback: bool = False) -> RoundTrip:
    """Run the real nbgrader headless on a copy of ``course``: ``generate_assignment``, then
    ``autograde`` each student's notebooks — the release with the solution cells filled from
    ``submissions[student]`` (a folder of exercise modules) or left untouched (None) — then
    ``generate_feedback`` if asked, and ``export``. nbgrader must be importable by this Python
    (requirements-instructor.txt)."""
    import csv
    import os
    import shutil
    import subprocess
    import sys
    import time

    import nbformat

    root = work / "course"
    shutil.copytree(course, root)
    env = dict(os.environ)
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):  # nbgrader writes into $HOME otherwise
        (work / name).mkdir(exist_ok=True)
        env[name] = str(work / name)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # creating the DB runs `alembic`
    env.pop("PYTHONPATH", None)
    seconds: dict[str, float] = {}

    def nbgrader(step: str, *args: str) -> None:
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "nbgrader", step, *args], cwd=root, env=env, capture_output=True, text=True, timeout=1200)
        seconds[step] = round(time.monotonic() - start, 1)
        if proc.returncode != 0:
            raise NotebookError(f"nbgrader {step} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")

    nbgrader("generate_assignment", assignment, "--force")
    release = root / "release" / assignment
    for student, modules in submissions.items():
        target = root / "submitted" / student / assignment
        target.mkdir(parents=True)
        for path in sorted(release.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:
                if modules is not None and cell.metadata.get("nbgrader", {}).get("solution"):
                    cell.source = (modules / f"{path.stem}.py").read_text(encoding="utf-8")
            nbformat.write(nb, target / path.name)
    nbgrader("autograde", assignment, "--force")
    if feedback:
        nbgrader("generate_feedback", assignment, "--force")
    grades = work / "grades.csv"
    nbgrader("export", "--to", str(grades))
    rows = list(csv.DictReader(grades.open(encoding="utf-8")))
    scores = {r["student_id"]: float(r["score"]) for r in rows if r["assignment"] == assignment}
    max_score = max((float(r["max_score"]) for r in rows), default=0.0)
    return RoundTrip(scores, max_score, seconds, release, root / "feedback" if feedback else None)
