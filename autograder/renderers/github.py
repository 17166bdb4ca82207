"""GitHub Actions: ``::error`` workflow commands on the student's own lines, plus the
markdown summary (appended to ``$GITHUB_STEP_SUMMARY`` when it is set).

An annotation points at the line where the student's code raised, else at the definition
of the function the failed test called (found by parsing the submitted file, never by
running it).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from ..results import Results, TestOutcome
from . import markdown
from .common import clean, collapse_repeats, same_problem_line


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def definition_lines(path: Path) -> dict[str, int]:
    """name → line of its def/class (methods as Class.name) in a submitted module."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node.lineno
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        out[f"{node.name}.{item.name}"] = item.lineno
    return out


def _location(test: TestOutcome, results: Results) -> tuple[str, int] | None:
    if test.frames:
        frame = test.frames[-1]
        if isinstance(frame.get("line"), int):
            return str(frame["file"]), frame["line"]
    modules = results.submission.get("modules", {})
    skill_module = next((s.module for s in results.skills if s.id == test.skill), None)
    if not skill_module:
        return None
    info = modules.get(skill_module[:-3], {})
    display = info.get("display_path")
    if not display:
        return None
    line = info.get("problem_line") or 1
    target = test.targets[0].split(".", 1)[1] if test.targets else ""
    target = target.removeprefix("probe:")
    path = Path(display)
    if path.is_file() and target:
        line = definition_lines(path).get(target, line)
    return display, line


def commands(results: Results) -> list[str]:
    out = []
    if results.status != "complete":
        out.append(f"::error title=Grading did not complete::{_escape_data(clean(results.message, 900))}")
    for skill in results.skills:
        for test, repeats in collapse_repeats([t for t in skill.tests if t.status != "passed"]):
            where = _location(test, results)
            title = _escape_property(f"{skill.id}: {test.name}")
            hint = f" Hint: {test.hints[0]['text']} (reread {test.hints[0]['section']})" if test.hints else ""
            more = f" {same_problem_line(repeats)}" if repeats else ""
            body = _escape_data(clean(f"{test.summary}{hint}{more}", 900))
            if where:
                out.append(f"::error file={_escape_property(where[0])},line={where[1]},title={title}::{body}")
            else:
                out.append(f"::error title={title}::{body}")
    out.append(f"::notice title=Score::{results.score:g} / {results.max_score:g}")
    return out


def render(results: Results) -> str:
    summary = markdown.render(results)
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(summary)
        except OSError:
            pass
    return "\n".join(commands(results)) + "\n\n" + summary
