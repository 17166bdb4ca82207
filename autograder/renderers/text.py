"""The terminal: one ``rich`` table per skill, then what to fix (hints with the section to
reread, the student's own lines, coloured grids), then the total."""

from __future__ import annotations

import re
import textwrap

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..core.escape import gutter, one_line
from ..core.results import Results, SkillOutcome, TestOutcome
from .common import (
    ICON,
    collapse_repeats,
    footer_notes,
    frame_lines,
    grid_fits,
    headline,
    imports_note,
    module_info,
    not_graded,
    not_started,
    points,
    printed_lines,
    same_problem_line,
    sections_to_reread,
    todo_summary,
    where_to_start,
    wrap_words,
    wrong_cells,
)

STYLE = {"passed": "green", "failed": "red", "error": "magenta", "not_run": "yellow"}


def _grid(grid: dict, width: int = 100) -> Group:
    """Expected and yours side by side; wrong cells marked * (and red where there is colour:
    a CI log, NO_COLOR or a file has none). The title goes above the table (a table title
    would wrap at the width of the small table). A grid that does not fit ``width`` with every
    cell whole is shown as the list of its wrong cells instead, never as cut cells."""
    exp, got, bad = grid["expected"], grid["got"], grid["bad"]
    head = Text.assemble(
        (one_line(grid["title"], 160), "bold"),
        (f"  (rows: {one_line(grid['rows'], 40)}, columns: {one_line(grid['cols'], 40)}; * = wrong)", "dim"),
    )
    if not grid_fits(grid, width):
        listing = "\n".join(f"  {line}" for line in wrong_cells(grid))
        return Group(head, Text(f"  too wide for {width} columns; the wrong cells:", style="dim"), Text(listing))
    outer = Table(box=box.SIMPLE, show_header=True, padding=(0, 1))
    outer.add_column("expected", no_wrap=True)
    outer.add_column("yours", no_wrap=True)
    left = Table(box=box.MINIMAL, show_header=False, padding=(0, 1))
    right = Table(box=box.MINIMAL, show_header=False, padding=(0, 1))
    for _ in exp[0]:
        left.add_column(justify="right", no_wrap=True)
        right.add_column(justify="right", no_wrap=True)
    for r, row in enumerate(exp):
        left.add_row(*[Text(one_line(c, 12) + " ", style="dim" if c in ("0", "False") else "") for c in row])
        right.add_row(
            *[
                Text(one_line(c, 12) + ("*" if bad[r][j] else " "), style="bold white on red" if bad[r][j] else "green")
                for j, c in enumerate(got[r])
            ]
        )
    outer.add_row(left, right)
    return Group(head, outer)


def _break_name(name: str, room: int) -> str:
    """A long test name on several lines, broken after an underscore (never inside a word)."""
    lines, current = [], ""
    for part in re.split(r"(?<=_)", name):
        if current and len(current) + len(part) > room:
            lines.append(current)
            current = ""
        current += part
    lines.append(current)
    return "\n".join(lines)


def _skill_table(skill: SkillOutcome, results: Results, width: int = 80) -> Table:
    narrow = width < 100  # (CI logs, 80-column terminals): the hint goes under its test, never cut
    table = Table(
        title=Text.assemble(
            (f"{skill.id}", "bold"),
            f"  {skill.title}  ",
            (f"{points(skill.score)}/{points(skill.points)} pts", "bold"),
            f"  {skill.passed}/{skill.total} passed",
        ),
        title_justify="left",
        caption_justify="left",  # a wrapped caption reads as a sentence, not a centred block
        box=box.SIMPLE_HEAVY,
        expand=narrow,  # every skill's table the terminal's width: the points column stays put
    )
    if skill.gated_by:
        table.caption = Text(
            f"0 points: this skill breaks a rule of the exercise — {one_line(skill.gated_by, 400)}", style="bold red"
        )
    elif note := imports_note(results, skill):
        table.caption = Text(one_line(note, 400), style="yellow")
    table.add_column("", width=1, max_width=1, no_wrap=True)  # the same indent in every skill's table
    table.add_column("test" if not narrow else "test · hint / why", no_wrap=narrow, ratio=1 if narrow else None)
    table.add_column("points", justify="right", no_wrap=True)
    if not narrow:
        table.add_column("hint / why")
    shown: set[str] = set()  # hint texts already under an earlier test of this table
    for test in skill.tests:
        # the student's view names mistakes in words (hint ids stay in the JSON); a hint already
        # shown above is named by its first words (blind tester R-CE: one mistake's four-line
        # hint stood under ten tests in a row)
        hinted = one_line(" ".join(h["text"] for h in test.hints), 200) if test.hints else ""
        note = (
            (f"as above: {one_line(hinted, 44)}" if hinted in shown else hinted)
            if test.hints
            else ("" if test.status == "passed" else one_line(test.summary, 90))
        )
        shown.add(hinted)
        if test.credit and test.status != "passed" and test.credit.get("required_failed") and test.credit.get("passed"):
            note = f"required part failed: {test.credit['required_failed'][0]} · {note}"  # not "2 of 3 cases" at 0 points
        elif test.credit and test.credit.get("total") and test.status != "passed" and test.credit["total"] > 1:
            note = f"{test.credit['passed']} of {test.credit['total']} cases · {note}"
        name = test.name + (" (hidden)" if test.visibility == "hidden" else "") + (" (rule)" if test.max_score == 0 else "")
        score = f"{points(test.score)}/{points(test.max_score)}"
        icon = Text(ICON.get(test.status, "?"), style=STYLE.get(test.status, ""))
        if not narrow:
            table.add_row(icon, Text(name), score, Text(note))
            continue
        room = max(width - 20, 30)
        cell = Text(_break_name(name, room))
        if note:
            cell.append("\n" + wrap_words(note, room - 2).replace("\n", "\n  ").join(["  ", ""]), style="dim")
        table.add_row(icon, cell, score)
    return table


def _details(test: TestOutcome, repeats: list[TestOutcome] | None = None, width: int = 100) -> Panel:
    """One failed test. Submission text is cut to the panel's width behind the gutter and
    never wrapped by rich, so none of it can reach the panel's left edge."""
    parts: list = []
    if test.check:  # a hidden test has one only where its details are revealed (core/redact.py clears it)
        parts.append(Text.assemble(("Checked: ", "bold"), one_line(test.check, 300)))
    if test.detail or test.summary:  # may quote the submission: behind the gutter, wrapped at spaces
        wrapped = wrap_words(test.detail or test.summary, max(width - 2, 20))
        parts.append(Text("\n".join(gutter(wrapped, width=width)), no_wrap=True, overflow="ellipsis"))
    for grid in test.grids:
        parts.append(_grid(grid, width))
    for hint in test.hints:
        line = Text.assemble(("Hint: ", "bold yellow"), one_line(hint["text"], 600))
        if hint.get("section"):
            line.append(f"  → reread {one_line(hint['section'])}", style="cyan")
        parts.append(line)
    if test.frames:
        parts.append(Text("Your code:", style="bold"))
        for line in frame_lines(test):
            # where a line is (file:line in function) folds, so a long path never hides the
            # function (blind tester R-AA read "in AttentionFunction.…"); the code line is cut
            code = line.startswith("  │")
            parts.append(Text(line, no_wrap=code, overflow="ellipsis" if code else "fold"))
    printed = printed_lines(test, limit=600, width=width)
    if printed:
        parts.append(Text("\n".join(printed), style="dim", no_wrap=True, overflow="ellipsis"))
    if test.status == "error" and test.error and test.error.get("traceback"):
        parts.append(
            Text(
                "\n".join(gutter(test.error["traceback"], 3000, max_lines=60, width=width)),
                style="dim",
                no_wrap=True,
                overflow="ellipsis",
            )
        )
    if repeats:
        parts.append(Text(same_problem_line(repeats), style="dim"))
    # the points always show: a name too long for the panel's top edge is cut instead (rich
    # would cut the title's end, "1.─╮" for 1.12/1.5)
    score = f"  {points(test.score)}/{points(test.max_score)}"
    name = f"{ICON.get(test.status)} {test.name}"
    room = max(12, width - len(score) - 4)
    if len(name) > room:
        name = name[: room - 1] + "…"
    title = Text.assemble((name, STYLE.get(test.status, "")), score)
    return Panel(Group(*parts), title=title, title_align="left", border_style=STYLE.get(test.status, ""))


def render(results: Results, console: Console, *, details: bool = True) -> None:
    head = Text.assemble((results.course, "bold"), f" — {one_line(results.submission.get('path', ''), 200)}")
    if results.seed is not None:
        head.append(f"  (seed {results.seed})", style="dim")
    console.print(head)
    if results.status != "complete":
        console.print(
            Panel(Text("\n".join(gutter(results.message, prefix=""))), title="Grading did not complete", border_style="red")
        )
    stopped = {skill.id: not_graded(results, skill) for skill in results.skills}
    fresh = {skill.id: stopped[skill.id] or not_started(results, skill) for skill in results.skills}
    for skill in results.skills:
        if fresh[skill.id]:
            score = f"{'–' if stopped[skill.id] else '0'}/{points(skill.points)}"
            console.print(Text.assemble((skill.id, "bold"), "  ", (score, "bold"), "  ", (fresh[skill.id], "yellow")))
        else:
            console.print(_skill_table(skill, results, console.width))
    if details:
        for skill in results.skills:
            failed = [t for t in skill.tests if t.status != "passed"]
            if failed and not fresh[skill.id]:
                console.print(Text(f"What to fix in {skill.module} ({skill.id})", style="bold underline"))
                stubs, others = todo_summary(failed, module_info(results, skill).get("todo"))
                if stubs:
                    waiting = len(failed) - len(others)
                    console.print(
                        Text.assemble(
                            ("Still TODO: ", "bold yellow"),
                            ", ".join(stubs),
                            f"  ({waiting} test{'s' if waiting != 1 else ''} wait on them; `make todo` lists where)",
                            style="",
                        )
                    )
                for test, repeats in collapse_repeats(others):
                    console.print(_details(test, repeats, console.width - 4))
    start = where_to_start(results)
    if start:
        console.print(Text(start, style="bold"))
    for label, text in footer_notes(results):
        # wrapped here with a hanging indent: a line rich wrapped could begin with a file name
        # of the student's (blind red-team tester R-BQ), and what starts a line is ours
        note = textwrap.fill(
            f"{label}: {one_line(text, 800)}", width=max(console.width, 40), subsequent_indent="  ", break_on_hyphens=False
        )
        console.print(Text(note, style="dim"), soft_wrap=True)
    if results.status != "complete":  # no test ran: a table of zeros would read as a score
        console.print(Text(headline(results), style="bold red"))
        return
    summary = Table(box=box.ROUNDED, show_header=True, title="Score", title_justify="left")
    summary.add_column("skill", no_wrap=True)
    summary.add_column("points", justify="right", no_wrap=True)
    summary.add_column("passed", justify="right", no_wrap=True)
    reread = []
    for skill in results.skills:
        weak = sections_to_reread(skill)
        reread += [(skill.id, section) for section in weak[:3]]
        if len(weak) > 3:
            reread.append((skill.id, f"and {len(weak) - 3} more in the hints above"))
        summary.add_row(skill.id, f"{points(skill.score)}/{points(skill.points)}", f"{skill.passed}/{skill.total}")
    summary.add_row(Text("total", style="bold"), Text(f"{points(results.score)}/{points(results.max_score)}", style="bold"), "")
    console.print(summary)
    if reread:  # one line each, wrapped at spaces: a column would cut the path ("…week07-attention.txt:5…")
        console.print(Text("Reread:", style="bold"))
        for sid, section in reread:  # wrapped here, each further line under the first's text
            lines = wrap_words(f"{sid}: {one_line(section, 400)}", max(console.width - 4, 20)).split("\n")
            console.print(Text("\n".join(["  " + lines[0], *("    " + line for line in lines[1:])]), style="cyan"))
