"""Local detection in a built student tree: the single-mistake variants graded as a student
grades them — by the student release's own grader, visible tests only, from the release's
folder.

For each variant (every one, or every N-th with ``--every N``): a submission of the
reference with that one mistake applied (tests/submissions/variants.py), graded by
``python -m autograder grade`` run inside ``dist/student`` of a fresh release. Counted:
the variant loses a point in its own skill; it loses none elsewhere; its named hint is shown.
Issue 30's goals: ≥ 95 % lose a point, ≥ 90 % show a named hint; never a point lost outside
the skill.

    .venv/bin/python tests/benchmarks/student_tree_detection.py [--every 1] [--jobs 2] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "submissions")]

import variants  # after the path above

GOAL_LOSE, GOAL_HINT = 0.95, 0.90


def release(work: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUTOGRADER_SEED_KEY_FILE": str(work / "check.seed.key")}
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "release", "--out", str(work / "dist"), "--version", "0.0.0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise SystemExit(f"release failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    student = work / "dist" / "student"
    if not (student / "grading.toml").is_file():
        raise SystemExit(f"no student tree at {student}")
    return student


def grade(student: Path, folder: Path) -> dict:
    out = folder.parent / f"{folder.name}.json"
    env = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_SEED_KEY_FILE"}
    env["PYTHONPATH"] = str(student)
    subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(folder), "--results", str(out), "--no-progress", "--format", "json"],
        cwd=student,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return json.loads(out.read_text(encoding="utf-8"))


def judge(m: dict, skill: str, results: dict, reference: dict) -> dict:
    lost = {s: reference[s] - score for s, score in skill_scores(results).items() if reference[s] - score > 1e-9}
    hints = {h["id"] for s in results["skills"] for t in s["tests"] for h in t.get("hints", [])}
    return {
        "id": f"{skill}/{m['id']}",
        "loses_in_skill": skill in lost,
        "loses_elsewhere": sorted(s for s in lost if s != skill),
        "hint_shown": m["hint"] in hints,
    }


def skill_scores(results: dict) -> dict[str, float]:
    return {s["id"]: float(s["score"]) for s in results["skills"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--every", type=int, default=1, help="grade every N-th variant (default: all)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="student-tree-") as tmp:
        work = Path(tmp)
        student = release(work)
        chosen = [(skill, m) for skill in variants.modules() for m in variants.mistakes(skill)][:: a.every]
        reference = skill_scores(grade(student, variants.build(work / "subs" / "reference", [])))
        print(f"student tree: {student.relative_to(work)}; reference scores {sum(reference.values()):g} locally")

        def one(item: tuple[str, dict]) -> dict:
            skill, m = item
            folder = variants.build(work / "subs" / f"{skill}-{m['id']}", [m])
            return judge(m, skill, grade(student, folder), reference)

        with ThreadPoolExecutor(a.jobs) as pool:
            rows = list(pool.map(one, chosen))
    n = len(rows)
    lose = sum(r["loses_in_skill"] for r in rows)
    hint = sum(r["hint_shown"] for r in rows)
    elsewhere = [r["id"] for r in rows if r["loses_elsewhere"]]
    print(f"variants graded in the student tree: {n}")
    print(f"  lose a point in their skill: {lose}/{n} = {lose / n:.1%} (goal ≥ {GOAL_LOSE:.0%})")
    print(f"  show their named hint:       {hint}/{n} = {hint / n:.1%} (goal ≥ {GOAL_HINT:.0%})")
    print(f"  lose a point in another skill: {len(elsewhere)} {elsewhere}")
    for r in rows:
        if not (r["loses_in_skill"] and r["hint_shown"]):
            print(
                f"  - {r['id']}: {'loses a point' if r['loses_in_skill'] else 'loses nothing'}, "
                f"{'hint shown' if r['hint_shown'] else 'no named hint'}"
            )
    missed = lose < GOAL_LOSE * n or hint < GOAL_HINT * n or elsewhere
    return 1 if (a.check and missed) else 0


if __name__ == "__main__":
    raise SystemExit(main())
