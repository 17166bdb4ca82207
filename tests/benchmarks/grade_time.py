"""A single grade's wall time as a ratio to ``python -c "import torch"``, and its peak memory.

Three commands run in turn, round after round (so machine load affects all alike), and the
medians are compared:

- ``import torch`` — the yardstick: no grade can start faster than the trusted process's
  own ``import torch``;
- the full grade (instructors, Gradescope): every skill, visible + hidden suites, the
  reference solutions, ``python -m autograder grade solutions`` (target ≤ 1.5×);
- the student release's ``make grade``: what its Makefile runs (``python -m autograder
  grade``), in a copy of the release's student tree — visible suites only — grading the
  reference solutions copied into its ``exercises/`` (target ≤ 1.3×). ``make`` itself is not
  called: the copy's Makefile would install the requirements into a fresh ``.venv``.

Then one more run of each grade under ``proctree.measure`` gives the peak memory of the
whole process tree (CLI, trusted pytest process, fork server, workers): PSS, which shares
pages among the processes that map them, as a container's limit sees it (target ≤ 700 MB).
Sampling every 50 ms walks /proc, so those runs are not timed.

    .venv/bin/python tests/benchmarks/grade_time.py [--runs 7] [--release DIR] [--skill qkv]

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

from proctree import measure  # noqa: E402

TARGETS = {"full grade": 1.5, "student make grade": 1.3}
PSS_TARGET_MB = 700


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


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


def summary(path: Path) -> str:
    data = json.loads(path.read_text())
    tests = sum(len(s["tests"]) for s in data["skills"])
    return f"{tests} tests, score {data['score']:g}/{data['max_score']:g}, {data['status']}"


def main() -> None:
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
        for cmd, cwd in commands.values():  # warm the page cache (and the bytecode caches)
            timed(cmd, cwd)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (cmd, cwd) in commands.items():
                times[name].append(timed(cmd, cwd))
        memory = {}
        for name in outputs:
            cmd, cwd = commands[name]
            memory[name] = measure(cmd, cwd=cwd, env=dict(os.environ))
        base = statistics.median(times["import torch"])
        print(
            f"machine: {os.cpu_count()} cores, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.runs} rounds"
        )
        for name, values in times.items():
            median = statistics.median(values)
            line = f"{name:19s}: median {median:6.3f} s  (runs: {', '.join(f'{x:.2f}' for x in values)})"
            if name in TARGETS:
                line += f"\n{'':19s}  ratio {median / base:.2f} (target ≤ {TARGETS[name]})   {summary(outputs[name])}"
                m = memory[name]
                line += (
                    f"\n{'':19s}  peak memory, all processes: PSS {m.peak_pss_mib:.0f} MiB (target ≤ {PSS_TARGET_MB} MB), "
                    f"RSS {m.peak_rss_mib:.0f} MiB, {m.peak_processes} processes, {m.samples} samples"
                )
            print(line)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
