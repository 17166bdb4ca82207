"""Same scores before and after a change: the whole class of sample submissions graded by
``python -m autograder batch``, every test's score, status and hints written to one JSON
file, and two such files compared test by test.

The class: the reference, every style of tests/submissions/styles/, every single-mistake
variant of tests/submissions/mistakes/*.toml and every attack of
tests/submissions/hostile/attacks.toml (built as tests/grader/test_red_team.py builds them;
``--skip-slow`` leaves out ``loop_everywhere``, whose cost is measured by cpu_cost.py).
Seeds are the default rule (derived from each submission's files), so the same files draw
the same inputs under both versions.

    .venv/bin/python tests/benchmarks/same_scores.py build DIR [--skip-slow]
    .venv/bin/python tests/benchmarks/same_scores.py grade DIR OUT.json [--jobs 2] [--root CHECKOUT]
    .venv/bin/python tests/benchmarks/same_scores.py compare BEFORE.json AFTER.json

``--root`` grades with another checkout of the grader (e.g. ``git archive`` of the commit
before a change) and this interpreter. ``grade`` also prints the CPU of the whole batch (the
children's rusage) per submission against ``python -c "import torch"`` run just before and
after it. ``compare`` exits 1 when any test differs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from cpu_cost import children_cpu, import_torch_cpu  # this folder: the script's own (sys.path[0])

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = ROOT / "tests" / "submissions"
SLOW_ATTACKS = ("loop_everywhere",)


def build(folder: Path, skip_slow: bool) -> dict[str, str]:
    sys.path.insert(0, str(SUBMISSIONS))
    sys.path.insert(0, str(ROOT / "tests" / "grader"))
    import variants
    from test_red_team import build as build_attack

    folder.mkdir(parents=True)
    kinds: dict[str, str] = {}
    modules = list(variants.modules().values())
    for style in ["reference", *variants.styles()]:
        target = folder / f"style-{style}"
        target.mkdir()
        base = variants.SOLUTIONS if style == "reference" else SUBMISSIONS / "styles" / style
        for module in modules:
            src = base / module if (base / module).exists() else variants.SOLUTIONS / module
            shutil.copyfile(src, target / module)
        kinds[target.name] = f"style:{style}"
    for skill in variants.modules():
        for m in variants.mistakes(skill):
            name = f"mistake-{skill}-{m['id']}"
            variants.build(folder / name, [m])
            kinds[name] = f"mistake:{m['hint']}"
    attacks = tomllib.loads((SUBMISSIONS / "hostile" / "attacks.toml").read_text(encoding="utf-8"))["attack"]
    for attack in attacks:
        if skip_slow and attack["name"] in SLOW_ATTACKS:
            continue
        name = f"hostile-{attack['name']}"
        with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:  # same file system: rename keeps links, FIFOs
            made = build_attack(attack, Path(tmp) / "submission")
            if made.is_relative_to(tmp):
                made.rename(folder / name)
            else:
                shutil.copytree(made, folder / name)
        kinds[name] = f"hostile:{attack['name']}"
    return kinds


def per_test(results: dict) -> dict:
    tests = {}
    for skill in results.get("skills", []):
        for t in skill["tests"]:
            tests[t["id"]] = {
                "score": t["score"],
                "status": t["status"],
                "visible_score": t.get("visible_score"),
                "hints": sorted(h.get("id", "") for h in t.get("hints", [])),
            }
    return {"score": results.get("score"), "status": results.get("status"), "tests": tests}


def grade(folder: Path, out: Path, jobs: int, root: Path) -> None:
    torch_before = [import_torch_cpu() for _ in range(3)]
    with tempfile.TemporaryDirectory() as tmp:
        cpu = children_cpu()
        start = time.perf_counter()
        cmd = [sys.executable, "-m", "autograder", "batch", str(folder), "--out", tmp, "--jobs", str(jobs), "--no-progress"]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        wall = time.perf_counter() - start
        cpu = children_cpu() - cpu
        if proc.returncode not in (0, 1):
            sys.exit(f"batch failed ({proc.returncode}): {proc.stderr[-2000:]}")
        students = {}
        for student in sorted(p.name for p in folder.iterdir()):
            path = Path(tmp) / student / "results.json"
            students[student] = per_test(json.loads(path.read_text())) if path.exists() else {"missing": True}
    torch_after = [import_torch_cpu() for _ in range(3)]
    torch_cpu = sorted(torch_before + torch_after)[len(torch_before + torch_after) // 2]
    per = cpu / len(students)
    print(
        f"{len(students)} submissions, --jobs {jobs}: {wall:.0f} s wall, {cpu:.0f} CPU s = {per:.2f} CPU s a submission; "
        f"import torch {torch_cpu:.2f} CPU s (median of {len(torch_before + torch_after)}, "
        f"{min(torch_before + torch_after):.2f}–{max(torch_before + torch_after):.2f}) → ratio {per / torch_cpu:.2f}"
    )
    out.write_text(json.dumps({"cpu_s": cpu, "wall_s": wall, "import_torch_cpu_s": torch_cpu, "students": students}, indent=1))


def compare(a: Path, b: Path) -> int:
    before = json.loads(a.read_text())["students"]
    after = json.loads(b.read_text())["students"]
    differ = 0
    tests = 0
    for student in sorted(set(before) | set(after)):
        x, y = before.get(student), after.get(student)
        if x is None or y is None:
            print(f"{student}: only in {'after' if x is None else 'before'}")
            differ += 1
            continue
        tests += len(x.get("tests", {}))
        if x == y:
            continue
        differ += 1
        print(f"{student}: score {x.get('score')} → {y.get('score')}, status {x.get('status')} → {y.get('status')}")
        for tid in sorted(set(x.get("tests", {})) | set(y.get("tests", {}))):
            if x["tests"].get(tid) != y["tests"].get(tid):
                print(f"    {tid}: {x['tests'].get(tid)} → {y['tests'].get(tid)}")
    print(f"{len(before)} submissions, {tests} tests: {differ} submissions differ")
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("folder", type=Path)
    b.add_argument("--skip-slow", action="store_true")
    g = sub.add_parser("grade")
    g.add_argument("folder", type=Path)
    g.add_argument("out", type=Path)
    g.add_argument("--jobs", type=int, default=2)
    g.add_argument("--root", type=Path, default=ROOT)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.cmd == "build":
        kinds = build(args.folder, args.skip_slow)
        print(f"{len(kinds)} submissions in {args.folder}")
    elif args.cmd == "grade":
        grade(args.folder.resolve(), args.out.resolve(), args.jobs, args.root.resolve())
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
