"""One full grade's wall time, as a ratio to ``python -c "import torch"`` on this machine.

Runs the two commands alternately (so machine load affects both alike) and reports
medians. The grade is the whole CLI: start-up, sandbox, every configured test of the
reference solutions, report, rendering, clean-up.

    .venv/bin/python tests/benchmarks/grade_time.py [--runs 7] [--skill qkv]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--skill", action="append", default=[])
    parser.add_argument("--format", default="json")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp()) / "results.out"
    grade = [sys.executable, "-m", "autograder", "grade", "solutions", "--format", args.format, "--output", str(out), "--seed", "1"]
    for skill in args.skill:
        grade += ["--skill", skill]
    torch_cmd = [sys.executable, "-c", "import torch"]
    timed(torch_cmd)  # warm the page cache for both
    timed(grade)
    torch_times, grade_times = [], []
    for _ in range(args.runs):
        torch_times.append(timed(torch_cmd))
        grade_times.append(timed(grade))
    tests = 0
    if args.format == "json":
        data = json.loads(out.read_text())
        tests = sum(len(s["tests"]) for s in data["skills"])
        score = f"{data['score']:g}/{data['max_score']:g}"
    else:
        score = "?"
    t, g = statistics.median(torch_times), statistics.median(grade_times)
    print(f"import torch : median {t:.3f} s  (runs: {', '.join(f'{x:.2f}' for x in torch_times)})")
    print(f"full grade   : median {g:.3f} s  (runs: {', '.join(f'{x:.2f}' for x in grade_times)}; {tests} tests, score {score})")
    print(f"ratio        : {g / t:.2f}  (target ≤ 1.5)")


if __name__ == "__main__":
    main()
