"""One piece of code, one score, on every path (issue 16 §3).

Grades the same submissions four ways, all with one course key:

* the Gradescope bundle, run as Gradescope runs it (``run_autograder`` in a mock
  ``/autograder`` layout, the upload in ``submission/``);
* ``python -m autograder batch`` over a class folder holding all of them, ``--seed-key-file``;
* ``python -m autograder grade --seed-key-file`` on each;
* the nbgrader course, each submission's modules in the released notebooks' solution cells,
  scored by the course config's autograde step (ScoreFromGrader, then nbgrader's own
  determine_grade: ``tests/grader/nbgrader_headless.autograde_in_process``; the kernels,
  which cannot change a score, left out) — when nbgrader is installed;

and prints a table of the scores per submission, plus whether every test's status and score
agree (Gradescope, batch, grade) and every skill's score (nbgrader's notebooks: exactly).
Default submissions: the reference, three single mistakes (one per skill, from
``tests/submissions/mistakes/``) and the untouched stubs.

    .venv/bin/python tests/benchmarks/one_score_paths.py [--mistake skill/id]... [--json out.json]

Exit status 1 when any path disagrees.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "submissions"), str(ROOT / "tests" / "grader")]

import variants

DEFAULT_MISTAKES = ["masks/zero-fill", "qkv/divide-by-dk", "row_softmax/softmax-ignores-dim"]
KEY = "one-score-paths benchmark key 0123456789abcdef\n"


def _release_context(work: Path, key_file: Path):
    """The release both built paths come from: the whole course, this benchmark's key."""
    from autograder.config import load
    from autograder.instructor.release.context import ReleaseContext
    from autograder.runner import identity

    config = load(ROOT / "grading.toml")
    ident = identity.identify(config)
    return ReleaseContext(
        repo=ROOT,
        config=config,
        out=work / "dist",
        version="0.0.0-paths",
        commit="0" * 40,
        suite_hash=ident.suite,
        visible_suite_hash=ident.visible,
        seed_key=key_file.read_bytes().strip(),
    )


def build_bundle(work: Path, key_file: Path) -> Path:
    from autograder.instructor.release import gradescope

    return gradescope.build(_release_context(work, key_file))[0]  # the whole course


def gradescope_run(bundle: Path, folder: Path, root: Path) -> dict:
    source = root / "source"
    with zipfile.ZipFile(bundle) as zf:
        for info in zf.infolist():
            target = source / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod(stat.S_IMODE(info.external_attr >> 16))
    shutil.copytree(folder, root / "submission")
    (root / "results").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADESCOPE_", "AUTOGRADER_", "PYTEST_"))}
    env.update(GRADESCOPE_AUTOGRADER_ROOT=str(root), GRADESCOPE_PYTHON=sys.executable)
    subprocess.run([str(source / "run_autograder")], cwd=root, env=env, capture_output=True, text=True, timeout=900, check=True)
    data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    from autograder.renderers.gradescope import BEFORE_DUE_PROPERTY, CREDIT_TAG, DEDUCTION_TAG, SUMMARY_TAG

    # every graded test (not the 0-point summary that shows the hidden figures after the due date);
    # a visible property test that counts only with the hidden tests shows its visible-only score
    # (0) and its points come in a CREDIT_TAG entry: those points go back to the test it names;
    # a rule broken in hidden tests alone takes every visible test's points in a DEDUCTION_TAG entry
    later = (CREDIT_TAG, DEDUCTION_TAG)
    shown = [t for t in data["tests"] if t["tags"][0] != SUMMARY_TAG and not set(later) & set(t["tags"])]
    deducted = {t["tags"][0] for t in data["tests"] if DEDUCTION_TAG in t["tags"]}
    tests = {t["name"]: (0.0, False) if t["tags"][0] in deducted else (t["score"], t["status"] == "passed") for t in shown}
    credited = {t["tags"][0]: t["score"] for t in data["tests"] if CREDIT_TAG in t["tags"]}
    for skill, points in credited.items():  # the zeroed visible property tests of that skill, in order
        for t in shown:
            if points > 0 and t["tags"][0] == skill and BEFORE_DUE_PROPERTY in t["output"]:
                earned = min(points, t["max_score"])
                tests[t["name"]] = (earned, earned >= t["max_score"])
                points = round(points - earned, 4)
    return {"score": data["score"], "tests": tests, "suites": data["extra_data"].get("suite_hash")}


def _from_results(data: dict) -> dict:
    tests = {
        f"{s['id']}: {t['name']}": (t["score"], t["status"] == "passed" and t["score"] >= t["max_score"])
        for s in data["skills"]
        for t in s["tests"]
    }
    skills = {s["id"]: s["score"] for s in data["skills"]}
    return {"score": data["score"], "tests": tests, "suites": data.get("suite_hash"), "skills": skills}


def build_nbgrader_course(work: Path, key_file: Path) -> Path:
    from autograder.instructor.release import nbgrader_course

    nbgrader_course.build(_release_context(work, key_file))
    return work / "dist" / "nbgrader"


def nbgrader_scores(course: Path, name: str, folder: Path, work: Path) -> dict[str, float]:
    """Each notebook's score (skill → points) as `nbgrader autograde` records it for ``folder``."""
    from nbgrader_headless import autograde_in_process, submit

    from autograder.config import load

    assignment = load(ROOT / "grading.toml").nbgrader_release.assignment
    return autograde_in_process(course, submit(course, work / "nbgrader", name, folder, assignment))[0]


def cli_grade(folder: Path, key_file: Path, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("AUTOGRADER_SEED_KEY_FILE", None)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(folder),
            "--format",
            "json",
            "--no-progress",
            "--seed-key-file",
            str(key_file),
            "--output",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=900,
    )
    return _from_results(json.loads(out.read_text(encoding="utf-8")))


def batch(folders: dict[str, Path], key_file: Path, work: Path) -> dict[str, dict]:
    klass, out = work / "class", work / "graded"
    for name, folder in folders.items():
        shutil.copytree(folder, klass / name)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("AUTOGRADER_SEED_KEY_FILE", None)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "batch",
            str(klass),
            "--out",
            str(out),
            "--no-progress",
            "--seed-key-file",
            str(key_file),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=1800,
        check=True,
    )
    return {name: _from_results(json.loads((out / name / "results.json").read_text(encoding="utf-8"))) for name in folders}


def submissions(work: Path, mistakes: list[str]) -> dict[str, Path]:
    folders = {"correct": variants.build(work / "subs" / "correct", [])}
    for ref in mistakes:
        skill, mid = ref.split("/", 1)
        entry = next(m for m in variants.mistakes(skill) if m["id"] == mid)
        folders[ref.replace("/", "--")] = variants.build(work / "subs" / ref.replace("/", "--"), [entry])
    stubs = work / "subs" / "stubs"
    shutil.copytree(ROOT / "exercises", stubs)
    folders["stubs"] = stubs
    return folders


def compare(folders: dict[str, Path], work: Path, nbgrader: bool = True) -> list[dict]:
    key_file = work / "course.seed.key"
    key_file.write_text(KEY)
    bundle = build_bundle(work, key_file)
    course = build_nbgrader_course(work / "nb-release", key_file) if nbgrader else None
    # the three paths that run in processes of their own (the batch, the bundle, `grade`) run
    # two at a time beside nbgrader's autograde, which runs here, in this process: each
    # writes only its own folders, and a grade uses one core at a time
    with ThreadPoolExecutor(max_workers=2) as pool:
        graded_batch = pool.submit(batch, folders, key_file, work)
        runs = {
            name: (
                pool.submit(gradescope_run, bundle, folder, work / "gs" / name),
                pool.submit(cli_grade, folder, key_file, work / f"{name}.json"),
            )
            for name, folder in folders.items()
        }
        notebooks = {name: nbgrader_scores(course, name, folder, work) for name, folder in folders.items()} if course else {}
    rows = []
    for name in folders:
        gs, local = (future.result() for future in runs[name])
        b = graded_batch.result()[name]
        same_tests = gs["tests"] == local["tests"] == b["tests"]
        # nbgrader: one notebook per skill, each scoring exactly the skill's score; its total is
        # the gradebook's float sum of them, the grader's to its 4 decimals
        nb = notebooks.get(name)
        nb_total = round(sum(nb.values()), 4) if nb is not None else None
        rows.append(
            {
                "submission": name,
                "gradescope": gs["score"],
                "batch": b["score"],
                "grade": local["score"],
                "nbgrader": nb_total,
                "same_scores": gs["score"] == b["score"] == local["score"] and nb_total in (None, local["score"]),
                "same_tests": same_tests,
                "same_skills": nb is None or nb == local["skills"] == b["skills"],
                "suites": {gs["suites"], b["suites"], local["suites"]},
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mistake", action="append", default=[], metavar="SKILL/ID", help="a single-mistake variant (repeatable)"
    )
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="one-score-") as tmp:
        work = Path(tmp)
        with_nbgrader = importlib.util.find_spec("nbgrader") is not None  # the instructors' extra
        if not with_nbgrader:
            print("nbgrader is not installed: its path is left out (requirements-instructor.txt)")
        rows = compare(submissions(work, args.mistake or DEFAULT_MISTAKES), work, nbgrader=with_nbgrader)
    print(f"{'submission':34} {'Gradescope':>10} {'batch':>8} {'grade':>8} {'nbgrader':>8}  tests  skills  suite hash")
    for r in rows:
        nb = f"{r['nbgrader']:8.4g}" if r["nbgrader"] is not None else f"{'-':>8}"
        print(
            (
                f"{r['submission']:34} {r['gradescope']:10.4g} {r['batch']:8.4g} {r['grade']:8.4g} {nb}  "
                f"{'yes' if r['same_tests'] else 'NO':5}  {'yes' if r['same_skills'] else 'NO':6}  "
            )
            + ", ".join(sorted(str(s)[:12] for s in r["suites"]))
        )
    ok = all(r["same_scores"] and r["same_tests"] and r["same_skills"] and len(r["suites"]) == 1 for r in rows)
    print("identical on every path" if ok else "PATHS DISAGREE")
    if args.json:
        args.json.write_text(
            json.dumps([{**r, "suites": sorted(map(str, r["suites"]))} for r in rows], indent=1), encoding="utf-8"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
