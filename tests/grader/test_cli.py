"""The command line is a registry of subcommands (autograder/commands.py): the students' in
autograder/cli.py, the instructors' found by module name in autograder/instructor/ when that
folder is there. `--help` lists each command on one line; a student copy (no
autograder/instructor/) lists the students' only; `grade` never imports the instructors' tools."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_layering import PACKAGE, imported_modules

from autograder import cli
from autograder.config import load
from autograder.instructor.release.context import ReleaseContext
from autograder.instructor.release.files import grader_files, write_tree

STUDENTS = ("grade", "ci-comment", "todo", "config-keys")  # every copy has them (autograder/cli.py)
INSTRUCTORS = ("batch", "release", "stubs", "snapshots", "reference-cpu", "audit", "nbgrader-course")


def _help(cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "autograder", "--help"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**env, "COLUMNS": "80"},
    )


def _listed(help_text: str) -> dict[str, str]:
    """{command: its help} from the `commands:` section, one line each."""
    section = help_text.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return {line.split()[0]: line.split(None, 1)[1] for line in section.splitlines()[1:]}


def test_help_lists_every_command_on_one_line_each():
    proc = _help(ROOT)
    assert proc.returncode == 0, proc.stderr
    listed = _listed(proc.stdout)
    assert list(listed) == [*STUDENTS, *INSTRUCTORS]
    for command in (*cli.COMMANDS, *cli.instructor_commands()):
        assert listed[command.name] == command.help, command.name


def test_a_student_copy_has_the_students_commands_only(tmp_path):
    """The grader as the student release ships it: no autograder/instructor/, and a command line
    that neither lists nor needs it."""
    config = load(ROOT / "grading.toml")
    ctx = ReleaseContext(repo=ROOT, config=config, out=tmp_path, version="0.0.0-test", commit="0" * 40, suite_hash="test")
    tree = tmp_path / "student"
    write_tree(tree, grader_files(ctx, include_hidden=False))
    assert (tree / "autograder" / "cli.py").is_file() and not (tree / "autograder" / "instructor").exists()
    proc = _help(tree)
    assert proc.returncode == 0, proc.stderr
    assert list(_listed(proc.stdout)) == list(STUDENTS)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "release", "--out", "dist", "--version", "1.0.0"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "`release` is not a command of this copy of the grader" in proc.stderr and "grade, ci-comment, todo" in proc.stderr


def test_grade_and_todo_do_not_import_the_instructors_tools():
    code = (
        "import sys\nfrom autograder import cli\n"
        "try:\n    cli.main(['grade', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('autograder.instructor')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("[]"), proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "argv, command",
    [
        (["stubs", "--bogus"], "stubs"),
        (["batch", "subs", "--out", "o", "--bogus"], "batch"),
        (["grade", "--bogus"], "grade"),
        (["frob"], ""),
        ([], ""),
    ],
)
def test_a_usage_error_is_one_line_exit_2_naming_the_right_help(argv, command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1, err
    assert f"(see `python -m autograder{' ' + command if command else ''} --help`)" in err, err


def test_only_the_command_line_names_the_instructors_package_and_never_imports_it():
    """Nothing outside autograder/instructor/ imports it (a student copy works without it); the
    core CLI names its modules as strings, and each of them exists and defines COMMANDS."""
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "instructor" in path.relative_to(PACKAGE).parts:
            continue
        bad = sorted(m for m in imported_modules(path) if m == "autograder.instructor" or m.startswith("autograder.instructor."))
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert not offenders, f"modules outside autograder/instructor/ import it: {offenders}"
    for name in cli.INSTRUCTOR_MODULES:
        assert (ROOT / (name.replace(".", "/") + ".py")).is_file(), name
    names = [c.name for c in cli.instructor_commands()]
    assert names == list(INSTRUCTORS) and not set(names) & {c.name for c in cli.COMMANDS}


@pytest.mark.skipif(__import__("shutil").which("make") is None, reason="no make on this machine")
@pytest.mark.parametrize("target", ["grade", "todo"])
def test_make_passes_a_folder_or_file_with_spaces_and_quotes_as_one_argument(tmp_path, target):
    """``make grade SUBMISSION="my exercises" OUTPUT="out put.json"`` (grade.mk, the student
    Makefile): each path reaches the command line as one argument, whatever it holds."""
    import shlex

    folder, out = "my O'Brien exercises", "re sults (1).json"  # make itself expands a "$"
    makefile = ROOT / "autograder" / "instructor" / "release" / "templates" / "student" / "Makefile"
    tree = tmp_path / "tree"
    (tree / "autograder").mkdir(parents=True)
    (tree / "Makefile").write_text(makefile.read_text(encoding="utf-8"), encoding="utf-8")
    (tree / "autograder" / "grade.mk").write_text((ROOT / "autograder" / "grade.mk").read_text(encoding="utf-8"))
    said = subprocess.run(
        ["make", "-n", "-o", ".venv/.requirements.stamp", target, f"SUBMISSION={folder}", f"OUTPUT={out}", "SEED=3"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert said.returncode == 0, said.stderr
    line = next(line for line in said.stdout.splitlines() if "-m autograder" in line)
    argv = shlex.split(line.lstrip("@"))
    assert argv[argv.index(target) + 1] == folder
    if target == "grade":
        assert argv[argv.index("--output") + 1] == out and argv[argv.index("--seed") + 1] == "3"
