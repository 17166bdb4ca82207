"""GitHub Actions and GitHub Classroom: the files a CI run writes besides stdout.

``python -m autograder grade --format github`` prints annotations and a log (the github
renderer); this module is what the CLI then does with the environment Actions gives it:

- ``$GITHUB_STEP_SUMMARY``: the markdown score table and what to fix (≤ 1 MiB, GitHub's
  limit per step; over it, the table alone);
- ``$GITHUB_OUTPUT``: ``result`` (GitHub Classroom's base64 JSON: version 1, status,
  max_score, tests with name/status/score/message/line_no/execution_time — read by
  classroom-resources/autograding-grading-reporter), ``score``, ``max-score``, ``status``.

Everything is rendered from the public results; messages are one escaped line each.
"""

from __future__ import annotations

import base64
import json
import os

from .renderers import markdown
from .renderers.escape import plain_inert
from .renderers.github import location
from .results import Results

SUMMARY_LIMIT = 1 << 20  # bytes GitHub accepts per step summary


def classroom_result(results: Results) -> dict:
    """GitHub Classroom's runner result (one runner = this whole grade)."""
    tests = []
    for skill in results.skills:
        for test in skill.tests:
            where = location(test, results) if test.status != "passed" else None
            status = {"passed": "pass", "failed": "fail", "error": "error"}.get(test.status, "fail")
            tests.append({
                "name": plain_inert(f"{skill.id}: {test.name}", 200),
                "status": status,
                "score": test.score,
                "message": plain_inert(test.summary or ("passed" if test.status == "passed" else test.status), 300),
                "line_no": where[1] if where else 0,
                "execution_time": f"{test.duration:.2f}s",
            })
    if results.status != "complete":
        status = "error"
    else:
        status = "pass" if results.score >= results.max_score else "fail"
    return {"version": 1, "status": status, "max_score": results.max_score, "tests": tests}


def encode_result(results: Results) -> str:
    return base64.b64encode(json.dumps(classroom_result(results), ensure_ascii=True).encode()).decode("ascii")


def summary_markdown(results: Results) -> str:
    text = markdown.render(results)
    if len(text.encode("utf-8")) > SUMMARY_LIMIT - 1024:
        text = markdown.render(results, details=False) + "\n_(details cut: over GitHub's 1 MiB summary limit — see the job log)_\n"
    return text


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8", errors="backslashreplace") as fh:
        fh.write(text)


def write_actions_files(results: Results, env: dict[str, str] | None = None) -> list[str]:
    """Append the step summary and the step outputs where Actions asks for them. Returns
    what could not be written (one line each), so the caller can warn and go on."""
    env = os.environ if env is None else env
    problems = []
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            _append(summary, summary_markdown(results))
        except OSError as exc:
            problems.append(f"could not write $GITHUB_STEP_SUMMARY ({summary}): {exc.strerror or exc}")
    output = env.get("GITHUB_OUTPUT")
    if output:
        lines = [
            f"result={encode_result(results)}",
            f"score={results.score:g}",
            f"max-score={results.max_score:g}",
            f"status={results.status}",
        ]
        try:
            _append(output, "\n".join(lines) + "\n")
        except OSError as exc:
            problems.append(f"could not write $GITHUB_OUTPUT ({output}): {exc.strerror or exc}")
    return problems

