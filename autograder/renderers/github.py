"""GitHub Actions: ``::error`` annotations on the student's own lines, then a plain log of
what to fix, folded per skill.

One annotation per failing place (a line where the student's code raised, else the
definition of the function the failed tests called), listing the tests that fail there —
GitHub shows at most 10 error annotations per step, so one per test would hide most of
them. Locations come from the results (frames checked on the trusted side, definition
lines read from the submitted copy when it was graded); this renderer reads no files and
writes none: the CLI appends the markdown summary to ``$GITHUB_STEP_SUMMARY`` and the
Classroom result to ``$GITHUB_OUTPUT``.

Student text reaches stdout only %-encoded inside an annotation message, or behind the
``│ `` gutter in the log (``escape.gh_log``): no line can start a workflow command.
"""

from __future__ import annotations

from ..core.escape import GUTTER, gh_data, gh_property, is_workflow_command, one_line
from ..core.results import Results, TestOutcome
from .common import module_info, points, test_text, todo_summary

MAX_ANNOTATIONS = 10  # GitHub's limit of error annotations shown per step


def location(test: TestOutcome, results: Results) -> tuple[str, int] | None:
    """(display path, line) in the student's own module, or None."""
    if test.frames:
        frame = test.frames[-1]
        if isinstance(frame.get("line"), int) and frame.get("file"):
            return str(frame["file"]), frame["line"]
    skill_module = next((s.module for s in results.skills if s.id == test.skill), None)
    if not skill_module:
        return None
    info = (results.submission.get("modules") or {}).get(skill_module[:-3]) or {}
    display = info.get("display_path")
    if not display:
        return None
    line = info.get("problem_line") or 1
    target = test.targets[0].split(".", 1)[1] if test.targets and "." in test.targets[0] else ""
    target = target.removeprefix("probe:")
    definitions = info.get("definitions") or {}
    if target in definitions:
        line = definitions[target]
    elif target.split(".")[0] in definitions:  # a method the student has not written yet: its class
        line = definitions[target.split(".")[0]]
    return display, int(line)


def _safe_log_line(line: str) -> str:
    """Last line of defence: a log line that would still parse as a command goes behind
    the gutter (test_text already puts submission text there)."""
    while "##" in line:
        line = line.replace("##", "#\u200b#")
    return GUTTER + line if is_workflow_command(line) or line.lstrip().startswith("::") else line


def _all_todo(results: Results, skill) -> bool:
    info = module_info(results, skill)
    functions, todo = info.get("functions") or [], info.get("todo") or []
    return bool(functions) and set(functions) <= set(todo) and skill.score == 0


def not_started(results: Results, skill) -> bool:
    """Every function of the skill's module is still the TODO stub while the student has begun
    another skill: a later assignment's exercise — one line of feedback, not an annotation per
    test. (With nothing begun at all, the annotations show where to start.)"""
    return _all_todo(results, skill) and any(not _all_todo(results, other) for other in results.skills)


def _started_total(results: Results) -> str:
    skipped = [s for s in results.skills if not_started(results, s)]
    if not skipped:
        return ""
    started = [s for s in results.skills if s not in skipped]
    score = sum(s.score for s in started)
    top = sum(s.points for s in started)
    return f" (skills started: {points(score)} / {points(top)}; not started: {', '.join(s.id for s in skipped)})"


def commands(results: Results) -> list[str]:
    """The workflow commands: error annotations, then the score as a notice."""
    out = []
    if results.status != "complete":
        out.append(f"::error title=Grading did not complete::{gh_data(results.message)}")
    places: dict[tuple[str, int], list[tuple[str, TestOutcome]]] = {}
    for skill in results.skills:
        if not_started(results, skill):
            continue  # said once in the log, never an annotation per test
        for test in skill.tests:
            if test.status in ("passed", "not_run"):
                continue
            where = location(test, results)
            if where:
                places.setdefault(where, []).append((skill.id, test))
    for n, ((file, line), tests) in enumerate(places.items()):
        if n == MAX_ANNOTATIONS - 1 and len(places) > MAX_ANNOTATIONS:
            rest = sum(len(t) for t in list(places.values())[n:])
            out.append(
                "::error "
                f"title={gh_property(f'{rest} more failing tests')}::{gh_data('See the job summary for every failing test.')}"
            )
            break
        skill_id, first = tests[0]
        names = ", ".join(t.name for _, t in tests[:4]) + (f" and {len(tests) - 4} more" if len(tests) > 4 else "")
        lost = sum(t.max_score - t.score for _, t in tests)
        message = f"{one_line(first.summary, 400)}"
        if first.hints:
            hint = first.hints[0]
            message += f"\nHint: {hint['text']}" + (f" (reread {hint['section']})" if hint.get("section") else "")
        message += f"\nFailing here: {names} (−{points(lost)} points)"
        title = f"{skill_id}: {first.name}" if len(tests) == 1 else f"{skill_id}: {len(tests)} tests fail here"
        out.append(f"::error file={gh_property(file)},line={int(line)},title={gh_property(title)}::{gh_data(message)}")
    score = f"{points(results.score)} / {points(results.max_score)}{_started_total(results)}"
    out.append(f"::notice title=Score::{gh_data(score)}")
    return out


def log(results: Results) -> list[str]:
    """What to fix, one folded group per skill with failures."""
    lines = []
    for skill in results.skills:
        failed = [t for t in skill.tests if t.status != "passed"]
        if not_started(results, skill):
            lines.append(_safe_log_line(f"{skill.id}: not started — every function in {skill.module} is still the TODO stub"))
            continue
        lines.append(f"{skill.id}: {points(skill.score)} / {points(skill.points)} ({skill.passed}/{skill.total} passed)")
        if not failed:
            continue
        lines.append(f"::group::{gh_data(f'{skill.id}: {len(failed)} tests to fix')}")
        stubs, others = todo_summary(failed, module_info(results, skill).get("todo"))
        if stubs:
            lines.append(
                _safe_log_line(
                    f"Still TODO in {skill.module}: {', '.join(one_line(s, 80) for s in stubs)} "
                    f"({len(failed) - len(others)} tests wait on them)"
                )
            )
        for test in others:
            lines.extend(_safe_log_line(line) for line in test_text(test).splitlines())
        lines.append("::endgroup::")
    lines.append(_safe_log_line(f"Total: {points(results.score)} / {points(results.max_score)}{_started_total(results)}"))
    return lines


def render(results: Results) -> str:
    return "\n".join(commands(results) + [""] + log(results)) + "\n"
