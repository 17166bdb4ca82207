"""GitHub Actions: the files a CI run writes besides stdout, and the one pull-request comment.

``python -m autograder grade --format github`` prints annotations and a log (the github
renderer); this module renders what the CLI then appends to the files Actions names:

- ``$GITHUB_STEP_SUMMARY``: the markdown score table and what to fix (≤ 1 MiB, GitHub's
  limit per step; over it, the table alone);
- ``$GITHUB_OUTPUT``: ``score``, ``max-score``, ``status``, and ``result`` — deprecated:
  GitHub Classroom's base64 JSON (version 1, status, max_score, tests with
  name/status/score/message/line_no/execution_time) for classroom-resources/autograding-grading-reporter.
  GitHub Classroom was discontinued in 2026; only the deprecated example workflow
  (instructor/release/templates/examples/classroom.yml) still reads it, the student workflow does not.

``ci-comment`` keeps one comment on a pull request: on a ``push`` it finds the open pull
request(s) whose head is the pushed commit of this repository (the student workflow grades
each commit once, on its push), on a ``pull_request`` from this repository it uses that one.

Everything is rendered from the public results; messages are one escaped line each.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

from .core.escape import plain_inert
from .core.results import Results
from .renderers import markdown
from .renderers.github import location

SUMMARY_LIMIT = 1 << 20  # bytes GitHub accepts per step summary


def classroom_result(results: Results, fail_below: float = 0.0) -> dict:
    """Deprecated (GitHub Classroom was discontinued in 2026). GitHub Classroom's runner result
    (one runner = this whole grade). Its top-level status follows the CLI's exit rule — "error" when grading broke, "fail" below
    ``[ci] fail_below``, else "pass" — because the reporter fails its step on "fail"."""
    tests = []
    for skill in results.skills:
        for test in skill.tests:
            where = location(test, results) if test.status != "passed" else None
            status = {"passed": "pass", "failed": "fail", "error": "error"}.get(test.status, "fail")
            tests.append(
                {
                    "name": plain_inert(f"{skill.id}: {test.name}", 200),
                    "status": status,
                    "score": test.score,
                    "message": plain_inert(test.summary or ("passed" if test.status == "passed" else test.status), 300),
                    "line_no": where[1] if where else 0,
                    "execution_time": f"{test.duration:.2f}s",
                }
            )
    if results.status != "complete":
        status = "error"
    else:
        status = "fail" if results.score < fail_below else "pass"
    return {"version": 1, "status": status, "max_score": results.max_score, "tests": tests}


def encode_result(results: Results, fail_below: float = 0.0) -> str:
    return base64.b64encode(json.dumps(classroom_result(results, fail_below), ensure_ascii=True).encode()).decode("ascii")


def summary_markdown(results: Results) -> str:
    text = markdown.render(results)
    if len(text.encode("utf-8")) > SUMMARY_LIMIT - 1024:
        text = (
            markdown.render(results, details=False) + "\n_(details cut: over GitHub's 1 MiB summary limit — see the job log)_\n"
        )
    return text


def actions_files(results: Results, env: dict[str, str] | None = None, *, fail_below: float = 0.0) -> list[tuple[str, str, str]]:
    """(variable, path, text to append) for each file Actions asks for in ``env``: the step
    summary and the step outputs. Rendered here; the caller appends (autograder.cli)."""
    env = os.environ if env is None else env
    out = []
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary:
        out.append(("GITHUB_STEP_SUMMARY", summary, summary_markdown(results)))
    output = env.get("GITHUB_OUTPUT")
    if output:
        lines = [
            f"result={encode_result(results, fail_below)}",
            f"score={results.score:g}",
            f"max-score={results.max_score:g}",
            f"status={results.status}",
        ]
        out.append(("GITHUB_OUTPUT", output, "\n".join(lines) + "\n"))
    return out


# --------------------------------------------------------------------------- the PR comment
COMMENT_LIMIT = 65_000  # GitHub rejects comment bodies over 65 536 characters


class GitHubError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class GitHubAPI:
    """The four REST calls the comment needs, through urllib (no extra dependency).
    ``opener`` is injectable so tests can answer from a fake server on 127.0.0.1."""

    def __init__(self, base_url: str, token: str, repository: str, opener=None, timeout: float = 20.0) -> None:
        import urllib.request

        self.base = base_url.rstrip("/")
        self.token = token
        self.repository = repository
        self.opener = opener or urllib.request.build_opener()
        self.timeout = timeout

    def request(self, method: str, path: str, body: dict | None = None) -> Any:
        import urllib.error
        import urllib.request

        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(
            f"{self.base}{path}",
            data=data,
            method=method,
            headers={
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {self.token}",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "attention-autograder",
                **({"Content-Type": "application/json"} if data is not None else {}),
            },
        )
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                text = response.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", errors="replace")[:300]
            raise GitHubError(exc.code, detail) from None
        return json.loads(text) if text.strip() else None

    def comments(self, number: int) -> list[dict]:
        out: list[dict] = []
        for page in range(1, 51):  # 5 000 comments is more than any exercise PR has
            batch = self.request("GET", f"/repos/{self.repository}/issues/{number}/comments?per_page=100&page={page}") or []
            out.extend(batch)
            if len(batch) < 100:
                break
        return out

    def create_comment(self, number: int, body: str) -> dict:
        return self.request("POST", f"/repos/{self.repository}/issues/{number}/comments", {"body": body})

    def update_comment(self, comment_id: int, body: str) -> dict:
        return self.request("PATCH", f"/repos/{self.repository}/issues/comments/{comment_id}", {"body": body})

    def open_pulls(self, owner: str, branch: str) -> list[dict]:
        """Open pull requests whose head is ``owner:branch``."""
        from urllib.parse import quote

        return (
            self.request(
                "GET", f"/repos/{self.repository}/pulls?state=open&head={quote(f'{owner}:{branch}', safe=':')}&per_page=100"
            )
            or []
        )


def _is_ours(comment: dict) -> bool:
    """Our comment: it starts with the hidden marker and a bot (the Actions token) wrote
    it — a student quoting the marker in their own comment cannot take it over."""
    user = comment.get("user") or {}
    return str(comment.get("body") or "").startswith(markdown.MARKER) and (
        user.get("type") == "Bot" or user.get("login") == "github-actions[bot]"
    )


def upsert_comment(api: GitHubAPI, number: int, body: str) -> tuple[str, int]:
    """Update our comment on the pull request in place, or create it once: ("updated" |
    "created", comment id)."""
    for comment in api.comments(number):
        if _is_ours(comment):
            api.update_comment(int(comment["id"]), body)
            return "updated", int(comment["id"])
    created = api.create_comment(number, body)
    return "created", int((created or {}).get("id", 0))


def comment_body(results: Results, env: dict[str, str]) -> str:
    body = markdown.render(results)
    if len(body) > COMMENT_LIMIT:
        body = markdown.render(results, details=False)
    server, repository, run = (
        env.get("GITHUB_SERVER_URL", "https://github.com"),
        env.get("GITHUB_REPOSITORY", ""),
        env.get("GITHUB_RUN_ID", ""),
    )
    if repository and run.isdigit() and re.fullmatch(r"[\w.-]+/[\w.-]+", repository) and re.fullmatch(r"https://[\w.-]+", server):
        body += (
            "\n<sub>Details, annotations and `results.json`: [workflow run "
            f"{run}]({server}/{repository}/actions/runs/{run})</sub>\n"
        )
    return body


def _event(env: dict[str, str]) -> dict:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _notice(message: str) -> None:
    from .core.escape import gh_data

    print(f"::notice title=Feedback comment::{gh_data(message)}")


def comment_main(results_path: str | None, env: dict[str, str] | None = None, opener=None) -> int:
    """``python -m autograder ci-comment``: the one feedback comment on a pull request (on a
    push: the open pull request(s) of the pushed branch at that commit). Never fails the job:
    a fork's read-only token or an API error is a notice (the job summary and annotations
    carry the same feedback)."""
    env = dict(os.environ if env is None else env)
    event = _event(env)
    if env.get("GITHUB_EVENT_NAME") == "push":
        return _comment_on_push(results_path, env, event, opener)
    pull = event.get("pull_request") or {}
    number = pull.get("number") or event.get("number")
    if env.get("GITHUB_EVENT_NAME") not in ("pull_request", "pull_request_target") or not isinstance(number, int):
        print("autograder: not a push or pull request event — no comment to write")
        return 0
    head = ((pull.get("head") or {}).get("repo") or {}).get("full_name")
    base = ((pull.get("base") or {}).get("repo") or {}).get("full_name")
    if head and base and head != base:
        _notice("pull request from a fork: its token is read-only, so the feedback is in the job summary and annotations")
        return 0
    token, repository = env.get("GITHUB_TOKEN", ""), env.get("GITHUB_REPOSITORY", "")
    if not token or not repository:
        _notice("no GITHUB_TOKEN or GITHUB_REPOSITORY: no comment written (see the job summary)")
        return 0
    results = _load_results(results_path)
    api = GitHubAPI(env.get("GITHUB_API_URL", "https://api.github.com"), token, repository, opener=opener)
    try:
        action, comment_id = upsert_comment(api, number, comment_body(results, env))
    except GitHubError as exc:
        why = "the token may not write comments here (read-only)" if exc.status in (401, 403, 404) else "GitHub's API refused it"
        _notice(f"could not write the feedback comment ({why}; {exc}); the job summary has the same feedback")
        return 0
    except (OSError, ValueError) as exc:
        _notice(f"could not reach GitHub's API to write the feedback comment ({exc}); see the job summary")
        return 0
    print(f"autograder: feedback comment {action} (id {comment_id}) on pull request #{number}")
    return 0


def pulls_of_push(api: GitHubAPI, env: dict[str, str], event: dict) -> list[int]:
    """The open pull requests of this repository whose head is the pushed branch at the
    pushed commit (an older run never overwrites the feedback of a newer head)."""
    ref = env.get("GITHUB_REF") or str(event.get("ref") or "")
    if not ref.startswith("refs/heads/"):
        return []
    sha = env.get("GITHUB_SHA") or str(event.get("after") or "")
    owner = api.repository.split("/", 1)[0]
    numbers = []
    for pull in api.open_pulls(owner, ref[len("refs/heads/") :]):
        head = pull.get("head") or {}
        same_repo = ((head.get("repo") or {}).get("full_name") or api.repository) == api.repository
        if isinstance(pull.get("number"), int) and same_repo and (not sha or head.get("sha") in (None, sha)):
            numbers.append(pull["number"])
    return sorted(numbers)


def _comment_on_push(results_path: str | None, env: dict[str, str], event: dict, opener=None) -> int:
    token, repository = env.get("GITHUB_TOKEN", ""), env.get("GITHUB_REPOSITORY", "")
    if not token or not repository:
        _notice("no GITHUB_TOKEN or GITHUB_REPOSITORY: no comment written (see the job summary)")
        return 0
    api = GitHubAPI(env.get("GITHUB_API_URL", "https://api.github.com"), token, repository, opener=opener)
    try:
        numbers = pulls_of_push(api, env, event)
        if not numbers:
            print("autograder: no open pull request has this commit as its head — no comment to write (see the job summary)")
            return 0
        body = comment_body(_load_results(results_path), env)
        for number in numbers:
            action, comment_id = upsert_comment(api, number, body)
            print(f"autograder: feedback comment {action} (id {comment_id}) on pull request #{number}")
    except GitHubError as exc:
        why = "the token may not read or write pull requests here" if exc.status in (401, 403, 404) else "GitHub's API refused it"
        _notice(f"could not write the feedback comment ({why}; {exc}); the job summary has the same feedback")
    except (OSError, ValueError) as exc:
        _notice(f"could not reach GitHub's API to write the feedback comment ({exc}); see the job summary")
    return 0


def _load_results(path: str | None) -> Results:
    """The public results of this run; a missing or broken file still gives a comment that
    says grading did not complete."""
    from .core.results import from_dict
    from .runner.scoring import error_result

    try:
        return from_dict(json.loads(Path(path or "results.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        return error_result(None, f"no results to show ({path or 'results.json'}: {exc.__class__.__name__}) — see the job log")
