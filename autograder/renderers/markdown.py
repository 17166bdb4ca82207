"""Markdown: a score table fit for a pull-request comment or a GitHub job summary, then the
failed tests with hints, the student's own lines, and grids as tables (wrong cells bold
and marked ⚠)."""

from __future__ import annotations

from ..core.escape import md_block, md_code, md_text
from ..core.results import Results, TestOutcome
from .common import (
    ICON,
    collapse_repeats,
    footer_notes,
    frame_where,
    headline,
    imports_note,
    module_info,
    not_graded,
    not_started,
    points,
    printed_text,
    same_problem_line,
    todo_summary,
    where_to_start,
)

MARKER = "<!-- attention-autograder -->"


def esc(text: object, limit: int = 600) -> str:
    """Prose or a table cell (see ``escape.md_text``): no markup, mentions or links."""
    return md_text(text, limit)


def grid_table(grid: dict) -> list[str]:
    exp, got, bad = grid["expected"], grid["got"], grid["bad"]
    cols = len(exp[0])
    head = (
        f"| {esc(grid['rows'])} \\\\ {esc(grid['cols'])} | "
        + " | ".join(f"exp {j}" for j in range(cols))
        + " | "
        + " | ".join(f"yours {j}" for j in range(cols))
        + " |"
    )
    lines = [f"*{esc(grid['title'])}* (⚠ = wrong cell)", "", head, "|" + "---|" * (1 + 2 * cols)]
    for r in range(len(exp)):
        cells = [esc(c, 20) for c in exp[r]]
        mine = [f"**{esc(c, 20)}** ⚠" if bad[r][j] else esc(c, 20) for j, c in enumerate(got[r])]
        lines.append(f"| {r} | " + " | ".join(cells) + " | " + " | ".join(mine) + " |")
    return lines + [""]


def _test_block(test: TestOutcome) -> list[str]:
    """One failed test as a list item. What the submission controls (messages, its code,
    what it printed) sits in fenced blocks; only our own words are prose."""
    title = f"- {ICON.get(test.status, '?')} {md_code(test.name)} — {points(test.score)} / {points(test.max_score)}"
    lines = [title]
    if test.credit and test.credit.get("total"):
        # the note already says "N of M input cases passed (…)": never both
        lines.append(
            f"  - partial credit: {esc(test.credit['note'])}"
            if test.credit.get("note")
            else f"  - partial credit: {test.credit['passed']} of {test.credit['total']} input cases passed"
        )
    if test.detail or test.summary:
        lines.append("  - what happened:")
        lines.extend(md_block(test.detail or test.summary, indent="    ", max_lines=12))
    for hint in test.hints:
        section = f" — reread **{esc(hint.get('section'))}**" if hint.get("section") else ""
        lines.append(f"  - 💡 {esc(hint['text'])}{section}")
    if test.frames:
        lines.append("  - your code:")
        body = []
        for frame in test.frames[-4:]:
            body.append(frame_where(frame))
            if frame.get("code"):
                body.append(f"    {frame['code']}")
        lines.extend(md_block("\n".join(body), indent="    ", info="python"))
    if test.printed:
        text, more = printed_text(test, 800)
        lines.append("  - your code printed:" + (f" (first {len(text)} characters; {more} more not shown)" if more else ""))
        lines.extend(md_block(text, indent="    ", max_lines=15))
    for grid in test.grids:
        lines.append("")
        lines.extend(grid_table(grid))
    return lines


def render(results: Results, details: bool = True, upload: bool = False) -> str:
    """``upload``: for a course autograder's page (Gradescope), where local paths mean nothing."""
    lines = [MARKER, f"## {esc(results.course)}: {esc(headline(results))}", ""]
    if results.status != "complete":
        lines += [f"> ⚠️ {esc(results.message)}", ""]
    lines += ["| Skill | Score | Passed | Sections |", "|---|---:|---:|---|"]
    for skill in results.skills:
        lines.append(
            f"| **{esc(skill.id)}** — {esc(skill.title)} | {points(skill.score)} / {points(skill.points)} | "
            f"{skill.passed}/{skill.total} | {esc('; '.join(skill.sections))} |"
        )
    lines.append(f"| **Total** | **{points(results.score)} / {points(results.max_score)}** | | |")
    lines.append("")
    for skill in results.skills:
        if skill.gated_by:
            lines += [f"> ⛔ **{esc(skill.id)}** scores 0: it breaks a rule of the exercise — {md_code(skill.gated_by)}", ""]
    if details and any(t.status != "passed" for s in results.skills for t in s.tests):
        lines.append("### What to fix")
        for skill in results.skills:
            failed = [t for t in skill.tests if t.status != "passed"]
            if not failed:
                continue
            lines += ["", f"#### {esc(skill.id)}: {esc(skill.title)}"]
            fresh = not_graded(results, skill) or not_started(results, skill)
            if fresh:
                lines.append(f"- 📝 {esc(fresh)}")
                continue
            note = imports_note(results, skill)
            if note:
                lines.append(f"- ↪️ {esc(note)}")
            stubs, others = todo_summary(failed, module_info(results, skill).get("todo"))
            if stubs:
                lines.append(
                    f"- 📝 still TODO: {', '.join(md_code(s) for s in stubs)} ({len(failed) - len(others)} tests wait on them)"
                )
            for test, repeats in collapse_repeats(others):
                lines.extend(_test_block(test))
                if repeats:
                    lines.append(f"  - {esc(same_problem_line(repeats))}")
        lines.append("")
    start = where_to_start(results, upload=upload)
    if start:
        lines.append(f"**{esc(start)}**")
    for label, text in footer_notes(results):
        lines.append(f"<sub>{esc(label)}: {esc(text, 800)}</sub>")
    return "\n".join(lines) + "\n"
