"""`make todo` (``python -m autograder todo``) uses the grader's own stub detection: it lists
the functions still the stub, with file and line, and says when nothing is left — a module
docstring that mentions ``TODO(…)`` is not work left. ``--help`` lists every command."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import EXERCISES, ROOT, SOLUTIONS


def _todo(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder", "todo", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_stubs_are_listed_with_file_and_line():
    proc = _todo(str(EXERCISES))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "— TODO(" in line]
    assert len(lines) >= 20 and "qkv.py:" in proc.stdout and "function(s) left" in proc.stdout


def test_a_finished_submission_is_told_nothing_is_left(tmp_path):
    folder = tmp_path / "mine" / "exercises"
    shutil.copytree(SOLUTIONS, folder)
    doc = folder / "qkv.py"
    doc.write_text('"""Fill in every function marked TODO(qkv)."""\n' + doc.read_text(encoding="utf-8"), encoding="utf-8")
    proc = _todo(str(tmp_path / "mine"))
    assert proc.returncode == 0 and "Nothing left" in proc.stdout and "TODO(qkv)" not in proc.stdout, proc.stdout


def test_one_function_left_is_the_only_line(tmp_path):
    folder = tmp_path / "mine"
    shutil.copytree(SOLUTIONS, folder)
    stub = (EXERCISES / "masks.py").read_text(encoding="utf-8")
    (folder / "masks.py").write_text(stub, encoding="utf-8")
    proc = _todo(str(folder), cwd=tmp_path)
    listed = [line for line in proc.stdout.splitlines() if "— TODO(" in line]
    assert listed and all(line.startswith("mine/masks.py:") for line in listed), proc.stdout  # relative to where it ran


def test_help_lists_every_command():
    proc = subprocess.run([sys.executable, "-m", "autograder", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    for command in ("grade", "todo", "batch", "release", "stubs", "snapshots", "audit", "ci-comment"):
        assert command in proc.stdout, command
