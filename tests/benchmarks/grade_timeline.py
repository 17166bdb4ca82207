"""Where a grade's wall time goes, stage by stage: each stage's median offset from the
command's start over several grades, from the stage marks the grader writes with
``AUTOGRADER_TIMELINE`` (autograder/core/timeline.py).

    .venv/bin/python tests/benchmarks/grade_timeline.py [--runs 5] [--warm] [--skill qkv] [SUBMISSION]

SUBMISSION defaults to solutions/ (the full grade: visible and hidden suites). ``--warm``
grades through a warm server started first (runner/process/warm.py), as a session's second
grade does; without it every grade starts its own trusted process (``AUTOGRADER_WARM=0``).
``PYTHONDONTWRITEBYTECODE=1``, as the Gradescope bundle runs. ``trusted: skill of …`` says
when a skill's tests began, in whichever of the two trusted processes took it (they share
the skills on two cores, and which takes which varies from run to run).

No target here: grade_time.py holds the targets; this says which stage to work on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def parse(text: str) -> list[tuple[float, int, str]]:
    """The file's lines as (seconds from the first mark, pid, stage)."""
    marks = []
    for line in text.splitlines():
        stamp, pid, stage = line.split(" ", 2)
        marks.append((float(stamp), int(pid), stage))
    if not marks:
        return []
    start = min(stamp for stamp, _pid, _stage in marks)
    return [(stamp - start, pid, stage) for stamp, pid, stage in sorted(marks)]


def stages(marks: list[tuple[float, int, str]]) -> list[tuple[str, float]]:
    """(stage, offset): each stage's first mark."""
    first: dict[str, float] = {}
    for offset, _pid, stage in marks:
        first.setdefault(stage, offset)
    return list(first.items())


def table(runs: list[list[tuple[str, float]]]) -> list[tuple[str, float, float, float]]:
    """(stage, median, min, max) over the runs, by median; a stage a run lacks is left out
    of that run's figures."""
    seen: dict[str, list[float]] = {}
    for run in runs:
        for label, offset in run:
            seen.setdefault(label, []).append(offset)
    rows = [(label, statistics.median(v), min(v), max(v)) for label, v in seen.items()]
    return sorted(rows, key=lambda row: row[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submission", nargs="?", default=str(ROOT / "solutions"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm", action="store_true", help="through a warm server (a session's next grade)")
    parser.add_argument("--skill", action="append", default=[])
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory(prefix="grade-timeline-") as tmp:
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", AUTOGRADER_WARM="1" if args.warm else "0")
        env["XDG_RUNTIME_DIR"] = os.path.join(tmp, "runtime")  # a warm server of this benchmark's own
        os.mkdir(env["XDG_RUNTIME_DIR"], 0o700)
        cmd = [sys.executable, "-m", "autograder", "grade", args.submission, "--format", "json", "--no-progress"]
        cmd += [part for skill in args.skill for part in ("--skill", skill)] + ["--output", os.path.join(tmp, "r.json")]
        server = None
        if args.warm:
            server = _start_server(env)
        try:
            for n in range(args.runs):
                path = os.path.join(tmp, f"{n}.timeline")
                subprocess.run(cmd, cwd=ROOT, env={**env, "AUTOGRADER_TIMELINE": path}, check=True, capture_output=True)
                runs.append(stages(parse(Path(path).read_text(encoding="utf-8"))))
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
    print(f"{'warm' if args.warm else 'cold'} grade of {args.submission}, {args.runs} runs (seconds from the command's start)")
    for label, median, low, high in table(runs):
        print(f"  {median:6.3f}  ({low:.3f}–{high:.3f})  {label}")
    return 0


def _start_server(env: dict[str, str]) -> _Pid:
    """A warm server for this root in the benchmark's own runtime folder, once it listens."""
    code = "\n".join(
        [
            f"import os, sys, time; sys.path.insert(0, {str(ROOT)!r})",
            "from autograder.config import load",
            "from autograder.runner.grade import preload_modules",
            "from autograder.runner.process import warm",
            f"config = load({str(ROOT / 'grading.toml')!r})",
            "warm.start(config, preload_modules(config))",
            f"log = warm.names({str(ROOT)!r})['log']",
            "while 'listening' not in (open(log).read() if os.path.exists(log) else ''):",
            "    time.sleep(0.1)",
            "print(warm.STARTED[-1].pid, flush=True)",
        ]
    )
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=300)
    return _Pid(int(done.stdout.split()[-1]))


class _Pid:
    """``terminate``/``wait`` for a process that is not our child (the server outlives its starter)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def terminate(self) -> None:
        try:
            os.kill(self.pid, 15)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float) -> None:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
