"""`make new-skill NAME=…`: a new skill in one step, in a copy of this repository.

The scaffold touches no file of autograder/ or tests/grader/; it grades (reference full
marks, stub 0) and its generated data is fresh; and what a TA must still write — four named
mistakes, three correct styles — fails `make check` by name, pointing at the checklist."""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, grade

from autograder.instructor import new_skill


def _copy_of_repository(dest: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file() and not rel.startswith(".venv/"):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory):
    root = _copy_of_repository(tmp_path_factory.mktemp("repo"))
    framework = {part: _digest(root / part) for part in ("autograder", "tests/grader")}
    written = new_skill.scaffold(root, "rope", points=10, assignment="day2", measure=False)
    return root, framework, written


def test_new_skill_touches_no_file_of_the_framework_or_its_tests(scaffolded):
    root, framework, written = scaffolded
    assert {part: _digest(root / part) for part in framework} == framework
    assert not [p for p in written if p.is_relative_to(root / "autograder") or p.is_relative_to(root / "tests/grader")]
    config = tomllib.loads((root / "grading.toml").read_text(encoding="utf-8"))
    assert config["skills"]["rope"]["points"] == 10 and config["release"]["assignments"]["day2"] == ["rope"]
    # the rest of grading.toml keeps its bytes: the new skill is only added
    before = (ROOT / "grading.toml").read_text(encoding="utf-8").splitlines()
    after = (root / "grading.toml").read_text(encoding="utf-8").splitlines()
    removed = [d for d in difflib.unified_diff(before, after, lineterm="", n=0) if d.startswith("-") and not d.startswith("---")]
    assert not removed, removed


def test_new_skill_is_fresh_and_grades_reference_full_stub_zero(scaffolded):
    root, _, _ = scaffolded
    for command in ("stubs", "snapshots"):
        proc = _run(root, "-m", "autograder", command, "--check")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    ref = grade(root / "solutions", "--skill", "rope", "--reveal-hidden", config=root / "grading.toml", cwd=root)
    assert ref.rc == 0, ref.stderr
    assert ref.score("rope") == 10 and len(ref.tests("rope")) == 2
    stub = grade(root / "exercises", "--skill", "rope", config=root / "grading.toml", cwd=root)
    assert stub.score("rope") == 0 and all("TODO" in t["summary"] or t["hints"] for t in stub.tests("rope"))


def test_new_skill_has_nbgrader_checks_the_release_reads(scaffolded):
    from autograder.config import load
    from autograder.instructor.release import nbgrader_checks

    root, _, _ = scaffolded
    checks = nbgrader_checks.load(load(root / "grading.toml"), "rope")
    assert [t.name for t in checks.targets] == ["example"]
    assert checks.targets[0].visible and checks.targets[0].hidden


def test_what_a_new_skill_still_lacks_fails_make_check_by_name(scaffolded):
    root, _, _ = scaffolded
    proc = _run(
        root,
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:randomly",
        "tests/grader/test_sample_submissions.py::test_every_skill_has_at_least_four_mistakes",
        "tests/grader/test_sample_submissions.py::test_every_skill_has_correct_submissions_in_other_styles",
        "tests/grader/test_suites_are_right.py::test_every_hint_a_suite_names_exists",
    )
    out = proc.stdout
    assert proc.returncode == 1, out
    assert out.count("\nFAILED ") == 3, out[-2000:]
    assert "tests/submissions/mistakes/rope.toml" in out and "rope.py is written in 0 style(s)" in out
    assert "rope needs at least four named mistakes in tests/suites/rope/hints.toml" in out


def test_new_skill_refuses_an_existing_skill_or_a_bad_name(tmp_path):
    root = tmp_path
    shutil.copyfile(ROOT / "grading.toml", root / "grading.toml")
    with pytest.raises(new_skill.Refused, match="exists already"):
        new_skill.scaffold(root, "qkv", measure=False)
    with pytest.raises(new_skill.Refused, match="a skill id is lower case"):
        new_skill.scaffold(root, "Rope-2", measure=False)
    assert (root / "grading.toml").read_bytes() == (ROOT / "grading.toml").read_bytes()
