"""Pieces every renderer shares: number formatting, the plain text of one test's feedback,
and grids as text. Submission text is escaped by ``escape`` (one module for every medium)."""

from __future__ import annotations

import re
import unicodedata

from ..core.escape import gutter, one_line, visible
from ..core.results import SANDBOX_TIER, Results, SkillOutcome, TestOutcome
from ..core.schema import SEED_SOURCES
from ..core.text import problem_key


def clean(text: object, limit: int = 4000) -> str:
    """Text that came from a submission, for a terminal or a plain-text file: control and
    invisible characters shown as escapes (see ``escape.visible``)."""
    return visible(text, limit)


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
        section = f" → reread {one_line(hint['section'])}" if hint.get("section") else ""
        out.append(f"Hint: {one_line(hint['text'], 600)}{section}")  # the id is for instructors (JSON, batch), not the student
    return out


def frame_where(frame: dict) -> str:
    """ "exercises/qkv.py:12 in project_qkv" — one line, escaped."""
    func = f" in {frame['function']}" if frame.get("function") else ""
    return one_line(f"{frame.get('file')}:{frame.get('line')}{func}", 300)


def frame_lines(test: TestOutcome) -> list[str]:
    """The student's own lines: where (ours, from checked facts), then their code behind
    the gutter."""
    out = []
    frames = [f for i, f in enumerate(test.frames) if i == 0 or f != test.frames[i - 1]]  # a line twice in a row: once
    for frame in frames[-4:]:
        out.append(f"  {frame_where(frame)}")
        if frame.get("code"):
            out.extend(gutter(frame["code"], 200, max_lines=1, prefix="  │     "))
    return out


def cells(text: str) -> int:
    """How many terminal columns ``text`` takes: CJK and fullwidth characters take two.
    Every ASCII character takes one, so only the others are looked up (a 32 KiB text of
    ASCII measured a character at a time took a second on the course's machines)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(_char_cells(ch) - 1 for ch in text if ch > "\x7f")


def _char_cells(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 0 if unicodedata.combining(ch) else 1


def _cut_word(word: str, first: int, room: int) -> list[str]:
    """``word`` cut into pieces of at most ``room`` columns, the first with ``first`` columns
    already taken: one pass over the word (cutting a 32 KiB word took seconds when each piece
    measured the whole rest again). A character wider than a line gets a piece of its own."""
    if word.isascii():  # one column a character: the same pieces as _cut_by_cells, cut by slicing
        size = max(1, room - first)
        return [word[i : i + size] for i in range(0, len(word), size)] or [""]
    return _cut_by_cells(word, first, room)


def _cut_by_cells(word: str, first: int, room: int) -> list[str]:
    """``_cut_word`` for any text: each character measured."""
    pieces: list[str] = []
    piece: list[str] = []
    used = first
    for ch in word:
        width = _char_cells(ch)
        if piece and used + width > room:
            pieces.append("".join(piece))
            piece, used = [], first
        piece.append(ch)
        used += width
    pieces.append("".join(piece))
    return pieces


def wrap_words(text: str, room: int) -> str:
    """``text`` with each line wrapped at spaces to at most ``room`` terminal columns, so a
    word is never cut in two ("exp │ ected"); a single word longer than a line (a path, a
    long number list) is the only thing cut, at ``room``."""
    out: list[str] = []
    for raw in str(text).split("\n"):
        indent = raw[: len(raw) - len(raw.lstrip(" "))]  # "     got [...]" stays aligned under "expected [...]"
        if len(indent) >= room // 2:
            indent = ""
        start = len(out)
        current = ""
        for word in raw[len(indent) :].split(" ") if raw.strip() else [""]:
            candidate = word if not current else f"{current} {word}"
            if cells(candidate) + len(indent) <= room:
                current = candidate
                continue
            if current:
                out.append(current)
            if cells(word) + len(indent) > room:  # one word wider than the line: cut it (nothing else fits)
                *full, word = _cut_word(word, len(indent), room)
                out.extend(full)
            current = word
        out.append(current)
        out[start:] = [indent + piece for piece in out[start:]]
    return "\n".join(out)


def result_label_pattern(prefixes: list[str]) -> re.Pattern[str] | None:
    """A lesson's numbered printed result, "W7-43" (prefixes: ``[course.result_labels]``); None without any."""
    if not prefixes:
        return None
    return re.compile(rf"\b(?:{'|'.join(re.escape(p) for p in prefixes)})-\d+[a-z]?\b")


def result_label_note(labels: dict[str, str]) -> str:
    """The legend of the labels: "W7-43 names … W7 = Week 7 (docs/lessons/week07-attention.txt), …"."""
    first = next(iter(labels))
    return (
        f"a label such as {first}-1 names one printed result of a lesson, numbered in the order the lesson "
        "prints its results (the test checks that number): " + ", ".join(f"{p} = {t}" for p, t in labels.items())
    )


def grid_fits(grid: dict, width: int) -> bool:
    """Whether expected and yours fit side by side in ``width`` columns, every cell whole
    (with its wrong-cell mark): else the compact list of wrong cells is shown instead."""
    exp, got = grid["expected"], grid["got"]
    if not exp or not exp[0]:
        return False
    cell = max(cells(c) for row in exp + got for c in row) + 1  # + the * mark
    per_side = len(exp[0]) * (cell + 3) + 2
    return 2 * per_side + 4 <= width


def wrong_cells(grid: dict, limit: int = 8) -> list[str]:
    """The wrong cells as "[i, j]: expected X, yours Y", at most ``limit`` of them."""
    exp, got, bad = grid["expected"], grid["got"], grid["bad"]
    where = [(r, j) for r, row in enumerate(bad) for j, b in enumerate(row) if b]
    out = [f"[{r}, {j}]: expected {one_line(exp[r][j], 16)}, yours {one_line(got[r][j], 16)}" for r, j in where[:limit]]
    if len(where) > limit:
        out.append(f"… and {len(where) - limit} more of the {sum(len(row) for row in bad)} cells")
    return out


def grid_text(grid: dict) -> list[str]:
    """Expected and got side by side; wrong cells marked with *."""
    exp, got, bad = grid["expected"], grid["got"], grid["bad"]
    cells = [[one_line(c, 12) for c in row] for row in got]
    width = max([len(c) for row in exp for c in row] + [len(c) for row in cells for c in row] + [5]) + 1
    lines = [one_line(f"{grid['title']} (rows: {grid['rows']}, columns: {grid['cols']}; * = wrong)", 300)]
    header = "expected".ljust(width * len(exp[0]) + 2) + "   yours"
    lines.append("  " + header)
    for r in range(len(exp)):
        left = "".join(one_line(c, 12).rjust(width) for c in exp[r])
        right = "".join((c + ("*" if bad[r][j] else "")).rjust(width + 1) for j, c in enumerate(cells[r]))
        lines.append(f"  {left}   {right}")
    return lines


def printed_text(test: TestOutcome, limit: int = 1200) -> tuple[str, int]:
    """(what the code printed, up to ``limit`` characters; how many more were not shown)."""
    text = "".join(str(p.get("text", "")) for p in test.printed)
    dropped = sum(int(p.get("dropped", 0) or 0) for p in test.printed)
    return text[:limit], dropped + max(len(text) - limit, 0)


def printed_lines(test: TestOutcome, limit: int = 1200, width: int | None = None) -> list[str]:
    if not test.printed:
        return []
    text, more = printed_text(test, limit)
    lines = ["Your code printed:"] + gutter(text, None, max_lines=30, width=width)
    return lines + ([f"… ({more} more characters not shown)"] if more else [])


def test_text(test: TestOutcome) -> str:
    """The plain-text feedback for one test (Gradescope output, logs). Every line that holds
    submission text starts with the gutter; lines at the left margin are the grader's."""
    lines = [f"{ICON.get(test.status, '?')} {test.name}: {points(test.score)} / {points(test.max_score)} points"]
    if test.status == "passed":
        if test.score < test.max_score and test.summary:  # passed, but a rule of the skill took its points: say which
            lines.append(one_line(test.summary, 600))
        return "\n".join(lines)
    if test.credit and test.credit.get("total"):
        lines.append(
            one_line(test.credit.get("note"), 600)
            if test.credit.get("note")
            else f"Partial credit: {test.credit['passed']} of {test.credit['total']} input cases passed"
        )
    if test.check:  # a hidden test has one only where its details are revealed (core/redact.py clears it)
        lines.append(f"Checked: {one_line(test.check, 300)}")
    if test.detail or test.summary:
        lines.append("What happened:")
        lines.extend(gutter(test.detail or test.summary))
    for grid in test.grids:
        lines.extend(grid_text(grid))
    lines.extend(hint_lines(test))
    if test.frames:
        lines.append("Your code:")
        lines.extend(frame_lines(test))
    lines.extend(printed_lines(test))
    if test.status == "error" and test.error and test.error.get("traceback"):
        lines.append("Grader traceback:")
        lines.extend(gutter(test.error["traceback"], 3000, max_lines=60))
    return "\n".join(lines)


_TODO = re.compile(r"TODO\((\w+)\):\s*([\w.]+)")


def _waits_on_stub(test: TestOutcome) -> bool:
    return test.status == "failed" and [h["id"] for h in test.hints] == ["general/todo"]


def todo_only(test: TestOutcome) -> str | None:
    """The stub a test is waiting on ("project_qkv"), when an unfinished TODO is its only
    problem: such tests are listed once per skill instead of one panel each."""
    if not _waits_on_stub(test):
        return None
    match = _TODO.search(f"{test.summary} {test.detail or ''}")
    return match.group(2) if match else "?"


def collapse_repeats(tests: list[TestOutcome]) -> list[tuple[TestOutcome, list[TestOutcome]]]:
    """One entry per distinct problem with the module itself (missing, refused, does not
    import): (the first test, the other tests that failed with the very same summary). A
    module that fails to import then shows one panel per skill, not one per test."""
    out: list[tuple[TestOutcome, list[TestOutcome]]] = []
    seen: dict[str, list[TestOutcome]] = {}
    for test in tests:
        key = problem_key(test.summary, test.check)
        if test.problem == "missing" and key:
            if key in seen:
                seen[key].append(test)
                continue
            seen[key] = []
            out.append((test, seen[key]))
        else:
            out.append((test, []))
    return out


def same_problem_line(repeats: list[TestOutcome]) -> str:
    names = ", ".join(t.name for t in repeats[:6]) + (" …" if len(repeats) > 6 else "")
    return f"The same problem fails {len(repeats)} more test{'s' if len(repeats) != 1 else ''} of this skill: {names}"


def module_info(results: Results, skill: SkillOutcome) -> dict:
    """What the trusted side found in the skill's submitted module (runner/submission.py)."""
    return ((results.submission or {}).get("modules") or {}).get(skill.module.removesuffix(".py")) or {}


def lost_visibly(results: Results) -> set[str]:
    """The skills that lost points in a visible test: what a note may say a skill lost (before
    the due date Gradescope shows the notes too, and a skill's total would tell that a hidden
    test failed)."""
    return {sk.id for sk in results.skills if any(t.visibility == "visible" and t.score < t.max_score for t in sk.tests)}


def imports_note(results: Results, skill: SkillOutcome) -> str:
    """One line at ``skill``: its module imports another exercise's that lost points too, so
    some of its failures may come from there (blind tester R-BY read the messages, which point
    at the calling lines, and missed the footer's longer note); "" otherwise."""
    lost = lost_visibly(results)
    if skill.id not in lost:
        return ""
    deps = [d for d in (results.submission or {}).get("exercise_imports") or [] if d.get("skill") == skill.id]
    names = sorted({str(d.get("imports")) for d in deps if d.get("imports_skill") in lost})
    if not names:
        return ""
    return f"{skill.module} imports {', '.join(names)}, which lost points too: fix that first (see the note below)."


def todo_summary(tests: list[TestOutcome], todo: list[str] | None = None) -> tuple[list[str], list[TestOutcome]]:
    """(the stubs still to write, in order; the tests that failed for another reason).

    ``todo`` is the module's own list of functions still raising the TODO stub, read from
    its source on the trusted side (autograder/core/exercise_api.py) and restricted to the
    exercise's function names; message text is only the fall-back for old results."""
    if todo is None:
        stubs: list[str] = []
        others = []
        for test in tests:
            name = todo_only(test)
            if name is None or name == "?":
                others.append(test)
            elif name not in stubs:
                stubs.append(name)
        return stubs, others
    if not todo:  # nothing is the untouched stub: every failure gets its own panel
        return [], list(tests)
    others = [t for t in tests if not _waits_on_stub(t)]
    return (list(todo) if len(others) < len(tests) else []), others


def not_graded(results: Results, skill: SkillOutcome) -> str | None:
    """One line for a skill none of whose tests ran because the run stopped (interrupted,
    or the grader failed): the run's message is said once, above; a table would repeat it
    under every test, and its zeros would read as a score."""
    if results.status == "complete" or not skill.tests or any(t.status != "not_run" for t in skill.tests):
        return None
    return "not graded: the run did not complete"


def not_started(results: Results, skill: SkillOutcome) -> str | None:
    """One line for a skill whose module is still the untouched stub — every function is
    TODO and every test with points waits on it — instead of its table:
    "not started — begin with `project_qkv` (Week 7 §1–§9)"."""
    info = module_info(results, skill)
    if info.get("problem") and not info.get("copy_path") and skill.score == 0:
        # the file itself could not be graded (missing, a near-name, a link…): that one line, first
        return one_line(info["problem"], 300)
    todo = info.get("todo")
    weighted = [t for t in skill.tests if t.max_score > 0]
    if not todo or skill.score > 0 or not weighted or not all(_waits_on_stub(t) for t in weighted):
        return None
    if info.get("functions") and len(todo) < len(info["functions"]):
        return None  # some function is written: the table says what still fails
    where = f", {skill.sections[0]}" if skill.sections else ""
    return f"not started — begin with `{todo[0]}`{where}"


def where_to_start(results: Results, upload: bool = False) -> str | None:
    """When nothing has been started yet, the one next step. ``upload``: the student sent
    files to a course autograder (Gradescope): name the file, not the server's path, and say
    to check locally before uploading again."""
    if not results.skills or any(not_started(results, s) is None for s in results.skills):
        return None
    first = results.skills[0]
    info = module_info(results, first)
    if not info.get("todo"):
        return None
    path = info.get("display_path") or first.module
    if upload:
        return (
            f"Where to start: in your repository, open exercises/{first.module}, write `{info['todo'][0]}` (read its docstring), "
            f"check it with `make grade SKILL={first.id}`, then upload again."
        )
    return f"Where to start: open {path}, write `{info['todo'][0]}` (read its docstring), then run `make grade SKILL={first.id}`."


def footer_notes(results: Results) -> list[tuple[str, str]]:
    """(label, plain text) lines under the tables: what else was in the submission, and the
    seed. Renderers escape the text for their medium."""
    sub = results.submission or {}
    out: list[tuple[str, str]] = []
    if sub.get("located"):  # the submission held modules in several folders: which one was graded, and why
        out.append(("Graded folder", str(sub["located"])))
    # beside the graded modules, and importable: a missing or refused one is not
    siblings = sorted(f"{name}.py" for name, info in (sub.get("not_selected") or {}).items() if not (info or {}).get("problem"))
    if siblings:
        out.append(("Not selected (importable by your code, not graded in this run)", ", ".join(siblings)))
    for cross in (sub.get("cross_assignment_imports") or [])[:6]:
        out.append(
            (
                "Imports across assignments",
                f"{cross['file']} ({cross['assignment']}) imports {cross['imports']}"
                + (f" (through {cross['through']})" if cross.get("through") else "")
                + f", which is handed in with "
                f"{cross['imports_assignment']}: it works here, but {cross['assignment']}'s upload holds only its own "
                f"files, so there the import fails. Copy what you need into {cross['file']}, or upload "
                f"{cross['imports']} with it.",
            )
        )
    lost = lost_visibly(results)
    for dep in (sub.get("exercise_imports") or [])[:6]:
        if dep.get("imports_skill") in lost and dep.get("skill") in lost:
            out.append(
                (
                    "Imports between exercises",
                    f"{dep['file']} imports {dep['imports']}, which lost points in {dep['imports_skill']}: {dep['skill']}'s "
                    f"tests run your {dep['imports']} code too, so some of {dep['skill']}'s failures (and their hints) may "
                    f"come from there. Fix {dep['imports_skill']} first, then grade again.",
                )
            )
    helpers = sub.get("helpers") or {}
    usable = [info.get("file") or f"{name}.py" for name, info in helpers.items() if not info.get("problem")]
    refused = [f"{info.get('file') or name + '.py'} ({info['problem']})" for name, info in helpers.items() if info.get("problem")]
    if usable:
        out.append(("Helper modules available to your code (never graded)", ", ".join(usable)))
    if refused:
        out.append(("Helper files your code cannot import", "; ".join(refused[:5]) + (" …" if len(refused) > 5 else "")))
    ignored = [i for i in (sub.get("ignored") or []) if i not in {h.get("file") for h in helpers.values()}]
    if ignored:
        more = " …" if len(ignored) > 10 or sub.get("ignored_more") else ""
        out.append(("Other files, not graded", ", ".join(ignored[:10]) + more))
    if results.seed is not None:
        source = SEED_SOURCES.get(results.seed_source or "", results.seed_source or "")
        out.append(("Seed", f"{results.seed}{f' ({source})' if source else ''} · reproduce with --seed {results.seed}"))
    suites = suite_label(results.suite_hash, results.visible_suite_hash)
    graded = ", ".join(s.id for s in results.skills)
    if results.not_graded:  # a --skill / SKILL= run: the whole course's hashes (runner/grade.py), a part of its score
        total = len(results.skills) + len(results.not_graded)
        out.append(("Suites", f"{suites} ({partial_suites_note(results)})"))
        out.append(
            (
                "Partial run",
                f"graded {graded} only ({len(results.skills)} of {total} skills; not graded: "
                f"{', '.join(results.not_graded)}): the score covers those skills, not the release — "
                "run without SKILL= / --skill for the full grade",
            )
        )
    elif sub.get("not_selected"):  # an --assignment run: its own suites, the other modules beside it
        out.append(("Suites", f"{suites} · this run graded only {graded}: its score covers those skills"))
    else:
        out.append(("Suites", suites))
    if visible_only(results):
        out.append(
            (
                "Local score",
                "the visible tests only. The official grade also runs hidden tests — the same functions on "
                "fresh random inputs and shapes, properties every correct answer has, and the exercises' "
                "rules — and grades out of the full points (README: your local score and the official score)",
            )
        )
    label = result_label_pattern(list(results.result_labels))
    # only where a test is shown: a skill said in one line ("not started") shows none of its labels
    one_line_skills = {skill.id for skill in results.skills if not_graded(results, skill) or not_started(results, skill)}
    shown = [t for skill in results.skills if skill.id not in one_line_skills for t in skill.tests]
    if label and any(label.search(" ".join([t.check or "", t.detail or "", t.summary or ""])) for t in shown):
        out.append(("Labels", result_label_note(results.result_labels)))
    portable = next((n for n in results.sandbox if n.startswith(f"{SANDBOX_TIER}portable")), None)
    if portable is not None:  # macOS and the like: say which protections held (runner/policy.tier_note)
        rlimits = next((f for f in results.sandbox if f.startswith("rlimits(")), "")
        out.append(("Sandbox", portable[len(SANDBOX_TIER) :] + (f" [{rlimits}]" if rlimits else "")))
    return out


def sections_to_reread(skill: SkillOutcome) -> list[str]:
    """The lesson sections the skill's hints cite (general hints aside), those cited by the
    most tests first, then in the order they first appear: a footer that shows three shows
    the ones most of the failures point at (blind tester R-BF: an alphabetical cut left out
    the sections of two failing tests)."""
    count: dict[str, int] = {}
    for test in skill.tests:
        for section in dict.fromkeys(h["section"] for h in test.hints if h.get("section") and not h["id"].startswith("general/")):
            count[section] = count.get(section, 0) + 1
    return sorted(count, key=lambda section: -count[section])  # stable: ties keep their first appearance


def visible_only(results: Results) -> bool:
    """A run of the visible tests where the course has hidden ones too (a student's
    ``make grade``; an instructor's grade without ``--reveal-hidden``): its full marks are
    not the official grade's (blind tester R-BF read 41.5/41.5 as done, with a function
    that failed on the hidden tests' shapes)."""
    has_hidden = bool(results.suite_hash and results.visible_suite_hash and results.suite_hash != results.visible_suite_hash)
    return has_hidden and not any(t.visibility == "hidden" for skill in results.skills for t in skill.tests)


def partial_suites_note(results: Results) -> str:
    """What a --skill run's suite hashes name: every skill's suites, not only the part graded
    (runner/grade.py, ``selected_from``). The full hash is computed where the hidden suites
    are (the instructors' repository, a Gradescope bundle); a student release reads it from
    the ``release.json`` that ``make release`` put beside its grading.toml (runner/identity.py),
    and without that file it is unknown."""
    if results.suite_hash is None:
        return "every skill's; the full suite is unknown here: a student release reads it from its release.json"
    if any(t.visibility == "hidden" for t in results.tests):  # computed from the hidden suites here
        return "every skill's suites, not only the skills graded"
    return "every skill's suites, the full one as this release's release.json records it"


def suite_label(suite: str | None, visible: str | None) -> str:
    """The suites' identity, labelled the same on every path (runner/identity.py)."""
    return f"suite {(suite or 'unknown')[:12]} · visible {(visible or 'unknown')[:12]}"
