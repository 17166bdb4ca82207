"""dist/nbgrader, proven with the real nbgrader run headless (commands and gotchas:
nbgrader-headless.md): generate the student version, autograde notebooks filled with the
reference solutions (full points), the untouched release (0 points), single mistakes and a
student who tampers with the checks in their kernel, export the grades, and compare them
with what `python -m autograder grade` gives the same code: one score, skill by skill."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbgrader_headless
import pytest
from conftest import MODULES, ROOT, SOLUTIONS, SUBMISSIONS, grade
from nbgrader_headless import round_trip

from autograder.config import load
from autograder.instructor.release import ReleaseContext
from autograder.runner.grade import suite_hash

nbformat = pytest.importorskip("nbformat", reason="instructor requirements (requirements-instructor.txt) are not installed")
nbgrader_course = pytest.importorskip("autograder.instructor.release.nbgrader_course")
from autograder.instructor.release import nbgrader_checks  # after the skip: it needs the instructor extras

CONFIG = load(ROOT / "grading.toml")
ASSIGNMENT = CONFIG.nbgrader_release.assignment
#: each skill's checks cells, from tests/suites/<skill>/nbgrader.toml
TARGETS = {sid: nbgrader_checks.load(CONFIG, sid).targets for sid in CONFIG.skills}


@pytest.fixture(autouse=True)
def _torch_print_options_kept():
    """The notebooks' setup cell, run here in-process, sets torch's print options: put them
    back, so that a sandbox forked later by this test process starts from the usual ones."""
    import torch

    kept = torch._tensor_str.get_printoptions()
    yield
    torch.set_printoptions(**kept)


def _build(out: Path) -> Path:
    ctx = ReleaseContext(
        repo=ROOT, config=CONFIG, out=out, version="1.2.3", commit="0123456789abcdef", suite_hash=suite_hash(CONFIG)
    )
    nbgrader_course.build(ctx)
    return out / "nbgrader"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("dist"))


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _nb(cell: dict) -> dict:
    return cell["metadata"].get("nbgrader", {})


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


# --------------------------------------------------------------------------- the notebooks
def test_course_is_byte_identical_when_built_twice(course, tmp_path):
    again = _build(tmp_path)
    files = sorted(p.relative_to(course) for p in course.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert all((course / f).read_bytes() == (again / f).read_bytes() for f in files)


def _weights(skill) -> dict[str, float]:
    return {name: w for suite in skill.suites for name, w in suite.weights.items() if w}


def test_one_notebook_per_skill_with_lesson_setup_solution_checks_and_one_score_cell(course):
    for skill in CONFIG.skills.values():
        cells = _cells(course / "source" / ASSIGNMENT / f"{skill.id}.ipynb")
        lesson, setup, solution, *rest = cells
        assert lesson["cell_type"] == "markdown" and "§" in _source(lesson) and skill.title in _source(lesson)
        assert _nb(setup)["locked"] and 'warnings.filterwarnings("ignore")' in _source(setup)
        assert _nb(solution)["solution"] and _source(solution) == (SOLUTIONS / skill.module).read_text(encoding="utf-8").rstrip(
            "\n"
        )
        assert _nb(solution)["grade_id"] == nbgrader_course.solution_id(skill.id)
        targets = TARGETS[skill.id]
        checks, heading, scored = rest[: len(targets)], rest[len(targets)], rest[len(targets) + 1 :]
        assert [_nb(c)["grade_id"] for c in checks] == [f"checks_{nbgrader_course.snake(t.name)}" for t in targets]
        for cell in checks:  # 0 points, hidden checks kept for grading
            assert _nb(cell)["grade"] and _nb(cell)["locked"] and _nb(cell)["points"] == 0 and _nb(cell)["schema_version"] == 3
            source = _source(cell)
            assert source.count("### BEGIN HIDDEN TESTS") == 1 and source.count("### END HIDDEN TESTS") == 1
            assert source.rstrip().endswith("checks.report()")
        assert heading["cell_type"] == "markdown"
        # one score cell, worth the skill's points: the course autograder's score goes there when graded
        (score,) = scored
        assert _nb(score) == {**_nb(score), "grade": True, "locked": True, "points": skill.points}
        assert _nb(score)["grade_id"] == nbgrader_course.score_id(skill.id)
        assert [c for c in cells if _nb(c).get("points")] == [score]
        assert len({_nb(c)["grade_id"] for c in cells}) == len(cells)


def test_the_course_carries_the_grader_and_a_manifest_of_each_notebooks_cells(course):
    """grader/: the course autograder with its hidden suites and grading.toml (what scores the
    notebooks), outside source/ (generate_assignment copies source/<assignment>/ to students);
    grader/nbgrader.json names each notebook's skill, module, solution and score cells."""
    grader = course / "grader"
    assert (grader / "autograder" / "__main__.py").is_file() and (grader / "grading.toml").is_file()
    hidden = [suite.file for s in CONFIG.skills.values() for suite in s.suites if suite.visibility == "hidden"]
    assert hidden and all((grader / f).is_file() for f in hidden), hidden
    assert not (grader / "autograder" / "instructor").exists()
    manifest = json.loads((grader / nbgrader_course.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["notebooks"] == {
        sid: {"skill": sid, "module": s.module, "solution": f"{sid}_solution", "score": f"{sid}_score"}
        for sid, s in CONFIG.skills.items()
    }
    for folder in (course / "source").iterdir():
        assert {p.suffix for p in folder.rglob("*") if p.is_file()} == {".ipynb"}, folder


def test_max_scores_are_exact_as_nbgrader_adds_them(course):
    """nbgrader adds the cells' points as floats, cell after cell: each skill's sum is its
    points and the course's is 100, exactly (not 99.99999999999999)."""
    total = 0.0
    for skill in CONFIG.skills.values():
        skill_total = 0.0
        for cell in _cells(course / "source" / ASSIGNMENT / f"{skill.id}.ipynb"):
            if _nb(cell).get("grade"):
                skill_total += float(_nb(cell)["points"])
        assert skill_total == skill.points, skill.id
        total += skill_total
    assert total == CONFIG.total_points == 100


def test_skill_points_that_are_not_binary_fractions_are_refused():
    import dataclasses

    skills = dict(CONFIG.skills)
    skills["sdpa_masks"] = dataclasses.replace(skills["sdpa_masks"], points=10.1)
    with pytest.raises(nbgrader_course.NotebookError, match="sdpa_masks: points 10.1 is not a multiple of 1/1024"):
        nbgrader_course.exact_points(dataclasses.replace(CONFIG, skills=skills))


def test_checks_cells_record_a_failed_check_and_never_raise():
    ns: dict = {}
    exec(compile(nbgrader_course.setup_source(CONFIG), "setup", "exec"), ns)  # our own template
    checks = ns["Checks"]("h")
    with checks:
        raise AssertionError("wrong")
    with checks:
        pass
    assert ns["CHECKS"]["h"] is False
    checks.report()
    assert ns["CHECKS"]["h"] is False


def test_every_skill_has_checks_and_every_check_runs_on_the_reference():
    assert all(TARGETS[sid] for sid in CONFIG.skills)
    for skill in CONFIG.skills.values():
        nbgrader_course.notebook(CONFIG, skill)  # raises NotebookError naming the cell if the reference fails a call


STYLES = sorted(p.name for p in (SUBMISSIONS / "styles").iterdir() if p.is_dir())


def _run_notebook(skill, code: str) -> tuple[dict[str, bool], list[str]]:
    """Run a notebook as nbgrader's kernel runs it — setup, ``code`` in the solution cell,
    then each cell. Returns the checks cells' results (CHECKS) and the problems (errors,
    stderr: nbgrader would show them to the student)."""
    import contextlib
    import io

    ns: dict = {"__name__": "__main__"}
    problems = []
    for cell in nbgrader_course.notebook(CONFIG, skill).cells:
        if cell.cell_type != "code":
            continue
        meta = _nb(cell)
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code if meta.get("solution") else cell.source, meta.get("grade_id", "cell"), "exec"), ns)
        except Exception as exc:  # a failing cell is what we look for
            problems.append(f"{meta.get('grade_id')}: {type(exc).__name__}: {str(exc)[:300]}")
        if stderr.getvalue():
            problems.append(f"{meta.get('grade_id')}: wrote to stderr: {stderr.getvalue()[:300]}")
    return dict(ns.get("CHECKS", {})), problems


@pytest.mark.parametrize("style", STYLES)
def test_correct_code_unlike_the_reference_passes_every_notebook_check(style):
    """Correct code in other styles (tests/submissions/styles: the lessons' own code with its
    registered mask buffers, einsum, loops, float64) passes every check, hidden blocks
    included, and writes nothing to stderr: the student's guide never calls right code wrong."""
    folder = SUBMISSIONS / "styles" / style
    for skill in CONFIG.skills.values():
        module = folder / skill.module
        code = (module if module.is_file() else SOLUTIONS / skill.module).read_text(encoding="utf-8")
        checks, problems = _run_notebook(skill, code)
        assert not problems, f"styles/{style}/{skill.module}: {problems}"
        assert checks == {t.name: True for t in TARGETS[skill.id]}, f"styles/{style}/{skill.module}"


# --------------------------------------------------------------------------- the round trip
def _solution_code(notebooks: Path, target: Path) -> Path:
    """The code of each notebook's solution cell as an exercise module, to grade it with our grader."""
    target.mkdir()
    for notebook in sorted(notebooks.glob("*.ipynb")):
        cell = next(c for c in _cells(notebook) if _nb(c).get("solution"))
        # as nbgrader's score preprocessor writes it: the same bytes, so the same seed
        (target / f"{notebook.stem}.py").write_text(_source(cell).rstrip("\n") + "\n", encoding="utf-8")
    return target


SOFTMAX_RIGHT = (
    "row_max = scores.amax(dim=dim, keepdim=True)  # [...,L,1] for dim=-1\n"
    "    exps = torch.exp(scores - row_max)  # every entry in [0, 1]; −∞ → 0\n"
    "    return exps / exps.sum(dim=dim, keepdim=True)"
)


def _softmax_ignores_dim(folder: Path) -> Path:
    """The reference, but softmax_rows always normalises the last axis: its visible checks
    (default dim) pass, its hidden ones (dim=1) fail."""
    folder.mkdir()
    for module in MODULES.values():
        (folder / module).write_text((SOLUTIONS / module).read_text(encoding="utf-8"), encoding="utf-8")
    source = (SOLUTIONS / "row_softmax.py").read_text(encoding="utf-8")
    assert SOFTMAX_RIGHT in source
    (folder / "row_softmax.py").write_text(
        source.replace(SOFTMAX_RIGHT, SOFTMAX_RIGHT.replace("dim=dim", "dim=-1")), encoding="utf-8"
    )
    return folder


TAMPERED = ("qkv", "checks_scale_scores")


def _tamper(notebook: str, nb) -> None:
    """A student who edits a locked checks cell so that its first check always passes."""
    if notebook == TAMPERED[0]:
        cell = next(c for c in nb.cells if _nb(c).get("grade_id") == TAMPERED[1])
        cell.source = cell.source.replace("assert check(", "assert True or check(", 1)


def _tamper_everywhere(notebook: str, nb) -> None:
    _tamper(notebook, nb)
    _tamper_in_kernel(notebook, nb)


@pytest.fixture(scope="module")
def trip(course, tmp_path_factory):
    """One run of the real nbgrader for the tests below (it is slow: a kernel importing torch
    per notebook and student, 6 notebooks a student): five students, and feedback. One single
    mistake (the issue's example) goes the whole way through real kernels and the feedback
    pages; every other single mistake gets nbgrader's score of the same code next to the
    grader's in test_one_score_a_single_mistake_… (ONE_SCORE_MISTAKES, qkv's divide-by-dk
    among them), whose notebooks the course config's ScoreFromGrader scores as autograde does."""
    work = tmp_path_factory.mktemp("nbgrader")
    skill, mistake = SINGLE_MISTAKES[0]
    mistakes = {f"{skill}-{mistake}": (skill, _variant(skill, mistake, work / "variants"))}
    students = {"reference": SOLUTIONS, "untouched": None, "ignores_dim": _softmax_ignores_dim(work / "ignores_dim")}
    students |= {student: folder for student, (_, folder) in mistakes.items()}
    # the stubs as released, one locked check edited to pass whatever it gets, and the checks gamed in the kernel
    students["tampered"] = None
    trip = round_trip(course, work, students, ASSIGNMENT, feedback=True, edit={"tampered": _tamper_everywhere})
    trip.mistakes = mistakes  # single mistakes: compared with the grader below
    trip.graded = {}  # student → the grader's JSON of their solution cells (the round-trip test fills it)
    print(f"nbgrader round trip (s): {trip.seconds}; scores {trip.scores} of {trip.max_score:g}")
    return trip


# slow: the real nbgrader round trip (generate, autograde every student's notebooks, export,
# feedback) and three gradings of ours; it cannot be made shorter and still be nbgrader's
# (the students' autogrades and our three grades run two at a time: ~225 s, not ~262 s).
# One test for the whole trip, its feedback pages included (_feedback_shows_no_hidden_test):
# CI splits the slow set over runners (make test-slow SPLIT=K/N), and a second test using
# the trip could land in another part, which would build the trip again.
@pytest.mark.slow
def test_nbgrader_round_trip_matches_our_grader_and_its_feedback_shows_no_hidden_test(trip, course, tmp_path):
    # students get the notebooks and nothing else: no grader, no hidden test, no solution
    assert sorted(p.relative_to(trip.release).as_posix() for p in trip.release.rglob("*") if p.is_file()) == sorted(
        f"{s}.ipynb" for s in CONFIG.skills
    )
    for notebook in trip.release.glob("*.ipynb"):
        text = notebook.read_text(encoding="utf-8")
        assert "HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text
        hidden_calls = [c.call for t in TARGETS[notebook.stem] for c in t.hidden]
        assert not [c for c in hidden_calls if c in text]
    total = CONFIG.total_points
    assert trip.max_score == total == 100  # exactly: the cells' points are binary fractions
    assert trip.scores["reference"] == total and trip.scores["untouched"] == 0

    # the course autograder graded each submission once, for all its notebooks
    runs = [line for line in trip.logs["autograde"].splitlines() if "with the course autograder" in line]
    assert len(runs) == len(trip.scores), runs

    # one checksum warning: the tampered cell (put back from the source, so it scores as released);
    # none for the checks cells every honest student submits without their hidden blocks
    changed = [line for line in trip.logs["autograde"].splitlines() if "has changed" in line]
    assert len(changed) == 1 and "'checksum'" in changed[0] and TAMPERED[1] in changed[0], changed
    # the stubs, whatever the kernel was told: 0, as the grader gives the stubs
    assert trip.scores["tampered"] == 0 and set(trip.notebooks["tampered"].values()) == {0.0}, trip.notebooks["tampered"]

    # nbgrader's notebook scores next to `python -m autograder grade` on the solution cells' code:
    # the same, skill by skill, exactly; the total to the grader's 4 decimals
    submitted = trip.release.parents[1] / "submitted"
    rows = []
    students = [*trip.mistakes, "ignores_dim"]
    folders = [_solution_code(submitted / s / ASSIGNMENT, tmp_path / s) for s in students]
    folders.append(_solution_code(trip.release, tmp_path / "ours_untouched"))  # the untouched release, below
    with ThreadPoolExecutor(max_workers=2) as pool:  # independent grades, two at a time
        graded = list(pool.map(lambda folder: grade(folder, seed=None), folders))
    for student, result in zip(students, graded):
        ours = result.data
        trip.graded[student] = ours
        nb = trip.notebooks[student]
        rows.append(f"{student}: nbgrader {nb}, grader {ours['score']:.4f}")
        assert nb == {s["id"]: s["score"] for s in ours["skills"]}, rows[-1]
        assert round(trip.scores[student], 4) == ours["score"] < total, rows[-1]
    for student, (skill, _) in trip.mistakes.items():  # a single mistake costs its own skill only
        nb = trip.notebooks[student]
        assert {s: p for s, p in nb.items() if s != skill} == {s.id: s.points for s in CONFIG.skills.values() if s.id != skill}
        assert nb[skill] < CONFIG.skills[skill].points
    print("single mistakes:", "; ".join(rows))

    # the reference and the untouched release through `python -m autograder grade`, as nbgrader scored them
    ours_zero = graded[-1]
    assert ours_zero.data["score"] == 0
    assert set(MODULES.values()) == {p.name for p in (tmp_path / "ours_untouched").iterdir()}

    _feedback_shows_no_hidden_test(trip, course)


def _html_text(path: Path) -> str:
    """What a browser shows of an HTML file: tags removed, entities decoded (the code in it is
    split into highlighting spans)."""
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def _hidden_lines(notebook: Path) -> set[str]:
    """The lines of the notebook's hidden test blocks that appear nowhere else in it."""
    hidden, shown = set(), set()
    for cell in _cells(notebook):
        inside = False
        for line in _source(cell).split("\n"):
            if nbgrader_course.HIDDEN_BEGIN in line or nbgrader_course.HIDDEN_END in line:
                inside = nbgrader_course.HIDDEN_BEGIN in line
                continue
            (hidden if inside else shown).add(line.strip())
    return {line for line in hidden - shown if len(line) > 3}


def _feedback_shows_no_hidden_test(trip, course):
    """`nbgrader generate_feedback` with the course's nbgrader_config.py: no student's HTML holds
    a line of a hidden test block (the calls, inputs, expected values) or a hidden check's
    message; a failed hidden check is one fixed sentence, a failed visible check keeps its
    message."""
    feedback = trip.feedback
    assert feedback is not None
    pages = sorted(feedback.glob(f"*/{ASSIGNMENT}/*.html"))
    assert len(pages) == len(trip.scores) * len(CONFIG.skills), pages
    for page in pages:
        text = _html_text(page)
        assert "HIDDEN TESTS" not in text, page
        source = course / "source" / ASSIGNMENT / f"{page.stem}.ipynb"
        shown_lines = {line.strip() for line in text.split("\n")}
        leaked = [line for line in _hidden_lines(source) if line in shown_lines or (len(line) > 40 and line in text)]
        assert not leaked, (page, leaked[:3])
        visible_calls = {c.call for t in TARGETS[page.stem] for c in t.visible}
        hidden_calls = {c.call for t in TARGETS[page.stem] for c in t.hidden} - visible_calls
        assert not [c for c in hidden_calls if c in text], page
    ignores = _html_text(feedback / "ignores_dim" / ASSIGNMENT / "row_softmax.html")
    # the checks cells (above the score cell's report, whose visible tests may show their own
    # mismatches): not what the failed hidden check checked ("first mismatch at index [...]: expected ...")
    assert "Course autograder: row_softmax scored" in ignores
    assert "first mismatch at index [" not in ignores.split("Course autograder:")[0]
    assert trip.scores["ignores_dim"] < trip.scores["reference"]
    untouched = _html_text(feedback / "untouched" / ASSIGNMENT / "qkv.html")
    assert "A hidden check failed" not in untouched  # a failed visible check is not called a hidden one
    # what the visible checks found, in every checks cell (each has a hidden block)
    for target in TARGETS["qkv"]:
        assert f"{target.name}: 1 of 1 visible checks failed" in untouched, target.name
    assert "NotImplementedError" in untouched and "hidden checks failed" not in untouched

    # the score cell: the course autograder's report of the skill's visible tests — the hint for a
    # mistake, and no hidden test's name (wrapped names included: compared without spaces or boxes)
    hidden = {n for s in CONFIG.skills.values() for suite in s.suites if suite.visibility == "hidden" for n in suite.weights}
    assert hidden
    for page in pages:
        text = _html_text(page)
        assert f"Course autograder: {page.stem} scored" in text, page
        assert not [n for n in hidden if _squashed(n) in _squashed(text)], page
    for student, (skill, _) in trip.mistakes.items():
        text = _squashed(_html_text(feedback / student / ASSIGNMENT / f"{skill}.html"))
        assert _squashed(_hint_text(skill, student.removeprefix(f"{skill}-"))[:80]) in text, student


def _squashed(text: str) -> str:
    """Text without spaces, line breaks or the report's box drawing (the report wraps at 80 columns)."""
    import re

    return re.sub(r"[\s│╭╮╰╯─]+", "", text)


def _hint_text(skill: str, mistake: str) -> str:
    """The hint the grader shows for a single mistake (tests/submissions/mistakes/<skill>.toml names it)."""
    import sys
    import tomllib

    if str(SUBMISSIONS) not in sys.path:
        sys.path.insert(0, str(SUBMISSIONS))
    import variants

    hint = next(m for m in variants.mistakes(skill) if m["id"] == mistake)["hint"]
    prefix, key = hint.split("/", 1)
    return tomllib.loads((CONFIG.suites_dir / prefix / "hints.toml").read_text(encoding="utf-8"))[key]["text"]


def _course_config(course: Path) -> tuple[object, dict]:
    """The course's nbgrader_config.py as nbgrader loads it: its traitlets Config and namespace."""
    return nbgrader_headless.course_config(course)


def _checks_cell(course: Path, skill: str, target: str):
    """A checks cell of the course's source notebook (hidden block included), as nbformat reads it."""
    nb = nbformat.read(course / "source" / ASSIGNMENT / f"{skill}.ipynb", as_version=4)
    return next(c for c in nb.cells if _nb(c).get("grade_id") == f"checks_{nbgrader_course.snake(target)}")


def test_feedback_shows_the_visible_checks_failures_and_not_what_the_hidden_checks_printed(course):
    """A checks cell with a hidden block, run on a scale_scores that divides by d_k and prints its
    input's shape (a student's debug print): the feedback preprocessor of the course config keeps
    the visible check's failure and what the visible check's call printed, and drops what the
    hidden checks' calls printed (their inputs' shapes) and their results."""
    import contextlib
    import io

    import torch

    cell = _checks_cell(course, "qkv", "scale_scores")
    assert nbgrader_course.HIDDEN_BEGIN in cell.source
    ns: dict = {"__name__": "__main__"}
    exec(compile(nbgrader_course.setup_source(CONFIG), "setup", "exec"), ns)  # our own template
    exec(  # the student's code: one mistake, and a print of what each call got
        "def scale_scores(scores, d_k):\n    print('scale_scores got', tuple(scores.shape))\n    return scores / d_k\n",
        ns,
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(cell.source, "checks", "exec"), ns)  # the notebook's own cell
    assert ns["CHECKS"]["scale_scores"] is False
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed.getvalue())]
    _, namespace = _course_config(course)
    cell, _ = namespace["HiddenTestOutputs"]().preprocess_cell(cell, {}, 0)
    shown = "".join(o.get("text", "") for o in cell.outputs)
    assert "scale_scores: 1 of 1 visible checks failed" in shown, shown
    assert "first mismatch at index [0, 0, 0]" in shown and "scale_scores got (2, 2, 2)" in shown, shown
    hidden_shapes = [tuple(torch.Size(s)) for s in ((2, 4, 5), (3, 3))]
    assert not [s for s in hidden_shapes if f"scale_scores got {s}" in shown], shown
    assert "hidden checks failed" not in shown and shown.rstrip().endswith(ns["VISIBLE_END"]), shown
    assert ns["VISIBLE_END"] == namespace["VISIBLE_END"]  # one line, written by the setup cell, read by the config


def test_feedback_shows_nothing_a_checks_cell_printed_when_its_visible_end_line_is_missing(course):
    """A cell cut short before `checks.report_visible()` (a timeout) or whose printing was
    replaced: nothing it printed is shown, since none of it is known to precede the hidden checks."""
    cell = _checks_cell(course, "qkv", "scale_scores")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="scale_scores got (2, 4, 5)\n")]
    _, namespace = _course_config(course)
    cell, _ = namespace["HiddenTestOutputs"]().preprocess_cell(cell, {}, 0)
    assert cell.outputs == []


class _Log(logging.Handler):
    """The warnings an nbgrader step logs."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.warnings: list[str] = []

    def emit(self, record):
        self.warnings.append(record.getMessage())


def _overwrite_cells(course: Path, source_cell):
    """The course config's OverwriteCells step of `nbgrader autograde`, with a gradebook that
    holds ``source_cell`` (checksum as generate_assignment stores it)."""
    from types import SimpleNamespace

    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import OverwriteCells
    from nbgrader.utils import compute_checksum

    config, _ = _course_config(course)
    steps = config.Autograde.get("sanitize_preprocessors", Autograde.class_traits()["sanitize_preprocessors"].default())
    (step,) = [p for p in steps if isinstance(p, type) and issubclass(p, OverwriteCells)]
    meta = _nb(source_cell)
    stored = SimpleNamespace(
        name=meta["grade_id"],
        source=source_cell.source,
        cell_type="code",
        locked=True,
        checksum=compute_checksum(source_cell),
    )
    gradebook = SimpleNamespace(
        find_source_cell=lambda *a: stored, find_graded_cell=lambda *a: SimpleNamespace(max_score=meta["points"])
    )
    pre = step(config=config)
    pre.notebook_id, pre.assignment_id, pre.gradebook = "qkv", ASSIGNMENT, gradebook
    pre.log = logging.getLogger(f"test-overwrite-cells-{id(pre)}")
    pre.log.propagate = False
    pre.warnings = _Log()
    pre.log.addHandler(pre.warnings)
    return pre


def test_autograde_warns_about_a_changed_locked_cell_and_never_about_the_released_copy(course):
    """The student's copy of a checks cell lacks the hidden block (generate_assignment removed it):
    autograde puts the source back without a warning. A check the student edited still warns
    ("checksum … has changed") and is put back."""
    from nbgrader.preprocessors import ClearHiddenTests

    source = _checks_cell(course, "qkv", "scale_scores")
    released = nbformat.from_dict(json.loads(json.dumps(source)))
    clear = ClearHiddenTests()
    clear._remove_hidden_test_region(released)  # what generate_assignment hands out
    assert released.source != source.source and nbgrader_course.HIDDEN_BEGIN not in released.source

    pre = _overwrite_cells(course, source)
    cell, _ = pre.preprocess_cell(nbformat.from_dict(json.loads(json.dumps(released))), {}, 0)
    assert pre.warnings.warnings == [] and cell.source == source.source

    tampered = nbformat.from_dict(json.loads(json.dumps(released)))
    tampered.source = tampered.source.replace("assert check(", "assert True or check(", 1)
    assert tampered.source != released.source
    pre = _overwrite_cells(course, source)
    cell, _ = pre.preprocess_cell(tampered, {}, 0)
    assert len(pre.warnings.warnings) == 1 and "checksum" in pre.warnings.warnings[0], pre.warnings.warnings
    assert cell.source == source.source


# --------------------------------------------------------------------------- course state survives releases
def test_course_state_files_survive_a_re_release_and_dist_with_state_is_never_replaced(course, tmp_path):
    """What the slow test below proves with real nbgrader, with stand-in state files (no nbgrader
    process): updating the live course from a new release replaces source/ and keeps the
    gradebook and submissions byte for byte; a release refuses a dist/ whose nbgrader/ holds state."""
    import shutil

    from autograder.instructor.release import build, course_dir

    live = tmp_path / "attention-course"
    said = course_dir.update(course, live)
    assert "created source/" + ASSIGNMENT in said and (live / "gradebook.db").exists() is False
    # the release's grader, which scores the notebooks, comes along and is replaced on update
    assert "created grader/" in said and (live / "grader" / "grading.toml").is_file()
    (live / "grader" / "stale.py").write_text("left from an older release")
    (live / "gradebook.db").write_bytes(b"SQLite format 3\0stand-in")
    (live / "submitted" / "s001" / ASSIGNMENT).mkdir(parents=True)
    (live / "submitted" / "s001" / ASSIGNMENT / "qkv.ipynb").write_text("{}", encoding="utf-8")
    source = course / "source" / ASSIGNMENT / "qkv.ipynb"
    original = source.read_text()
    try:
        source.write_text(original + " ")
        said = course_dir.update(course, live)  # a re-release (a typo fix)
    finally:
        source.write_text(original)  # the module's course is shared with the other tests
    assert f"updated source/{ASSIGNMENT}" in said and any("gradebook.db" in line and "submitted" in line for line in said)
    assert (live / "source" / ASSIGNMENT / "qkv.ipynb").read_text() == original + " "
    assert (live / "gradebook.db").read_bytes() == b"SQLite format 3\0stand-in"
    assert "updated grader/" in said and not (live / "grader" / "stale.py").exists()
    assert (live / "submitted" / "s001" / ASSIGNMENT / "qkv.ipynb").read_text() == "{}"

    dist = tmp_path / "dist"
    shutil.copytree(course.parent, dist)
    (dist / "MANIFEST.json").write_text("{}")
    shutil.copy(live / "gradebook.db", dist / "nbgrader" / "gradebook.db")  # someone ran the course inside dist/
    with pytest.raises(build.ReleaseError, match="holds a running nbgrader course .*gradebook.db.*make nbgrader-course"):
        build._check_out(dist, ROOT)
    assert (dist / "nbgrader" / "gradebook.db").exists()


@pytest.mark.slow  # real nbgrader twice (its database through alembic: seconds each); the fast set uses stand-in state above
def test_course_state_survives_a_re_release_and_dist_with_state_is_never_replaced(course, tmp_path):
    """The live course sits outside dist/ (`make nbgrader-course DIR=…`): updating it from a new
    release replaces source/ and the config, never the gradebook or submissions; and a release
    refuses to replace a dist/ whose nbgrader/ holds course state (real nbgrader, its own DB)."""
    import shutil
    import subprocess
    import sys

    from autograder.instructor.release import build, course_dir

    live = tmp_path / "attention-course"
    said = course_dir.update(course, live)
    assert "created source/" + ASSIGNMENT in said and (live / "gradebook.db").exists() is False
    import os

    nbgrader = [sys.executable, "-m", "nbgrader"]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }  # nbgrader runs `alembic`
    run = subprocess.run(
        [*nbgrader, "db", "student", "add", "s001", "--first-name=Ana"],
        cwd=live,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    (live / "submitted" / "s001" / ASSIGNMENT).mkdir(parents=True)
    (live / "submitted" / "s001" / ASSIGNMENT / "qkv.ipynb").write_text("{}", encoding="utf-8")
    (course / "source" / ASSIGNMENT / "qkv.ipynb").write_text((course / "source" / ASSIGNMENT / "qkv.ipynb").read_text() + " ")
    said = course_dir.update(course, live)  # a re-release (a typo fix)
    assert f"updated source/{ASSIGNMENT}" in said and any("gradebook.db" in line and "submitted" in line for line in said)
    listed = subprocess.run([*nbgrader, "db", "student", "list"], cwd=live, capture_output=True, text=True, timeout=120, env=env)
    assert "s001" in listed.stdout + listed.stderr  # the gradebook kept its student
    assert (live / "submitted" / "s001" / ASSIGNMENT / "qkv.ipynb").read_text() == "{}"

    dist = tmp_path / "dist"
    shutil.copytree(course.parent, dist)
    (dist / "MANIFEST.json").write_text("{}")
    shutil.copy(live / "gradebook.db", dist / "nbgrader" / "gradebook.db")  # someone ran the course inside dist/
    with pytest.raises(build.ReleaseError, match="holds a running nbgrader course .*gradebook.db.*make nbgrader-course"):
        build._check_out(dist, ROOT)
    assert (dist / "nbgrader" / "gradebook.db").exists()


# --------------------------------------------------------------------------- single mistakes: the same points
#: (skill, variant id in tests/submissions/mistakes/<skill>.toml): one mistake each, that breaks its function for every kind
SINGLE_MISTAKES = [
    ("masks", "polarity-inverted"),  # apply_mask: the example (nbgrader 97.43 vs the grader's 96.04 before)
    ("masks", "zero-fill"),  # masked_softmax
    ("masks", "mask-after-softmax"),  # masked_softmax
    ("qkv", "divide-by-dk"),  # scale_scores
]
#: a spread of single mistakes, one or more per skill — among them mistakes that break only some
#: of a function's kinds (only float32, an input changed in place, a dtype): the kernel's checks
#: scored those differently from the grader; the course autograder's score cannot differ
ONE_SCORE_MISTAKES = SINGLE_MISTAKES + [
    ("row_softmax", "ce-divided-by-numel"),  # cross_entropy
    ("row_softmax", "softmax-shifts-in-place"),  # an input changed in place
    ("custom_backward", "forward-without-scale"),  # AttentionFunction
    ("mha_reshape", "merge-heads-reversed"),  # merge_heads
    ("sdpa_masks", "hf-masks-queries"),  # hf_to_sdpa_mask
    ("sdpa_masks", "additive-ignores-dtype"),  # a dtype
    ("masks", "apply-mask-in-place"),  # an input changed in place
    ("qkv", "uniform-mean-counts-float64"),  # a dtype
]


def _variant(skill: str, mistake: str, root: Path) -> Path:
    import sys

    if str(SUBMISSIONS) not in sys.path:
        sys.path.insert(0, str(SUBMISSIONS))
    import variants

    entry = next(m for m in variants.mistakes(skill) if m["id"] == mistake)
    return variants.build(root / f"{skill}-{mistake}", [entry])


def _grader_skill(folder: Path, skill: str) -> dict:
    ours = grade(folder, "--skill", skill, "--reveal-hidden")
    return next(s for s in ours.data["skills"] if s["id"] == skill)


def _stubs(folder: Path) -> Path:
    """The untouched exercise modules (every function raises NotImplementedError)."""
    folder.mkdir()
    for module in MODULES.values():
        (folder / module).write_text((ROOT / "exercises" / module).read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def _submitted(course: Path, root: Path, student: str, modules: Path | None, edit=None) -> Path:
    return nbgrader_headless.submit(course, root, student, modules, ASSIGNMENT, edit)


def _autograde_scores(course: Path, submitted: Path, calls: list | None = None) -> tuple[dict[str, float], dict]:
    return nbgrader_headless.autograde_in_process(course, submitted, calls)


def _one_score(course: Path, folder: Path | None, tmp: Path, ours: dict) -> list[str]:
    """The differences between nbgrader's notebook scores for the code in ``folder`` and the
    grader's skill scores (its JSON ``ours``), skill by skill, exactly, and in total to the
    grader's 4 decimals (nbgrader's total is its float sum of the notebooks')."""
    calls: list = []
    scores, _ = _autograde_scores(course, _submitted(course, tmp, "student", folder), calls)
    assert len(calls) == 1, f"graded {len(calls)} times: once per submission, for all its notebooks"
    graded = {s["id"]: s["score"] for s in ours["skills"]}
    problems = [
        f"{sid}: nbgrader {scores.get(sid)!r}, grader {graded[sid]!r}" for sid in graded if scores.get(sid) != graded[sid]
    ]
    if round(sum(scores.values()), 4) != ours["score"]:
        problems.append(f"total: nbgrader {sum(scores.values())!r}, grader {ours['score']!r}")
    return problems


def _exported(course: Path, folder: Path | None, tmp: Path) -> Path:
    """The exercise modules nbgrader's score preprocessor takes from a submission of ``folder``."""
    config, ns = _course_config(course)
    submitted = _submitted(course, tmp / "export", "student", folder)
    modules = ns["exercise_modules"](str(submitted), ns["grader_manifest"]())
    out = tmp / "exported"
    out.mkdir()
    for stem, text in modules.items():
        (out / CONFIG.skills[stem].module).write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    return out


# slow: two grading runs per submission (the stubs and the reference: every skill)
@pytest.mark.slow
@pytest.mark.parametrize("submission", ["reference", "stubs"])
def test_one_score_nbgrader_scores_each_notebook_what_the_grader_scores_its_skill_for_the_reference_and_the_stubs(
    submission, course, tmp_path
):
    """`python -m autograder grade` on the reference (full marks) and on the untouched stubs (0),
    next to nbgrader's autograde of the same code in notebooks: the same score, skill by skill."""
    folder = SOLUTIONS if submission == "reference" else None
    ours = grade(_exported(course, folder, tmp_path), seed=None).data
    problems = _one_score(course, folder, tmp_path, ours)
    assert not problems, "\n".join(problems)
    assert ours["score"] == (CONFIG.total_points if submission == "reference" else 0)


@pytest.mark.slow  # two grading runs per variant
@pytest.mark.parametrize(("skill", "mistake"), ONE_SCORE_MISTAKES, ids=[f"{s}-{m}" for s, m in ONE_SCORE_MISTAKES])
def test_one_score_a_single_mistake_costs_the_same_points_in_nbgrader_as_in_the_grader(skill, mistake, course, tmp_path):
    """nbgrader's autograde of a notebook submission next to `python -m autograder grade` on the
    same code (one mistake in one function): every skill's score is the same, exactly, and the
    total to the grader's 4 decimals; the other skills keep full marks."""
    folder = _variant(skill, mistake, tmp_path / "variant")
    ours = grade(folder, seed=None).data
    problems = _one_score(course, folder, tmp_path, ours)
    graded = next(s for s in ours["skills"] if s["id"] == skill)
    print(f"{skill} {mistake}: grader {graded['score']:g} of {graded['points']:g}")
    assert graded["score"] < CONFIG.skills[skill].points
    assert not problems, "\n".join(problems)


#: what a student who games the checks puts in a notebook: every check helper, the old point
#: cells' credit() and the score cell's summary() answer "passed" or the most points, the
#: checks' record says every function passed, and the cell stops before anything can fail
KERNEL_TAMPERING = """

check = lambda *args, **kwargs: True
credit = lambda points, *args, **kwargs: points
summary = lambda *args, **kwargs: 1.0
Checks.report = lambda self: CHECKS.__setitem__(self.name, True)
raise SystemExit("stop here")
"""


def _tamper_in_kernel(notebook: str, nb) -> None:
    """A student who leaves the stubs as they are and tampers with the checks in their kernel."""
    cell = next(c for c in nb.cells if _nb(c).get("solution"))
    cell.source += KERNEL_TAMPERING


def test_a_student_who_tampers_with_the_checks_in_their_kernel_scores_what_the_grader_gives_their_code(course, tmp_path):
    """Tampering in the kernel (check helpers redefined, the record of passed checks forged,
    SystemExit) gains nothing: the score cell's output, whatever the kernel wrote there, is
    replaced by the course autograder's score of the code — the stubs: 0 — and its report."""
    submitted = _submitted(course, tmp_path, "tamperer", None, edit=_tamper_in_kernel)
    # the notebooks as the kernel left them: every score cell claims its full points
    for path in submitted.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if _nb(cell).get("points"):
                cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(_nb(cell)["points"]))})]
        nbformat.write(nb, path)
    scores, notebooks = _autograde_scores(course, submitted)
    assert scores == {sid: 0.0 for sid in CONFIG.skills}, scores
    report = "".join(o.get("text", "") for o in notebooks["qkv"].cells[-1].outputs)
    assert "Course autograder: qkv scored 0 / 20" in report, report


def test_a_class_autograde_forks_every_grade_after_the_first_from_one_warm_server_and_stop_all_ends_it(course, monkeypatch):
    """nbgrader grades a class one submission after another, and ScoreFromGrader runs the
    course autograder once each: the first grade leaves a warm server (AUTOGRADER_WARM=1 unless
    nbgrader's environment says otherwise), so the next submissions' runs are forked from it
    instead of importing torch again; ``warm.stop_all`` ends it, leaving nothing behind."""
    import tempfile

    from autograder.runner.process import warm

    if not warm.allowed(CONFIG):
        pytest.skip("no warm server on this machine (the sandbox's full tier is needed: sandbox/seccomp.py)")
    folder = Path(tempfile.mkdtemp(prefix="aw-"))  # a socket's path must fit in ~100 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.delenv("AUTOGRADER_WARM", raising=False)
    config, ns = _course_config(course)
    manifest = ns["grader_manifest"]()
    modules = {"qkv": (SOLUTIONS / MODULES["qkv"]).read_text(encoding="utf-8")}
    log = logging.getLogger("test")

    def logs() -> list[str]:
        return [p.read_text(encoding="utf-8") for p in folder.rglob("*.log")]

    try:
        for _ in range(2):  # two students
            assert ns["grade_modules"](modules, manifest, 300, log)["qkv"][0] == CONFIG.skills["qkv"].points
            deadline = time.monotonic() + 60  # the first grade starts the server as it leaves: it preloads
            while not any("listening" in text for text in logs()) and time.monotonic() < deadline:
                time.sleep(0.1)
        assert len(logs()) == 1, "one server for the class"
        assert logs()[0].count("run forked") == 1, logs()[0]  # the second student's
    finally:
        stopped = warm.stop_all()
        shutil.rmtree(folder, ignore_errors=True)
    assert len(stopped) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(stopped[0], 0)


def _break_two_notebooks(notebook: str, nb) -> None:
    """qkv's solution cell does not parse; masks' solution cell is deleted."""
    if notebook == "qkv":
        next(c for c in nb.cells if _nb(c).get("solution")).source = "def scale_scores(scores, d_k:\n    return scores\n"
    if notebook == "masks":
        nb.cells = [c for c in nb.cells if not _nb(c).get("solution")]


@pytest.mark.slow  # one grading run (every skill)
def test_a_solution_cell_that_does_not_parse_or_is_gone_scores_0_in_its_skill_only_with_the_graders_message(course, tmp_path):
    submitted = _submitted(course, tmp_path, "careless", SOLUTIONS, edit=_break_two_notebooks)
    scores, notebooks = _autograde_scores(course, submitted)
    assert scores == {s.id: (0.0 if s.id in ("qkv", "masks") else s.points) for s in CONFIG.skills.values()}, scores
    qkv = "".join(o.get("text", "") for o in notebooks["qkv"].cells[-1].outputs)
    masks = "".join(o.get("text", "") for o in notebooks["masks"].cells[-1].outputs)
    assert "qkv.py, line 1" in qkv and "SyntaxError" in qkv and str(tmp_path) not in qkv and "/tmp/" not in qkv, qkv
    assert "No solution cell (id masks_solution) in masks.ipynb" in masks, masks


def test_a_submission_the_grader_cannot_finish_scores_0_with_a_message_and_autograde_goes_on(course, tmp_path):
    """The grader out of time (or gone): every notebook scores 0, its score cell says why, and
    nothing is raised — nbgrader goes on with the next student."""
    config, ns = _course_config(course)
    manifest = ns["grader_manifest"]()
    graded = ns["grade_modules"]({"qkv": "x = 1\n", "masks": None}, manifest, 0.001, logging.getLogger("test"))
    assert {stem: score for stem, (score, _) in graded.items()} == {"qkv": 0.0, "masks": 0.0}
    assert all("could not be graded" in text and "within" in text for _, text in graded.values())


# --------------------------------------------------------------------------- course content beside the suites
def test_the_framework_holds_no_nbgrader_course_content():
    """Each skill's checks and lesson quotes live beside its suites
    (tests/suites/<skill>/nbgrader.toml), the names they share in
    tests/suites/nbgrader_setup.py: no check call, lesson passage or line of those names is
    written anywhere in autograder/."""
    framework = ROOT / "autograder"
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(framework.rglob("*.py")))
    content = []
    for sid in CONFIG.skills:
        checks = nbgrader_checks.load(CONFIG, sid)
        content += [c.call for t in checks.targets for c in (*t.visible, *t.hidden)] + [q for _, q in checks.lesson]
    content += [line for line in (CONFIG.suites_dir / "nbgrader_setup.py").read_text(encoding="utf-8").splitlines() if line]
    assert len(content) > 100
    assert not [c for c in content if c in text]


def test_nbgrader_checks_are_read_from_the_suites_folder_and_a_bad_file_is_named(tmp_path):
    """The framework finds a skill's checks through grading.toml's suites folder; a missing
    file, or a wrong key, is an error that names the file, the key and the fix."""
    import dataclasses
    import shutil

    suites = tmp_path / "suites"
    shutil.copytree(CONFIG.suites_dir / "qkv", suites / "qkv", ignore=shutil.ignore_patterns("snapshots", "__pycache__"))
    config = dataclasses.replace(CONFIG, suites_dir=suites)
    path = suites / "qkv" / "nbgrader.toml"
    path.write_text(path.read_text(encoding="utf-8").replace('cite = "Week 7 §8"', 'cite = "Week 7 §8 (moved)"'), "utf-8")
    assert [t.cite for t in nbgrader_checks.load(config, "qkv").targets if t.name == "scale_scores"] == ["Week 7 §8 (moved)"]

    path.write_text(path.read_text(encoding="utf-8").replace('call = "scale_scores(', 'cal = "scale_scores(', 1), "utf-8")
    with pytest.raises(nbgrader_checks.NotebookError, match=r"qkv/nbgrader.toml: target\[2\]\.visible\[0\]: needs call"):
        nbgrader_checks.load(config, "qkv")
    path.unlink()
    with pytest.raises(nbgrader_checks.NotebookError, match=r"skill qkv: no nbgrader checks — write .*qkv/nbgrader.toml"):
        nbgrader_course.notebook(config, config.skills["qkv"])


def test_each_assignment_is_an_nbgrader_assignment_with_its_skills_and_points(course):
    """[release.assignments]: besides the whole course, source/<assignment>/ holds exactly that
    assignment's notebooks, so generating it hands out those skills for their points."""
    assert CONFIG.assignments
    for name, skills in CONFIG.assignments.items():
        folder = course / "source" / name
        assert sorted(p.stem for p in folder.glob("*.ipynb")) == sorted(skills), name
        points = sum(_nb(c)["points"] for sid in skills for c in _cells(folder / f"{sid}.ipynb") if _nb(c).get("grade"))
        assert points == sum(CONFIG.skills[s].points for s in skills), name


def test_the_course_readme_sends_nbgrader_to_a_course_folder_of_its_own_never_into_dist(course):
    """dist/nbgrader is replaced by the next release: its README says to run nbgrader in the
    folder `make nbgrader-course DIR=…` keeps (state kept), never `cd dist/nbgrader`."""
    text = (course / "README.md").read_text(encoding="utf-8")
    assert "cd dist/nbgrader" not in text
    assert "make nbgrader-course DIR=../attention-course" in text and "cd ../attention-course" in text
