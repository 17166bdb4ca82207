"""The recipes that run `autograder batch` on what a course already has: `make batch` (its
variables passed, an unknown one refused), the Slurm recipe (examples/slurm/grade-class.sbatch:
an array job and a dependent merge, run here with the Slurm variables set by hand and a stub
`sbatch`) and the GitHub Actions workflow .github/workflows/regrade.yml (a matrix of shards and
one merge job; actionlint runs over it in test_workflows.py)."""

from __future__ import annotations

import csv
import io
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import EXERCISES, ROOT, SOLUTIONS

SBATCH = ROOT / "examples" / "slurm" / "grade-class.sbatch"
REGRADE = ROOT / ".github" / "workflows" / "regrade.yml"


def _make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_batch_passes_roster_assignment_shard_and_merge_and_refuses_an_unknown_variable():
    proc = _make("batch", "SUBMISSIONS=class", "OUT=graded", "ROSTER=roster.csv", "ASSIGNMENT=week7", "SHARD=slurm")
    assert proc.returncode == 0, proc.stderr
    command = " ".join(proc.stdout.replace("\\\n", " ").split())
    assert '-m autograder batch "class" --out "graded"' in command
    assert '--roster "roster.csv"' in command and '--assignment "week7"' in command and '--shard "slurm"' in command
    merged = _make("batch", "SUBMISSIONS=class", "OUT=all", "MERGE=p1 p2", "ACCEPT_UNMATCHED=1")
    assert "--merge p1 p2" in merged.stdout and "--accept-unmatched" in merged.stdout, merged.stderr
    typo = _make("batch", "SUBMISSIONS=class", "OUT=graded", "ROSTR=roster.csv")
    assert typo.returncode != 0 and "make batch: unknown variable(s) ROSTR" in typo.stderr and "ROSTER" in typo.stderr


def _key(path: Path) -> Path:
    path.write_text(secrets.token_hex(32) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHON=sys.executable, REPO=str(ROOT), PYTHONPATH=str(ROOT), **extra)
    return env


def test_the_slurm_recipe_submits_an_array_and_a_merge_that_waits_for_it(tmp_path):
    """On the login node the script submits itself twice: an array of SHARDS tasks counted from
    0, and the merge with afterok on the array's id (a stub sbatch records the calls)."""
    stub = tmp_path / "bin"
    stub.mkdir()
    log = tmp_path / "sbatch.log"
    (stub / "sbatch").write_text(f'#!/bin/sh\necho "$@" >> {log}\necho "4242;cluster"\n', encoding="utf-8")
    (stub / "sbatch").chmod(0o755)
    env = _env(
        PATH=f"{stub}{os.pathsep}{os.environ['PATH']}",
        CLASS_DIR=str(tmp_path / "class"),
        OUT_DIR=str(tmp_path / "out"),
        COURSE_KEY=str(_key(tmp_path / "course.key")),
        SHARDS="3",
    )
    proc = subprocess.run(["bash", str(SBATCH)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text(encoding="utf-8").splitlines()
    assert calls == [
        f"--parsable --array=0-2 --export=ALL {SBATCH} shard",
        f"--parsable --dependency=afterok:4242 --export=ALL {SBATCH} merge",
    ]
    no_key = subprocess.run(
        ["bash", str(SBATCH)], env={**env, "COURSE_KEY": str(tmp_path / "absent.key")}, capture_output=True, text=True
    )
    assert no_key.returncode == 2 and "put the course key on a path every node mounts" in no_key.stderr


def _gradebook(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


# slow: the class is graded five times (three array tasks, the merge, one run to compare)
@pytest.mark.slow
def test_the_slurm_recipe_shards_and_merge_equal_one_run_over_the_class(tmp_path, fast_config):
    """The array's three tasks (0-based: SLURM_ARRAY_TASK_ID 0, 1, 2 set by hand, as Slurm sets
    them) and then the merge role give the gradebook and LMS files of one run over the class."""
    subs = tmp_path / "class"
    subs.mkdir()
    shutil.copytree(SOLUTIONS, subs / "Ana García", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(EXERCISES, subs / "Bob Smith", ignore=shutil.ignore_patterns("__pycache__"))
    (subs / "Cy Díaz.zip").write_bytes(b"PK\x03\x04 not a zip")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\n1,Ana García\n2,Bob Smith\n3,Cy Díaz\n4,Di Evans\n", encoding="utf-8")
    key = _key(tmp_path / "course.key")
    extra = f"--skill qkv --config {fast_config} --jobs 1"
    env = _env(CLASS_DIR=str(subs), OUT_DIR=str(tmp_path / "out"), COURSE_KEY=str(key), ROSTER=str(roster), BATCH_ARGS=extra)
    for task in range(3):
        slurm = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "3"}
        proc = subprocess.run(["bash", str(SBATCH), "shard"], env={**env, **slurm}, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"shard {task + 1}/3" in proc.stderr
    merge = subprocess.run(["bash", str(SBATCH), "merge"], env=env, capture_output=True, text=True, timeout=600)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    whole = tmp_path / "whole"
    one = subprocess.run(
        [sys.executable, "-m", "autograder", "batch", str(subs), "--out", str(whole), "--seed-key-file", str(key)]
        + ["--roster", str(roster), "--no-progress", *extra.split()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert one.returncode == 0, one.stdout + one.stderr
    merged = tmp_path / "out" / "merged"
    for rel in ("gradebook.csv", "lms/canvas.csv", "lms/grades.csv", "lms/unmatched.csv"):
        assert (merged / rel).read_bytes() == (whole / rel).read_bytes(), rel
    book = {row["folder"]: row for row in _gradebook(merged / "gradebook.csv")}
    assert float(book["Ana_García"]["total"]) > 0 and book["Cy_Díaz"]["status"] == "error"


def test_the_regrade_workflow_runs_a_matrix_of_shards_and_one_merge_of_their_artifacts():
    data = yaml.safe_load(REGRADE.read_text(encoding="utf-8"))
    on = data.get("on", data.get(True))
    assert "workflow_dispatch" in on and {"submissions", "shards", "roster"} <= set(on["workflow_dispatch"]["inputs"])
    jobs = data["jobs"]
    assert jobs["grade"]["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    grade_steps = jobs["grade"]["steps"]
    run = "\n".join(str(s.get("run", "")) for s in grade_steps)
    assert '--shard "$SHARD"' in run and "--seed-key-file" in run
    assert any(str(s.get("uses", "")).startswith("actions/upload-artifact@") for s in grade_steps)
    assert set(jobs["merge"]["needs"]) == {"plan", "grade"}
    merge_steps = jobs["merge"]["steps"]
    assert any(s.get("with", {}).get("pattern") == "part-*" for s in merge_steps)
    merge_run = "\n".join(str(s.get("run", "")) for s in merge_steps)
    assert "--merge" in merge_run and '--roster "$ROSTER"' in merge_run
    assert any(s.get("with", {}).get("name") == "gradebook" for s in merge_steps)
    for job in jobs.values():  # inputs reach the shell through env, never pasted into a script
        for step in job["steps"]:
            assert "${{ inputs." not in str(step.get("run", "")), step
