"""A term, end to end, as an instructor runs it (issue 18's walk-through):

1. ``release`` with two assignments → both bundles through the mock Gradescope run
   (the reference scores each assignment's points, the stubs 0);
2. a class of N students (reference, single mistakes, stubs, a broken zip, a group
   export is covered by the tests) graded with ``batch --roster`` → ``lms/canvas.csv``;
3. a suite change (one test's weight moved to another) and a regrade into the same
   ``--out`` that lists what changed per student;
4. the same class in 3 shards, merged, compared with the single run.

    .venv/bin/python tests/benchmarks/term_walkthrough.py [--students 20] [--keep DIR]

Prints each step's evidence; exit 1 when a step's check fails.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "submissions"), str(ROOT / "tests" / "benchmarks")]

import one_score_paths  # noqa: E402
import variants  # noqa: E402


def run(*args: str, env: dict, cwd: Path = ROOT, timeout: float = 3600) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode not in (0,):
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit(f"`autograder {' '.join(args[:2])}` exited {proc.returncode}")
    return proc


def klass(work: Path, n: int) -> tuple[Path, Path]:
    subs = work / "class"
    subs.mkdir(parents=True)
    mistakes = [m for skill in variants.modules() for m in variants.mistakes(skill)[:3]]
    rows = ["id,name,email,login,folder,section"]
    for i in range(n):
        name = f"student{i:02d}"
        if i % 5 == 0:
            shutil.copytree(ROOT / "exercises", subs / name)
        elif i % 5 == 1:
            shutil.copytree(ROOT / "solutions", subs / name)
        else:
            variants.build(subs / name, [mistakes[i % len(mistakes)]])
        rows.append(f"{1000 + i},Student {i},s{i}@uni.edu,s{i},{name},{'AB'[i % 2]}")
    (subs / "broken.zip").write_bytes(b"PK\x03\x04 not a zip")  # on no roster row: reported as unmatched
    rows.append(f"{1000 + n},Student {n},s{n}@uni.edu,s{n},,A")  # on the roster, no submission: missing
    roster = work / "roster.csv"
    roster.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return subs, roster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="work here and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="term-"))
    work.mkdir(parents=True, exist_ok=True)
    key = work / "course.seed.key"
    key.write_text("walk-through course key 0123456789abcdef\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUTOGRADER_SEED_KEY_FILE": str(key)}
    ok = True

    print("== 1. release with two assignments")
    proc = run("release", "--out", str(work / "dist"), "--version", "1.0.0", env=env)
    print("\n".join(line for line in proc.stdout.splitlines() if line.startswith(("release", "  "))))
    for name in sorted(p.name for p in (work / "dist" / "assignments").iterdir()):
        bundle = work / "dist" / "assignments" / name / "autograder.zip"
        for who, src in (("reference", ROOT / "solutions"), ("stubs", ROOT / "exercises")):
            got = one_score_paths.gradescope_run(bundle, src, work / "gs" / f"{name}-{who}")
            points = json.loads(__import__("zipfile").ZipFile(bundle).read("release.json"))["points"]
            print(
                f"   bundle {name:6} {who:9} → {got['score']:g} / {points:g}  "
                f"({len({t.split(':')[0] for t in got['tests']})} skills)"
            )
            ok &= got["score"] == (points if who == "reference" else 0)

    print(f"== 2. a class of {args.students} graded with a roster")
    subs, roster = klass(work, args.students)
    out = work / "graded"
    proc = run(
        "batch",
        str(subs),
        "--out",
        str(out),
        "--roster",
        str(roster),
        "--assignment-name",
        "Attention (all skills)",
        "--no-progress",
        "--jobs",
        "2",
        env=env,
    )
    print("   " + proc.stdout.strip().splitlines()[-2])
    canvas = (out / "lms" / "canvas.csv").read_text(encoding="utf-8").splitlines()
    print("   lms/canvas.csv (first lines):")
    print("\n".join(f"     {line}" for line in canvas[:5]))
    roster_section = (out / "summary.md").read_text(encoding="utf-8").split("## Roster", 1)[-1].strip().splitlines()[:4]
    print("   summary.md roster: " + " ".join(roster_section))
    ok &= len(canvas) == args.students + 3  # header, points, every roster student

    print("== 3. a suite change and a regrade")
    changed = work / "grading-changed.toml"
    text = (ROOT / "grading.toml").read_text(encoding="utf-8").replace("[grader]\n", f'[grader]\nroot = "{ROOT}"\n', 1)
    # move half a point inside masks: masked softmax's reference test gets more, the visible worked example less
    before = "test_masked_softmax_matches_reference_on_random_scores = "
    weight = float(re.search(re.escape(before) + r"([0-9.]+)", text).group(1))
    text = text.replace(f"{before}{weight:g}", f"{before}{weight + 0.5:g}", 1)
    first = re.search(r"(test_masks_[a-z_0-9]+) = ([0-9.]+)", text)
    text = text.replace(first.group(0), f"{first.group(1)} = {float(first.group(2)) - 0.5:g}", 1)
    changed.write_text(text, encoding="utf-8")
    proc = run(
        "batch",
        str(subs),
        "--out",
        str(out),
        "--roster",
        str(roster),
        "--assignment-name",
        "Attention (all skills)",
        "--no-progress",
        "--jobs",
        "2",
        "--config",
        str(changed),
        env=env,
    )
    rows = list(csv.DictReader(io.StringIO((out / "changes.csv").read_text(encoding="utf-8"))))
    print(f"   regraded {proc.stdout.strip().splitlines()[-2]}")
    print(
        f"   changes.csv: {len(rows)} student(s) changed; first: "
        + (json.dumps(rows[0], ensure_ascii=False)[:300] if rows else "none")
    )
    ok &= bool(rows)

    print("== 4. the same class in 3 shards, merged")
    common = (
        "--roster",
        str(roster),
        "--assignment-name",
        "Attention (all skills)",
        "--no-progress",
        "--jobs",
        "2",
        "--config",
        str(changed),
    )
    parts = []
    for k in (1, 2, 3):
        run("batch", str(subs), "--out", str(work / f"part{k}"), "--shard", f"{k}/3", *common, env=env)
        parts.append(str(work / f"part{k}"))
    run("batch", str(subs), "--out", str(work / "merged"), "--merge", *parts, *common, env=env)
    for rel in ("gradebook.csv", "lms/canvas.csv", "lms/grades.csv", "lms/unmatched.csv"):
        same = (work / "merged" / rel).read_bytes() == (out / rel).read_bytes()
        print(f"   {rel:18} merged == single run: {same}")
        ok &= same
    strip = lambda p: re.sub(r" Graded in \d+ s\.", "", p.read_text(encoding="utf-8")).split("## Changes since")[0]
    same = strip(work / "merged" / "summary.md") == strip(out / "summary.md")
    print(f"   summary.md         merged == single run (but timing and the regrade's change list): {same}")
    ok &= same
    print("walk-through: all checks passed" if ok else "walk-through: A CHECK FAILED")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
