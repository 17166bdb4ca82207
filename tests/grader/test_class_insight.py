"""What an instructor looks at after a deadline, from a graded class (autograder/instructor/batch/):
item analysis (items.py), what a regrade changed (changes.py). Synthetic results: each
property is checked on a class whose answer is known."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder.instructor.batch import changes, items
from autograder.instructor.batch.report import Row
from autograder.instructor.batch.students import Student


def _row(key: str, passed: dict[str, bool], status: str = "complete") -> Row:
    tests = [
        {"id": name, "name": name, "score": 1.0 if ok else 0.0, "max_score": 1.0, "status": "passed" if ok else "failed"}
        for name, ok in passed.items()
    ]
    results = {"status": status, "score": sum(t["score"] for t in tests), "skills": [{"id": "qkv", "tests": tests}]}
    return Row(Student(key, key, Path(key)), results)


def test_item_analysis_separates_a_discriminating_test_and_flags_the_uninformative_ones(tmp_path):
    """Eight students: `easy` everyone passes, `broken` nobody, `good` only the strong half,
    `odd` only the weak half (the others decide who is strong)."""
    rows = []
    for i in range(8):
        strong = i >= 4
        rows.append(_row(f"s{i}", {"easy": True, "broken": False, "good": strong, "odd": not strong, "x": strong, "y": strong}))
    rows.append(_row("err", {"easy": False}, status="error"))  # not a complete grading: not counted
    by_name = {it.test: it for it in items.analyse(rows)}
    assert by_name["easy"].students == 8 and by_name["easy"].pass_rate == 1.0
    assert by_name["easy"].flag == "every student passes" and by_name["broken"].flag == "every student fails"
    assert by_name["good"].discrimination == 1.0 and by_name["good"].r_rest > 0.9 and by_name["good"].flag == ""
    assert by_name["odd"].discrimination == -1.0 and by_name["odd"].flag == "weaker students pass it more often"
    assert by_name["easy"].r_rest is None  # never varies: no correlation to report
    lines = items.write(tmp_path, rows)
    table = list(csv.DictReader(io.StringIO((tmp_path / "items.csv").read_text(encoding="utf-8"))))
    assert [r["test"] for r in table] == ["easy", "broken", "good", "odd", "x", "y"]
    text = "\n".join(lines)
    assert "## Item analysis" in text and "3 flagged" in text and "`broken`" in text


def test_changes_csv_lists_the_largest_change_first(tmp_path):
    found = [
        changes.Change("ana", 50, 52, "a", "b", []),
        None,
        changes.Change("bo", 80, 40, "a", "b", [("qkv: t", 1.0, 0.0)]),
        changes.Change("cy", 10, 30, "a", "b", []),
    ]
    lines = changes.write(tmp_path, found)
    table = list(csv.DictReader(io.StringIO((tmp_path / "changes.csv").read_text(encoding="utf-8"))))
    assert [r["student"] for r in table] == ["bo", "cy", "ana"]
    assert "4 student(s) regraded: 3 changed, 1 unchanged" in "\n".join(lines)
