"""The roster join and the LMS exports of a batch (autograder/instructor/batch/lms.py): one row per
roster student (missing ones too), group submissions split into their members, submissions
that match nobody reported, Canvas's gradebook import format, line-aware roster errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from autograder.instructor.batch import lms
from autograder.instructor.batch.report import Row
from autograder.instructor.batch.students import Student

ROSTER = """id,name,email,login,github,section
1001,Ana Lima,ana@uni.edu,alima,ana-gh,A
1002,Bo Chen,bo@uni.edu,bchen,,A
1003,Cy Diaz,cy@uni.edu,cdiaz,,B
1004,Di Evans,di@uni.edu,devans,,B
"""


def _roster(tmp_path: Path, text: str = ROSTER) -> list[lms.Person]:
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return lms.load_roster(path)


def _row(key: str, score: float, members: list[dict] | None = None, status: str = "complete") -> Row:
    student = Student(key=key, name=key, source=Path(f"/class/{key}"), members=members or [])
    return Row(student, {"status": status, "score": score, "max_score": 100})


def test_roster_join_splits_groups_lists_missing_and_unmatched(tmp_path):
    people = _roster(tmp_path)
    rows = [
        _row("ana-gh", 90.5),  # a folder named by GitHub user
        _row(
            "submission_7",
            80,
            [{"name": "Bo Chen", "sid": "1002", "email": ""}, {"name": "Cy", "sid": "", "email": "CY@uni.edu"}],
        ),
        _row("stranger", 50),
    ]
    joined = lms.join(rows, people)
    grades = list(csv.DictReader(io.StringIO(lms.grades_csv(people, joined, 100))))
    assert [(g["id"], g["score"], g["status"]) for g in grades] == [
        ("1001", "90.5", "graded"),
        ("1002", "80", "graded"),
        ("1003", "80", "graded"),
        ("1004", "0", "missing"),
    ]
    assert [(r.student.key, why) for r, _m, why in joined.unmatched] == [
        ("stranger", "matches no roster row (by id, email, login, github or folder)")
    ]
    summary = "\n".join(lms.summary_lines(people, joined))
    assert "4 students on the roster: 3 with a submission, 1 missing; 1 submission(s)" in summary and "`stranger`" in summary


def test_canvas_csv_has_the_import_header_points_possible_and_no_formula_quotes(tmp_path):
    people = _roster(tmp_path, ROSTER.replace("Ana Lima", "=Ana Lima"))
    joined = lms.join([_row("ana-gh", 90.5)], people)
    lines = list(csv.reader(io.StringIO(lms.canvas_csv(people, joined, "Week 7 attention", 100))))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 7 attention"]
    assert lines[1] == ["Points Possible", "", "", "", "", "100"]
    assert lines[2] == ["=Ana Lima", "", "1001", "alima", "A", "90.5"]  # roster text as given: the instructor's own file
    assert lines[5][-1] == "0"  # missing work is 0, not a blank Canvas would skip


def test_roster_errors_name_the_line_and_the_fix(tmp_path):
    with pytest.raises(lms.RosterError, match=r"roster.csv:1: the header has no `id` column"):
        _roster(tmp_path, "student,email\n1,a@b\n")
    with pytest.raises(lms.RosterError, match=r"roster.csv:3: `ana@uni.edu` also identifies the student on line 2"):
        _roster(tmp_path, "id,email\n1,ana@uni.edu\n2,ANA@uni.edu\n")
    with pytest.raises(lms.RosterError, match=r"roster.csv:3: the `id` cell is empty"):
        _roster(tmp_path, "id,email\n1,a@b\n,c@d\n")


def test_a_student_who_submitted_twice_keeps_the_later_submission(tmp_path):
    people = _roster(tmp_path)
    joined = lms.join([_row("alima", 10), _row("ana-gh", 70)], people)
    assert joined.graded[2][0].student.key == "ana-gh"
    assert "replaced by a later submission" in joined.unmatched[0][2]
