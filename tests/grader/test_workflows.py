"""CI: the workflows (linted by actionlint, and their structure), and what a grading run
does inside GitHub Actions — simulated here: ``$GITHUB_STEP_SUMMARY``, ``$GITHUB_OUTPUT``,
event payloads for a push, a pull request and a pull request from a fork, and the PR
comment's REST calls answered by a fake GitHub on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from conftest import EXERCISES, ROOT, SKILLS, TOTAL_POINTS, grade, write_config
from test_renderers import assert_markdown_is_inert

from autograder import ci
from autograder.core import escape
from autograder.renderers import markdown

WORKFLOWS = sorted(ROOT.glob(".github/workflows/*.yml")) + sorted(
    (ROOT / "autograder/instructor/release/templates").rglob("*.yml")
)
STUDENT = ROOT / "autograder/instructor/release/templates/student/.github/workflows/feedback.yml"
INSTRUCTORS = ROOT / ".github/workflows/test.yml"


def _actionlint() -> str | None:
    found = os.environ.get("ACTIONLINT") or shutil.which(
        "actionlint", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    return found


def test_every_workflow_passes_actionlint():
    binary = _actionlint()
    if binary is None:
        pytest.fail("actionlint not installed: `make test` installs it from requirements-lint.txt")
    assert len(WORKFLOWS) >= 3, WORKFLOWS
    proc = subprocess.run([binary, "-no-color", *map(str, WORKFLOWS)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def _run_steps(job: dict) -> str:
    return "\n".join(str(step.get("run", "")) for step in job["steps"])


def test_instructors_workflow_runs_make_test_with_cached_cpu_torch():
    data = _load(INSTRUCTORS)
    assert {"push", "pull_request"} <= set(data["on"])
    job = data["jobs"]["make-test"]
    assert 0 < job["timeout-minutes"] <= 60
    steps = {s.get("name"): s for s in job["steps"]}
    assert steps["make test"]["run"] == "make test"  # the fast set on every Python of the matrix
    assert job["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13"]
    setup = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/setup-python@"))
    assert setup["with"]["python-version"] == "${{ matrix.python }}"
    assert setup["with"]["cache"] == "pip" and "requirements" in setup["with"]["cache-dependency-path"]
    assert job["env"]["PIP_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    # mypy from its cache: a cold run is ~25 CPU s of `make lint`, a warm one ~1 (docs/PERFORMANCE.md)
    cache = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/cache@"))
    assert cache["with"]["path"] == ".mypy_cache" and "${{ matrix.python }}" in cache["with"]["key"]
    assert list(job["steps"]).index(cache) < list(job["steps"]).index(steps["make test"])


def test_instructors_workflow_runs_every_part_of_the_slow_set_once():
    """The slow tests too (CI proves everything): `make test-slow SPLIT=K/N` on N runners,
    K = 1..N, each part once, with the fast set's cached CPU-only torch."""
    job = _load(INSTRUCTORS)["jobs"]["make-test-slow"]
    assert 0 < job["timeout-minutes"] <= 60 and "needs" not in job  # beside the fast set, not after it
    parts = job["strategy"]["matrix"]["part"]
    (slow,) = [s for s in job["steps"] if "make test-slow" in str(s.get("run", ""))]
    assert slow["run"] == f"make test-slow SPLIT=${{{{ matrix.part }}}}/{len(parts)}"
    assert parts == list(range(1, len(parts) + 1)), parts
    setup = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/setup-python@"))
    assert setup["with"]["cache"] == "pip" and job["env"]["PIP_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"


SLOW_DURATIONS = ROOT / "tests" / "grader" / "slow_durations.json"


def test_make_test_slow_split_runs_one_part_by_the_committed_durations():
    """`make test-slow SPLIT=K/N` is pytest-split's --splits N --group K over the durations
    file, and without SPLIT the whole set."""
    said = subprocess.run(["make", "-n", "test-slow", "SPLIT=2/3"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    (line,) = [line for line in said.stdout.splitlines() if "-m pytest" in line]
    assert line.endswith("-m pytest -m slow --splits 3 --group 2 --durations-path tests/grader/slow_durations.json"), line
    said = subprocess.run(["make", "-n", "test-slow"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    (line,) = [line for line in said.stdout.splitlines() if "-m pytest" in line]
    assert line.rstrip().endswith("-m pytest -m slow"), line


def test_the_slow_sets_parts_hold_every_test_once_and_about_the_same_time():
    """The workflow's N parts, split as pytest-split splits them (contiguous chunks, by the
    committed durations): each test in one part, none twice, none left out, and no part's
    estimate above 1.5 × the mean (here in the file's sorted order; a run splits the
    collection order, which moves a boundary by a test or two) — else the durations are
    stale: refresh them with `pytest -m slow --store-durations --durations-path
    tests/grader/slow_durations.json` (a new slow test missing there counts as the average)."""
    from types import SimpleNamespace

    from pytest_split.algorithms import Algorithms

    durations = json.loads(SLOW_DURATIONS.read_text(encoding="utf-8"))
    assert durations and all(isinstance(v, (int, float)) and v >= 0 for v in durations.values())
    assert all((ROOT / nodeid.split("::")[0]).is_file() for nodeid in durations), "a test file named there is gone"
    parts = len(_load(INSTRUCTORS)["jobs"]["make-test-slow"]["strategy"]["matrix"]["part"])
    items = [SimpleNamespace(nodeid=nodeid) for nodeid in durations]
    groups = Algorithms.duration_based_chunks.value(parts, items, durations)
    chosen = [item.nodeid for group in groups for item in group.selected]
    assert sorted(chosen) == sorted(durations) and len(set(chosen)) == len(chosen)
    mean = sum(durations.values()) / parts
    assert all(0 < group.duration <= 1.5 * mean for group in groups), [round(g.duration) for g in groups]


def test_instructors_workflow_grades_on_macos_and_in_the_students_container():
    """The portable tier where students run it (macOS, Apple Silicon) and the .devcontainer
    image: the solutions score full marks, the stubs 0, each with its tier named."""
    jobs = _load(INSTRUCTORS)["jobs"]
    mac = jobs["macos-portable-tier"]
    assert mac["runs-on"] == "macos-latest"
    run = _run_steps(mac)
    assert "make grade SUBMISSION=solutions FORMAT=json OUTPUT=solutions.json" in run
    assert "make grade SUBMISSION=exercises FORMAT=json OUTPUT=stubs.json" in run
    assert ".ci/expect_grade.py solutions.json full portable" in run and ".ci/expect_grade.py stubs.json zero portable" in run
    box = jobs["devcontainer"]
    run = _run_steps(box)
    assert "docker build -t attention-grader -f autograder/instructor/release/templates/student/.devcontainer/Dockerfile ." in run
    assert "docker run" in run and "attention-grader" in run
    assert ".ci/expect_grade.py solutions.json full full" in run and ".ci/expect_grade.py exercises.json zero full" in run
    assert (ROOT / ".ci" / "expect_grade.py").is_file()


def test_expect_grade_passes_only_the_expected_score_and_tier(tmp_path, solutions_graded, stubs_graded):
    """.ci/expect_grade.py, which the macOS and container jobs trust: right and wrong cases."""
    results = tmp_path / "r.json"

    def check(data: dict, score: str, tier: str) -> int:
        results.write_text(json.dumps(data), encoding="utf-8")
        cmd = [sys.executable, str(ROOT / ".ci" / "expect_grade.py"), str(results), score, tier]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).returncode

    assert check(solutions_graded.data, "full", "full") == 0
    assert check(stubs_graded.data, "zero", "full") == 0
    assert check(stubs_graded.data, "full", "full") == 1
    assert check(solutions_graded.data, "zero", "full") == 1
    assert check(solutions_graded.data, "full", "portable") == 1
    assert check({**solutions_graded.data, "status": "error"}, "full", "full") == 1


def test_student_feedback_workflow_has_every_part():
    data = _load(STUDENT)
    assert {"push", "pull_request"} <= set(data["on"])
    assert data["permissions"] == {"contents": "read", "pull-requests": "write"}  # no checks: write — no Classroom reporter
    (job,) = data["jobs"].values()
    assert "not the official score" in job["name"]
    assert 0 < job["timeout-minutes"] <= 30
    steps = {s.get("id") or s.get("name"): s for s in job["steps"]}
    setup = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/setup-python@"))
    assert setup["with"]["cache"] == "pip"
    assert "--format github" in steps["grade"]["run"] and "--results results.json" in steps["grade"]["run"]
    upload = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == "results.json" and "always()" in upload["if"]
    comment = next(s for s in job["steps"] if "ci-comment" in str(s.get("run", "")))
    assert "always()" in comment["if"] and "'push'" in comment["if"] and "'pull_request'" in comment["if"]
    text = STUDENT.read_text(encoding="utf-8")
    assert "The tick is NOT your score" in text


def test_no_shipped_workflow_feeds_github_classroom():
    """GitHub Classroom was discontinued (2026): the student workflow stands on its own, and the
    one example that still uses its reporter says it is deprecated."""
    shipped = sorted((ROOT / "autograder/instructor/release/templates/student").rglob("*.yml"))
    assert shipped == [STUDENT]
    for path in shipped:
        assert "autograding-grading-reporter" not in path.read_text(encoding="utf-8"), path
        assert "github-classroom[bot]" not in path.read_text(encoding="utf-8"), path
    example = ROOT / "autograder/instructor/release/templates/examples/classroom.yml"
    if example.exists():
        assert example.read_text(encoding="utf-8").startswith("# DEPRECATED — GitHub Classroom was discontinued in 2026")


def _evaluate(expression: str, context: dict[str, object]) -> bool:
    """A workflow `if:` made only of `github.…`/`steps.…` lookups, string literals, ==, !=, && and ||."""
    import re

    assert re.fullmatch(r"[\w.' !=|&()-]+", expression), expression
    python = re.sub(r"(?:github|steps)(\.[\w-]+)+", lambda m: repr(context.get(m.group(0))), expression)
    python = python.replace("&&", " and ").replace("||", " or ")
    return bool(eval(python, {"__builtins__": {}}))  # our own expression, checked above


PUSH = {"github.event_name": "push", "github.repository": "student/attention"}
SAME_REPO_PR = {
    "github.event_name": "pull_request",
    "github.repository": "student/attention",
    "github.event.pull_request.head.repo.full_name": "student/attention",
}
FORK_PR = {**SAME_REPO_PR, "github.event.pull_request.head.repo.full_name": "someone/attention-fork"}


def test_student_workflow_grades_each_commit_once():
    """A push to a branch grades that commit; a pull request inside the repository does not grade
    it again (its head was pushed, and that run's tick shows on the pull request); a pull request
    from a fork (no push here) does; a tag push (Classroom 50's submit/*) runs nothing."""
    data = _load(STUDENT)
    assert data["on"]["push"] == {"branches": ["**"]}  # branches only: no run for tags
    (job,) = data["jobs"].values()
    assert _evaluate(job["if"], PUSH) and _evaluate(job["if"], FORK_PR)
    assert not _evaluate(job["if"], SAME_REPO_PR)
    assert data["concurrency"]["cancel-in-progress"] is True  # a newer push to the same branch replaces the run
    comment = next(s for s in job["steps"] if "ci-comment" in str(s.get("run", "")))
    assert _evaluate(comment["if"].replace("always() && ", ""), PUSH)  # the push run writes the pull request's comment


@pytest.fixture(scope="module")
def actions_run(tmp_path_factory):
    """One full grade of the stubs, as the student workflow runs it, in a simulated
    Actions environment, with `[ci] fail_below = 50` (the stubs score 0)."""
    tmp = tmp_path_factory.mktemp("actions")
    summary, output = tmp / "summary.md", tmp / "output"
    summary.write_text("# earlier step\n"), output.write_text("earlier=1\n")
    event = tmp / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "repository": {"full_name": "student/attention"}}))
    config = write_config(tmp / "grading.toml", {"fail_below = 0": "fail_below = 50"})
    env = dict(
        os.environ,
        GITHUB_ACTIONS="true",
        CI="true",
        GITHUB_EVENT_NAME="push",
        GITHUB_EVENT_PATH=str(event),
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_OUTPUT=str(output),
    )
    graded = grade(EXERCISES, "--results", str(tmp / "results.json"), fmt="github", config=config, env=env)
    return graded, summary, output, tmp / "results.json"


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_github_run_writes_summary_outputs_and_follows_the_exit_rule(actions_run):
    graded, summary, output, results = actions_run
    assert graded.rc == 3, graded.stderr  # below [ci] fail_below: red tick, after writing everything
    assert "below [ci] fail_below = 50" in graded.stderr
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n") and markdown.MARKER in text and "| Skill | Score |" in text  # appended
    assert_markdown_is_inert(text.split("\n", 1)[1])
    values = _outputs(output)
    assert values["earlier"] == "1" and values["score"] == "0" and values["status"] == "complete"
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["score"] == 0 and len(data["skills"]) == len(SKILLS)


def test_classroom_result_has_the_reporters_format(actions_run):
    graded, _, output, results = actions_run
    result = json.loads(base64.b64decode(_outputs(output)["result"]))
    assert result["version"] == 1 and result["status"] == "fail"  # fail: below the threshold
    data = json.loads(results.read_text(encoding="utf-8"))
    assert result["max_score"] == data["max_score"] == TOTAL_POINTS
    assert len(result["tests"]) == sum(len(s["tests"]) for s in data["skills"])
    for test in result["tests"]:
        assert set(test) == {"name", "status", "score", "message", "line_no", "execution_time"}
        assert test["status"] in ("pass", "fail", "error") and isinstance(test["line_no"], int)
        assert "\n" not in test["message"] and "::" not in test["message"]
    assert sum(t["score"] for t in result["tests"]) == data["score"]
    failing = [t for t in result["tests"] if t["status"] == "fail" and t["line_no"] > 0]
    assert failing, "failing tests point at the student's line"


def test_github_stdout_annotates_only_the_students_files(actions_run):
    graded = actions_run[0]
    annotations = [line for line in graded.stdout.splitlines() if line.startswith("::error file=")]
    assert 0 < len(annotations) <= 10  # GitHub shows at most 10 per step: one per failing place
    for line in annotations:
        assert line.startswith("::error file=exercises/"), line
    for line in graded.stdout.splitlines():
        assert not escape.is_workflow_command(line) or line.startswith(("::error ", "::notice ", "::group::", "::endgroup::")), (
            line
        )


def test_classroom_status_follows_the_exit_rule():
    from autograder.core.results import Results

    complete = Results(status="complete", message="", score=40.0, max_score=100.0, skills=[])
    assert ci.classroom_result(complete)["status"] == "pass"  # a low score alone is not a red tick
    assert ci.classroom_result(complete, fail_below=50)["status"] == "fail"
    broken = Results(status="error", message="x", score=0.0, max_score=100.0, skills=[])
    assert ci.classroom_result(broken)["status"] == "error"


# --------------------------------------------------------------------------- the PR comment
class FakeGitHub:
    """Issue comments of one repository, served on 127.0.0.1 like GitHub's REST API."""

    def __init__(self, deny: bool = False) -> None:
        self.comments: list[dict] = []
        self.pulls: list[dict] = []  # open pull requests: {"number", "head": {"ref", "sha", "repo": {"full_name"}}}
        self.calls: list[tuple[str, str]] = []
        self.deny = deny
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict:
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

            def do_GET(self):
                fake.calls.append(("GET", self.path))
                if fake.deny:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                from urllib.parse import parse_qs, urlsplit

                query = parse_qs(urlsplit(self.path).query)
                if urlsplit(self.path).path.endswith("/pulls"):
                    owner, _, branch = query["head"][0].partition(":")
                    assert query["state"] == ["open"]
                    return self._send(
                        200,
                        [
                            p
                            for p in fake.pulls
                            if p["head"]["ref"] == branch and p["head"]["repo"]["full_name"].split("/")[0] == owner
                        ],
                    )
                page = int(query.get("page", ["1"])[0])
                self._send(200, fake.comments[(page - 1) * 100 : page * 100])

            def do_POST(self):
                fake.calls.append(("POST", self.path))
                body = self._body()
                comment = {
                    "id": 1000 + len(fake.comments),
                    "body": body["body"],
                    "user": {"login": "github-actions[bot]", "type": "Bot"},
                }
                fake.comments.append(comment)
                self._send(201, comment)

            def do_PATCH(self):
                fake.calls.append(("PATCH", self.path))
                body = self._body()
                comment = next(c for c in fake.comments if self.path.endswith(f"/comments/{c['id']}"))
                comment["body"] = body["body"]
                self._send(200, comment)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_github():
    server = FakeGitHub()
    yield server
    server.close()


@pytest.fixture(scope="module")
def hostile_results_file(tmp_path_factory):
    """Public results full of hostile submission text (see test_renderers.hostile_results)."""
    from test_renderers import HOSTILE

    from autograder.config import load
    from autograder.core import results as results_mod
    from autograder.runner import scoring
    from autograder.runner.manifest import RunManifest

    config = load(ROOT / "grading.toml").select(["qkv"])
    text = HOSTILE + "\n@course-staff http://evil.example <!-- attention-autograder --> ```"
    feedback = {
        "check": "qkv.project_qkv(…)",
        "problem": "raised",
        "detail": text,
        "hints": [],
        "grids": [],
        "frames": [],
        "error": {"type": "ValueError", "message": text, "frames": []},
    }
    report = {
        "tests": [
            {
                "nodeid": t.node_id,
                "outcome": "failed",
                "metadata": {
                    "result": {"kind": "submission", "feedback": feedback},
                    "printed": [{"call": "c", "text": text, "dropped": 0}],
                },
            }
            for t in config.tests
        ]
    }
    results = scoring.build(
        RunManifest.plan(config), report, {"path": "exercises", "modules": {}, "ignored": ["@evil http:x.py"]}
    ).public()
    path = tmp_path_factory.mktemp("results") / "results.json"
    path.write_text(results_mod.dumps(results.to_dict()), encoding="utf-8")
    return path


def _event(tmp_path: Path, name: str, payload: dict) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(payload))
    return path


def _pull_request(number: int, head: str, base: str = "student/attention") -> dict:
    return {
        "number": number,
        "pull_request": {"number": number, "head": {"repo": {"full_name": head}}, "base": {"repo": {"full_name": base}}},
    }


def _comment(
    results: Path, event: Path, event_name: str, server_url: str, tmp_path: Path, **extra: str
) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        GITHUB_ACTIONS="true",
        GITHUB_EVENT_NAME=event_name,
        GITHUB_EVENT_PATH=str(event),
        GITHUB_TOKEN="t0ken",
        GITHUB_REPOSITORY="student/attention",
        GITHUB_API_URL=server_url,
        GITHUB_SERVER_URL="https://github.com",
        GITHUB_RUN_ID="42",
        PYTHONPATH=str(ROOT),
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-m", "autograder", "ci-comment", "--results", str(results)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )


def test_pr_comment_is_created_once_then_updated_in_place(fake_github, hostile_results_file, tmp_path):
    # someone else's comments first, two pages of them, one quoting our marker
    fake_github.comments = [{"id": i, "body": f"comment {i}", "user": {"login": "student", "type": "User"}} for i in range(120)]
    fake_github.comments.append(
        {"id": 500, "body": markdown.MARKER + " fake score 100/100", "user": {"login": "student", "type": "User"}}
    )
    event = _event(tmp_path, "pr", _pull_request(7, head="student/attention"))
    first = _comment(hostile_results_file, event, "pull_request", fake_github.url, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "created" in first.stdout
    second = _comment(hostile_results_file, event, "pull_request", fake_github.url, tmp_path)
    assert second.returncode == 0 and "updated" in second.stdout, second.stdout + second.stderr
    ours = [c for c in fake_github.comments if c["user"]["type"] == "Bot"]
    assert len(ours) == 1, "one comment per pull request, updated in place"
    assert [m for m, _ in fake_github.calls].count("POST") == 1 and [m for m, _ in fake_github.calls].count("PATCH") == 1
    assert fake_github.comments[120]["body"].endswith("fake score 100/100")  # the student's own comment untouched
    body = ours[0]["body"]
    assert body.startswith(markdown.MARKER) and "| Skill | Score |" in body
    assert "[workflow run 42](https://github.com/student/attention/actions/runs/42)" in body
    assert_markdown_is_inert(body.replace("[workflow run 42](https://github.com/student/attention/actions/runs/42)", ""))


def test_pr_from_a_fork_gets_no_api_call_and_the_job_does_not_fail(fake_github, hostile_results_file, tmp_path):
    event = _event(tmp_path, "fork", _pull_request(8, head="someone/attention-fork"))
    proc = _comment(hostile_results_file, event, "pull_request", fake_github.url, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert fake_github.calls == []
    assert proc.stdout.startswith("::notice title=Feedback comment::pull request from a fork")


def test_a_read_only_token_is_a_notice_not_a_failure(hostile_results_file, tmp_path):
    server = FakeGitHub(deny=True)
    try:
        event = _event(tmp_path, "pr", _pull_request(9, head="student/attention"))
        proc = _comment(hostile_results_file, event, "pull_request", server.url, tmp_path)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert "::notice title=Feedback comment::could not write the feedback comment" in proc.stdout and "HTTP 403" in proc.stdout


def _open_pull(number: int, branch: str, sha: str, repo: str = "student/attention") -> dict:
    return {"number": number, "head": {"ref": branch, "sha": sha, "repo": {"full_name": repo}}}


def _push(tmp_path: Path, branch: str, sha: str) -> tuple[Path, dict[str, str]]:
    event = _event(tmp_path, "push", {"ref": f"refs/heads/{branch}", "after": sha})
    return event, {"GITHUB_REF": f"refs/heads/{branch}", "GITHUB_SHA": sha}


def test_a_push_comments_on_the_open_pull_request_of_its_branch(fake_github, hostile_results_file, tmp_path):
    """The student workflow grades a commit once, on its push: that run writes (then updates)
    the one comment of the branch's open pull request — the feedback pull request included."""
    fake_github.pulls = [_open_pull(3, "feature/masks", "a" * 40), _open_pull(4, "main", "b" * 40)]
    event, extra = _push(tmp_path, "feature/masks", "a" * 40)
    first = _comment(hostile_results_file, event, "push", fake_github.url, tmp_path, **extra)
    assert first.returncode == 0 and "created" in first.stdout and "#3" in first.stdout, first.stdout + first.stderr
    fake_github.pulls[0]["head"]["sha"] = "c" * 40
    event, extra = _push(tmp_path, "feature/masks", "c" * 40)
    second = _comment(hostile_results_file, event, "push", fake_github.url, tmp_path, **extra)
    assert second.returncode == 0 and "updated" in second.stdout, second.stdout + second.stderr
    posts = [path for method, path in fake_github.calls if method == "POST"]
    assert posts == ["/repos/student/attention/issues/3/comments"] and len(fake_github.comments) == 1
    assert fake_github.comments[0]["body"].startswith(markdown.MARKER)


def test_a_push_without_an_open_pull_request_or_behind_its_head_writes_no_comment(fake_github, hostile_results_file, tmp_path):
    fake_github.pulls = [_open_pull(5, "main", "d" * 40)]
    event, extra = _push(tmp_path, "other", "e" * 40)
    proc = _comment(hostile_results_file, event, "push", fake_github.url, tmp_path, **extra)
    assert proc.returncode == 0 and "no open pull request" in proc.stdout, proc.stdout + proc.stderr
    event, extra = _push(tmp_path, "main", "f" * 40)  # an older run finishing late: the pull request moved on to d…
    proc = _comment(hostile_results_file, event, "push", fake_github.url, tmp_path, **extra)
    assert proc.returncode == 0 and "no open pull request" in proc.stdout
    assert [m for m, _ in fake_github.calls] == ["GET", "GET"] and fake_github.comments == []


def test_a_push_with_a_read_only_token_is_a_notice_not_a_failure(hostile_results_file, tmp_path):
    server = FakeGitHub(deny=True)
    try:
        event, extra = _push(tmp_path, "main", "a" * 40)
        proc = _comment(hostile_results_file, event, "push", server.url, tmp_path, **extra)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert "::notice title=Feedback comment::could not write the feedback comment" in proc.stdout and "HTTP 403" in proc.stdout


def test_a_tag_push_writes_no_comment(fake_github, hostile_results_file, tmp_path):
    event = _event(tmp_path, "tag", {"ref": "refs/tags/submit/2026-06-01T14-32-05Z-a1b2c3d"})
    proc = _comment(hostile_results_file, event, "push", fake_github.url, tmp_path, GITHUB_REF="refs/tags/submit/x")
    assert proc.returncode == 0 and fake_github.calls == [] and "no open pull request" in proc.stdout


def test_missing_results_still_comment_that_grading_broke(fake_github, tmp_path):
    event = _event(tmp_path, "pr", _pull_request(10, head="student/attention"))
    proc = _comment(tmp_path / "nope.json", event, "pull_request", fake_github.url, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Grading did not complete" in fake_github.comments[0]["body"]


def test_a_pushed_commit_classroom50_already_grades_is_not_graded_again(tmp_path):
    """`gh student submit` pushes its commit and a submit/* tag: the push's feedback run finds
    the tag on its commit and grades nothing (Classroom 50 grades the submission, once); a
    commit without such a tag is graded. The step's script runs here with a stub `git`."""
    import stat

    data = _load(STUDENT)
    (job,) = data["jobs"].values()
    check = next(s for s in job["steps"] if s.get("id") == "submitted")
    assert _evaluate(check["if"], PUSH) and not _evaluate(check["if"], FORK_PR)
    after = job["steps"][job["steps"].index(check) + 1 :]
    assert len(after) >= 5  # setup, install, grade, upload, comment
    for step in after:
        condition = step["if"].replace("always() && ", "")
        assert not _evaluate(condition, {**PUSH, "steps.submitted.outputs.skip": "true"}), step
        assert _evaluate(condition, {**PUSH, "steps.submitted.outputs.skip": None}), step
    sha = "a" * 40
    stub = tmp_path / "bin"
    stub.mkdir()
    for tags, expected in (
        (f"{'b' * 40}\trefs/tags/v1\n{sha}\trefs/tags/submit/week7\n", "skip=true\n"),
        (f"{sha}\trefs/tags/v1\n{'c' * 40}\trefs/tags/submit/week7\n", ""),
    ):
        (stub / "git").write_text(f"#!/bin/sh\nprintf '{tags}'\n", encoding="utf-8")
        (stub / "git").chmod(stat.S_IRWXU)
        output = tmp_path / "output"
        output.write_text("", encoding="utf-8")
        env = {"PATH": f"{stub}:{os.environ['PATH']}", "GITHUB_SHA": sha, "GITHUB_OUTPUT": str(output)}
        proc = subprocess.run(["bash", "-e", "-c", check["run"]], env=env, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        assert output.read_text(encoding="utf-8") == expected, tags
