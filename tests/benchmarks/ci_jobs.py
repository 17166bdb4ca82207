"""How long a push waits for CI (issue 32, point 4: ≤ 5 minutes on a 2-core runner): each
job of the instructors' workflow that runs the grader's own tests, timed on this machine as
a runner would run it — a fresh ``git clone`` of HEAD, the venv made from scratch by
``make`` (pip from this machine's cache, as ``actions/setup-python``'s pip cache serves it),
then the job's command:

- ``make test`` (lint, then the fast set), the job each Python of the matrix runs;
- ``make test-slow SPLIT=K/N`` for each part K of the workflow's N (``make-test-slow``'s
  matrix: tests/grader/slow_durations.json balances them).

The jobs run on separate runners at the same time, so a push waits for the longest one;
here they run one after the other, each on the whole machine, as a runner has its own.
``--serial`` times ``.ci/run`` instead (both sets whole, one after the other, as on one
machine): printed, not a target.

    .venv/bin/python tests/benchmarks/ci_jobs.py [--serial] [--keep DIR]

Machine load inflates every figure (a runner is a machine of its own): the load average is
printed beside each job. Exit status 1 when a job fails or the longest passes 5 minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "test.yml"
TARGET_S = 300.0


def jobs() -> list[tuple[str, list[str]]]:
    """(name, command) of each job that runs the grader's tests, read from the workflow."""
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]
    parts = workflow["make-test-slow"]["strategy"]["matrix"]["part"]
    return [("make test", ["make", "test"])] + [
        (f"make test-slow SPLIT={k}/{len(parts)}", ["make", "test-slow", f"SPLIT={k}/{len(parts)}"]) for k in parts
    ]


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def run_job(name: str, command: list[str], folder: Path) -> tuple[int, float, str]:
    """A fresh clone in ``folder``, then ``command`` in it: (exit status, wall seconds, the
    output's last line)."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(folder)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    start = time.monotonic()
    proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    (folder.parent / (folder.name + ".log")).write_text(proc.stdout + proc.stderr, encoding="utf-8")
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    return proc.returncode, seconds, lines[-1] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serial", action="store_true", help="time .ci/run (both sets, one machine) instead")
    parser.add_argument("--keep", type=Path, help="clone into this folder and keep the clones and logs")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ci-jobs-"))
    work.mkdir(parents=True, exist_ok=True)
    todo = [(".ci/run", [".ci/run"])] if args.serial else jobs()
    results = []
    try:
        for i, (name, command) in enumerate(todo):
            before = load()
            rc, seconds, last = run_job(name, command, work / f"job{i}")
            results.append((name, rc, seconds))
            print(f"{name:32s} rc {rc}  {seconds:6.0f} s  (load {before} → {load()})  {last[:80]}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    lines, status = verdict(results, args.serial)
    print("\n".join(lines))
    return status


def verdict(results: list[tuple[str, int, float]], serial: bool = False) -> tuple[list[str], int]:
    """The closing lines for (name, exit status, seconds) of each job, and the exit status:
    1 when a job failed or, for the workflow's jobs, the longest passed the target."""
    failed = [name for name, rc, _ in results if rc != 0]
    longest = max(seconds for _, _, seconds in results)
    if serial:
        lines = [f".ci/run, serial: {longest:.0f} s (one machine; the workflow runs its jobs side by side)"]
    else:
        met = "met" if longest <= TARGET_S else "missed"
        lines = [f"a push waits for the longest job: {longest:.0f} s (target ≤ {TARGET_S:.0f} s): {met}"]
    if failed:
        lines.append("failed: " + ", ".join(failed))
    return lines, 1 if failed or (not serial and longest > TARGET_S) else 0


if __name__ == "__main__":
    sys.exit(main())
