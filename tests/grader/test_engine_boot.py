"""The trusted pytest process started ahead of its run (runner/boot.py): it grades exactly
as one started after the config is read, and a command line that stops before grading
leaves neither it nor its run folder behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SEED, SOLUTIONS, write_config

from autograder.config import load
from autograder.runner import engine
from autograder.runner.grade import GradeRequest, grade, start


def _outcome(results) -> list[tuple]:
    return [(t.id, t.status, t.score) for skill in results.skills for t in skill.tests]


# slow: two full two-skill gradings compared; make test keeps the cheap start-ahead tests
# (no process for a bad config, clean-up when the command line dies)
@pytest.mark.slow
def test_a_run_started_ahead_grades_exactly_like_one_started_after_the_config():
    config = load(ROOT / "grading.toml").select(["qkv", "masks"])
    booted = engine.boot(ROOT)
    started = start(config, booted=booted)
    assert started.engine.proc is booted.proc and booted.taken and started.run_dir == booted.run_dir
    ahead = grade(GradeRequest(config, str(SOLUTIONS), seed=SEED, started=started))
    after = grade(GradeRequest(config, str(SOLUTIONS), seed=SEED))
    assert ahead.status == after.status == "complete", (ahead.message, after.message)
    assert ahead.score == after.score == ahead.max_score
    assert _outcome(ahead) == _outcome(after) and ahead.seed == after.seed
    assert not booted.run_dir.exists()  # the run removed its folder as always


def test_a_process_started_for_another_root_is_stopped_not_used(tmp_path):
    config = load(ROOT / "grading.toml").select(["qkv"])
    booted = engine.boot(ROOT)
    booted.root = tmp_path  # as if started for a different repository
    started = start(config, booted=booted)
    try:
        assert started.engine.proc is not booted.proc
        assert booted.proc.poll() is not None and not booted.run_dir.exists()
    finally:
        started.release()


def test_a_process_started_ahead_exits_when_no_run_comes():
    booted = engine.boot(ROOT)
    os.close(booted.manifest_write)  # the command line stopped before grading
    booted.manifest_write = os.open(os.devnull, os.O_WRONLY)  # for release() to close
    try:
        assert booted.proc.wait(timeout=120) == 0
    finally:
        booted.release()
    assert not booted.run_dir.exists()


@pytest.mark.parametrize(
    "args", [["/no/such/submission"], ["--no-such-option"], ["--help"]], ids=["missing-submission", "bad-option", "help"]
)
def test_a_command_line_that_stops_before_grading_leaves_no_process_and_no_folder(tmp_path, args):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", *args, "--format", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 2), proc.stderr
    assert list(scratch.iterdir()) == []
    assert _processes_with(f"TMPDIR={scratch}") == []


@pytest.mark.parametrize("stage", ["before-its-arguments", "before-the-manifest"])
def test_a_process_started_ahead_cleans_up_when_its_command_line_dies(stage):
    """Killed, the command line cleans nothing; the pipe it held closes, and the process it
    started removes the run folder and exits, whether or not it had its pytest arguments."""
    config = load(ROOT / "grading.toml").select(["qkv"])
    booted = engine.boot(ROOT)
    proc, run_dir = booted.proc, booted.run_dir
    if stage == "before-the-manifest":
        started = start(config, booted=booted)
        started.taken = True
        os.close(started.engine._progress_read)
        os.close(started.engine._manifest_write)  # what the command line's death does
        started.engine._log_fh.close()
    else:
        booted.taken = True  # nobody releases it
        os.close(booted.manifest_write)
        os.close(booted.progress_read)
        booted.log_fh.close()
    proc.wait(timeout=120)
    assert not run_dir.exists()


def _processes_with(entry: str) -> list[int]:
    """Live processes whose environment holds ``entry`` (every process we start keeps TMPDIR)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.encode() in environ and int(pid) != os.getpid():
            found.append(int(pid))
    return found


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ROOT),
        (["solutions", "--config", str(ROOT / "grading.toml")], ROOT),
        ([f"--config={ROOT / 'grading.toml'}"], ROOT),
        (["--config", "/elsewhere/grading.toml"], None),
        (["--help"], None),
    ],
)
def test_a_process_is_started_ahead_only_for_the_package_roots_config(argv, expected):
    assert engine.boot_root(argv) == expected


# --------------------------------------------------------------------------- how processes start (runner/process)
def test_importing_the_plugin_and_the_preloads_starts_no_process():
    """No work at import time: the grading plugin's entry imports no torch, and neither it nor
    its parts nor everything a trusted process preloads (runner/process/preimport.py) starts a
    process — the sandbox fork server is started by the plugin's first hook, in a grading run."""
    code = (
        "import os, sys\n"
        "import autograder.runner.plugin\n"
        "assert 'torch' not in sys.modules, 'the plugin entry imported torch'\n"
        "from autograder.runner.process import preimport\n"
        "assert preimport.pytest_side() == []\n"
        "assert preimport.torch_side() == []\n"
        "import autograder.runner.plugin.fixtures, autograder.runner.plugin.report\n"
        "print(repr(open(f'/proc/self/task/{os.getpid()}/children').read().split()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_a_bad_config_never_starts_a_trusted_process(tmp_path, capsys, monkeypatch):
    """grading.toml is checked in full before the trusted process starts: a config that only
    the full check rejects (a weight names a test its suite file does not define) costs no
    torch start."""
    from autograder import cli
    from autograder.runner import grade as grade_mod

    path = write_config(
        tmp_path / "grading.toml",
        {"test_attention_scores_reproduce_week7_raw_scores = 1\n": "test_attention_scores_reproduce_week7_raw_score = 1\n"},
    )
    started = []
    monkeypatch.setattr(grade_mod, "start", lambda *a, **k: started.append(a) or pytest.fail("a trusted process was started"))
    monkeypatch.setattr(engine, "popen", lambda *a, **k: started.append(a) or pytest.fail("a process was started"))
    rc = cli.main(
        [
            "grade",
            str(SOLUTIONS),
            "--config",
            str(path),
            "--output",
            str(tmp_path / "r.json"),
            "--format",
            "json",
            "--no-progress",
        ]
    )
    assert rc == 2 and "did you mean 'test_attention_scores_reproduce_week7_raw_scores'" in capsys.readouterr().err
    assert started == []
