"""From a batch to a learning-management system: the roster join and the gradebook exports.

``--roster roster.csv`` names the class, in one of two forms:

* our own: one row per student with an ``id`` column (the institution's student id —
  Canvas's SIS User ID) and any of ``name``, ``email``, ``login`` (Canvas's SIS Login ID),
  ``github`` (a GitHub user name), ``folder`` (the name of the student's folder or .zip in
  SUBMISSIONS), ``section`` and ``canvas_id``;
* Canvas's own gradebook export (Grades → Export): ``Student, ID, SIS User ID, SIS Login ID,
  Section, …``; its "Points Possible" row is skipped, ``SIS User ID`` is the id, ``SIS Login
  ID`` the login, ``ID`` Canvas's internal id, ``Student`` ("Last, First") the name; the
  assignment and score columns are ignored (and named on the terminal).

A submission belongs to the roster row whose ``id``, ``email``, ``login``, ``github`` or
``folder`` equals (case-insensitively) one of its own identifiers: the folder or zip name,
and for a Gradescope export each submitter's SID, email and name. When none does, its name
(the folder's name, a submitter's name) is compared with the roster's names, Unicode-
normalised (NFKD), accents, case, punctuation and word order ignored: "ana_garcia",
"GARCÍA, Ana" and "Ana García" are one name. Only a name that fits exactly one roster row
matches; one that fits several is reported, never guessed. A Gradescope group submission
counts for each of its members.

While any submission matches nobody, a roster student without a submission may well be its
author: their LMS cells are left blank (Canvas keeps a blank cell's old grade) instead of 0,
and the batch exits 3, until the roster is fixed or ``--accept-unmatched`` says the missing
students really get 0.

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
  ``summary.md``; its ``folder`` cell is the entry's name as it is in SUBMISSIONS (without
  ``.zip``): copied into the roster's ``folder`` column it matches.

Written here rather than with a library: the join is a dictionary lookup and the formats
are two CSV headers; no LMS client library writes Canvas's gradebook file.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ...core import escape

#: roster columns that identify a student (compared case-insensitively with a submission's identifiers)
KEY_COLUMNS = ("id", "email", "login", "github", "folder")
KNOWN_COLUMNS = ("id", "name", "email", "login", "github", "folder", "section", "canvas_id")
#: Canvas gradebook export header → our column
CANVAS_COLUMNS = {"student": "name", "id": "canvas_id", "sis user id": "id", "sis login id": "login", "section": "section"}
POINTS_POSSIBLE = "points possible"
#: the batch's exit status while a submission matches no roster row (cli.py)
EXIT_UNMATCHED = 3


def name_key(text: str) -> str:
    """A person's name compared as a person would: NFKD, accents dropped, casefolded, every run
    of punctuation, ``_`` or space one separator, words in sorted order ("García, Ana" is
    "Ana Garcia"); empty when nothing is left."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    words = [w for w in re.split(r"[\W_]+", bare) if w]
    return " ".join(sorted(words))


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

    def name_key(self) -> str:
        return name_key(self.get("name"))


@dataclass
class Member:
    """One person of a submission, as the submission names them."""

    name: str = ""
    sid: str = ""
    email: str = ""
    folder: str = ""

    def identifiers(self) -> set[str]:
        # the folder also as unmatched.csv shows it: a name that is not UTF-8 ("bad\udcffname")
        # copied from there into the roster matches (blind tester R-CO: it never could)
        shown = escape.visible(self.folder, None) if self.folder else ""
        return {v.casefold() for v in (self.sid, self.email, self.folder, shown, self.name) if v}

    def name_keys(self) -> set[str]:
        """The names to try when no identifier matches: the person's name, else the folder's."""
        return {k for k in (name_key(self.name), name_key(self.folder)) if k}


@dataclass
class Join:
    #: roster line → (batch row, member, "id" or "name": how they matched)
    graded: dict[int, tuple[object, Member, str]] = field(default_factory=dict)
    unmatched: list[tuple[object, Member, str]] = field(default_factory=list)  # (row, member, why)

    @property
    def by_name(self) -> int:
        return sum(1 for _row, _member, how in self.graded.values() if how == "name")

    def missing(self, people: list[Person]) -> list[Person]:
        return [p for p in people if p.line not in self.graded]

    def open_work(self) -> list[tuple[object, Member, str]]:
        """Unmatched submissions that may be a roster student's work (not a replaced duplicate)."""
        return [u for u in self.unmatched if not u[2].startswith("replaced by")]

    def counts(self, people: list[Person]) -> str:
        return (
            f"roster: {len(self.graded)} matched ({self.by_name} by name), {len(self.open_work())} unmatched "
            f"submission(s), {len(self.missing(people))} roster student(s) missing"
        )


def _canvas_fields(raw: dict) -> dict[str, str]:
    return {CANVAS_COLUMNS[k]: v for k, v in raw.items() if k in CANVAS_COLUMNS}


def load_roster(path: Path, notes: list[str] | None = None) -> list[Person]:
    """The roster's students; ``notes`` gets what was ignored (columns, Canvas's extra rows)."""
    notes = notes if notes is not None else []
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: cannot be read ({exc}) — save the roster as a UTF-8 CSV file") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().casefold() for h in (reader.fieldnames or [])]
    canvas = "student" in header and "sis user id" in header
    if canvas:
        ignored = [h for h in header if h not in CANVAS_COLUMNS]
    else:
        if "id" not in header:
            raise RosterError(
                f"{path}:1: the header has no `id` column (found: {', '.join(header) or 'nothing'}) — "
                f"name the student-id column `id`; optional columns: {', '.join(KNOWN_COLUMNS[1:])} "
                "(or pass Canvas's gradebook export as it is)"
            )
        ignored = [h for h in header if h not in KNOWN_COLUMNS]
    if ignored:
        shown = ", ".join(f"`{h}`" for h in ignored[:8]) + (f" and {len(ignored) - 8} more" if len(ignored) > 8 else "")
        notes.append(
            f"{path}: {'Canvas gradebook export: ' if canvas else ''}column(s) {shown} ignored "
            f"(used: {', '.join(CANVAS_COLUMNS if canvas else KNOWN_COLUMNS)})"
        )
    people, seen = [], {}
    for number, raw in enumerate(reader, start=2):
        raw = {k.strip().casefold(): (v or "").strip() for k, v in raw.items() if k is not None and isinstance(v, str | None)}
        fields = _canvas_fields(raw) if canvas else raw
        if not any(fields.values()):
            continue
        if canvas and fields.get("name", "").casefold() == POINTS_POSSIBLE:
            continue  # Canvas's second row: the assignments' points, not a student
        person = Person(number, fields)
        if not person.get("id"):
            if canvas:
                notes.append(
                    f"{path}:{number}: {person.get('name') or 'a row'} has no SIS User ID — left out "
                    "(Canvas's test student has none; give a real student their SIS User ID)"
                )
                continue
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
    names: dict[str, list[Person]] = {}
    for person in people:
        if person.name_key():
            names.setdefault(person.name_key(), []).append(person)
    out = Join()
    for row in rows:
        for member in members(row):
            found = {index[i].line: index[i] for i in member.identifiers() if i in index}
            how = "id"
            if not found:  # no identifier: the name, when exactly one roster row has it
                named = {p.line: p for k in member.name_keys() for p in names.get(k, [])}
                if len(named) > 1:
                    lines = ", ".join(map(str, sorted(named)))
                    why = f"its name fits several roster rows (lines {lines}) — add a `folder` column to tell them apart"
                    out.unmatched.append((row, member, why))
                    continue
                found, how = named, "name"
            if len(found) == 1:
                line = next(iter(found))
                if line in out.graded:  # two submissions of one student: keep the later (Gradescope keeps the last)
                    out.unmatched.append(
                        (out.graded[line][0], out.graded[line][1], f"replaced by a later submission of roster line {line}")
                    )
                out.graded[line] = (row, member, how)
            elif found:
                out.unmatched.append((row, member, f"matches several roster rows (lines {', '.join(map(str, sorted(found)))})"))
            else:
                why = "matches no roster row (by id, email, login, github, folder or name) — add its folder to the roster"
                out.unmatched.append((row, member, why))
    return out


def _score(row) -> tuple[float, float, str]:
    results = row.results or {}
    status = "graded" if row.results is not None and results.get("status") == "complete" else "error"
    return float(results.get("score") or 0.0), float(results.get("max_score") or 0.0), status


def zero_for_missing(joined: Join, accept_unmatched: bool) -> bool:
    """Whether a roster student without a submission gets 0: not while some submission matches
    nobody (it may be theirs), unless the instructor said so (``--accept-unmatched``)."""
    return accept_unmatched or not joined.open_work()


def grades_csv(people: list[Person], joined: Join, max_score: float, accept_unmatched: bool = False) -> str:
    zero = zero_for_missing(joined, accept_unmatched)
    rows: list[list[object]] = [["id", "name", "email", "login", "score", "max", "percent", "status", "submission"]]
    for p in people:
        row_member = joined.graded.get(p.line)
        if row_member is None:
            score: object = 0 if zero else ""
            status = "missing" if zero else "missing-unmatched-work"
            rows.append([p.get("id"), p.get("name"), p.get("email"), p.get("login"), score, max_score, score, status, ""])
            continue
        row = row_member[0]
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


def canvas_csv(people: list[Person], joined: Join, assignment: str, max_score: float, accept_unmatched: bool = False) -> str:
    zero = zero_for_missing(joined, accept_unmatched)
    rows: list[list[object]] = [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment],
        ["Points Possible", "", "", "", "", max_score],
    ]
    for p in people:
        row_member = joined.graded.get(p.line)
        cell: object
        if row_member is not None:
            cell = _score(row_member[0])[0]
        else:  # blank: Canvas keeps the cell's grade; 0 only once no submission is unaccounted for
            cell = 0 if zero else ""
        rows.append(
            [
                p.get("name") or p.get("id"),
                p.get("canvas_id"),
                p.get("id"),
                p.get("login") or p.get("email"),
                p.get("section"),
                cell,
            ]
        )
    return escape.csv_text(rows)


def unmatched_csv(joined: Join) -> str:
    """``folder``: the entry's own name in SUBMISSIONS (a zip's without ``.zip``), the value that
    matches once copied into the roster's ``folder`` column; ``results``: its folder under --out.
    The folder and names are the student's own text: the one CSV writer keeps a spreadsheet
    from running them."""
    rows: list[list[object]] = [["folder", "name", "submitter", "results", "why"]]
    for row, member, why in joined.unmatched:
        submitter = " ".join(v for v in (member.sid, member.email) if v) or "(no id)"
        rows.append([member.folder, member.name, submitter, row.student.key, why])
    return escape.csv_text(rows)


def summary_lines(people: list[Person], joined: Join, accept_unmatched: bool = False) -> list[str]:
    missing = joined.missing(people)
    lines = [
        "## Roster",
        "",
        f"{len(people)} students on the roster: {len(joined.graded)} with a submission"
        + (f" ({joined.by_name} matched by name)" if joined.by_name else "")
        + f", {len(missing)} missing; "
        f"{len(joined.unmatched)} submission(s) or submitters match no roster row. LMS files: `lms/canvas.csv`, "
        "`lms/grades.csv`, `lms/unmatched.csv`.",
        "",
    ]
    if missing and not zero_for_missing(joined, accept_unmatched):
        lines += [
            f"**The {len(missing)} missing student(s) are left blank, not 0, in the LMS files**: "
            f"{len(joined.open_work())} submission(s) match nobody and may be theirs. Add their folders to the "
            "roster's `folder` column (`lms/unmatched.csv` names them), or grade with `--accept-unmatched` "
            "to give the missing students 0.",
            "",
        ]
    if joined.unmatched:
        lines += ["Submissions to check (they are in no LMS file):", ""]
        lines += [f"- `{row.student.key}`: {why}" for row, _m, why in joined.unmatched[:50]]
        lines.append("")
    return lines


def write(out: Path, rows: list, people: list[Person], assignment: str, max_score: float, accept_unmatched: bool = False) -> Join:
    from ...core.results import write_atomic

    joined = join(rows, people)
    folder = out / "lms"
    folder.mkdir(exist_ok=True)
    write_atomic(folder / "canvas.csv", canvas_csv(people, joined, assignment, max_score, accept_unmatched))
    write_atomic(folder / "grades.csv", grades_csv(people, joined, max_score, accept_unmatched))
    write_atomic(folder / "unmatched.csv", unmatched_csv(joined))
    return joined
