"""What a regrade changed, per student: old → new score and the tests whose score moved.

A batch rerun into the same ``--out`` regrades every student whose finished result no
longer fits (a fixed suite, another seed key, changed files, ``--force``). Before it does,
the old ``results.json`` of each of them is read (``snapshot``); afterwards ``compare`` sets
old against new, and ``write`` leaves ``OUT/changes.csv`` (student, old, new, change, suite
before → after, the tests whose score moved), largest change first, plus a section of
``summary.md``. Students whose score and tests are unchanged are counted, not listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import report


@dataclass
class Change:
    key: str
    old: float
    new: float
    old_suite: str
    new_suite: str
    tests: list[tuple[str, float, float]]  # (skill: test, old score, new score)


def _scores(results: dict) -> dict[str, float]:
    return {
        f"{s.get('id')}: {t.get('name')}": float(t.get("score") or 0.0)
        for s in results.get("skills") or []
        for t in s.get("tests") or []
    }


def snapshot(out: Path, students: list) -> dict[str, dict]:
    """The finished results about to be replaced: {student key: results.json}."""
    kept = {}
    for student in students:
        results, _meta = report.load_row(out / student.key)
        if results is not None:
            kept[student.key] = results
    return kept


def compare(previous: dict[str, dict], out: Path, students: list) -> list[Change | None]:
    """One entry per regraded student that had a previous result: a Change, or None when
    nothing moved (so the count of unchanged students is known)."""
    found: list[Change | None] = []
    for student in students:
        old = previous.get(student.key)
        new, _meta = report.load_row(out / student.key)
        if old is None or new is None:
            continue
        before, after = _scores(old), _scores(new)
        moved = [
            (name, before.get(name, 0.0), after.get(name, 0.0))
            for name in sorted(set(before) | set(after))
            if abs(before.get(name, 0.0) - after.get(name, 0.0)) > 1e-9
        ]
        old_total, new_total = float(old.get("score") or 0.0), float(new.get("score") or 0.0)
        if moved or abs(old_total - new_total) > 1e-9:
            found.append(
                Change(
                    student.key, old_total, new_total, str(old.get("suite_hash") or ""), str(new.get("suite_hash") or ""), moved
                )
            )
        else:
            found.append(None)
    return found


def _num(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") or "0"


def write(out: Path, found: list[Change | None]) -> list[str]:
    """``OUT/changes.csv`` and the summary section (its markdown lines)."""
    from ...core import escape
    from ...core.results import write_atomic

    # largest change first (drops and gains alike), then by student: what to look at first
    changed = sorted((c for c in found if c is not None), key=lambda c: (-abs(c.new - c.old), c.new - c.old, c.key))
    rows: list[list[object]] = [["student", "old", "new", "change", "suite_before", "suite_after", "tests"]]
    for c in changed:
        rows.append(
            [
                c.key,
                c.old,
                c.new,
                c.new - c.old,
                c.old_suite[:12],
                c.new_suite[:12],
                "; ".join(f"{name}: {_num(a)} → {_num(b)}" for name, a, b in c.tests),
            ]
        )
    write_atomic(out / "changes.csv", escape.csv_text(rows))
    lines = [
        "## Changes since the previous grading",
        "",
        f"{len(found)} student(s) regraded: {len(changed)} changed, {len(found) - len(changed)} unchanged "
        "(every change in `changes.csv`).",
        "",
    ]
    if changed:
        lines += ["| student | old | new | change | tests whose score moved |", "|---|---:|---:|---:|---|"]
        for c in changed[:100]:
            tests = "; ".join(f"{name} {_num(a)}→{_num(b)}" for name, a, b in c.tests[:6]) + (" …" if len(c.tests) > 6 else "")
            lines.append(f"| `{c.key}` | {_num(c.old)} | {_num(c.new)} | {_num(c.new - c.old)} | {escape.md_text(tests)} |")
        lines.append("")
    return lines
