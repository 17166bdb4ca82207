"""Every edit the instructors' tools make to ``grading.toml``, on tomlkit (style-preserving).

Three tools rewrite the course's ``grading.toml``: the release's student copy (hidden suites
out, points summed over the visible tests: ``release/files.py``), an assignment's bundle (its
skills only: ``release/files.py``), the Gradescope bundle (``[limits]`` overridden:
``release/gradescope.py``) and ``make new-test`` (a new weight, taken from another test or
added to the points: ``new_test.py``). They edit the parsed document, so the comments, the
order and the spacing of everything they leave alone come out as they were written (a
release of the same commit is byte-identical to one made by the regex editors these replace),
and each result is checked by loading it again with ``tomllib``.

Instructors only (``requirements-instructor.txt`` pins tomlkit); the grader itself only reads
``grading.toml``, with the standard library's ``tomllib`` (``autograder/config/``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, MutableMapping

import tomlkit
from tomlkit.items import AoT, Table, Whitespace

#: a blank line too many: removed tables leave their separators behind
_EXTRA_BLANKS = re.compile(r"\n{3,}")


def number(value: float) -> str:
    """A number in a message, or a weight ``make new-test`` computed: ``20``, ``0.3`` (never
    ``20.0`` or ``0.30000000000000004``)."""
    return f"{value:g}"


def _item(value: float | list[str] | tuple[str, ...]):
    """A TOML number: an integer when it is whole (``20``, not ``20.0``), else the float's
    repr; a list (``[limits] slow_solutions``) as an array."""
    if isinstance(value, (list, tuple)):
        return tomlkit.item(list(value))
    return tomlkit.item(int(value) if float(value).is_integer() else float(value))


def _checked(text: str) -> str:
    tomllib.loads(text)  # still valid TOML
    return text


def _table(doc, key: str):
    """``doc[key]`` when it is a table (tomlkit gives a proxy for one split around others), else {}."""
    value = doc.get(key)
    return value if isinstance(value, MutableMapping) else {}


def _skills(doc):
    return _table(doc, "skills")


def _innermost(table: Table) -> Table:
    """The table whose body ends where ``table``'s text ends (its last sub-table's, if any)."""
    while True:
        keyed = [value for key, value in table.value.body if key is not None]
        if not keyed or not isinstance(keyed[-1], Table):
            return table
        table = keyed[-1]


def _trailing_blank(table: Table) -> str:
    body = _innermost(table).value.body
    blank = ""
    for key, value in reversed(body):
        if key is not None or not isinstance(value, Whitespace):
            break
        blank = value.s + blank
    return blank


def _drop_entries(suites: AoT, keep) -> None:
    """Remove the entries of an array of tables that ``keep`` refuses. The blank lines that
    ended the last one removed stay (they separated it from the next table)."""
    gap = _trailing_blank(suites[len(suites) - 1]) if len(suites) else ""
    for i in reversed(range(len(suites))):
        if not keep(suites[i]):
            del suites[i]
    if len(suites) and len(gap) > len(_trailing_blank(suites[len(suites) - 1])):
        body = _innermost(suites[len(suites) - 1]).value.body
        while body and body[-1][0] is None and isinstance(body[-1][1], Whitespace):
            body.pop()
        body.append((None, Whitespace(gap)))


# --------------------------------------------------------------------------- the student copy
def student_copy(config_text: str, *, suites_key: str, summed: Iterable[str], to_visible: Iterable[str], note: str) -> str:
    """``grading.toml`` without hidden entries: every hidden ``[[skills.X.<suites_key>]]`` entry
    goes, each ``summed`` key of a skill becomes the sum of its visible weights (a comment says
    out of what the course grades), each ``to_visible`` list keeps the visible tests only (the
    key goes when none is left), and ``note`` opens the file."""
    summed, to_visible = tuple(summed), tuple(to_visible)
    doc = tomlkit.parse(config_text)
    for sid, skill in _skills(doc).items():
        suites = skill.get(suites_key)
        visible = [s for s in (suites or []) if s.get("visibility") == "visible"]
        if not visible:
            raise ValueError(f"grading.toml: skill {sid} has no visible suite: the student release could not grade it")
        visible_points = sum(float(w) for s in visible for w in s.get("weights", {}).values())
        visible_tests = {name for s in visible for name in s.get("weights", {})}
        if isinstance(suites, AoT):
            _drop_entries(suites, lambda entry: entry.get("visibility") == "visible")
        for key in summed:
            if key in skill:
                full = skill[key]
                skill[key] = _item(visible_points)
                skill[key].comment(f"# visible tests only; the course autograder grades out of {_item(full).as_string()}")
                skill[key].trivia.comment_ws = "  "
        for key in to_visible:
            if key in skill:
                kept = [name for name in skill[key] if name in visible_tests]
                if kept:
                    skill[key] = _string_array(kept)
                else:
                    del skill[key]
    text = _EXTRA_BLANKS.sub("\n\n\n", note + doc.as_string())
    return _checked(text)


def _string_array(values: list[str]):
    array = tomlkit.array()
    array.extend(values)
    return array


# --------------------------------------------------------------------------- one assignment
def assignment_copy(config_text: str, skills: tuple[str, ...]) -> str:
    """``grading.toml`` for one assignment's bundle: only its skills (their tables and suites),
    their rules, and no ``[release.assignments]`` (the bundle is one of them)."""
    doc = tomlkit.parse(config_text)
    table = _skills(doc)
    for sid in [sid for sid in table if sid not in skills]:
        del table[sid]
    release = _table(doc, "release")
    if "assignments" in release:
        del release["assignments"]
    rules = _table(release, "rules")
    for sid in [sid for sid in rules if sid not in skills]:
        del rules[sid]
    return _checked(_EXTRA_BLANKS.sub("\n\n\n", doc.as_string()))


# --------------------------------------------------------------------------- [limits]
def with_values(text: str, table: str, values: dict[str, float | list[str] | tuple[str, ...]]) -> str:
    """``text`` with ``[table]``'s keys set to ``values`` (comments kept; missing keys added at
    the table's end, the table at the file's end when there is none)."""
    doc = tomlkit.parse(text)
    if table not in doc:
        doc.add(tomlkit.nl())
        doc.add(table, tomlkit.table())
    target = doc[table]
    for key, value in values.items():
        if key in target:
            old = target[key]
            target[key] = _item(value)
            target[key].trivia.comment_ws = old.trivia.comment_ws
            target[key].trivia.comment = old.trivia.comment
        else:
            target.add(key, _item(value))
    return _checked(doc.as_string())


# --------------------------------------------------------------------------- make new-test
class EditRefused(ValueError):
    """The edit cannot be made as asked; ``str()`` names the fix."""


def _weights(doc, skill: str, suite_file: str):
    suites = _skills(doc).get(skill, {}).get("suites") or []
    for suite in suites:
        if suite.get("file") == suite_file and isinstance(suite.get("weights"), Table):
            return suite["weights"]
    raise EditRefused(
        f"grading.toml: no [skills.{skill}.suites.weights] table for {suite_file} — add the suite entry first (see "
        "autograder/testing/README.md)"
    )


def _line_of(text: str, key: str) -> int:
    match = re.search(rf"^\s*{re.escape(key)}\s*=", text, flags=re.M)
    return text.count("\n", 0, match.start()) + 1 if match else 0


def add_weight(text: str, skill: str, suite_file: str, name: str, weight: float, take_from: str | None, add_points: bool) -> str:
    """``text`` with ``name = weight`` at the end of ``suite_file``'s weights table, and the
    weight taken from ``take_from`` (same skill) or added to the skill's ``points``."""
    doc = tomlkit.parse(text)
    weights = _weights(doc, skill, suite_file)
    weights.add(name, _item(float(number(weight))))
    if add_points:
        table = _skills(doc)[skill]
        if "points" not in table:
            raise EditRefused(f"grading.toml: [skills.{skill}] has no points line")
        table["points"] = _item(float(number(float(table["points"]) + weight)))
    else:
        donors = [s["weights"] for s in _skills(doc)[skill].get("suites") or [] if take_from in s.get("weights", {})]
        if not donors:
            raise EditRefused(
                f"grading.toml: skill {skill} has no test {take_from} to take the weight from (--take-from / FROM=)"
            )
        given = float(donors[0][take_from])
        left = given - weight
        if left <= 0:
            raise EditRefused(
                f"grading.toml:{_line_of(text, take_from)}: {take_from} = {number(given)} cannot give {number(weight)} "
                f"(it would keep {number(left)}): "
                f"take it from a heavier test, or pass --add-points (ADD_POINTS=1) to raise the skill's points"
            )
        donors[0][take_from] = _item(float(number(left)))
    return _checked(doc.as_string())


# --------------------------------------------------------------------------- make new-skill
def add_skill(
    text: str, skill: str, points: float, module: str, suites: dict[str, dict[str, float]], assignment: str | None
) -> str:
    """``text`` with a ``[skills.<skill>]`` table (a title to write, its points, module, no
    sections yet) and one ``[[skills.<skill>.suites]]`` entry per suite file
    (``{file: {test: weight}}``, visible first), appended to the assignment ``assignment``
    (created when missing; None: none)."""
    doc = tomlkit.parse(text)
    skills = _skills(doc)
    if skill in skills:
        raise EditRefused(f"grading.toml: [skills.{skill}] exists already — pick another NAME")
    table = tomlkit.table()
    table.add("title", f"TODO: {skill}'s title")
    table.add("points", _item(points))
    table.add("module", module)
    table.add("sections", tomlkit.array())
    entries = tomlkit.aot()
    for file, weights in suites.items():
        entry = tomlkit.table()
        entry.add("file", file)
        entry.add("visibility", "hidden" if file.endswith("_hidden.py") else "visible")
        table_of_weights = tomlkit.table()
        for name, weight in weights.items():
            table_of_weights.add(name, _item(weight))
        entry.add("weights", table_of_weights)
        entries.append(entry)
    table.add("suites", entries)
    table_of_weights.add(tomlkit.nl())  # a blank line before whatever follows the new skill
    if not skills:
        doc.add("skills", tomlkit.table(is_super_table=True))
        skills = doc["skills"]
    skills.add(skill, table)
    if assignment is not None:
        release = doc.setdefault("release", tomlkit.table())
        assignments = release.setdefault("assignments", tomlkit.table())
        if assignment in assignments:
            assignments[assignment].append(skill)
        else:
            assignments.add(assignment, _string_array([skill]))
    return _checked(doc.as_string())
