"""From a batch to a learning-management system: the roster join and the gradebook exports.

``--roster roster.csv`` names the class: one row per student with an ``id`` column (the
institution's student id — Canvas's SIS User ID) and any of ``name``, ``email``, ``login``
(Canvas's SIS Login ID), ``github`` (a GitHub user name) and ``folder`` (the name of the
student's folder or .zip in SUBMISSIONS). A submission belongs to the roster row whose
``id``, ``email``, ``login``, ``github`` or ``folder`` equals (case-insensitively) one of its
own identifiers: the folder or zip name, and for a Gradescope export each submitter's SID,
email and name. A Gradescope group submission counts for each of its members.

Written into ``OUT/lms/`` by the one CSV writer (``core/escape.csv_text``): numbers stay
numbers, and a text cell a spreadsheet would run as a formula (``=HYPERLINK(…)``, ``+dave``,
``@SUM(1+1)``, ``-2+3`` — roster names are often student-chosen) gets a leading ``'``:

* ``canvas.csv`` — Canvas's gradebook import: ``Student, ID, SIS User ID, SIS Login ID,
  Section, <assignment>`` with a ``Points Possible`` row; one row per roster student,
  a student with no submission gets 0 (Canvas leaves a blank cell unchanged, so missing work
  would otherwise keep an old grade);
* ``grades.csv`` — one row per roster student: id, name, email, login, score, max, percent,
  status (``graded``, ``error``, ``missing``), the submission it came from;
* ``unmatched.csv`` — submissions that match no roster row (and why), also listed in
  ``summary.md``.

Written here rather than with a library: the join is a dictionary lookup and the formats
are two CSV headers; no LMS client library writes Canvas's gradebook file.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from ...core import escape

#: roster columns that identify a student (compared case-insensitively with a submission's identifiers)
KEY_COLUMNS = ("id", "email", "login", "github", "folder")
KNOWN_COLUMNS = ("id", "name", "email", "login", "github", "folder", "section", "canvas_id")


class RosterError(Exception):
    """The roster cannot be used; ``str()`` names the file, the line and the fix."""


@dataclass
class Person:
    """One roster row."""

    line: int
    fields: dict[str, str]

    def get(self, key: str) -> str:
        return self.fields.get(key, "")

    def keys(self) -> set[str]:
        return {self.get(k).casefold() for k in KEY_COLUMNS if self.get(k)}


@dataclass
class Member:
    """One person of a submission, as the submission names them."""

    name: str = ""
    sid: str = ""
    email: str = ""
    folder: str = ""

    def identifiers(self) -> set[str]:
        return {v.casefold() for v in (self.sid, self.email, self.folder, self.name) if v}


@dataclass
class Join:
    graded: dict[int, tuple[object, Member]] = field(default_factory=dict)  # roster line → (batch row, member)
    unmatched: list[tuple[object, Member, str]] = field(default_factory=list)  # (row, member, why)


def load_roster(path: Path) -> list[Person]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: cannot be read ({exc}) — save the roster as a UTF-8 CSV file") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().casefold() for h in (reader.fieldnames or [])]
    if "id" not in header:
        raise RosterError(
            f"{path}:1: the header has no `id` column (found: {', '.join(header) or 'nothing'}) — "
            f"name the student-id column `id`; optional columns: {', '.join(KNOWN_COLUMNS[1:])}"
        )
    people, seen = [], {}
    for number, raw in enumerate(reader, start=2):
        fields = {k.strip().casefold(): (v or "").strip() for k, v in raw.items() if k is not None}
        if not any(fields.values()):
            continue
        person = Person(number, fields)
        if not person.get("id"):
            raise RosterError(f"{path}:{number}: the `id` cell is empty — every student needs their id")
        for key in person.keys():
            if key in seen and seen[key] != number:
                raise RosterError(
                    f"{path}:{number}: `{key}` also identifies the student on line {seen[key]} — "
                    "each id, email, login, github and folder value must name one student"
                )
            seen[key] = number
        people.append(person)
    if not people:
        raise RosterError(f"{path}: no students below the header — add one row per student")
    return people


def members(row) -> list[Member]:
    """The people a batch row (report.Row) stands for: each Gradescope submitter, or the
    folder's own name."""
    student = row.student
    listed = getattr(student, "members", None) or []
    folder = student.source.name[:-4] if student.source.name.lower().endswith(".zip") else student.source.name
    if listed:
        return [Member(m.get("name", ""), m.get("sid", ""), m.get("email", ""), folder) for m in listed]
    return [Member(name=student.name, sid=student.sid, email=student.email, folder=folder)]


def join(rows: list, people: list[Person]) -> Join:
    index = {key: person for person in people for key in person.keys()}
    out = Join()
    for row in rows:
        for member in members(row):
            found = {index[i].line: index[i] for i in member.identifiers() if i in index}
            if len(found) == 1:
                line = next(iter(found))
                if line in out.graded:  # two submissions of one student: keep the later (Gradescope keeps the last)
                    out.unmatched.append(
                        (out.graded[line][0], out.graded[line][1], f"replaced by a later submission of roster line {line}")
                    )
                out.graded[line] = (row, member)
            elif found:
                out.unmatched.append((row, member, f"matches several roster rows (lines {', '.join(map(str, sorted(found)))})"))
            else:
                out.unmatched.append((row, member, "matches no roster row (by id, email, login, github or folder)"))
    return out


def _score(row) -> tuple[float, float, str]:
    results = row.results or {}
    status = "graded" if row.results is not None and results.get("status") == "complete" else "error"
    return float(results.get("score") or 0.0), float(results.get("max_score") or 0.0), status


def grades_csv(people: list[Person], joined: Join, max_score: float) -> str:
    rows: list[list[object]] = [["id", "name", "email", "login", "score", "max", "percent", "status", "submission"]]
    for p in people:
        row_member = joined.graded.get(p.line)
        if row_member is None:
            rows.append([p.get("id"), p.get("name"), p.get("email"), p.get("login"), 0, max_score, 0, "missing", ""])
            continue
        row, _member = row_member
        score, top, status = _score(row)
        top = top or max_score
        rows.append(
            [
                p.get("id"),
                p.get("name"),
                p.get("email"),
                p.get("login"),
                score,
                top,
                100 * score / top if top else 0.0,
                status,
                row.student.key,
            ]
        )
    return escape.csv_text(rows)


def canvas_csv(people: list[Person], joined: Join, assignment: str, max_score: float) -> str:
    rows: list[list[object]] = [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment],
        ["Points Possible", "", "", "", "", max_score],
    ]
    for p in people:
        row_member = joined.graded.get(p.line)
        score = _score(row_member[0])[0] if row_member is not None else 0.0
        rows.append(
            [
                p.get("name") or p.get("id"),
                p.get("canvas_id"),
                p.get("id"),
                p.get("login") or p.get("email"),
                p.get("section"),
                score,
            ]
        )
    return escape.csv_text(rows)


def unmatched_csv(joined: Join) -> str:
    rows: list[list[object]] = [["folder", "submitter", "why"]]
    for row, member, why in joined.unmatched:
        rows.append([row.student.key, " ".join(v for v in (member.sid, member.email) if v) or "(no id)", why])
    return escape.csv_text(rows)


def summary_lines(people: list[Person], joined: Join) -> list[str]:
    missing = [p for p in people if p.line not in joined.graded]
    lines = [
        "## Roster",
        "",
        f"{len(people)} students on the roster: {len(joined.graded)} with a submission, {len(missing)} missing; "
        f"{len(joined.unmatched)} submission(s) or submitters match no roster row. LMS files: `lms/canvas.csv`, "
        "`lms/grades.csv`, `lms/unmatched.csv`.",
        "",
    ]
    if joined.unmatched:
        lines += ["Submissions to check (they are in no LMS file):", ""]
        lines += [f"- `{row.student.key}`: {why}" for row, _m, why in joined.unmatched[:50]]
        lines.append("")
    return lines


def write(out: Path, rows: list, people: list[Person], assignment: str, max_score: float) -> Join:
    from ...core.results import write_atomic

    joined = join(rows, people)
    folder = out / "lms"
    folder.mkdir(exist_ok=True)
    write_atomic(folder / "canvas.csv", canvas_csv(people, joined, assignment, max_score))
    write_atomic(folder / "grades.csv", grades_csv(people, joined, max_score))
    write_atomic(folder / "unmatched.csv", unmatched_csv(joined))
    return joined
