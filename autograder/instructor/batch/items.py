"""Item analysis of a graded class: per test, how many passed and how well it separates
strong submissions from weak ones — what a test author checks after a deadline.

For each test (over the students whose grading completed):

* ``pass_rate`` — the share of students who got the test's full points;
* ``discrimination`` — the upper–lower index D: the pass rate among the top 27 % of the
  class by total score minus that among the bottom 27 % (from −1 to 1; ≥ 0.3 separates
  well, near 0 not at all, below 0 the weaker students pass it more often: look at it);
* ``r_rest`` — the point-biserial correlation of passing the test with the total score
  *without* that test (so a test does not correlate with itself); empty when either never
  varies.

Flagged for the instructor: a test every student passes or every student fails (it tells
nothing about this class: too easy, or broken / not yet taught), and one whose
discrimination is negative. Written as ``OUT/items.csv`` and a section of ``summary.md``.

Written here rather than with a library: two textbook formulas over a few hundred numbers
(psychometrics packages bring pandas/numpy stacks for the same arithmetic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

SHARE = 0.27  # Kelley's upper and lower groups
MIN_STUDENTS = 4  # fewer: no upper and lower group worth the name


@dataclass
class Item:
    skill: str
    test: str
    students: int
    pass_rate: float
    discrimination: float | None
    r_rest: float | None
    flag: str


def _complete(rows: list) -> list[dict]:
    return [r.results for r in rows if r.results is not None and r.results.get("status") == "complete"]


def _passed(test: dict) -> float:
    top = float(test.get("max_score") or 0.0)
    score = float(test.get("score") or 0.0)
    if top > 0:
        return 1.0 if score >= top - 1e-9 else 0.0
    return 1.0 if test.get("status") == "passed" else 0.0


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def analyse(rows: list) -> list[Item]:
    results = _complete(rows)
    if not results:
        return []
    totals = [float(r.get("score") or 0.0) for r in results]
    tests: dict[tuple[str, str], list[tuple[float, float]]] = {}  # (skill, test) → [(passed, its score)] per student
    order: list[tuple[str, str]] = []
    for r in results:
        for skill in r.get("skills") or []:
            for t in skill.get("tests") or []:
                key = (str(skill.get("id")), str(t.get("name") or t.get("id")))
                if key not in tests:
                    tests[key] = []
                    order.append(key)
    for r in results:
        seen = {
            (str(s.get("id")), str(t.get("name") or t.get("id"))): t for s in r.get("skills") or [] for t in s.get("tests") or []
        }
        for key in order:
            t = seen.get(key)
            tests[key].append((_passed(t), float(t.get("score") or 0.0)) if t else (0.0, 0.0))
    n = len(results)
    group = max(1, round(SHARE * n))
    ranked = sorted(range(n), key=lambda i: totals[i])
    low, high = ranked[:group], ranked[-group:]
    items = []
    for key in order:
        values = tests[key]
        passed = [p for p, _ in values]
        rate = sum(passed) / n
        d = None
        if n >= MIN_STUDENTS:
            d = sum(passed[i] for i in high) / group - sum(passed[i] for i in low) / group
        r_rest = _pearson(passed, [totals[i] - values[i][1] for i in range(n)]) if n >= 3 else None
        if rate >= 1.0:
            flag = "every student passes"
        elif rate <= 0.0:
            flag = "every student fails"
        elif d is not None and d < 0:
            flag = "weaker students pass it more often"
        else:
            flag = ""
        items.append(Item(key[0], key[1], n, rate, d, r_rest, flag))
    return items


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def write(out: Path, rows: list) -> list[str]:
    """``OUT/items.csv`` and the summary section (its markdown lines); nothing without a complete grading."""
    from ...core import escape
    from ...core.results import write_atomic

    items = analyse(rows)
    if not items:
        return []
    table: list[list[object]] = [["skill", "test", "students", "pass_rate", "discrimination", "r_rest", "flag"]]
    for it in items:
        table.append([it.skill, it.test, it.students, _num(it.pass_rate), _num(it.discrimination), _num(it.r_rest), it.flag])
    write_atomic(out / "items.csv", escape.csv_text(table))
    flagged = [it for it in items if it.flag]
    lines = [
        "## Item analysis",
        "",
        f"{len(items)} tests over {items[0].students} complete gradings (`items.csv`: pass rate, discrimination — "
        "the pass rate of the top 27 % by total minus that of the bottom 27 % — and the correlation with the rest "
        f"of the score). {len(flagged)} flagged.",
        "",
    ]
    if items[0].students < MIN_STUDENTS:
        lines += [f"With fewer than {MIN_STUDENTS} students there is no discrimination to measure.", ""]
    if flagged:
        lines += ["| skill | test | pass rate | discrimination | why flagged |", "|---|---|---:|---:|---|"]
        for it in flagged[:40]:
            d = _num(it.discrimination) or "–"
            lines.append(f"| {escape.md_text(it.skill)} | `{it.test}` | {it.pass_rate:.0%} | {d} | {it.flag} |")
        lines.append("")
    return lines
