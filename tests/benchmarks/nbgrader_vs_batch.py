"""The same submissions graded two ways, timed in one run: the release's nbgrader course
(``nbgrader generate_assignment`` + ``autograde`` + ``export``, headless, as
tests/grader/nbgrader_headless.round_trip runs it) vs ``python -m autograder batch``.

The submissions: the first N (default 20) non-hostile ones of batch_throughput's generated
class (correct styles, single mistakes, stubs) — nbgrader runs students' code in its own
kernel without a sandbox, so hostile code is left out of its side. Each student's modules
fill the solution cells of the released notebooks (one notebook per skill).

    .venv/bin/python tests/benchmarks/nbgrader_vs_batch.py [--count 20] [--jobs 2]

nbgrader must be installed (requirements-instructor.txt; `make test` installs it).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "grader"))
from batch_throughput import generate
from nbgrader_headless import round_trip

from autograder.config import load
from autograder.instructor.release import ReleaseContext, nbgrader_course
from autograder.runner.grade import suite_hash


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    config = load(ROOT / "grading.toml")
    assignment = config.nbgrader_release.assignment
    work = Path(tempfile.mkdtemp(prefix="nbgrader-vs-batch-"))

    pool = work / "pool"
    pool.mkdir()
    kinds = generate(pool, max(args.count * 2, 40))
    chosen = [n for n in sorted(kinds, key=lambda n: (int(n.split("-")[1]), n)) if not kinds[n].startswith("hostile")][
        : args.count
    ]
    subs = work / "submissions"
    subs.mkdir()
    for name in chosen:
        shutil.copytree(pool / name, subs / name)
    print(
        f"{len(chosen)} submissions: "
        + ", ".join(sorted({kinds[n].split(":")[0] for n in chosen}))
        + f"; load {os.getloadavg()[0]:.2f}"
    )

    # nbgrader runs `alembic` from PATH; a venv moved or shared between checkouts can hold an
    # `alembic` script whose #! names a Python that no longer exists: a fallback behind it
    shim = work / "bin"
    shim.mkdir()
    (shim / "alembic").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m alembic "$@"\n')
    (shim / "alembic").chmod(0o755)
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), str(shim)])

    ctx = ReleaseContext(
        repo=ROOT, config=config, out=work / "dist", version="bench", commit="0" * 16, suite_hash=suite_hash(config)
    )
    start = time.monotonic()
    nbgrader_course.build(ctx)
    built = time.monotonic() - start
    start = time.monotonic()
    trip = round_trip(work / "dist" / "nbgrader", work / "nb", {n: subs / n for n in chosen}, assignment)
    nb_total = time.monotonic() - start
    print(
        f"nbgrader: building the course {built:.1f} s (not counted); "
        f"generate_assignment {trip.seconds.get('generate_assignment')} s, autograde {trip.seconds.get('autograde')} s, "
        f"export {trip.seconds.get('export')} s — total {nb_total:.1f} s (includes writing the notebooks)"
    )

    out = work / "batch-out"
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "batch", str(subs), "--out", str(out), "--jobs", str(args.jobs), "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    batch_s = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"batch failed: {proc.stderr[-2000:]}")
    print(f"autograder batch --jobs {args.jobs}: {batch_s:.1f} s (visible + hidden suites, sandboxed)")
    print(
        f"nbgrader autograde alone / batch: {trip.seconds.get('autograde', 0) / batch_s:.2f}; nbgrader total / "
        f"batch: {nb_total / batch_s:.2f}"
    )

    with open(out / "gradebook.csv", encoding="utf-8") as fh:
        ours = {row["folder"]: float(row["total"]) for row in csv.DictReader(fh)}
    same = sum(1 for n in chosen if abs(trip.scores.get(n, -1) - ours.get(n, -2)) < 1e-6)
    print(
        f"scores: {same}/{len(chosen)} equal (one score where a mistake breaks a whole function; one that breaks "
        "only some of its kinds, or a property the notebook checks cannot see, still differs: dist/nbgrader/README.md)"
    )
    for name in chosen:
        print(
            f"  {name:<14} {kinds[name]:<36} nbgrader {trip.scores.get(name, float('nan')):>7.2f}   batch "
            f"{ours.get(name, float('nan')):>7.2f}"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
