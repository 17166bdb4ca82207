"""The same submissions graded two ways, timed in one run, with one course key: the release's
nbgrader course (``nbgrader generate_assignment`` + ``autograde`` + ``export``, headless, as
tests/grader/nbgrader_headless.round_trip runs it: ``autograde --student`` for each student,
two at a time, as ``batch --jobs 2`` grades two) vs ``python -m autograder batch``; then
each student's score in each skill, nbgrader's notebook next to the batch's skill column.
One score: every skill equal, exactly (the exit status is 1 otherwise).

The submissions: the first N (default 20) non-hostile ones of batch_throughput's generated
class (correct styles, single mistakes, stubs) — nbgrader runs students' code in its own
kernel without a sandbox, so hostile code is left out of its side — or, with ``--mistakes``,
every single-mistake variant of tests/submissions/mistakes/ (``--limit`` the first N). Each
student's modules fill the solution cells of the released notebooks (one notebook per skill).
``--in-process`` scores the notebooks with the course config's autograde step
(ScoreFromGrader, then nbgrader's determine_grade: ``nbgrader_headless.autograde_in_process``)
instead of the whole nbgrader round trip: the kernel's Execute, which cannot change a score,
is what it leaves out, so all 178 mistakes take minutes, not hours.

    .venv/bin/python tests/benchmarks/nbgrader_vs_batch.py [--count 20] [--jobs 2]
    .venv/bin/python tests/benchmarks/nbgrader_vs_batch.py --mistakes --in-process [--limit N]

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
from nbgrader_headless import autograde_in_process, round_trip, submit

from autograder.config import load
from autograder.instructor.release import ReleaseContext, nbgrader_course
from autograder.runner.grade import suite_hash


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--mistakes", action="store_true", help="every single-mistake variant instead of a generated class")
    parser.add_argument("--limit", type=int, default=0, help="with --mistakes: the first N only")
    parser.add_argument("--in-process", action="store_true", help="the course config's autograde step, without kernels")
    args = parser.parse_args()
    config = load(ROOT / "grading.toml")
    assignment = config.nbgrader_release.assignment
    work = Path(tempfile.mkdtemp(prefix="nbgrader-vs-batch-"))

    subs = work / "submissions"
    subs.mkdir()
    if args.mistakes:
        sys.path.insert(0, str(ROOT / "tests" / "submissions"))
        import variants

        entries = [(sid, m) for sid in config.skills for m in variants.mistakes(sid)]
        entries = entries[: args.limit] if args.limit else entries
        kinds = {}
        for sid, m in entries:
            name = f"{sid}--{m['id']}"
            variants.build(subs / name, [m])
            kinds[name] = f"mistake:{sid}"
        chosen = list(kinds)
    else:
        pool = work / "pool"
        pool.mkdir()
        kinds = generate(pool, max(args.count * 2, 40))
        chosen = [n for n in sorted(kinds, key=lambda n: (int(n.split("-")[1]), n)) if not kinds[n].startswith("hostile")][
            : args.count
        ]
        for name in chosen:
            shutil.copytree(pool / name, subs / name)
    print(
        f"{len(chosen)} submissions: "
        + ", ".join(sorted({kinds[n].split(":")[0] for n in chosen}))
        + f"; load {os.getloadavg()[0]:.2f}"
    )
    key = work / "course.key"
    key.write_text(KEY, encoding="utf-8")

    # nbgrader runs `alembic` from PATH; a venv moved or shared between checkouts can hold an
    # `alembic` script whose #! names a Python that no longer exists: a fallback behind it
    shim = work / "bin"
    shim.mkdir()
    (shim / "alembic").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m alembic "$@"\n')
    (shim / "alembic").chmod(0o755)
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), str(shim)])

    ctx = ReleaseContext(
        repo=ROOT,
        config=config,
        out=work / "dist",
        version="bench",
        commit="0" * 16,
        suite_hash=suite_hash(config),
        seed_key=KEY.strip().encode(),
    )
    start = time.monotonic()
    nbgrader_course.build(ctx)
    built = time.monotonic() - start
    start = time.monotonic()
    course = work / "dist" / "nbgrader"
    if args.in_process:
        notebooks = in_process(course, work / "nb", {n: subs / n for n in chosen}, assignment, args.jobs)
        nb_total = time.monotonic() - start
        print(f"nbgrader's autograde step in process (no kernels), {args.jobs} at a time: {nb_total:.1f} s")
        autograde_s = nb_total
    else:
        trip = round_trip(course, work / "nb", {n: subs / n for n in chosen}, assignment)
        notebooks = trip.notebooks
        nb_total = time.monotonic() - start
        autograde_s = trip.seconds.get("autograde", 0)
        print(
            f"nbgrader: building the course {built:.1f} s (not counted); "
            f"generate_assignment {trip.seconds.get('generate_assignment')} s, autograde {autograde_s} s, "
            f"export {trip.seconds.get('export')} s — total {nb_total:.1f} s (includes writing the notebooks)"
        )

    out = work / "batch-out"
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "batch", str(subs), "--out", str(out), "--jobs", str(args.jobs), "--no-progress"]
        + ["--seed-key-file", str(key)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    batch_s = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"batch failed: {proc.stderr[-2000:]}")
    print(f"autograder batch --jobs {args.jobs}: {batch_s:.1f} s (visible + hidden suites, sandboxed)")
    print(f"nbgrader autograde alone / batch: {autograde_s / batch_s:.2f}; nbgrader total / batch: {nb_total / batch_s:.2f}")

    with open(out / "gradebook.csv", encoding="utf-8") as fh:
        ours = {row["folder"]: {sid: float(row[sid]) for sid in config.skills} for row in csv.DictReader(fh)}
    differ = [n for n in chosen if notebooks.get(n) != ours.get(n)]
    print(f"one score: {len(chosen) - len(differ)}/{len(chosen)} equal per skill (nbgrader's notebook = the batch's skill)")
    for name in chosen:
        nb, gb = notebooks.get(name, {}), ours.get(name, {})
        mark = "  " if name not in differ else "≠ "
        print(f"{mark}{name:<44} nbgrader {sum(nb.values()):>7.2f}   batch {sum(gb.values()):>7.2f}")
        for sid in config.skills if name in differ else ():
            if nb.get(sid) != gb.get(sid):
                print(f"      {sid}: nbgrader {nb.get(sid)!r}, batch {gb.get(sid)!r}")
    shutil.rmtree(work, ignore_errors=True)
    if differ:
        sys.exit(1)


KEY = "nbgrader-vs-batch benchmark key 0123456789abcdef\n"


def in_process(course: Path, root: Path, students: dict[str, Path], assignment: str, jobs: int) -> dict[str, dict[str, float]]:
    """Each student's notebook scores from the course config's autograde step (no kernels)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(student: str) -> tuple[str, dict[str, float]]:
        return student, autograde_in_process(course, submit(course, root, student, students[student], assignment))[0]

    with ThreadPoolExecutor(max(1, jobs)) as pool:  # each grading is a subprocess: threads wait
        return dict(pool.map(one, students))


if __name__ == "__main__":
    main()
