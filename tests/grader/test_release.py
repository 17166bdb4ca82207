"""`make release` and what it builds: reference snapshots, stubs from the solutions, the
student tree (leak audit, grading a copy of it outside this repository), deterministic
artifacts and MANIFEST.json."""

from __future__ import annotations

import io
import subprocess
import sys
import tomllib
import zipfile

import pytest
import torch

from autograder.config import load
from autograder.release.context import ReleaseContext
from autograder.release.files import course_closure, filtered_grading_toml, grader_files, write_zip_deterministic
from autograder.testing import snapshots
from conftest import ROOT

CONFIG = load(ROOT / "grading.toml")


def _run(*args: str, cwd=ROOT, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _ctx(out) -> ReleaseContext:
    return ReleaseContext(repo=ROOT, config=CONFIG, out=out, version="0.0.0-test", commit="0" * 40, suite_hash="test")


# --------------------------------------------------------------------------- snapshots
def test_snapshots_are_fresh():
    proc = _run("snapshots", "--check")
    assert proc.returncode == 0, proc.stderr


def test_snapshot_file_round_trips_tensors_numbers_and_dtypes_bit_for_bit():
    cases = {"a": {"x": torch.randn(3, 4, dtype=torch.float64), "m": torch.tensor([True, False]), "fill": float("-inf"), "dtype": torch.float32,
                   "pair": (1, 2.5), "t": torch.arange(6).reshape(2, 3).T}}
    data = snapshots.encode("qkv", cases)
    assert data == snapshots.encode("qkv", cases)
    back = snapshots.decode(data)
    assert torch.equal(back["a"]["x"], cases["a"]["x"]) and back["a"]["x"].dtype == torch.float64
    assert torch.equal(back["a"]["t"], cases["a"]["t"]) and back["a"]["fill"] == float("-inf") and back["a"]["dtype"] is torch.float32
    assert back["a"]["pair"] == (1, 2.5)


def test_snapshot_lookup_names_the_file_and_the_fix(tmp_path):
    suite = tmp_path / "qkv" / "test_qkv_visible.py"
    suite.parent.mkdir()
    with pytest.raises(snapshots.SnapshotError, match=r"qkv\.json: missing .*make snapshots"):
        snapshots.Snapshots(suite)["x"]
    (suite.parent / "snapshots").mkdir()
    (suite.parent / "snapshots" / "qkv.json").write_bytes(snapshots.encode("qkv", {"a": {"x": 1}}))
    with pytest.raises(snapshots.SnapshotError, match=r"no case 'b' \(has: a\)"):
        snapshots.Snapshots(suite)["b"]
    (suite.parent / "snapshots" / "qkv.json").write_text('{"format": "pickle"}')
    with pytest.raises(snapshots.SnapshotError, match="unknown format"):
        snapshots.Snapshots(suite)["a"]


def test_a_changed_reference_makes_the_snapshot_check_fail(tmp_path):
    """Copy the repository's suites and solutions, break one reference function: --check names the file."""
    import shutil

    for part in ("tests/suites", "solutions"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "grading.toml", tmp_path / "grading.toml")
    ref = tmp_path / "solutions" / "qkv.py"
    ref.write_text(ref.read_text(encoding="utf-8").replace("return q @ k.transpose(-2, -1)", "return 2 * (q @ k.transpose(-2, -1))"), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "autograder", "snapshots", "--check", "--config", str(tmp_path / "grading.toml")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1, proc.stderr
    assert "tests/suites/qkv/snapshots/qkv.json: stale (cases attention_scores" in proc.stderr


def test_visible_suites_need_no_reimplementation_of_an_exercise():
    """What a visible suite imports from tests/suites/course never includes the oracles."""
    sources = {s.file: (ROOT / s.file).read_text(encoding="utf-8") for sk in CONFIG.skills.values() for s in sk.suites if s.visibility == "visible"}
    needed = course_closure(CONFIG.suites_dir / "course", sources)
    assert "oracles.py" not in needed
    assert {"week07.py", "tolerances.py", "__init__.py"} <= needed


# --------------------------------------------------------------------------- shared helpers
def test_filtered_grading_toml_keeps_only_visible_tests_and_their_points():
    text = (ROOT / "grading.toml").read_text(encoding="utf-8")
    assert filtered_grading_toml(text, include_hidden=True) == text
    student = filtered_grading_toml(text, include_hidden=False)
    data = tomllib.loads(student)
    for sid, skill in data["skills"].items():
        assert [s["visibility"] for s in skill["suites"]] == ["visible"], sid
        assert skill["points"] == pytest.approx(sum(skill["suites"][0]["weights"].values())), sid
        assert not skill.get("gates"), sid  # every gate of this course is a hidden rule test
        assert "hidden" not in student.split(f"[skills.{sid}]")[1].split("[skills.")[0].replace("hidden tests", "")
    assert "_hidden.py" not in student
    assert data["limits"] == tomllib.loads(text)["limits"]


def test_grader_files_for_students_carry_no_hidden_suite_no_solution_and_no_release_tools(tmp_path):
    files = grader_files(_ctx(tmp_path), include_hidden=False)
    assert not [f for f in files if "_hidden" in f or f.startswith(("solutions/", "autograder/release/")) or "__pycache__" in f]
    assert not [f for f in files if f.endswith("snapshot_cases.py") or f.endswith("oracles.py")]
    for sid in CONFIG.skills:
        assert f"tests/suites/{sid}/test_{sid}_visible.py" in files and f"tests/suites/{sid}/hints.toml" in files
        if (CONFIG.suites_dir / sid / "snapshot_cases.py").is_file():  # row_softmax compares with torch's own softmax only
            assert f"tests/suites/{sid}/snapshots/{sid}.json" in files
    assert "autograder/testing/snapshots.py" in files and "requirements.txt" in files
    full = grader_files(_ctx(tmp_path), include_hidden=True)
    assert {f"tests/suites/{sid}/test_{sid}_hidden.py" for sid in CONFIG.skills} <= set(full)
    assert {f"solutions/{s.module}" for s in CONFIG.skills.values()} <= set(full)


def test_deterministic_zip_has_sorted_entries_fixed_times_and_modes(tmp_path):
    files = {"b.txt": b"b", "a/run": b"#!/bin/sh\necho hi\n", "a/x.py": b"x = 1\n"}
    one, two = write_zip_deterministic(tmp_path / "one.zip", files), write_zip_deterministic(tmp_path / "two.zip", dict(reversed(list(files.items()))))
    assert one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(io.BytesIO(one.read_bytes())) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos] == ["a/run", "a/x.py", "b.txt"]
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert [(i.external_attr >> 16) & 0o777 for i in infos] == [0o755, 0o644, 0o644]
        assert zf.read("a/run") == files["a/run"]


# --------------------------------------------------------------------------- stubs
def test_exercises_are_what_make_stubs_writes():
    proc = _run("stubs", "--check")
    assert proc.returncode == 0, proc.stderr


GOOD = '''"""Skill `demo`.
"""


def f(x):
    """Doc."""
    # TODO: double x (Week 7 §1).
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION


class C:
    def g(self):
        # TODO: return one.
        ### BEGIN SOLUTION
        return 1
        ### END SOLUTION
        # trailing comment
'''


def test_stub_keeps_signature_and_docstring_and_gets_todo_line_and_named_raise():
    from autograder.release.stubs import stub_text

    stub = stub_text(GOOD, "demo", "solutions/demo.py")
    assert "BEGIN SOLUTION" not in stub and "return 2 * x" not in stub
    assert '    """Doc."""\n    # TODO(demo): double x (Week 7 §1).\n    raise NotImplementedError("TODO(demo): f")\n' in stub
    assert '        # TODO(demo): return one.\n        raise NotImplementedError("TODO(demo): C.g")\n' in stub
    assert "Fill in every function marked TODO(demo), then run `make grade SKILL=demo`.\n" in stub
    compile(stub, "demo", "exec")


@pytest.mark.parametrize("broken, message", [
    (GOOD.replace("\n\ndef f(x):", "# TODO: set X.\n### BEGIN SOLUTION\nX = 1\n### END SOLUTION\n\n\ndef f(x):"), r"solutions/demo.py:4: solution region at module level"),
    (GOOD.replace("        ### END SOLUTION\n", ""), r"solutions/demo.py:16: `### BEGIN SOLUTION` is never closed"),
    (GOOD.replace('"""Doc."""', '"""Doc: write between ### BEGIN SOLUTION and the end."""'), r"solutions/demo.py:6: solution marker inside a string"),
    (GOOD.replace("    # TODO: double x (Week 7 §1).\n", ""), r"solutions/demo.py:7: no `# TODO: <what the student writes here>` line"),
    (GOOD.replace("    return 2 * x\n", "    ### BEGIN SOLUTION\n"), r"solutions/demo.py:9: `### BEGIN SOLUTION` inside the region opened at line 8"),
    (GOOD.replace("    return 2 * x\n", "    return 2 * x  # END SOLUTION here\n"), r"solutions/demo.py:9: 'END SOLUTION' inside other text"),
])
def test_broken_markers_are_refused_with_file_and_line(broken, message):
    from autograder.release.stubs import MarkerError, stub_text

    with pytest.raises(MarkerError, match=message):
        stub_text(broken, "demo", "solutions/demo.py")


def test_stubs_check_names_the_exercise_that_differs(tmp_path):
    import os
    import shutil

    for part in ("solutions", "exercises", "tests/suites"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "grading.toml", tmp_path / "grading.toml")
    stub = tmp_path / "exercises" / "masks.py"
    stub.write_text(stub.read_text(encoding="utf-8").replace("# TODO(masks): allow j <= i", "# TODO(masks): allow j < i"), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "autograder", "stubs", "--check", "--config", str(tmp_path / "grading.toml")]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1 and "exercises/masks.py: differs from what `make stubs` writes" in proc.stderr, proc.stderr
    assert "qkv.py" not in proc.stderr
    subprocess.run([sys.executable, "-m", "autograder", "stubs", "--config", str(tmp_path / "grading.toml")], cwd=tmp_path, check=True, capture_output=True, timeout=300, env=env)
    assert stub.read_text(encoding="utf-8") == (ROOT / "exercises" / "masks.py").read_text(encoding="utf-8")
