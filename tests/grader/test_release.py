"""`make release` and what it builds: reference snapshots, stubs from the solutions, the
student tree (leak audit, grading a copy of it outside this repository), deterministic
artifacts and MANIFEST.json."""

from __future__ import annotations

import io
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import torch
from conftest import ROOT

from autograder.config import load
from autograder.instructor.release.context import ReleaseContext
from autograder.instructor.release.files import course_closure, filtered_grading_toml, grader_files, write_zip_deterministic
from autograder.testing import snapshots

CONFIG = load(ROOT / "grading.toml")


def course_key() -> Path:
    """The course seed key these tests release with: outside the repository and every dist/,
    the same bytes in every test (so two releases are byte-identical)."""
    import os
    import tempfile

    path = Path(tempfile.gettempdir()) / "attention-autograder-tests" / "course.seed.key"
    path.parent.mkdir(exist_ok=True)
    if not path.is_file():
        path.write_text("0123456789abcdef" * 4 + "\n")
        os.chmod(path, 0o600)
    return path


def _run(*args: str, cwd=ROOT, timeout: float = 300) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "AUTOGRADER_SEED_KEY_FILE": str(course_key())}
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def _ctx(out) -> ReleaseContext:
    return ReleaseContext(repo=ROOT, config=CONFIG, out=out, version="0.0.0-test", commit="0" * 40, suite_hash="test")


# --------------------------------------------------------------------------- snapshots
def test_snapshots_are_fresh():
    proc = _run("snapshots", "--check")
    assert proc.returncode == 0, proc.stderr


def test_snapshot_file_round_trips_tensors_numbers_and_dtypes_bit_for_bit():
    cases = {
        "a": {
            "x": torch.randn(3, 4, dtype=torch.float64),
            "m": torch.tensor([True, False]),
            "fill": float("-inf"),
            "dtype": torch.float32,
            "pair": (1, 2.5),
            "t": torch.arange(6).reshape(2, 3).T,
        }
    }
    data = snapshots.encode("qkv", cases)
    assert data == snapshots.encode("qkv", cases)
    back = snapshots.decode(data)
    assert torch.equal(back["a"]["x"], cases["a"]["x"]) and back["a"]["x"].dtype == torch.float64
    assert (
        torch.equal(back["a"]["t"], cases["a"]["t"])
        and back["a"]["fill"] == float("-inf")
        and back["a"]["dtype"] is torch.float32
    )
    assert back["a"]["pair"] == (1, 2.5)


def test_each_snapshot_lookup_gets_tensors_no_other_lookup_holds(tmp_path):
    """The first lookup of a case gets the value the file's soundness check decoded; every
    later one a fresh decode: a test that changes its inputs in place changes no other's."""
    suite = tmp_path / "qkv" / "test_qkv_visible.py"
    (suite.parent / "snapshots").mkdir(parents=True)
    cases = {"a": {"x": torch.arange(4.0)}, "b": {"x": torch.ones(2)}}
    (suite.parent / "snapshots" / "qkv.json").write_bytes(snapshots.encode("qkv", cases))
    snap = snapshots.Snapshots(suite)
    first = snap["a"]
    first["x"].mul_(-1)
    second, third = snap["a"], snap["a"]
    assert torch.equal(second["x"], cases["a"]["x"]) and torch.equal(third["x"], cases["a"]["x"])
    assert second["x"].data_ptr() != third["x"].data_ptr() != first["x"].data_ptr()
    assert torch.equal(snap["b"]["x"], cases["b"]["x"])


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


# slow: a check of the check (snapshots --check runs every visible suite's reference again, here on a copy);
# make test keeps test_snapshots_are_fresh and the snapshot file's round-trip and lookup tests
@pytest.mark.slow
def test_a_changed_reference_makes_the_snapshot_check_fail(tmp_path):
    """Copy the repository's suites and solutions, break one reference function: --check names the file."""
    import shutil

    for part in ("tests/suites", "solutions"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "grading.toml", tmp_path / "grading.toml")
    ref = tmp_path / "solutions" / "qkv.py"
    ref.write_text(
        ref.read_text(encoding="utf-8").replace("return q @ k.transpose(-2, -1)", "return 2 * (q @ k.transpose(-2, -1))"),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "snapshots", "--check", "--config", str(tmp_path / "grading.toml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 1, proc.stderr
    assert "tests/suites/qkv/snapshots/qkv.json: stale (cases attention_scores" in proc.stderr


def test_a_course_helpers_relative_import_counts_even_inside_a_function():
    """A visible helper that imported ``.oracles`` inside a function passed the check below and
    broke the student tree (the file is not shipped): relative imports count, wherever they are."""
    from autograder.runner.identity import _course_imports

    helper = "from . import week07 as w7\nfrom .tolerances import Tol, tol\n\n\ndef f():\n    from .oracles import x\n"
    assert _course_imports(helper) == {"week07", "tolerances", "oracles"}


def test_visible_suites_need_no_reimplementation_of_an_exercise():
    """What a visible suite imports from tests/suites/course never includes the oracles."""
    sources = {
        s.file: (ROOT / s.file).read_text(encoding="utf-8")
        for sk in CONFIG.skills.values()
        for s in sk.suites
        if s.visibility == "visible"
    }
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
    assert not [
        f for f in files if "_hidden" in f or f.startswith(("solutions/", "autograder/instructor/")) or "__pycache__" in f
    ]
    assert "autograder/cli.py" in files and "autograder/testing/__init__.py" in files
    assert not [f for f in files if f.endswith("snapshot_cases.py") or f.endswith("oracles.py")]
    for sid in CONFIG.skills:
        assert f"tests/suites/{sid}/test_{sid}_visible.py" in files and f"tests/suites/{sid}/hints.toml" in files
        if (CONFIG.suites_dir / sid / "snapshot_cases.py").is_file():  # row_softmax compares with torch's own softmax only
            assert f"tests/suites/{sid}/snapshots/{sid}.json" in files
    assert "autograder/testing/snapshots.py" in files and "requirements.txt" in files
    full = grader_files(_ctx(tmp_path), include_hidden=True)
    assert {f"tests/suites/{sid}/test_{sid}_hidden.py" for sid in CONFIG.skills} <= set(full)
    assert {f"solutions/{s.module}" for s in CONFIG.skills.values()} <= set(full)
    assert not [
        f for f in full if f.startswith("autograder/instructor/")
    ]  # the Gradescope bundle has no instructors' tools either


def test_deterministic_zip_has_sorted_entries_fixed_times_and_modes(tmp_path):
    files = {"b.txt": b"b", "a/run": b"#!/bin/sh\necho hi\n", "a/x.py": b"x = 1\n"}
    one, two = (
        write_zip_deterministic(tmp_path / "one.zip", files),
        write_zip_deterministic(tmp_path / "two.zip", dict(reversed(list(files.items())))),
    )
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
    from autograder.instructor.release.stubs import stub_text

    stub = stub_text(GOOD, "demo", "solutions/demo.py")
    assert "BEGIN SOLUTION" not in stub and "return 2 * x" not in stub
    assert '    """Doc."""\n    # TODO(demo): double x (Week 7 §1).\n    raise NotImplementedError("TODO(demo): f")\n' in stub
    assert '        # TODO(demo): return one.\n        raise NotImplementedError("TODO(demo): C.g")\n' in stub
    assert "Fill in every function marked TODO(demo), then run `make grade SKILL=demo`.\n" in stub
    compile(stub, "demo", "exec")


@pytest.mark.parametrize(
    "broken, message",
    [
        (
            GOOD.replace("\n\ndef f(x):", "# TODO: set X.\n### BEGIN SOLUTION\nX = 1\n### END SOLUTION\n\n\ndef f(x):"),
            r"solutions/demo.py:4: solution region at module level",
        ),
        (GOOD.replace("        ### END SOLUTION\n", ""), r"solutions/demo.py:16: `### BEGIN SOLUTION` is never closed"),
        (
            GOOD.replace('"""Doc."""', '"""Doc: write between ### BEGIN SOLUTION and the end."""'),
            r"solutions/demo.py:6: solution marker inside a string",
        ),
        (
            GOOD.replace("    # TODO: double x (Week 7 §1).\n", ""),
            r"solutions/demo.py:7: no `# TODO: <what the student writes here>` line",
        ),
        (
            GOOD.replace("    return 2 * x\n", "    ### BEGIN SOLUTION\n"),
            r"solutions/demo.py:9: `### BEGIN SOLUTION` inside the region opened at line 8",
        ),
        (
            GOOD.replace("    return 2 * x\n", "    return 2 * x  # END SOLUTION here\n"),
            r"solutions/demo.py:9: 'END SOLUTION' inside other text",
        ),
    ],
)
def test_broken_markers_are_refused_with_file_and_line(broken, message):
    from autograder.instructor.release.stubs import MarkerError, stub_text

    with pytest.raises(MarkerError, match=message):
        stub_text(broken, "demo", "solutions/demo.py")


def _stale_stub_copy(tmp_path: Path) -> Path:
    """A copy of the repository's solutions, exercises, suites and grading.toml whose
    exercises/masks.py differs from what `make stubs` writes; its stub path."""
    import shutil

    for part in ("solutions", "exercises", "tests/suites"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "grading.toml", tmp_path / "grading.toml")
    stub = tmp_path / "exercises" / "masks.py"
    stub.write_text(
        stub.read_text(encoding="utf-8").replace("# TODO(masks): allow j <= i", "# TODO(masks): allow j < i"), encoding="utf-8"
    )
    return stub


def test_stubs_check_names_the_exercise_that_differs(tmp_path):
    """In-process (what `stubs --check` prints, one problem a line, and what `stubs` writes;
    the command line itself: test_exercises_are_what_make_stubs_writes, and the slow test below)."""
    from autograder.instructor.release import stubs

    stub = _stale_stub_copy(tmp_path)
    config = load(tmp_path / "grading.toml")
    problems = stubs.check(config)
    assert len(problems) == 1 and problems[0].startswith("exercises/masks.py: differs from what `make stubs` writes"), problems
    assert stubs.write(config) == [stub]
    assert stub.read_text(encoding="utf-8") == (ROOT / "exercises" / "masks.py").read_text(encoding="utf-8")
    assert stubs.check(config) == []


@pytest.mark.slow  # two command lines in a copy of the repository; the fast set calls the same functions in-process (above)
def test_stubs_check_names_the_exercise_that_differs_on_the_command_line(tmp_path):
    import os

    stub = _stale_stub_copy(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "autograder", "stubs", "--check", "--config", str(tmp_path / "grading.toml")]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1 and "exercises/masks.py: differs from what `make stubs` writes" in proc.stderr, proc.stderr
    assert "qkv.py" not in proc.stderr
    subprocess.run(
        [sys.executable, "-m", "autograder", "stubs", "--config", str(tmp_path / "grading.toml")],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=300,
        env=env,
    )
    assert stub.read_text(encoding="utf-8") == (ROOT / "exercises" / "masks.py").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- make release
VERSION = "1.0.0-test"


def _release(out) -> subprocess.CompletedProcess:
    return _run("release", "--out", str(out), "--version", VERSION, timeout=600)


# The tests reading dist are marked slow: `make release` builds everything (student tree, the
# Gradescope bundles, the nbgrader course, Classroom 50) and several then grade what it built.
# make test-slow and CI run them; the pieces of the release are checked in make test here and in
# test_gradescope_bundle.py / test_nbgrader_course.py.
@pytest.fixture(scope="session")
def dist(tmp_path_factory):
    """One release per test session, shared by pytest-xdist's workers (a file lock)."""
    import os

    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()  # this session's; xdist gives each worker a folder below it
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "release-dist"
    with FileLock(str(shared / "release-dist.lock")):
        if not (out / "MANIFEST.json").is_file():
            proc = _release(out)
            assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _manifest(out):
    import json

    return json.loads((out / "MANIFEST.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # needs the release build (dist, below)
def test_manifest_names_version_commit_suite_and_the_checksum_of_every_file(dist):
    import hashlib

    from autograder.runner.grade import suite_hash

    data = _manifest(dist)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert data["version"] == VERSION and data["source_commit"].split("+")[0] == head
    assert data["suite_hash"] == suite_hash(CONFIG) and data["points"] == CONFIG.total_points
    on_disk = sorted(
        p.relative_to(dist).as_posix()
        for p in dist.rglob("*")
        if p.is_file() and not (p.parent == dist and p.name == "MANIFEST.json")
    )
    assert sorted(data["files"]) == on_disk
    for rel, digest in data["files"].items():
        assert hashlib.sha256((dist / rel).read_bytes()).hexdigest() == digest, rel
    assert "student" in data["artifacts"] and data["artifacts"]["student"]["bytes"] > 0


@pytest.mark.slow  # needs the release build (dist, below)
def test_two_releases_of_the_same_commit_are_byte_identical(dist, tmp_path):
    proc = _release(tmp_path / "again")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "again" / "MANIFEST.json").read_bytes() == (dist / "MANIFEST.json").read_bytes()
    assert _manifest(tmp_path / "again")["files"] == _manifest(dist)["files"]


def test_release_refuses_a_bad_version_and_a_folder_that_is_not_a_release_in_process(tmp_path):
    """The refusals themselves, in-process: a bad version before anything runs, a folder that
    is not a previous release left as it was (the command line: the slow test below)."""
    from autograder.instructor.release import build

    with pytest.raises(build.ReleaseError, match=r"VERSION='v1': use MAJOR\.MINOR\.PATCH"):
        build.release(CONFIG, tmp_path / "x", "v1", log=lambda line: None)
    assert not (tmp_path / "x").exists()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(build.ReleaseError, match="not empty and not a previous release"):
        build._check_out(tmp_path / "notes", ROOT)
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"


# slow: the folder is refused only after the freshness check, which runs the reference on the control inputs
@pytest.mark.slow
def test_release_refuses_a_bad_version_and_a_folder_that_is_not_a_release(tmp_path):
    proc = _run("release", "--out", str(tmp_path / "x"), "--version", "v1")
    assert proc.returncode == 1 and "VERSION='v1': use MAJOR.MINOR.PATCH" in proc.stderr
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    proc = _run("release", "--out", str(tmp_path / "notes"), "--version", "1.0.0")
    assert proc.returncode == 1 and "not empty and not a previous release" in proc.stderr
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"


@pytest.mark.slow  # needs the release build (dist, below)
def test_student_tree_has_what_students_need_and_nothing_of_the_instructors(dist):
    student = dist / "student"
    for rel in (
        "Makefile",
        "autograder/grade.mk",
        "README.md",
        ".ci/run",
        ".gitignore",
        "requirements.txt",
        "grading.toml",
        "docs/EXERCISES.md",
        "autograder/__main__.py",
    ):
        assert (student / rel).is_file(), rel
    assert (student / ".ci" / "run").stat().st_mode & 0o111
    assert sorted(p.name for p in (student / "exercises").iterdir()) == sorted(s.module for s in CONFIG.skills.values())
    for s in CONFIG.skills.values():
        assert (student / "exercises" / s.module).read_bytes() == (CONFIG.exercises_dir / s.module).read_bytes()
    assert (
        not (student / "solutions").exists()
        and not list(student.rglob("*_hidden.py"))
        and not (student / "autograder" / "instructor").exists()
    )
    assert "nbgrader" not in (student / "requirements.txt").read_text() and not (student / "requirements-instructor.txt").exists()
    readme = (student / "README.md").read_text(encoding="utf-8")
    assert "make grade" in readme and "visible" in readme and "hidden" in readme
    assert not __import__("re").search(r"\$\{?[A-Za-z_]", readme), "a template placeholder was left"  # $(pwd) is shell
    for rel in (".devcontainer/devcontainer.json", ".devcontainer/Dockerfile"):
        assert (student / rel).is_file(), rel
    for sid, rule in CONFIG.release["rules"].items():
        assert rule in readme, sid
    hints = (student / "autograder" / "core" / "feedback" / "general_hints.toml").read_text(encoding="utf-8")
    assert "docs/EXERCISES.md" in hints and not [
        line for line in hints.splitlines() if "EXERCISES.md" in line and "docs/EXERCISES.md" not in line
    ]


@pytest.mark.slow  # needs the release build (dist, below)
def test_leak_audit_passes_the_release_and_finds_every_kind_of_leak(dist, tmp_path):
    import shutil

    from autograder.instructor.release.audit import audit

    assert audit(dist / "student", CONFIG) == []
    tree = tmp_path / "student"
    shutil.copytree(dist / "student", tree)
    shutil.copy(ROOT / "tests/suites/qkv/test_qkv_hidden.py", tree / "tests/suites/qkv/test_qkv_hidden.py")
    shutil.copy(ROOT / "tests/suites/course/oracles.py", tree / "tests/suites/course/oracles.py")
    notes = tree / "exercises" / "notes.py"
    notes.write_text(
        "# see test_week7_numbers_at_stated_precision_in_float64\n\n\ndef f(x, w_q, w_k, w_v):\n"
        "    return x @ w_q,   x @ w_k, x @ w_v  # copied\n"
    )
    (tree / ".git").mkdir()
    (tree / "gradebook.db").write_bytes(b"SQLite")
    (tree / "results.json").write_text("{}")
    (tree / "seed.key").write_text("0" * 64)
    (tree / "autograder" / "instructor").mkdir()
    shutil.copy(ROOT / "autograder/instructor/__init__.py", tree / "autograder/instructor/__init__.py")
    findings = "\n".join(audit(tree, CONFIG))
    assert "autograder/instructor/__init__.py: the instructors' tools (autograder/instructor/) must not ship" in findings
    assert "tests/suites/qkv/test_qkv_hidden.py: only the hidden tests need this file" in findings
    assert "tests/suites/course/oracles.py: only the hidden tests need this file" in findings
    assert "exercises/notes.py:1: names the hidden test test_week7_numbers_at_stated_precision_in_float64" in findings
    assert "exercises/notes.py:5: line of the solution region at solutions/qkv.py:" in findings
    assert (
        ".git: a git repository" in findings
        and "gradebook.db: nbgrader's gradebook" in findings
        and "results.json: a grading report" in findings
        and "seed.key: looks like a key" in findings
    )
    proc = _run("audit", str(tree))
    assert proc.returncode == 1 and "finding(s)" in proc.stderr


def test_leak_audit_finds_renamed_copies_of_solution_code(tmp_path):
    """A shipped suite that replays a solution — attention_backward with every variable renamed
    and reformatted, or one of its expressions inline — is named with file and line, though no
    line of it equals a solution line."""
    import ast

    from autograder.instructor.release.audit import audit

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast.copy_location(
                ast.Name(id="z_" + node.id if node.id not in ("torch", "math") else node.id, ctx=node.ctx), node
            )

        def visit_arg(self, node):
            return ast.copy_location(ast.arg(arg="z_" + node.arg), node)

    source = (ROOT / "solutions" / "custom_backward.py").read_text(encoding="utf-8")
    fn = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == "attention_backward")
    fn.name, fn.body = (
        "_expected_grads",
        [b for b in fn.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))],
    )
    copy = ast.unparse(Rename().visit(fn))
    suite = tmp_path / "tests" / "suites" / "custom_backward" / "test_custom_backward_visible.py"
    suite.parent.mkdir(parents=True)
    suite.write_text(
        "import torch\n\n\n" + copy + "\n\n\ndef test_x(sub):\n    dk = 0.5 * (grad_s.transpose(-2, -1) @ query)  # inline\n",
        encoding="utf-8",
    )
    lines = suite.read_text(encoding="utf-8").splitlines()
    fn_line = next(i for i, line in enumerate(lines, 1) if line.startswith("def _expected_grads"))
    inline_line = next(i for i, line in enumerate(lines, 1) if "# inline" in line)
    findings = audit(tmp_path, CONFIG)
    rel = "tests/suites/custom_backward/test_custom_backward_visible.py"
    assert any(
        f.startswith(
            f"{rel}:{fn_line}: function _expected_grads replays the body of attention_backward at solutions/custom_backward.py:"
        )
        for f in findings
    ), findings
    assert any(
        f.startswith(f"{rel}:{inline_line}: `0.5 * (grad_s.transpose(-2, -1) @ query)` replays")
        and "of attention_backward at solutions/custom_backward.py:" in f
        for f in findings
    ), findings
    assert not [f for f in findings if "line of the solution region" in f]  # renamed: the line check alone would miss it
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "custom_backward.py").write_text(copy, encoding="utf-8")  # a student's own file may hold anything
    assert not [f for f in audit(tmp_path, CONFIG) if f.startswith("exercises/")]


def _venv_view(tmp_path):
    """The environment running these tests (the instructors' .venv under `make test`) under
    another name — bin/python, lib and pyvenv.cfg — with a requirements stamp newer than the
    student's requirements.txt: the student Makefile's own `make grade` then runs without
    creating a venv (~40 s) or reaching PyPI."""
    import os
    import time

    venv = Path(sys.prefix)
    view = tmp_path / "venv"
    (view / "bin").mkdir(parents=True)
    if (venv / "pyvenv.cfg").is_file():
        os.symlink(venv / "lib", view / "lib")
        (view / "pyvenv.cfg").write_bytes((venv / "pyvenv.cfg").read_bytes())
    os.symlink(os.path.realpath(sys.executable), view / "bin" / "python")
    stamp = view / ".requirements.stamp"
    stamp.write_text("")
    later = time.time() + 10
    os.utime(stamp, (later, later))
    return view


def _student_grade(tree, view, out) -> dict:
    import json
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run(
        ["make", "--no-print-directory", "grade", f"VENV={view}", "FORMAT=json", f"OUTPUT={out}", "SEED=7"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.slow  # needs the release build (dist, below)
def test_a_copy_of_the_student_tree_grades_on_its_own(dist, tmp_path):
    """dist/student copied outside this repository (no solutions/, no hidden suites within
    reach) grades with its own Makefile: the stubs score 0 with a TODO message on every test,
    the reference solutions copied in score every visible point."""
    import shutil

    from conftest import ROOT as repo

    tree = tmp_path / "student"
    shutil.copytree(dist / "student", tree)
    assert not tree.resolve().is_relative_to(repo)
    view = _venv_view(tmp_path)
    stubs = _student_grade(tree, view, tmp_path / "stubs.json")
    visible_points = sum(
        w for s in CONFIG.skills.values() for suite in s.suites if suite.visibility == "visible" for w in suite.weights.values()
    )
    assert stubs["status"] == "complete" and stubs["score"] == 0 and stubs["max_score"] == pytest.approx(visible_points)
    tests = [t for s in stubs["skills"] for t in s["tests"]]
    assert len(tests) == sum(
        len(suite.weights) for s in CONFIG.skills.values() for suite in s.suites if suite.visibility == "visible"
    )
    for t in tests:
        assert t["status"] == "failed" and "TODO(" in t["summary"] + " " + (t["detail"] or ""), t["name"]
    for s in CONFIG.skills.values():
        shutil.copy(CONFIG.solutions_dir / s.module, tree / "exercises" / s.module)
    solved = _student_grade(tree, view, tmp_path / "solved.json")
    failing = [(t["name"], t["summary"][:200]) for s in solved["skills"] for t in s["tests"] if t["status"] != "passed"]
    assert not failing
    assert solved["score"] == solved["max_score"] == pytest.approx(visible_points)


# --------------------------------------------------------------------------- how students submit
def _readme_for(*platforms: str) -> tuple[str, set[str]]:
    from dataclasses import replace

    from autograder.instructor.release.student import template_files

    ctx = ReleaseContext(
        repo=ROOT,
        config=replace(CONFIG, platforms=platforms),
        out=ROOT / "dist",
        version="0.0.0-test",
        commit="0" * 40,
        suite_hash="test",
    )
    files = template_files(ctx)
    return files["README.md"].decode("utf-8"), set(files)


def test_student_readme_says_how_to_submit_on_each_platform_the_course_lists():
    readme, files = _readme_for(*CONFIG.platforms)
    section = readme[readme.index("## How to submit") : readme.index("## Rules of the exercises")]
    # Gradescope: what to upload, per assignment, which files count
    assert "### Gradescope — your official score" in section
    for name, skills in CONFIG.assignments.items():
        line = next(line for line in section.splitlines() if line.startswith(f"- **{name}**"))
        assert all(f"`exercises/{CONFIG.skills[s].module}`" in line for s in skills), line
    assert "`.py` files themselves" in section and ".zip" in section and "**GitHub**: link this repository" in section
    assert "Only the exercise modules count" in section and "hidden tests' results are shown after the due date" in section
    # Actions: the tick is not the score; summary, annotations, comment
    assert "**The tick is not your score.**" in section and "a green tick at 0 points is possible" in section
    assert "**The job summary**" in section and "**Annotations**" in section and "**The pull-request comment**" in section
    # Classroom 50: how to submit, where the result is, and that it is the visible tests only
    assert "`gh student submit`" in section and "**Release**" in section and "`classroom50/autograde`" in section
    assert "**visible tests only**" in section and "official score comes from the course's autograder (Gradescope)" in section
    assert "1/4 point" in section
    assert ".github/workflows/feedback.yml" in files
    assert "GitHub Classroom" not in readme


def test_student_readme_and_tree_follow_the_platforms_listed():
    readme, files = _readme_for("classroom50")
    assert "### Classroom 50" in readme and "### Gradescope" not in readme and "### GitHub Actions" not in readme
    assert "(Gradescope)" not in readme and "instructors grade your submitted commit with the hidden tests too" in readme
    assert not any(f.startswith(".github/") for f in files)  # no feedback workflow where the course uses no Actions
    readme, files = _readme_for("github-actions", "gradescope")
    assert readme.index("### GitHub Actions") < readme.index("### Gradescope") and "Classroom 50" not in readme


# --------------------------------------------------------------------------- Classroom 50
def classroom50_contract_errors(result: dict, env: dict[str, str]) -> list[str]:
    """The `result.json` contract of Classroom 50's wiki, page "Advanced Autograding" (section
    "The `result.json` contract": fields and types; "Extra diagnostic fields on a test are
    preserved verbatim"), as its runner checks it before publishing (validate_result in
    cli/gh-teacher/skeleton/dotgithub/scripts/runner.py)."""
    errors = []

    def whole(value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    if result.get("schema") != "classroom50/result/v1":
        errors.append(f"schema {result.get('schema')!r}")
    if result.get("classroom") != env["CLASSROOM"] or result.get("assignment") != env["ASSIGNMENT"]:
        errors.append("classroom/assignment do not match the runner's")
    if result.get("assignment_type") not in ("individual", "group"):
        errors.append("assignment_type")
    if not isinstance(result.get("owner"), str) or not result["owner"]:
        errors.append("owner")
    if not str(result.get("submission", "")).startswith("submit/"):
        errors.append("submission is not a submit/* tag")
    for key in ("commit", "release", "review", "datetime"):
        if not isinstance(result.get(key), str) or not result[key]:
            errors.append(f"{key} must be a non-empty string")
    if not __import__("re").fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(result.get("datetime"))):
        errors.append("datetime is not UTC ISO 8601")
    if not whole(result.get("score")) or not whole(result.get("max-score")) or result["score"] > result["max-score"]:
        errors.append("score / max-score must be whole numbers, score <= max-score")
    tests = result.get("tests")
    if not isinstance(tests, list):
        return errors + ["tests is not a list"]
    for i, test in enumerate(tests):
        if not isinstance(test.get("test-name"), str) or not test["test-name"] or not isinstance(test.get("passed"), bool):
            errors.append(f"tests[{i}]: test-name / passed")
        if not whole(test.get("score")) or not whole(test.get("max-score")) or test["score"] > test["max-score"]:
            errors.append(f"tests[{i}]: score / max-score")
    if sum(t.get("score", 0) for t in tests) != result.get("score") or sum(t.get("max-score", 0) for t in tests) != result.get(
        "max-score"
    ):
        errors.append("score / max-score are not the sums of the tests'")
    return errors


C50_ENV = {
    "CLASSROOM": "attention-2026",
    "ASSIGNMENT": "week7-attention",
    "SUBMISSION_TAG": "submit/2026-06-01T14-32-05Z-a1b2c3d",
    "USERNAME": "alice",
    "OWNER": "alice",
    "ASSIGNMENT_TYPE": "individual",
    "COMMIT_URL": "https://github.com/org/attention-2026-week7-attention-alice/commit/" + "a" * 40,
    "RELEASE_URL": "https://github.com/org/attention-2026-week7-attention-alice/releases/tag/submit%2F2026-06-01T14-32-05Z-a1b2c3d",
    "REVIEW_URL": "https://github.com/org/attention-2026-week7-attention-alice/compare/" + "b" * 40 + "..." + "a" * 40,
}


def _run_classroom50(entry: Path, checkout: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """As Classroom 50's runner invokes it: `python autograder.py`, the student's checkout as the
    working directory, its environment, CLASSROOM50_BUNDLE_DIR the bundle."""
    import os

    keep = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AUTOGRADER_SEED_KEY_FILE")}
    full = {
        **keep,
        **C50_ENV,
        "CLASSROOM50_BUNDLE_DIR": str(entry.parent),
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        **env,
    }
    return subprocess.run(
        [sys.executable, str(entry)], cwd=checkout, env=full, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.slow  # needs the release build (dist, below)
def test_release_writes_one_classroom50_autograder_per_assignment_with_visible_tests_only(dist):
    import json

    from autograder.instructor.release.audit import audit, hidden_test_names

    root = dist / "classroom50"
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == sorted(CONFIG.assignments)
    assert (root / "README.md").is_file() and json.loads((root / "runtime.json").read_text())["python"] == "3.11"
    assert "classroom50" in _manifest(dist)["artifacts"]
    assert audit(root, CONFIG) == []  # the release audited it too (it stops on any finding)
    hidden = hidden_test_names(CONFIG)
    for name, skills in CONFIG.assignments.items():
        info = json.loads((root / name / "assignment.json").read_text(encoding="utf-8"))
        assert info["assignment"] == name and list(info["skills"]) == list(skills) and info["scale"] == 4
        assert info["full_points"] == sum(CONFIG.skills[s].points for s in skills)
        for sid, skill in info["skills"].items():
            visible = {
                t: w for suite in CONFIG.skills[sid].suites if suite.visibility == "visible" for t, w in suite.weights.items()
            }
            assert skill["tests"] == visible and not set(skill["tests"]) & hidden
        entry = (root / name / "autograder.py").read_text(encoding="utf-8")
        assert "Advanced Autograding" in entry and "result.json" in entry and "official score" in entry


@pytest.mark.slow  # needs the release build (dist, below)
def test_classroom50_autograder_grades_the_student_checkout_into_the_documented_result_json(dist, tmp_path):
    """dist/classroom50/week7/autograder.py run as Classroom 50's runner runs it, in a copy of the
    student repository (qkv and masks solved, row_softmax still the stub): a result.json that
    meets the wiki's contract, whole-number scores in quarter points, a Release text that says
    it is the visible tests only and where the official score comes from; exit 0."""
    import json
    import shutil

    checkout = tmp_path / "attention-2026-week7-attention-alice"
    shutil.copytree(dist / "student", checkout)
    for sid in ("qkv", "masks"):
        shutil.copy(CONFIG.solutions_dir / CONFIG.skills[sid].module, checkout / "exercises" / CONFIG.skills[sid].module)
    proc = _run_classroom50(dist / "classroom50" / "week7" / "autograder.py", checkout, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not [line for line in proc.stdout.splitlines() if line.startswith("::")]  # nothing it prints is a workflow command
    result = json.loads((checkout / "result.json").read_text(encoding="utf-8"))
    assert classroom50_contract_errors(result, C50_ENV) == []
    week7 = CONFIG.for_assignment("week7")
    weights = {
        (s.id, t): w
        for s in week7.skills.values()
        for suite in s.suites
        if suite.visibility == "visible"
        for t, w in suite.weights.items()
    }
    assert [t["test-name"] for t in result["tests"]] == [f"{sid}: {name}" for sid, name in weights]
    assert result["max-score"] == 4 * sum(weights.values())
    solved = sum(w for (sid, _), w in weights.items() if sid in ("qkv", "masks"))
    assert result["score"] == 4 * solved
    for test in result["tests"]:
        assert test["passed"] == (test["skill"] != "row_softmax") and test["max-score"] == 4 * test["max-points"]
    body = (checkout / "release-body.md").read_text(encoding="utf-8")
    assert f"### Visible tests: {solved:g} / {sum(weights.values()):g} points" in body
    assert "**visible tests only**" in body and "official score comes from the course's autograder on Gradescope" in body
    assert f"out of {week7.total_points:g} points" in body
    outputs = (tmp_path / "github_output").read_text(encoding="utf-8")
    assert "status=failure\n" in outputs and "summary=visible tests " in outputs


@pytest.mark.slow  # needs the release build (dist, below)
def test_classroom50_autograder_reports_an_infrastructure_error_not_a_score(dist, tmp_path):
    """Per the contract a non-zero exit is an infrastructure error (Classroom 50 posts `error`
    and publishes no Release): outside the runner's environment, and on a checkout whose grader
    an `allowed_files` pattern removed. No result.json is written either way."""
    entry = dist / "classroom50" / "week7" / "autograder.py"
    bare = tmp_path / "bare"
    bare.mkdir()
    proc = _run_classroom50(entry, bare, tmp_path, CLASSROOM="")
    assert proc.returncode == 1 and "::error title=Classroom 50 autograder::" in proc.stdout and "CLASSROOM" in proc.stdout
    (bare / "exercises").mkdir()
    proc = _run_classroom50(entry, bare, tmp_path)
    assert proc.returncode == 1 and "the checkout lacks autograder/__main__.py, grading.toml, requirements.txt" in proc.stdout
    assert "allowed_files" in proc.stdout and not (bare / "result.json").exists()


def test_classroom50_scores_use_the_release_weights_and_round_partial_credit():
    """A test the run did not report scores 0; a changed grading.toml cannot change what a test is
    worth (the release's weights are used); partial credit rounds to the nearest 1/scale point."""
    import runpy

    entry = runpy.run_path(str(ROOT / "autograder/instructor/release/templates/classroom50/autograder.py"))
    info = {"scale": 4, "skills": {"qkv": {"tests": {"a": 1.0, "b": 0.75, "c": 0.5}}}}
    results = {
        "skills": [
            {
                "id": "qkv",
                "tests": [
                    {"name": "a", "score": 10.0, "max_score": 10.0, "status": "passed"},  # weight inflated locally: still 1 point
                    {"name": "b", "score": 0.25, "max_score": 0.75, "status": "failed"},  # a third of 0.75 = 0.25 → 1 unit
                ],
            }
        ]
    }
    tests, total = entry["translate"](results, info)
    assert [(t["test-name"], t["passed"], t["score"], t["max-score"]) for t in tests] == [
        ("qkv: a", True, 4, 4),
        ("qkv: b", False, 1, 3),
        ("qkv: c", False, 0, 2),
    ]
    assert total == pytest.approx(1.25) and tests[2]["status"] == "not_run"
    assert entry["units"](0.125, 4) == 1 and entry["units"](0.1, 4) == 0


def test_a_leak_into_the_classroom50_autograders_stops_the_release(tmp_path, monkeypatch):
    """The leak audit runs over dist/classroom50 as over dist/student: an assignment.json naming a
    hidden test stops `make release` (here with the student tree and the Classroom 50 builders only)."""
    from autograder.instructor.release import build, classroom50
    from autograder.instructor.release.audit import hidden_test_names

    hidden = min(hidden_test_names(CONFIG.for_assignment("week7")))
    record = classroom50.assignment_record

    def leaky(ctx, name):
        data = record(ctx, name)
        data["note"] = f"see {hidden}"
        return data

    monkeypatch.setenv("AUTOGRADER_SEED_KEY_FILE", str(course_key()))
    monkeypatch.setattr(classroom50, "assignment_record", leaky)
    monkeypatch.setattr(build, "BUILDERS", [b for b in build.BUILDERS if b[0] in ("student", "classroom50")])
    monkeypatch.setattr(build, "stale", lambda config: [])
    with pytest.raises(build.ReleaseError) as info:
        build.release(CONFIG, tmp_path / "dist", VERSION, log=lambda _: None)
    # the folder --out names, not dist/ (nor the staging folder the release is built in)
    assert f"leak audit of {(tmp_path / 'dist' / 'classroom50').as_posix()}:" in str(info.value)
    assert "\n  week7/assignment.json:" in str(info.value) and f"names the hidden test {hidden}" in str(info.value)


def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_refused_release_leaves_dist_as_it_was_and_the_fixed_one_replaces_it(tmp_path, monkeypatch, capsys):
    """Stale stubs, then a leak found midway: each refusal leaves the previous dist/ byte for byte
    (MANIFEST.json too, so the next release still knows it as a release); the fixed release
    replaces it and says which course key it used (here with the student-tree builder only)."""
    from autograder.instructor.release import build, student

    monkeypatch.setenv("AUTOGRADER_SEED_KEY_FILE", str(course_key()))
    monkeypatch.setattr(build, "BUILDERS", [b for b in build.BUILDERS if b[0] == "student"])
    monkeypatch.setattr(build, "stale", lambda config: [])
    dist = tmp_path / "dist"
    assert build.main(CONFIG, dist, "1.0.0") == 0
    before = _tree_bytes(dist)
    assert "MANIFEST.json" in before

    monkeypatch.setattr(build, "stale", lambda config: ["exercises/qkv.py: differs from what `make stubs` writes"])
    assert build.main(CONFIG, dist, "1.0.1") == 1
    assert "nothing was released" in capsys.readouterr().err
    assert _tree_bytes(dist) == before

    monkeypatch.setattr(build, "stale", lambda config: [])
    real = student.build

    def leaky(ctx):  # a builder that writes half a tree, then the audit refuses it
        paths = real(ctx)
        (ctx.out / "student" / "leak.py").write_bytes((ROOT / "solutions" / "qkv.py").read_bytes())
        return paths

    monkeypatch.setattr(student, "build", leaky)
    assert build.main(CONFIG, dist, "1.0.1") == 1
    assert f"leak audit of {(dist / 'student').as_posix()}" in capsys.readouterr().err
    assert _tree_bytes(dist) == before
    assert not [p for p in tmp_path.iterdir() if p.name != "dist"]  # no building folder left behind

    monkeypatch.setattr(student, "build", real)
    assert build.main(CONFIG, dist, "1.0.2") == 0
    assert '"version": "1.0.2"' in (dist / "MANIFEST.json").read_text(encoding="utf-8")
