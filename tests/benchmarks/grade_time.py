"""A single grade's wall time as a ratio to ``python -c "import torch"``, and its peak memory.

Three commands run in turn, round after round (so machine load affects all alike), and the
medians are compared:

- ``import torch`` — the yardstick: no grade can start faster than the trusted process's
  own ``import torch``;
- the full grade (instructors, Gradescope): every skill, visible + hidden suites, the
  reference solutions, ``python -m autograder grade solutions`` (target ≤ 1.3×);
- each grade again, ``(warm)``: forked from a warm server the benchmark started first
  (runner/process/warm.py), as the next ``make grade`` of a working session is; reported,
  not a target (the targets are the cold grades, started with ``AUTOGRADER_WARM=0``);
- the student release's ``make grade``: what its Makefile runs (``python -m autograder
  grade``), in a copy of the release's student tree — visible suites only — grading the
  reference solutions copied into its ``exercises/`` (target ≤ 1.1×). ``make`` itself is not
  called: the copy's Makefile would install the requirements into a fresh ``.venv``.

Then one more run of each grade under ``proctree.measure`` gives the peak memory of the
whole process tree (CLI, trusted pytest process, fork server, workers): PSS, which shares
pages among the processes that map them, as a container's limit sees it (target ≤ 700 MB).
Sampling every 50 ms walks /proc, so those runs are not timed.

    .venv/bin/python tests/benchmarks/grade_time.py [--runs 7] [--release DIR] [--skill qkv]

Exit status: 0 when every target is met, 1 when one is missed (each named on the last lines:
a benchmark that misses its target says so to `make benchmark` and CI, not only in its text).

``--release DIR`` reuses a built release (``python -m autograder release --out DIR --version 1.0.0``);
without it one is built from this tree into a temporary folder (~15 s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from proctree import measure

#: issue 32's targets (the earlier ones were 1.5× and 1.3×)
TARGETS = {"full grade": 1.3, "student make grade": 1.1}
PSS_TARGET_MB = 700


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def start_warm_server(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120.0) -> None:
    """One grade that leaves a warm server (``AUTOGRADER_WARM=1``), then wait until it listens."""

    def listening() -> int:
        return sum("listening" in log.read_text() for log in folder.glob("*.log"))

    folder = Path(env["XDG_RUNTIME_DIR"]) / f"autograder-warm-{os.getuid()}"
    before = listening() if folder.is_dir() else 0
    subprocess.run(
        cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**env, "AUTOGRADER_WARM": "1"}
    )
    deadline = time.monotonic() + timeout
    while listening() <= before:
        if time.monotonic() > deadline:
            raise SystemExit("the warm server did not start: see its log in " + str(folder))
        time.sleep(0.2)


def stop_warm_servers(env: dict[str, str]) -> None:
    """Kill the servers the benchmark started (their pids are in their logs)."""
    import re
    import signal

    for log in (Path(env["XDG_RUNTIME_DIR"]) / f"autograder-warm-{os.getuid()}").glob("*.log"):
        for pid in re.findall(r"listening: pid (\d+)", log.read_text()):
            try:
                os.kill(int(pid), signal.SIGTERM)
            except ProcessLookupError:
                pass


def student_tree(release: Path | None, work: Path) -> Path:
    """A copy of the release's student tree whose exercises/ hold the reference solutions."""
    if release is None:
        release = work / "release"
        subprocess.run(
            [sys.executable, "-m", "autograder", "release", "--out", str(release), "--version", "0.0.0"],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    source = release / "student"
    if not (source / "grading.toml").is_file():
        raise SystemExit(
            f"{source}: no student tree there (build one with `python -m autograder release --out DIR --version 1.0.0`)"
        )
    tree = work / "student"
    shutil.copytree(source, tree)
    for module in (tree / "exercises").glob("*.py"):
        reference = ROOT / "solutions" / module.name
        if reference.is_file():
            shutil.copyfile(reference, module)
    return tree


def missed(ratios: dict[str, float], pss_mib: dict[str, float], complete: dict[str, bool] | None = None) -> list[str]:
    """Each target missed, said: a time ratio above its target, a peak PSS above 700 MB, a grade
    that did not complete (its time measures nothing)."""
    out = []
    for name, target in TARGETS.items():
        if name in ratios and ratios[name] > target:
            out.append(f"{name}: {ratios[name]:.2f}× import torch, target ≤ {target}×")
        if name in pss_mib and pss_mib[name] * 1.048576 > PSS_TARGET_MB:
            out.append(f"{name}: peak PSS {pss_mib[name] * 1.048576:.0f} MB, target ≤ {PSS_TARGET_MB} MB")
        if complete is not None and not complete.get(name, True):
            out.append(f"{name}: the grade did not complete — its time measures nothing")
    return out


def summary(path: Path) -> str:
    data = json.loads(path.read_text())
    tests = sum(len(s["tests"]) for s in data["skills"])
    return f"{tests} tests, score {data['score']:g}/{data['max_score']:g}, {data['status']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--release", type=Path, default=None, help="a built release folder (default: build one)")
    parser.add_argument("--skill", action="append", default=[], help="grade only these skills (both grades)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="autograder-bench-"))
    try:
        student = student_tree(args.release, work)
        skills = [a for s in args.skill for a in ("--skill", s)]
        outputs = {"full grade": work / "full.json", "student make grade": work / "student.json"}
        commands = {
            "import torch": ([sys.executable, "-c", "import torch"], ROOT),
            "full grade": (
                [
                    sys.executable,
                    "-m",
                    "autograder",
                    "grade",
                    "solutions",
                    "--format",
                    "json",
                    "--output",
                    str(outputs["full grade"]),
                    "--seed",
                    "1",
                    "--no-progress",
                    *skills,
                ],
                ROOT,
            ),
            "student make grade": (
                [
                    sys.executable,
                    "-m",
                    "autograder",
                    "grade",
                    "--format",
                    "json",
                    "--output",
                    str(outputs["student make grade"]),
                    "--seed",
                    "1",
                    "--no-progress",
                    *skills,
                ],
                student,
            ),
        }
        # the cold grades start their own processes; a warm one is forked from a server this
        # benchmark started, in a folder of its own (runner/process/warm.py)
        runtime = work / "runtime"
        runtime.mkdir(mode=0o700)
        cold = {**os.environ, "AUTOGRADER_WARM": "0"}
        warm_env = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_WARM"}
        warm_env["XDG_RUNTIME_DIR"] = str(runtime)
        envs = {name: cold for name in commands}
        for name in outputs:
            commands[f"{name} (warm)"] = commands[name]
            envs[f"{name} (warm)"] = warm_env
        for cmd, cwd in commands.values():  # warm the page cache (and the bytecode caches)
            timed(cmd, cwd, cold)
        for name in outputs:
            start_warm_server(*commands[name], warm_env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (cmd, cwd) in commands.items():
                times[name].append(timed(cmd, cwd, envs[name]))
        stop_warm_servers(warm_env)
        memory = {}
        for name in outputs:
            cmd, cwd = commands[name]
            memory[name] = measure(cmd, cwd=cwd, env=cold)
        base = statistics.median(times["import torch"])
        print(
            f"machine: {os.cpu_count()} cores, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.runs} rounds"
        )
        for name, values in times.items():
            median = statistics.median(values)
            line = f"{name:19s}: median {median:6.3f} s  (runs: {', '.join(f'{x:.2f}' for x in values)})"
            if name.endswith("(warm)"):
                line += f"\n{'':19s}  ratio {median / base:.2f} (the next grade, within [grader] warm_idle_s; no target)"
            if name in TARGETS:
                line += f"\n{'':19s}  ratio {median / base:.2f} (target ≤ {TARGETS[name]})   {summary(outputs[name])}"
                m = memory[name]
                line += (
                    f"\n{'':19s}  peak memory, all processes: PSS {m.peak_pss_mib:.0f} MiB (target ≤ {PSS_TARGET_MB} MB), "
                    f"RSS {m.peak_rss_mib:.0f} MiB, {m.peak_processes} processes, {m.samples} samples"
                )
            print(line)
        ratios = {name: statistics.median(times[name]) / base for name in TARGETS}
        pss = {name: memory[name].peak_pss_mib for name in TARGETS}
        complete = {name: json.loads(outputs[name].read_text())["status"] == "complete" for name in TARGETS}
        problems = missed(ratios, pss, complete)
        for problem in problems:
            print(f"MISSED {problem}")
        print("all targets met" if not problems else f"{len(problems)} target(s) missed")
        return 1 if problems else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
