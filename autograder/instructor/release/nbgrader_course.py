"""``dist/nbgrader/``: an nbgrader course for classes that grade in JupyterHub.

    dist/nbgrader/nbgrader_config.py
    dist/nbgrader/source/<assignment>/<skill>.ipynb     (one notebook per skill)
    dist/nbgrader/grader/                               (the course autograder, hidden suites included)
    dist/nbgrader/README.md

Each notebook: a markdown cell quoting the lesson (sections cited), the locked setup cell
(``templates/nbgrader_setup.py``: silences warnings — nbgrader scores a cell with any
stderr as 0 — and defines the check helpers), the solution cell (``solutions/<skill>.py``
as it is, with its ``### BEGIN SOLUTION`` markers, which nbgrader's ``ClearSolutions``
turns into stubs), one *checks cell* per exercise function or class, and the *score cell*.

Checks cells (0 points; grade cells so that their ``### BEGIN HIDDEN TESTS`` blocks are
kept for grading and removed for students): the checks (each skill's ``nbgrader.toml``
beside its suites, read by ``nbgrader_checks``) run the student's code in the student's
kernel, against expected values computed here from the reference and embedded. They are
the student's guide while working, never the score.

The score cell (the skill's points) — one score on every path: ``nbgrader autograde``
scores it with the course autograder itself. ``grader/`` holds the grader as the Gradescope
bundle does (the package, grading.toml, visible and hidden suites, solutions/ for the ``ref``
fixture, the course's seed key) and ``grader/nbgrader.json`` names each notebook's skill,
module, solution cell and score cell (``manifest``). ``nbgrader_config.py`` carries
``templates/nbgrader_score.py``: a preprocessor in nbgrader's own process that exports a
submission's exercise modules from its solution cells, grades them once with ``python -m
autograder grade`` (the submission runs in the grader's sandboxed workers) and writes each
score cell's output — the grader's feedback on the skill's visible tests, then the skill's
score, which nbgrader reads as partial credit. So each notebook scores exactly what the grader
gives its skill; nothing the student's kernel does changes it.

Cells, metadata (schema v3) and JSON are written with nbformat; the same commit gives the
same bytes.

``source/`` and ``grader/`` hold the solutions and the hidden tests: the course folder is the
instructors' (nbgrader makes the student version with ``nbgrader generate_assignment``, from
``source/<assignment>/`` only). nbgrader's feedback HTML would show the hidden tests (it
renders ``autograded/`` as it is): ``nbgrader_config.py`` carries
``templates/nbgrader_feedback.py``, which sets ``GenerateFeedback.preprocessors`` so that
``nbgrader generate_feedback`` removes them (nbgrader's ``ClearHiddenTests``) and hides what
a failed hidden check printed; the score cell's report names no hidden test.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from fractions import Fraction
from pathlib import Path

import torch

from ...config import Config, Skill
from . import files as release_files
from . import nbgrader_checks
from .context import ReleaseContext
from .nbgrader_checks import Check, NotebookError, Target

TEMPLATES = Path(__file__).with_name("templates")
SETUP = (TEMPLATES / "nbgrader_setup.py").read_text(encoding="utf-8")  # the framework's part of the setup cell
#: the line of SETUP that the course's own names for its checks replace (its nbgrader_setup.py, beside the suites)
COURSE_SETUP_LINE = "# (the course's names for its checks: nbgrader_setup.py beside the suites, in place of this line)\n"
FEEDBACK = TEMPLATES / "nbgrader_feedback.py"  # appended to nbgrader_config.py: feedback without the hidden tests
AUTOGRADE = TEMPLATES / "nbgrader_autograde.py"  # appended too: a checksum warning only for a changed locked cell
SCORE = TEMPLATES / "nbgrader_score.py"  # appended too: the notebooks' points are the course autograder's
GRADER_DIR = "grader"  # the course folder's copy of the grader (never under source/: generate_assignment copies that)
MANIFEST = "nbgrader.json"  # in grader/: what the score preprocessor needs to know of the notebooks
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
    written += release_files.write_tree(root / GRADER_DIR, grader_files(ctx))
    (root / "nbgrader_config.py").write_text(nbgrader_config(ctx), encoding="utf-8")
    (root / "README.md").write_text(readme(ctx), encoding="utf-8")
    return sorted(written + [root / "nbgrader_config.py", root / "README.md"])


def solution_id(skill_id: str) -> str:
    return f"{skill_id}_solution"


def score_id(skill_id: str) -> str:
    return f"{skill_id}_score"


def manifest(config: Config, seed_key: bool) -> dict:
    """``grader/nbgrader.json``: how the score preprocessor finds each notebook's code and score
    cell (the ids ``notebook`` gives them) and grades it."""
    notebooks = {
        sid: {"skill": sid, "module": skill.module, "solution": solution_id(sid), "score": score_id(sid)}
        for sid, skill in config.skills.items()
    }
    return {"notebooks": notebooks, "seed_key": "seed.key" if seed_key else None}


def grader_files(ctx: ReleaseContext) -> dict[str, bytes]:
    """The grader as the Gradescope bundle carries it (hidden suites, solutions/ for the ``ref``
    fixture, grading.toml as it is), the course's seed key when the release has one (the
    bundle's seeds, so nbgrader, Gradescope and a regrade draw the same inputs), and the manifest."""
    files = release_files.grader_files(ctx, include_hidden=True)
    if ctx.seed_key:
        files["seed.key"] = ctx.seed_key + b"\n"
    files[MANIFEST] = (json.dumps(manifest(ctx.config, bool(ctx.seed_key)), indent=1, sort_keys=True) + "\n").encode()
    return files


# --------------------------------------------------------------------------- points
def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def exact_points(config: Config) -> None:
    """nbgrader adds the score cells' points as floats: each skill's points must be a binary
    fraction (quarters, eighths, …: 0.1 is not one) for the course's max score to come out
    exact (100, not 99.99999999999999)."""
    for skill in config.skills.values():
        if Fraction(skill.points).denominator > 1024:
            raise NotebookError(
                f"{skill.id}: points {skill.points!r} is not a multiple of 1/1024, so nbgrader's max score would not be exact"
            )


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
            f"# Checks of {target.name} ({target.cite}): a guide while you work, no points of their own (the score cell at\n"
            "# the end holds the course autograder's score). Expected values: the reference's, computed when this course\n"
            "# was released."
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


def _meta(grade_id: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def lesson_markdown(config: Config, skill: Skill, lesson: tuple[tuple[str, str], ...]) -> str:
    quotes = "\n".join(f"> **{cite}** — {text}  " for cite, text in lesson)
    return (
        f"# {skill.title}\n\n"
        f"{config.course} · skill `{skill.id}` · {skill.points:g} points · lessons: {', '.join(skill.sections)}\n\n"
        f"{quotes}\n\n"
        "Fill in every cell marked `# YOUR CODE HERE` (the docstrings say what each function takes and returns), "
        "then run all cells: each checks cell below tests one function on the lesson's worked example.\n\n"
        "Your points are the course autograder's: when this notebook is graded, the autograder grades the code in "
        "the solution cell (that cell only — keep all your code there) with its own tests, hidden ones too (other "
        "shapes, leading dimensions, masks, dtypes, errors, the exercise's rules), exactly as `make grade` and "
        "Gradescope do. So make your code follow the docstrings, not just the examples.\n"
    )


def notebook(config: Config, skill: Skill):
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    checks = nbgrader_checks.load(config, skill.id)  # tests/suites/<skill>/nbgrader.toml
    targets = checks.targets
    exact_points(config)
    ns = reference_namespace(config, skill)
    cells = [
        new_markdown_cell(
            lesson_markdown(config, skill, checks.lesson),
            id=f"{skill.id}-lesson",
            metadata=_meta(f"{skill.id}_lesson", locked=True),
        ),
        new_code_cell(
            setup_source(config).rstrip("\n"), id=f"{skill.id}-setup", metadata=_meta(f"{skill.id}_setup", locked=True)
        ),
        new_code_cell(
            (config.solutions_dir / skill.module).read_text(encoding="utf-8").rstrip("\n"),
            id=f"{skill.id}-solution",
            metadata=_meta(solution_id(skill.id), solution=True),
        ),
    ]
    for target in targets:  # 0 points: hidden checks must sit in grade cells; the score is the grader's
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
            f"## Points: the course autograder's score of `{skill.id}`",
            id=f"{skill.id}-points",
            metadata=_meta(f"{skill.id}_points", locked=True),
        )
    )
    cells.append(
        new_code_cell(
            score_source(skill, targets),
            id=f"{skill.id}-score",
            metadata=_meta(score_id(skill.id), grade=True, locked=True, points=skill.points),
        )
    )
    nb = new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb


def score_source(skill: Skill, targets: tuple[Target, ...]) -> str:
    """The score cell: in the student's kernel it lists which functions pass their checks;
    when graded, nbgrader's ScoreFromGrader (templates/nbgrader_score.py) replaces its output
    with the course autograder's report and score of the skill, whatever ran here."""
    return (
        f"# The score of {skill.id} ({skill.points:g} points) is the course autograder's: when this notebook is graded it\n"
        "# grades your solution cell with its own tests (hidden ones too) and shows its report here. Run now, this cell\n"
        "# only lists which functions pass their checks above.\n"
        f"summary({[t.name for t in targets]!r})"
    )


# --------------------------------------------------------------------------- course files
def nbgrader_config(ctx: ReleaseContext) -> str:
    s = ctx.config.nbgrader_release
    return f"""# nbgrader course: attention exercises, release {ctx.version} (commit {ctx.commit}).
# Generated by `make release` from solutions/, grading.toml and, beside each skill's suites, its nbgrader checks
# (nbgrader.toml). The notebooks' points are the course autograder's, bundled in grader/ (ScoreFromGrader below).
import os

c = get_config()  # noqa: F821 - provided by nbgrader
here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = {s.course_id!r}
c.CourseDirectory.root = here
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db")
c.Execute.timeout = {int(s.cell_timeout_s)}  # seconds per cell: a loop that never ends costs one cell
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
""" + "\n\n".join(path.read_text(encoding="utf-8") for path in (FEEDBACK, AUTOGRADE, SCORE))


def readme(ctx: ReleaseContext) -> str:
    s = ctx.config.nbgrader_release
    return f"""# nbgrader course — attention exercises {ctx.version}

Instructors only: `source/` and `grader/` hold the reference solutions and the hidden tests
(so does the `gradebook.db` nbgrader creates, and every `autograded/` notebook). Students get
`release/` (made from `source/<assignment>/` only).

This folder is the release's copy: the next `make release` replaces it, with any nbgrader
state in it (the release refuses while it holds some). Run nbgrader in a course folder of its
own, created and later updated from this one with the state kept:

    make nbgrader-course DIR=../attention-course      # from the instructors' repository
    cd ../attention-course                            # with nbgrader 0.9.6, torch and grader/requirements.txt
    nbgrader generate_assignment {s.assignment} --force     # → release/{s.assignment}/ for students
    # collect submissions into submitted/<student>/{s.assignment}/<skill>.ipynb, then
    nbgrader autograde {s.assignment} --force
    nbgrader generate_feedback {s.assignment} --force     # → feedback/<student>/{s.assignment}/*.html for students
    nbgrader export --to grades.csv

One notebook per skill, and one score: the course autograder's (`python -m autograder grade`,
the Gradescope bundle, `make batch`). During `nbgrader autograde`, this folder's
`nbgrader_config.py` (ScoreFromGrader) takes each submission's solution cells as its exercise
modules, grades them once with the autograder in `grader/` (visible and hidden suites, the
course's seed key; the code runs in the autograder's sandboxed workers, not in nbgrader) and
gives each notebook's score cell its skill's score. The checks cells (0 points) run in the
student's kernel while they work and when graded; they guide, they never score, so nothing
a notebook does in its kernel changes its points. A solution cell that does not import (a
syntax error) or is missing scores 0 for its skill, with the autograder's message in the score
cell. A notebook carries one exercise module and nothing else: a helper module of the
student's own (`import my_helpers`), which `make grade`, Gradescope and `make batch` take,
does not reach nbgrader, and the skills that import it score 0 here (blind tester R-AY) —
students graded through nbgrader keep their helpers in the solution cells (importing another
exercise, `from masks import causal_mask`, works: each notebook is one). nbgrader's total is
its sum of the skill scores (floats): the same as the autograder's total to its 4 decimals.
nbgrader's Python must have `grader/requirements.txt` installed (the autograder runs on it).

Feedback: hand students only `feedback/`, made by `nbgrader generate_feedback` (or the
formgrader's "Generate Feedback") with this folder's `nbgrader_config.py`. The score cell
shows the autograder's report of the skill's visible tests (what failed, the hint, the lesson
section to reread) and that hidden tests count, never their names, inputs or results. The
config also sets `GenerateFeedback.preprocessors`: nbgrader's `ClearHiddenTests` removes the
hidden checks from the checks cells, and `HiddenTestOutputs` keeps a failed visible check's
message (one line) but replaces a failed hidden check's traceback and message with a fixed
sentence and drops what a checks cell with hidden checks printed. Without that config
(another `nbgrader_config.py`, or `--config` elsewhere) the HTML shows the hidden checks'
inputs and expected values, and the autograder does not score the notebooks.

Every skill's points are a binary fraction, so the max score is exactly
{ctx.config.total_points:g}.
"""
