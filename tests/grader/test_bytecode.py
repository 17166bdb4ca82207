"""runner/process/bytecode.py: a run without .pyc gets its modules compiled ahead, on the
command line's idle core, and loads them from the run's private folder — only the grader's
and the suites' modules, only while their source is unchanged, and nothing is written
beside the sources."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT

from autograder.runner.process import bytecode


def _package(tmp_path: Path) -> tuple[Path, Path]:
    """A root with an ``autograder``-like package and a suites folder, one module each."""
    root, suites = tmp_path / "root", tmp_path / "root" / "suites"
    (root / "autograder" / "inner").mkdir(parents=True)
    suites.mkdir()
    (root / "autograder" / "__init__.py").write_text("")
    (root / "autograder" / "inner" / "__init__.py").write_text("")
    (root / "autograder" / "inner" / "part.py").write_text("VALUE = 'part'\n")
    (suites / "test_thing.py").write_text("VALUE = 'suite'\n")
    return root, suites


def _run(code: str, *paths: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter without bytecode writing (-B), this repository importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *map(str, paths)])}
    return subprocess.run(
        [sys.executable, "-B", "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120
    )


IMPORT_WITHOUT_COMPILING = """
    import importlib.machinery, sys
    from autograder.runner.process import bytecode
    root, suites, folder = {root!r}, {suites!r}, {folder!r}
    bytecode.compile_ahead(folder, root, suites).join()

    def compiled_from_source(self, data, path, **kwargs):
        raise RuntimeError(f"compiled from source: {{path}}")

    importlib.machinery.SourceFileLoader.source_to_code = compiled_from_source
    bytecode.install(folder, bytecode.roots(root, suites))
    sys.modules.pop("autograder", None)  # the grader's own package: found again under root
    sys.path[:0] = [root, suites]
    {body}
"""


def test_modules_compiled_ahead_are_loaded_from_the_run_folder_not_compiled_again(tmp_path):
    root, suites = _package(tmp_path)
    folder = tmp_path / "run" / "private" / "bytecode"
    body = """
    import test_thing
    import json.decoder  # a module outside the roots: its own loader, untouched
    print(test_thing.VALUE, type(test_thing.__loader__).__name__, json.decoder.__name__)
    """
    done = _run(IMPORT_WITHOUT_COMPILING.format(root=str(root), suites=str(suites), folder=str(folder), body=body))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["suite", "AheadLoader", "json.decoder"]
    assert oct(folder.stat().st_mode & 0o777) == "0o700"  # the grader's only
    assert not list(tmp_path.rglob("__pycache__"))  # nothing written beside the sources


def test_a_source_changed_after_it_was_compiled_ahead_is_compiled_from_source(tmp_path):
    root, suites = _package(tmp_path)
    folder = tmp_path / "bytecode"
    code = f"""
    import sys
    from autograder.runner.process import bytecode
    bytecode.compile_ahead({str(folder)!r}, {str(root)!r}, {str(suites)!r}).join()
    open({str(suites / "test_thing.py")!r}, "w").write("VALUE = 'changed since'\\n")
    bytecode.install({str(folder)!r}, bytecode.roots({str(root)!r}, {str(suites)!r}))
    sys.path.insert(0, {str(suites)!r})
    import test_thing
    print(test_thing.VALUE)
    """
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "changed since"


def test_only_sources_without_a_fresh_pyc_beside_them_are_compiled_ahead(tmp_path):
    root, suites = _package(tmp_path)
    import py_compile

    part = root / "autograder" / "inner" / "part.py"
    py_compile.compile(str(part), doraise=True)  # a fresh .pyc beside it, as an image built with compileall has
    assert bytecode.uncompiled(bytecode.roots(str(root), str(suites))) == [
        str(root / "autograder" / "__init__.py"),
        str(root / "autograder" / "inner" / "__init__.py"),
        str(suites / "test_thing.py"),
    ]
    part.write_text("VALUE = 'a longer source than before'\n")  # its .pyc is stale now
    assert str(part) in bytecode.uncompiled(bytecode.roots(str(root), str(suites)))


def test_a_run_that_writes_bytecode_compiles_nothing_ahead(tmp_path, monkeypatch):
    root, suites = _package(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert bytecode.wanted(str(root), str(suites)) == []
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert len(bytecode.wanted(str(root), str(suites))) == 4


def test_the_grader_instructors_commands_are_never_compiled_ahead(tmp_path):
    root, suites = _package(tmp_path)
    (root / "autograder" / "instructor").mkdir()
    (root / "autograder" / "instructor" / "batch.py").write_text("")
    found = bytecode.uncompiled(bytecode.roots(str(root), str(suites)))
    assert str(root / "autograder" / "inner" / "part.py") in found
    assert str(root / "autograder" / "instructor" / "batch.py") not in found


# slow: a cold copy of the repository graded twice (one skill each)
@pytest.mark.slow
def test_a_cold_copy_graded_without_bytecode_scores_the_same_and_writes_nothing_beside_its_sources(tmp_path):
    copy = tmp_path / "course"
    skip = shutil.ignore_patterns("__pycache__", ".venv", ".git", "dist", "*.egg-info")
    for name in ("autograder", "solutions", "docs", "tests/suites"):
        shutil.copytree(ROOT / name, copy / name, ignore=skip)
    shutil.copyfile(ROOT / "grading.toml", copy / "grading.toml")
    outcomes = []
    for dont_write in ("1", ""):
        out = tmp_path / f"results-{dont_write or 'writing'}.json"
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": dont_write, "TMPDIR": str(tmp_path)}
        done = subprocess.run(
            [sys.executable, "-m", "autograder", "grade", "solutions", "--skill", "sdpa_masks", "--seed", "7"]
            + ["--format", "json", "--output", str(out), "--no-progress"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        results = json.loads(out.read_text())
        outcomes.append([(t["id"], t["status"], t["score"]) for s in results["skills"] for t in s["tests"]])
        if dont_write:
            assert not list(copy.rglob("__pycache__"))  # compiled ahead into the run's folder only
            assert not list(tmp_path.glob("autograder-*"))  # which went with the run
    assert outcomes[0] == outcomes[1] and outcomes[0]
    assert list(copy.rglob("__pycache__"))  # the second run, allowed to, wrote its .pyc as always


def test_a_run_folder_removed_while_compiling_ahead_stays_removed(tmp_path, monkeypatch):
    """A command line that stops before grading (a missing submission) removes the run
    folder while the compile-ahead may still be writing: nothing may reappear in it."""
    from autograder.runner.process.trusted import remove_run_dir

    root, suites = _package(tmp_path)
    for i in range(300):
        (suites / f"test_many_{i}.py").write_text(f"VALUE = {i}\n" * 50)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    run = tmp_path / "autograder-run"
    (run / "private").mkdir(parents=True)
    thread = bytecode.compile_ahead(str(run / "private" / "bytecode"), str(root), str(suites))
    remove_run_dir(run)
    thread.join(timeout=60)
    assert not thread.is_alive() and not run.exists()
