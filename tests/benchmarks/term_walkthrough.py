"""A term, end to end, as an instructor runs it (issues 18 and 31's walk-through):

1. ``release`` with two assignments → both bundles through the mock Gradescope run
   (the reference scores each assignment's points, the stubs 0);
2. a class of N students in folders named after them ("Ana García", "Bob Smith", … —
   reference, single mistakes, stubs, a broken zip) graded with ``batch --roster`` and a
   roster of names only (one student on it has no submission) → the roster counts,
   ``lms/canvas.csv``, the plots, the item analysis and the similarity report;
3. a suite change (one test's weight moved to another) and a regrade into the same
   ``--out`` that lists what changed per student;
4. the same class through the Slurm recipe (examples/slurm/grade-class.sbatch: three array
   tasks with SLURM_ARRAY_TASK_ID 0, 1, 2 set by hand, then its merge role), compared with
   the single run.

    .venv/bin/python tests/benchmarks/term_walkthrough.py [--students 25] [--keep DIR]

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

import one_score_paths
import variants


def run(*args: str, env: dict, cwd: Path = ROOT, timeout: float = 3600) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode not in (0,):
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit(f"`autograder {' '.join(args[:2])}` exited {proc.returncode}")
    return proc


FIRST = ["Ana", "Bob", "Chloé", "Dmitri", "Eun-ji", "Fátima", "Grégoire", "Hana", "Íñigo", "Jonas", "Kofi", "Léa", "Mateus"]
LAST = ["García", "Smith", "Müller", "Nguyễn", "O'Brien", "Søndergaard", "Đorđević", "Kowalski"]


def klass(work: Path, n: int) -> tuple[Path, Path]:
    """Folders named after the students; a roster with their names only (in another case and
    order for some, as a registrar's export has them), plus one student with no submission."""
    subs = work / "class"
    subs.mkdir(parents=True)
    mistakes = [m for skill in variants.modules() for m in variants.mistakes(skill)[:3]]
    rows = ["id,name"]
    for i in range(n + 1):
        first, last = FIRST[i % len(FIRST)], LAST[(i * 5) % len(LAST)]
        name = f"{first} {last}"
        rows.append(f'{1000 + i},"{last.upper()}, {first}"' if i % 3 == 0 else f'{1000 + i},"{name}"')
        if i == n:
            break  # on the roster, no submission: missing
        if i == n - 1:
            (subs / f"{name}.zip").write_bytes(b"PK\x03\x04 not a zip")  # graded as an error, named
        elif i % 5 == 0:
            shutil.copytree(ROOT / "exercises", subs / name)
        elif i % 5 == 1:  # correct code written independently, in the styles of tests/submissions/styles
            shutil.copytree(STYLES[(i // 5) % len(STYLES)], subs / name)
        elif i == 7:  # a copy of the first style's student, renamed, reformatted and recommented
            disguise(STYLES[0], subs / name)
        else:
            variants.build(subs / name, [mistakes[i % len(mistakes)]])
    roster = work / "roster.csv"
    roster.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return subs, roster


STYLES = sorted(p for p in (ROOT / "tests" / "submissions" / "styles").iterdir() if p.is_dir())


def disguise(source: Path, target: Path) -> None:
    target.mkdir()
    renames = {"scores": "s_mat", "weights": "attn", "mask": "msk", "x": "inp", "q": "qq", "k": "kk", "v": "vv"}
    for module in sorted(source.glob("*.py")):
        text = module.read_text(encoding="utf-8")
        for old, new in renames.items():
            text = re.sub(rf"\b{old}\b", new, text)
        lines = [
            line.replace(", ", ",  ") + ("  # mine" if line.strip().startswith("return") else "") for line in text.splitlines()
        ]
        (target / module.name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def without(text: str, *titles: str) -> str:
    """summary.md without its timing and the sections of these titles."""
    text = re.sub(r" Graded in \d+ s\.", "", text)
    for title in titles:
        text = re.sub(rf"\n## {re.escape(title)}.*?(?=\n## |\Z)", "", text, flags=re.S)
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=25)
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

    print(f"== 2. a class of {args.students} in folders named after them, a roster of names only")
    subs, roster = klass(work, args.students)
    out = work / "graded"
    proc = run("batch", str(subs), "--out", str(out), "--roster", str(roster), "--no-progress", "--jobs", "2", env=env)
    lines = proc.stdout.strip().splitlines()
    print("   " + next(line for line in lines if line.startswith("roster:")))
    print("   " + next(line for line in lines if " graded, " in line))
    canvas = (out / "lms" / "canvas.csv").read_text(encoding="utf-8").splitlines()
    print("   lms/canvas.csv (first lines):")
    print("\n".join(f"     {line}" for line in canvas[:6]))
    ok &= len(canvas) == args.students + 1 + 2  # header, points, every roster student
    ok &= f"roster: {args.students} matched ({args.students} by name), 0 unmatched" in proc.stdout
    for folder in ("plots", "similarity"):
        print(f"   {folder}/: " + ", ".join(sorted(p.name for p in (out / folder).iterdir())))
    sim = (out / "summary.md").read_text(encoding="utf-8").split("## Code similarity", 1)[-1].split("\n## ", 1)[0]
    print("   summary.md, code similarity:" + "".join(f"\n     {line}" for line in sim.strip().splitlines()[:6]))
    print("   items.csv: " + str(len((out / "items.csv").read_text(encoding="utf-8").splitlines()) - 1) + " tests")
    ok &= (out / "plots" / "scores.png").is_file() and (out / "similarity" / "index.md").is_file()

    print("== 3. a suite change and a regrade")
    changed = work / "grading-changed.toml"
    text = (ROOT / "grading.toml").read_text(encoding="utf-8").replace("[grader]\n", f'[grader]\nroot = "{ROOT}"\n', 1)
    # move half a point inside masks: masked softmax's reference test gets more, the visible worked example less
    before = "test_masked_softmax_matches_reference_on_random_scores = "
    weight = float(re.search(re.escape(before) + r"([0-9.]+)", text).group(1))
    text = text.replace(f"{before}{weight:g}", f"{before}{weight + 0.5:g}", 1)
    start = text.index("[skills.masks]")
    masks = text[start : start + re.search(r"^\[skills\.(?!masks)", text[start:], re.M).start()]
    first = next(m for m in re.finditer(r"(test_[a-z_0-9]+) = ([0-9.]+)", masks) if float(m.group(2)) > 0.5)
    text = text.replace(first.group(0), f"{first.group(1)} = {float(first.group(2)) - 0.5:g}", 1)
    changed.write_text(text, encoding="utf-8")
    proc = run(
        "batch",
        str(subs),
        "--out",
        str(out),
        "--roster",
        str(roster),
        "--no-progress",
        "--jobs",
        "2",
        "--config",
        str(changed),
        env=env,
    )
    rows = list(csv.DictReader(io.StringIO((out / "changes.csv").read_text(encoding="utf-8"))))
    print("   regraded: " + next(line for line in proc.stdout.splitlines() if " graded, " in line))
    print(
        f"   changes.csv: {len(rows)} student(s) changed; first: "
        + (json.dumps(rows[0], ensure_ascii=False)[:300] if rows else "none")
    )
    ok &= bool(rows)

    print("== 4. the same class through examples/slurm/grade-class.sbatch (Slurm variables set by hand)")
    sbatch = ROOT / "examples" / "slurm" / "grade-class.sbatch"
    slurm_env = {
        **{k: v for k, v in env.items() if not k.startswith("SLURM_")},
        "CLASS_DIR": str(subs),
        "OUT_DIR": str(work / "slurm"),
        "COURSE_KEY": str(key),
        "ROSTER": str(roster),
        "BATCH_ARGS": f"--config {changed} --jobs 2",
        "PYTHON": sys.executable,
    }
    for task in (0, 1, 2):  # --array=0-2
        ids = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "3"}
        proc = subprocess.run(["bash", str(sbatch), "shard"], env={**slurm_env, **ids}, capture_output=True, text=True)
        print(f"   task {task}: exit {proc.returncode}; " + next((x for x in proc.stderr.splitlines() if "shard" in x), ""))
        ok &= proc.returncode == 0
    proc = subprocess.run(["bash", str(sbatch), "merge"], env=slurm_env, capture_output=True, text=True)
    print(
        f"   merge: exit {proc.returncode}; "
        + next((x for x in proc.stdout.splitlines() if x.startswith("merged")), proc.stderr[-500:])
    )
    ok &= proc.returncode == 0
    merged = work / "slurm" / "merged"
    for rel in ("gradebook.csv", "lms/canvas.csv", "lms/grades.csv", "lms/unmatched.csv", "items.csv"):
        same = (merged / rel).read_bytes() == (out / rel).read_bytes()
        print(f"   {rel:18} merged == single run: {same}")
        ok &= same
    drop = ("Changes since the previous grading", "Plots")  # the regrade's own sections
    same = without((merged / "summary.md").read_text(encoding="utf-8"), *drop) == without(
        (out / "summary.md").read_text(encoding="utf-8"), *drop
    )
    print(f"   summary.md         merged == single run (but timing, the regrade's change list and plots): {same}")
    ok &= same
    print("walk-through: all checks passed" if ok else "walk-through: A CHECK FAILED")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
