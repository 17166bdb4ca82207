"""Pieces every renderer shares: number formatting, sanitising submission text, the plain
text of one test's feedback, and grids as text."""

from __future__ import annotations

import re

from ..results import Results, TestOutcome

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: object, limit: int = 4000) -> str:
    """Text that came from a submission: no terminal escapes, bidi tricks or NULs."""
    out = _CONTROL.sub("�", str(text if text is not None else ""))
    return out if len(out) <= limit else out[: limit - 1] + "…"


def points(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text or "0"


ICON = {"passed": "✓", "failed": "✗", "error": "!", "not_run": "–"}


def headline(results: Results) -> str:
    if results.status != "complete":
        return f"Grading did not complete: {results.message}"
    return f"Total: {points(results.score)} / {points(results.max_score)}"


def hint_lines(test: TestOutcome) -> list[str]:
    out = []
    for hint in test.hints:
        section = f" → reread {hint['section']}" if hint.get("section") else ""
        out.append(f"Hint ({hint['id']}): {hint['text']}{section}")
    return out


def frame_lines(test: TestOutcome) -> list[str]:
    out = []
    for frame in test.frames[-4:]:
        where = f"{frame.get('file')}:{frame.get('line')}"
        func = f" in {frame['function']}" if frame.get("function") else ""
        out.append(f"  {where}{func}")
        if frame.get("code"):
            out.append(f"      {clean(frame['code'], 200)}")
    return out


def grid_text(grid: dict) -> list[str]:
    """Expected and got side by side; wrong cells marked with *."""
    exp, got, bad = grid["expected"], grid["got"], grid["bad"]
    width = max([len(c) for row in exp + got for c in row] + [5]) + 1
    lines = [f"{grid['title']} (rows: {grid['rows']}, columns: {grid['cols']}; * = wrong)"]
    header = "expected".ljust(width * len(exp[0]) + 2) + "   yours"
    lines.append("  " + header)
    for r in range(len(exp)):
        left = "".join(c.rjust(width) for c in exp[r])
        right = "".join((clean(c, 12) + ("*" if bad[r][j] else "")).rjust(width + 1) for j, c in enumerate(got[r]))
        lines.append(f"  {left}   {right}")
    return lines


def printed_lines(test: TestOutcome, limit: int = 1200) -> list[str]:
    if not test.printed:
        return []
    text = "".join(p.get("text", "") for p in test.printed)
    dropped = sum(int(p.get("dropped", 0)) for p in test.printed)
    body = clean(text, limit)
    more = f"\n… ({dropped + max(len(text) - limit, 0)} more characters not shown)" if dropped or len(text) > limit else ""
    return ["Your code printed:"] + ["  " + line for line in body.splitlines()[:30]] + ([more.strip()] if more else [])


def test_text(test: TestOutcome) -> str:
    """The plain-text feedback for one test (Gradescope output, logs)."""
    lines = [f"{ICON.get(test.status, '?')} {test.name}: {points(test.score)} / {points(test.max_score)} points"]
    if test.status == "passed":
        return lines[0]
    if test.credit and test.credit.get("total"):
        lines.append(test.credit.get("note") or f"Partial credit: {test.credit['passed']} of {test.credit['total']} kinds passed")
    if test.check and test.visibility == "visible":
        lines.append(f"Checked: {clean(test.check, 300)}")
    if test.detail:
        lines.extend(clean(test.detail).splitlines())
    elif test.summary:
        lines.append(clean(test.summary))
    for grid in test.grids:
        lines.extend(grid_text(grid))
    lines.extend(hint_lines(test))
    if test.frames:
        lines.append("Your code:")
        lines.extend(frame_lines(test))
    lines.extend(printed_lines(test))
    if test.status == "error" and test.error and test.error.get("traceback"):
        lines.append(clean(test.error["traceback"], 3000))
    return "\n".join(lines)


_TODO = re.compile(r"TODO\((\w+)\):\s*([\w.]+)")


def todo_only(test: TestOutcome) -> str | None:
    """The stub a test is waiting on ("project_qkv"), when an unfinished TODO is its only
    problem: such tests are listed once per skill instead of one panel each."""
    if test.status != "failed" or [h["id"] for h in test.hints] != ["general/todo"]:
        return None
    match = _TODO.search(f"{test.summary} {test.detail or ''}")
    return match.group(2) if match else None


def todo_summary(tests: list[TestOutcome]) -> tuple[list[str], list[TestOutcome]]:
    """(the stubs still to write, in order; the tests that failed for another reason)."""
    stubs: list[str] = []
    others = []
    for test in tests:
        name = todo_only(test)
        if name is None:
            others.append(test)
        elif name not in stubs:
            stubs.append(name)
    return stubs, others
