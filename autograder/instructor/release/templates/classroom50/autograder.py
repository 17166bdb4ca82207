"""Classroom 50 autograder for one assignment of the attention exercises (visible tests only).

Classroom 50 (foundation50/classroom50, GitHub Classroom's open-source successor) runs this
file in the *student's own repository*, so it holds nothing secret: it grades the visible
tests that the student tree already ships, with the student tree's own grader
(`python -m autograder grade --assignment NAME --format json`), and says so. The official
score comes from the course's autograder (hidden tests included); see assignment.json. The
student can edit that grader copy in their repository, so this score is a recorded self-check,
never a grade.

The contract, from the Classroom 50 wiki, page "Advanced Autograding" (sections "Writing an
`autograder.py`", "Contract", "The `result.json` contract", "Operational notes"), and the
runner that implements it (cli/gh-teacher/skeleton/dotgithub/scripts/runner.py):

* placed at `CLASSROOM/autograders/ASSIGNMENT/autograder.py` in the private config
  repository; sibling files (our `assignment.json`) are bundled and live at
  `Path(__file__).parent` (also `$CLASSROOM50_BUNDLE_DIR`);
* invoked once per submission as `python autograder.py`, working directory = the student's
  checkout; environment: CLASSROOM, ASSIGNMENT, SUBMISSION_TAG, USERNAME/OWNER,
  ASSIGNMENT_TYPE, COMMIT_URL, RELEASE_URL, REVIEW_URL and the usual GITHUB_*;
* must write `./result.json` (schema "classroom50/result/v1"; `score`, `max-score` and every
  test's `score`/`max-score` are non-negative integers, `score` the sum of the tests'; each
  test has `test-name` and a boolean `passed`; extra fields on a test are kept verbatim);
  may write `./release-body.md` (the Release text) and `status=`/`summary=` to $GITHUB_OUTPUT;
* exit 0 when it ran end to end (pass/fail is in result.json); non-zero is an
  infrastructure error (the runner posts `error` and publishes no Release);
* the whole grade job stops after 15 minutes (setup, grading and publishing together), so
  the install and the grading below have their own limits well inside that.

Classroom 50 stores whole numbers; our weights are fractions of a point (0.25, 0.75, …), so
every score is recorded in units of 1/scale point (assignment.json `scale`), and the Release
text shows the points themselves. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

SCHEMA = "classroom50/result/v1"
RESULT, BODY = "result.json", "release-body.md"
INSTALL_TIMEOUT_S = 360  # pip: CPU torch and the pinned requirements, typically 1–2 minutes
GRADE_TIMEOUT_S = 420  # the visible tests of one assignment, typically under 2 minutes
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # a few hundred MB, not the multi-GB CUDA build
NEEDED = ("autograder/__main__.py", "grading.toml", "requirements.txt", "exercises")


class Broken(Exception):
    """Grading could not run; the message goes to the job log as an ::error::."""


def _log(text: str) -> None:
    # two spaces in front of every line that may carry a path or tool output: Actions reads
    # workflow commands only at column 0 (as the Classroom 50 runner does with test output)
    for line in str(text).splitlines():
        print(f"  {line}", flush=True)


def _error(message: str) -> None:
    clean = re.sub(r"[\r\n%]", " ", message)
    print(f"::error title=Classroom 50 autograder::{clean}", flush=True)


def load_assignment(bundle: Path) -> dict:
    return json.loads((bundle / "assignment.json").read_text(encoding="utf-8"))


def _pins(requirements: Path) -> dict[str, str]:
    pins = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)\s*(#.*)?", line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return pins


def requirements_met(requirements: Path) -> bool:
    """Every `name==version` pin of requirements.txt is installed at that version (a
    self-hosted runner or a container that carries them needs no install)."""
    pins = _pins(requirements)
    for name, version in pins.items():
        try:
            if metadata.version(name).split("+")[0] != version.split("+")[0]:
                return False
        except metadata.PackageNotFoundError:
            return False
    return bool(pins)


def install(workspace: Path) -> None:
    requirements = workspace / "requirements.txt"
    if requirements_met(requirements):
        print("autograder: the pinned requirements are installed already", flush=True)
        return
    env = dict(os.environ)
    env.setdefault("PIP_INDEX_URL", TORCH_CPU_INDEX)
    env.setdefault("PIP_EXTRA_INDEX_URL", "https://pypi.org/simple")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    print("autograder: installing the pinned requirements (CPU torch)", flush=True)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "-r", str(requirements)],
            cwd=workspace,
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise Broken(f"installing requirements.txt took over {INSTALL_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        _log(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise Broken(f"pip could not install requirements.txt (exit {proc.returncode}); see the log above")


def grade(workspace: Path, assignment: str | None, out: Path) -> dict:
    """Our grader's JSON results for the visible tests (the student tree has no others)."""
    command = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        "exercises",
        "--format",
        "json",
        "--output",
        str(out),
        "--no-progress",
    ]
    if assignment:
        command[5:5] = ["--assignment", assignment]
    try:
        proc = subprocess.run(command, cwd=workspace, check=False, capture_output=True, text=True, timeout=GRADE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Broken(f"grading took over {GRADE_TIMEOUT_S} s") from None
    if proc.stdout.strip() or proc.stderr.strip():
        _log(proc.stdout[-4000:] + proc.stderr[-4000:])
    try:
        results = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise Broken(f"the grader wrote no results (exit {proc.returncode})") from None
    if proc.returncode != 0 or results.get("status") != "complete":
        raise Broken(f"grading did not complete (exit {proc.returncode}, status {results.get('status')!r}); see the log above")
    return results


def units(points: float, scale: int) -> int:
    """Points as the whole number Classroom 50 stores: 1/scale point each, rounded half up."""
    return math.floor(points * scale + 0.5 + 1e-9)


def translate(results: dict, info: dict) -> tuple[list[dict], float]:
    """One result.json test per visible test of the assignment, in grading.toml's order,
    scored against the release's own weights (assignment.json): a test the run did not
    report scores 0, and a changed grading.toml cannot change what a test is worth."""
    scale = int(info["scale"])
    got = {(skill["id"], test["name"]): test for skill in results.get("skills", []) for test in skill.get("tests", [])}
    tests, total = [], 0.0
    for sid, skill in info["skills"].items():
        for name, weight in skill["tests"].items():
            outcome = got.get((sid, name)) or {}
            fraction = 0.0
            if outcome.get("max_score"):
                fraction = min(1.0, max(0.0, float(outcome.get("score", 0.0)) / float(outcome["max_score"])))
            points = weight * fraction
            passed = outcome.get("status") == "passed"
            max_units = units(weight, scale)
            tests.append(
                {
                    "test-name": f"{sid}: {name}",
                    "passed": passed,
                    "score": min(units(points, scale), max_units),
                    "max-score": max_units,
                    # extra fields, kept verbatim by Classroom 50: the points themselves
                    "skill": sid,
                    "points": round(points, 6),
                    "max-points": weight,
                    "status": outcome.get("status", "not_run"),
                }
            )
            total += points
    return tests, total


def result_json(tests: list[dict], env: dict[str, str]) -> dict:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    commit = env["COMMIT_URL"]
    return {
        "schema": SCHEMA,
        "classroom": env["CLASSROOM"],
        "assignment": env["ASSIGNMENT"],
        # owner, assignment_type, datetime and graded_at are stamped again by the runner
        "assignment_type": env.get("ASSIGNMENT_TYPE") or "individual",
        "owner": env.get("OWNER") or env.get("USERNAME") or env.get("GITHUB_REPOSITORY_OWNER") or "",
        "submission": env["SUBMISSION_TAG"],
        "commit": commit,
        "release": env["RELEASE_URL"],
        "review": env.get("REVIEW_URL") or commit,
        "datetime": now,
        "graded_at": now,
        "score": sum(t["score"] for t in tests),
        "max-score": sum(t["max-score"] for t in tests),
        "tests": tests,
    }


def _pts(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def release_body(result: dict, info: dict, total: float) -> str:
    visible = sum(t["max-points"] for t in result["tests"])
    lines = [
        f"### Visible tests: {_pts(total)} / {_pts(visible)} points",
        "",
        f"Graded in this repository with the **visible tests only**, as `make grade` does ({info['course']}, "
        f"release {info['version']}).",
        (
            f"**Your official score comes from {info['official']}**, which also runs hidden tests and grades this assignment "
            f"out of {_pts(info['full_points'])} points."
        ),
        "",
        (
            f"Classroom 50 stores whole numbers: this is recorded as {result['score']} / {result['max-score']} "
            f"(1/{info['scale']} point each)."
            if info["scale"] != 1
            else ""
        ),
        "",
        "| Test | Result | Points |",
        "|---|---|---|",
    ]
    for test in result["tests"]:
        verdict = "PASS" if test["passed"] else "FAIL"
        lines.append(f"| `{test['test-name']}` | {verdict} | {_pts(test['points'])} / {_pts(test['max-points'])} |")
    lines += ["", "What to fix, test by test: run `make grade` in your clone, or open the feedback workflow's job summary."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    env = dict(os.environ)
    missing = [k for k in ("CLASSROOM", "ASSIGNMENT", "SUBMISSION_TAG", "COMMIT_URL", "RELEASE_URL") if not env.get(k)]
    if missing:
        _error(f"run by Classroom 50's runner, which sets {', '.join(missing)}")
        return 1
    workspace = Path.cwd()
    bundle = Path(env.get("CLASSROOM50_BUNDLE_DIR") or Path(__file__).resolve().parent)
    try:
        info = load_assignment(bundle if (bundle / "assignment.json").is_file() else Path(__file__).resolve().parent)
        absent = [rel for rel in NEEDED if not (workspace / rel).exists()]
        if absent:
            raise Broken(
                f"the checkout lacks {', '.join(absent)}: the grader ships in the student repository "
                "(an assignment's allowed_files must keep autograder/, tests/suites/, grading.toml, requirements.txt and docs/)"
            )
        install(workspace)
        with tempfile.TemporaryDirectory(prefix="classroom50-grade-") as tmp:
            results = grade(workspace, info.get("assignment"), Path(tmp) / "results.json")
        tests, total = translate(results, info)
    except Broken as exc:
        _error(str(exc))
        return 1
    result = result_json(tests, env)
    (workspace / RESULT).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (workspace / BODY).write_text(release_body(result, info, total), encoding="utf-8")
    visible = sum(t["max-points"] for t in tests)
    summary = f"visible tests {_pts(total)}/{_pts(visible)} points; the official score comes from {info['official_short']}"
    output = env.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as fh:
            fh.write(f"status={'success' if all(t['passed'] for t in tests) else 'failure'}\nsummary={summary}\n")
    print(f"autograder: {summary}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
