"""Gradescope's ``results.json`` (spec: gradescope-autograders.readthedocs.io/en/latest/specs/).

Every test carries its skill id and visibility class in ``tags``; hidden tests map to the
Gradescope visibility configured in ``[gradescope] hidden`` (default ``after_due_date``).

What a student sees before the due date is only what Gradescope shows at once: the
top-level ``output`` and the tests whose Gradescope visibility is ``visible``. While any
test is shown later, the top-level ``output`` is built from the visible tests alone (their
scores, pass counts and totals, and that hidden tests exist) — never a skill's total or the
overall score, which include the hidden tests (Gradescope itself hides the total score
while tests are hidden). The summary with every test goes into one informational test
(0 of 0 points, so the total is unchanged) that Gradescope shows when the hidden tests are
shown. Visible tests are numbered 1..n within a skill, before the hidden ones, so their
numbers do not tell where hidden tests sit either.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.escape import one_line
from ..core.results import Results, SkillOutcome, TestOutcome, dumps
from ..runner.scoring import VISIBLE_PROPERTY_ZERO, visible_zero_summary
from . import markdown
from .common import footer_notes, headline, points, test_text, where_to_start
from .markdown import MARKER, esc

SHOWN_NOW = "visible"
SUMMARY_NAME = "Summary with every test, hidden tests included"
SUMMARY_TAG = "summary"

#: when Gradescope shows a test of this visibility to the student, in words
WHEN = {
    "after_due_date": "after the due date",
    "after_published": "when grades are published",
    "hidden": "to your instructor only",
}


def _gs(test, visibility: dict[str, str]) -> str:
    return visibility.get(test.visibility, SHOWN_NOW)


#: what a visible property test zeroed by the visible tests alone says (runner/scoring.py)
BEFORE_DUE_PROPERTY = VISIBLE_PROPERTY_ZERO
#: the later entry carrying those points, so that the tests add up to the total
CREDITED_LATER = "visible property tests that count once the hidden tests are included"
CREDIT_TAG = "property-credit"
#: the later entry taking the visible tests' points when a rule is broken in hidden tests alone
DEDUCTED_LATER = "visible tests' points taken by a rule of the exercise broken in hidden tests"
DEDUCTION_TAG = "rule-deduction"


def _as_shown(test: TestOutcome) -> TestOutcome:
    """A visible test as shown before the due date: scored by the visible tests alone
    (``visible_score``, runner/scoring.py), never by anything a hidden test did — neither
    the property rule counted by a hidden test nor a rule broken in hidden tests alone."""
    shown = test.score if test.visible_score is None else test.visible_score
    if shown == test.score:
        return test
    if shown > test.score:  # a hidden gate took the points: its own summary, from before the gate
        return replace(test, score=shown, summary=test.visible_summary or "")
    return replace(test, score=shown, summary=visible_zero_summary(test.summary))


def visible_view(results: Results, visibility: dict[str, str]) -> Results:
    """The results as a student sees them before the due date: only the tests Gradescope
    shows at once, each scored by the visible tests alone, with each skill's score, points
    and pass counts summed over those."""
    skills = []
    for skill in results.skills:
        tests = [_as_shown(t) for t in skill.tests if _gs(t, visibility) == SHOWN_NOW]
        weighted = [t for t in tests if t.max_score > 0]
        skills.append(
            replace(
                skill,
                tests=tests,
                score=round(sum(t.score for t in tests), 4),
                points=round(sum(t.max_score for t in tests), 4),
                passed=sum(t.passed_with_its_points for t in weighted),
                total=len(weighted),
                gated_by=None,  # its text names the rule test, which may be a hidden one
            )
        )
    return replace(
        results, skills=skills, score=round(sum(s.score for s in skills), 4), max_score=round(sum(s.points for s in skills), 4)
    )


def _later_visibility(values: set[str]) -> str:
    """The visibility of the summary: that of the tests it adds, or ``hidden`` (instructors
    only) when they are shown at different moments."""
    return next(iter(values)) if len(values) == 1 else "hidden"


def _output_before_due(results: Results, view: Results, later: str) -> str:
    """The top-level ``output`` while some tests are shown later: the visible tests' table,
    and that hidden tests exist — no figure that includes them."""
    title = (
        headline(results) if results.status != "complete" else f"Visible tests: {points(view.score)} / {points(view.max_score)}"
    )
    lines = [MARKER, f"## {esc(results.course)}: {esc(title)}", ""]
    if results.status != "complete":
        lines += [f"> ⚠️ {esc(results.message)}", ""]
    lines += ["| Skill | Visible tests | Passed | Sections |", "|---|---:|---:|---|"]
    for skill in view.skills:
        lines.append(
            f"| **{esc(skill.id)}** — {esc(skill.title)} | {points(skill.score)} / {points(skill.points)} | "
            f"{skill.passed}/{skill.total} | {esc('; '.join(skill.sections))} |"
        )
    lines.append(f"| **Visible tests** | **{points(view.score)} / {points(view.max_score)}** | | |")
    lines.append("")
    with_hidden = [full.id for full, shown in zip(results.skills, view.skills) if len(full.tests) > len(shown.tests)]
    lines.append(
        f"🔒 Hidden tests of {esc(', '.join(with_hidden))} also count toward your grade. Their results, each skill's "
        f"total and your total score are shown {esc(WHEN.get(later, 'later'))}."
    )
    lines.append("")
    start = where_to_start(view, upload=True)
    if start:
        lines.append(f"**{esc(start)}**")
    for label, text in footer_notes(results):
        lines.append(f"<sub>{esc(label)}: {esc(text, 800)}</sub>")
    return "\n".join(lines) + "\n"


def _summary_text(results: Results) -> str:
    """Every skill's total, hidden tests included, as plain text (a test's output)."""
    lines = [f"Every test, hidden tests included — {one_line(headline(results).replace('Total: ', 'all skills: ', 1), 600)}"]

    def row(skill: SkillOutcome) -> str:
        return (
            f"{one_line(skill.id, 100)}: {points(skill.score)} / {points(skill.points)} points, "
            f"{skill.passed} of {skill.total} tests passed"
        )

    lines += [row(s) for s in results.skills]
    for skill in results.skills:
        if skill.gated_by:
            lines.append(
                f"{one_line(skill.id, 100)} scores 0: it breaks a rule of the exercise — {one_line(skill.gated_by, 300)}"
            )
    return "\n".join(lines)


def _credited_later(skill: SkillOutcome, shown: list[TestOutcome], when: str, number: str) -> dict | None:
    """What the visible tests of ``skill`` score with the hidden tests included beyond what
    they score by themselves, as one test shown with the hidden ones: each test's entry is
    fixed (Gradescope shows the same entry before and after the due date), so the difference
    has an entry of its own. More: a visible property test counted because a hidden test
    scored. Less (a negative entry): a rule of the exercise broken in hidden tests alone,
    which zeroes the skill."""
    extra = round(sum(t.score for t in skill.tests if t.visibility == "visible") - sum(t.score for t in shown), 4)
    if extra > 0:
        name, tag, status = CREDITED_LATER, CREDIT_TAG, "passed"
        output = (
            f"{points(extra)} points of visible property tests: they count once the skill's other tests earn "
            "points, and with the hidden tests included some did."
        )
    elif extra < 0:
        name, tag, status = DEDUCTED_LATER, DEDUCTION_TAG, "failed"
        rule = one_line(skill.gated_by, 300) if skill.gated_by else "a rule of the exercise"
        output = (
            f"{points(-extra)} points of the visible tests taken: this skill breaks a rule of the exercise, "
            f"found by a hidden test ({rule}), so the whole skill scores 0."
        )
    else:
        return None
    return {
        "name": f"{skill.id}: {name}",
        "number": number,
        "score": extra,
        "max_score": 0.0,
        "status": status,
        "output": output,
        "tags": [skill.id, tag],
        "visibility": when,
    }


def to_dict(results: Results, visibility: dict[str, str]) -> dict:
    tests = []
    later = {_gs(t, visibility) for t in results.tests} - {SHOWN_NOW}
    for s_index, skill in enumerate(results.skills, start=1):
        shown = [_as_shown(t) for t in skill.tests if _gs(t, visibility) == SHOWN_NOW] if later else []
        ordered = (shown or [t for t in skill.tests if _gs(t, visibility) == SHOWN_NOW]) + [
            t for t in skill.tests if _gs(t, visibility) != SHOWN_NOW
        ]
        for t_index, test in enumerate(ordered, start=1):
            tests.append(
                {
                    "name": f"{skill.id}: {test.name}",
                    "number": f"{s_index}.{t_index}",
                    "score": test.score,
                    "max_score": test.max_score,
                    "status": "passed" if test.passed_with_its_points else "failed",
                    "output": test_text(test),
                    "tags": [skill.id, test.visibility],
                    "visibility": _gs(test, visibility),
                }
            )
        credit = _credited_later(skill, shown, _later_visibility(later), f"{s_index}.{len(ordered) + 1}") if later else None
        if credit is not None:
            tests.append(credit)
    if later:
        shown_later = _later_visibility(later)
        output = _output_before_due(results, visible_view(results, visibility), shown_later)
        tests.insert(
            0,
            {
                "name": SUMMARY_NAME,
                "number": "0",
                "score": 0.0,
                "max_score": 0.0,
                "status": "passed",
                "output": _summary_text(results),
                "tags": [SUMMARY_TAG, shown_later],
                "visibility": shown_later,
            },
        )
    else:
        output = markdown.render(results, details=False, upload=True)
    return {
        "score": results.score,
        "execution_time": results.duration,
        "output": output,
        "output_format": "md",
        "test_output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "schema": results.schema,
            "status": results.status,
            "seed": results.seed,
            "seed_source": results.seed_source,
            "suite_hash": results.suite_hash,
            "visible_suite_hash": results.visible_suite_hash,
            "versions": results.versions,
        },
    }


def render(results: Results, visibility: dict[str, str]) -> str:
    return dumps(to_dict(results, visibility))
