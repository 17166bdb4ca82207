"""dist/nbgrader, proven with the real nbgrader run headless (commands and gotchas:
nbgrader-headless.md): generate the student version, autograde notebooks filled with the
reference solutions (full points) and the untouched release (0 points), export the grades,
and compare them with what `python -m autograder grade` gives the same code."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from autograder.config import load
from autograder.release import ReleaseContext
from autograder.runner.grade import suite_hash
from conftest import MODULES, ROOT, SOLUTIONS, SUBMISSIONS, grade

nbformat = pytest.importorskip("nbformat", reason="instructor requirements (requirements-instructor.txt) are not installed")
nbgrader_course = pytest.importorskip("autograder.release.nbgrader_course")

CONFIG = load(ROOT / "grading.toml")
ASSIGNMENT = CONFIG.nbgrader_release.assignment


@pytest.fixture(autouse=True)
def _torch_print_options_kept():
    """The notebooks' setup cell, run here in-process, sets torch's print options: put them
    back, so that a sandbox forked later by this test process starts from the usual ones."""
    import torch

    kept = torch._tensor_str.get_printoptions()
    yield
    torch.set_printoptions(**kept)


def _build(out: Path) -> Path:
    ctx = ReleaseContext(repo=ROOT, config=CONFIG, out=out, version="1.2.3", commit="0123456789abcdef", suite_hash=suite_hash(CONFIG))
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


def test_one_notebook_per_skill_with_lesson_setup_solution_and_test_cells(course):
    for skill in CONFIG.skills.values():
        cells = _cells(course / "source" / ASSIGNMENT / f"{skill.id}.ipynb")
        lesson, setup, solution, *tests = cells
        assert lesson["cell_type"] == "markdown" and "§" in _source(lesson) and skill.title in _source(lesson)
        assert _nb(setup)["locked"] and 'warnings.filterwarnings("ignore")' in _source(setup)
        assert _nb(solution)["solution"] and _source(solution) == (SOLUTIONS / skill.module).read_text(encoding="utf-8").rstrip("\n")
        assert tests and all(_nb(t)["grade"] and _nb(t)["locked"] and _nb(t)["schema_version"] == 3 for t in tests)
        assert sum(_nb(t)["points"] for t in tests) == pytest.approx(skill.points), skill.id
        for test in tests:
            source = _source(test)
            assert isinstance(ast.parse(source).body[-1], ast.Assert), _nb(test)["grade_id"]
            assert source.count("### BEGIN HIDDEN TESTS") == 1 and source.count("### END HIDDEN TESTS") == 1
        assert len({_nb(c)["grade_id"] for c in cells}) == len(cells)


def test_cell_points_follow_grading_toml_weights():
    skill = CONFIG.skills["mha_reshape"]
    points = nbgrader_course.cell_points(skill, nbgrader_course.TARGETS["mha_reshape"])
    assert sum(points.values()) == pytest.approx(skill.points)
    # "test_merge_heads_..._split_heads" belongs to merge_heads, the function it names first
    assert points["merge_heads"] > points["score_elements"]
    assert points["MultiHeadAttention"] == max(points.values())


def test_every_skill_has_checks_and_every_check_runs_on_the_reference():
    assert set(nbgrader_course.TARGETS) == set(CONFIG.skills)
    for skill in CONFIG.skills.values():
        nbgrader_course.notebook(CONFIG, skill)  # raises NotebookError naming the cell if the reference fails a call


STYLES = sorted(p.name for p in (SUBMISSIONS / "styles").iterdir() if p.is_dir())


@pytest.mark.parametrize("style", STYLES)
def test_correct_code_unlike_the_reference_passes_every_notebook_check(style):
    """Correct code in other styles (tests/submissions/styles: the lessons' own code with its
    registered mask buffers, einsum, loops, float64) passes every test cell, hidden blocks
    included, run as nbgrader's kernel runs the notebook — setup, the student's module, then
    each test cell — and writes nothing to stderr (nbgrader scores such a cell 0)."""
    import contextlib
    import io

    folder = SUBMISSIONS / "styles" / style
    for skill in CONFIG.skills.values():
        module = folder / skill.module
        code = (module if module.is_file() else SOLUTIONS / skill.module).read_text(encoding="utf-8")
        ns: dict = {"__name__": "__main__"}
        failed = []
        for cell in nbgrader_course.notebook(CONFIG, skill).cells:
            if cell.cell_type != "code":
                continue
            meta = _nb(cell)
            stderr = io.StringIO()
            try:
                with contextlib.redirect_stderr(stderr):
                    exec(compile(code if meta.get("solution") else cell.source, meta.get("grade_id", "cell"), "exec"), ns)  # noqa: S102
            except Exception as exc:  # noqa: BLE001 - a failed test cell is what we look for
                failed.append(f"{meta.get('grade_id')}: {type(exc).__name__}: {str(exc)[:300]}")
            if stderr.getvalue():
                failed.append(f"{meta.get('grade_id')}: wrote to stderr: {stderr.getvalue()[:300]}")
        assert not failed, f"styles/{style}/{skill.module}: {failed}"


# --------------------------------------------------------------------------- the round trip
def _solution_code(notebooks: Path, target: Path) -> Path:
    """The code of each notebook's solution cell as an exercise module, to grade it with our grader."""
    target.mkdir()
    for notebook in sorted(notebooks.glob("*.ipynb")):
        cell = next(c for c in _cells(notebook) if _nb(c).get("solution"))
        (target / f"{notebook.stem}.py").write_text(_source(cell), encoding="utf-8")
    return target


SOFTMAX_RIGHT = ("row_max = scores.amax(dim=dim, keepdim=True)  # [...,L,1] for dim=-1\n"
                 "    exps = torch.exp(scores - row_max)  # every entry in [0, 1]; −∞ → 0\n"
                 "    return exps / exps.sum(dim=dim, keepdim=True)")


def _softmax_ignores_dim(folder: Path) -> Path:
    """The reference, but softmax_rows always normalises the last axis: its visible checks
    (default dim) pass, its hidden ones (dim=1) fail."""
    folder.mkdir()
    for module in MODULES.values():
        (folder / module).write_text((SOLUTIONS / module).read_text(encoding="utf-8"), encoding="utf-8")
    source = (SOLUTIONS / "row_softmax.py").read_text(encoding="utf-8")
    assert SOFTMAX_RIGHT in source
    (folder / "row_softmax.py").write_text(source.replace(SOFTMAX_RIGHT, SOFTMAX_RIGHT.replace("dim=dim", "dim=-1")), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def trip(course, tmp_path_factory):
    """One run of the real nbgrader for the tests below (it is slow): three students, and feedback."""
    work = tmp_path_factory.mktemp("nbgrader")
    students = {"reference": SOLUTIONS, "untouched": None, "ignores_dim": _softmax_ignores_dim(work / "ignores_dim")}
    trip = nbgrader_course.round_trip(course, work, students, ASSIGNMENT, feedback=True)
    print(f"nbgrader round trip (s): {trip.seconds}; scores {trip.scores} of {trip.max_score:g}")
    return trip


def test_nbgrader_round_trip_matches_our_grader(trip, tmp_path):
    assert sorted(p.name for p in trip.release.glob("*.ipynb")) == sorted(f"{s}.ipynb" for s in CONFIG.skills)
    for notebook in trip.release.glob("*.ipynb"):
        text = notebook.read_text(encoding="utf-8")
        assert "HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text
        hidden_calls = [c.call for t in nbgrader_course.TARGETS[notebook.stem] for c in t.hidden]
        assert not [c for c in hidden_calls if c in text]
    total = CONFIG.total_points
    assert trip.max_score == pytest.approx(total)
    assert trip.scores["reference"] == pytest.approx(total) and trip.scores["untouched"] == 0

    # the same code through `python -m autograder grade` (visible + hidden suites)
    submitted = trip.release.parents[1] / "submitted"
    ours_full = grade(_solution_code(submitted / "reference" / ASSIGNMENT, tmp_path / "ours_reference"))
    ours_zero = grade(_solution_code(trip.release, tmp_path / "ours_untouched"))
    print(f"python -m autograder grade: reference {ours_full.data['score']:g}, untouched release {ours_zero.data['score']:g}")
    assert ours_full.data["score"] == ours_full.data["max_score"] == pytest.approx(total)
    assert ours_zero.data["score"] == 0
    assert set(MODULES.values()) == {p.name for p in (tmp_path / "ours_untouched").iterdir()}


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


def test_nbgrader_feedback_shows_no_hidden_test(trip, course):
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
        visible_calls = {c.call for t in nbgrader_course.TARGETS[page.stem] for c in t.visible}
        hidden_calls = {c.call for t in nbgrader_course.TARGETS[page.stem] for c in t.hidden} - visible_calls
        assert not [c for c in hidden_calls if c in text], page
    ignores = _html_text(feedback / "ignores_dim" / ASSIGNMENT / "row_softmax.html")
    # the hidden check that failed, not what it checked ("first mismatch at index [...]: expected ...")
    assert "A hidden check failed" in ignores and "first mismatch at index [" not in ignores
    assert trip.scores["ignores_dim"] < trip.scores["reference"]
    untouched = _html_text(feedback / "untouched" / ASSIGNMENT / "qkv.html")
    assert "\nNotImplementedError: " in untouched and "A hidden check failed" not in untouched  # a failed visible check: its error, one line


# --------------------------------------------------------------------------- course state survives releases
def test_course_state_survives_a_re_release_and_dist_with_state_is_never_replaced(course, tmp_path):
    """The live course sits outside dist/ (`make nbgrader-course DIR=…`): updating it from a new
    release replaces source/ and the config, never the gradebook or submissions; and a release
    refuses to replace a dist/ whose nbgrader/ holds course state (real nbgrader, its own DB)."""
    import shutil
    import subprocess
    import sys

    from autograder.release import build, course_dir

    live = tmp_path / "attention-course"
    said = course_dir.update(course, live)
    assert "created source/" + ASSIGNMENT in said and (live / "gradebook.db").exists() is False
    import os

    nbgrader = [sys.executable, "-m", "nbgrader"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # nbgrader runs `alembic`
    run = subprocess.run([*nbgrader, "db", "student", "add", "s001", "--first-name=Ana"], cwd=live, capture_output=True, text=True, timeout=120,
                         env=env)
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
        build._prepare_out(dist, ROOT)
    assert (dist / "nbgrader" / "gradebook.db").exists()
