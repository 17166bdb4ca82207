"""The framework is course-agnostic: a second course, graded and released by it unchanged.

tests/fixtures/toy_course/ is a whole course of its own — one skill (vecops), its grading.toml,
reference solution, stub, visible and hidden suite under its own tests/suites/, hints and an
assignment — that shares nothing with the attention course but the grader. Whatever in
autograder/ assumed the attention course (its skills, its folder, its packaging) breaks here.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from conftest import ROOT, grade

TOY = ROOT / "tests" / "fixtures" / "toy_course"
CONFIG = TOY / "grading.toml"
POINTS = tomllib.loads(CONFIG.read_text(encoding="utf-8"))["skills"]["vecops"]["points"]


def _submission(tmp_path: Path, find: str = "", replace: str = "") -> Path:
    source = (TOY / "solutions" / "vecops.py").read_text(encoding="utf-8")
    if find:
        assert source.count(find) == 1, find
        source = source.replace(find, replace)
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "vecops.py").write_text(source, encoding="utf-8")
    return folder


def test_toy_course_stub_is_what_stubs_makes_of_its_solution():
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "stubs", "--check", "--config", str(CONFIG)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_second_course_reference_scores_full_marks_and_its_stub_zero(tmp_path):
    ref = grade(TOY / "solutions", config=CONFIG)
    assert ref.rc == 0, ref.stderr
    assert ref.data["score"] == ref.data["max_score"] == POINTS
    assert [s["id"] for s in ref.data["skills"]] == ["vecops"]
    stub = grade(TOY / "exercises", config=CONFIG)
    assert stub.data["score"] == 0 and stub.data["max_score"] == POINTS, stub.stdout


def test_second_course_mistake_costs_its_own_functions_tests_with_its_hint(tmp_path):
    wrong = _submission(tmp_path, "return x.sum(dim=-1)", "return x.sum(dim=0)")
    graded = grade(wrong, config=CONFIG)
    failed = {t["name"] for t in graded.tests("vecops") if t["score"] < t["max_score"]}
    assert failed == {"test_row_sums_of_a_small_matrix", "test_row_sums_match_reference_on_random_inputs"}, failed
    assert graded.data["score"] == POINTS - 1 - 1.5
    assert "vecops/summed-columns" in graded.hints("vecops")
    # its own lesson, named in its [[course.texts]]: the hint's "Toy §1" resolves to §1's heading line
    sections = {h["section"] for t in graded.tests("vecops") for h in t["hints"] if h["id"] == "vecops/summed-columns"}
    assert sections == {"Toy §1 — docs/lessons/toy-notes.txt:3"}, sections


def test_second_course_releases_a_student_tree_and_bundles_that_grade(tmp_path, monkeypatch):
    from autograder import config
    from autograder.instructor.release import build

    # dist/nbgrader needs per-skill nbgrader checks, which still live in autograder/ (being
    # moved next to the suites); every other artifact is built as `make release` builds it
    monkeypatch.setattr(build, "BUILDERS", [b for b in build.BUILDERS if b[0] != "nbgrader_course"])
    monkeypatch.setenv("AUTOGRADER_SEED_KEY_FILE", str(tmp_path / "toy.seed.key"))
    out = tmp_path / "dist"
    build.release(config.load(CONFIG), out, "1.0.0", log=lambda _: None)

    student = out / "student"
    assert (student / "exercises" / "vecops.py").read_bytes() == (TOY / "exercises" / "vecops.py").read_bytes()
    assert (student / "tests" / "suites" / "vecops" / "test_vecops_visible.py").is_file()
    assert not (student / "tests" / "suites" / "vecops" / "test_vecops_hidden.py").exists()
    assert not (student / "solutions").exists()
    assert (student / "autograder" / "__main__.py").is_file()
    for bundle in (out / "autograder.zip", out / "assignments" / "vectors" / "autograder.zip"):
        names = set(zipfile.ZipFile(bundle).namelist())
        assert {"tests/suites/vecops/test_vecops_hidden.py", "solutions/vecops.py", "autograder/__main__.py"} <= names

    # the student tree grades on its own: the reference scores the visible tests' points
    visible = grade(TOY / "solutions", cwd=student, config=student / "grading.toml")
    assert visible.rc == 0, visible.stderr
    assert visible.data["score"] == visible.data["max_score"] == 2


def test_second_course_releases_its_nbgrader_course(tmp_path, monkeypatch):
    from autograder import config
    from autograder.instructor.release import build

    monkeypatch.setenv("AUTOGRADER_SEED_KEY_FILE", str(tmp_path / "toy.seed.key"))
    build.release(config.load(CONFIG), tmp_path / "dist", "1.0.0", log=lambda _: None)
    assert (tmp_path / "dist" / "nbgrader" / "source" / "toy" / "vecops.ipynb").is_file()
