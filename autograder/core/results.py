"""Results: what a grading run concluded — the single model every renderer reads, and its
JSON writing.

Scores are computed by runner/scoring.py, from data (the report and the run's manifest);
this module only holds them. ``public()`` removes what students must not see of hidden
tests (inputs, expected values, printed output, grids: core/redact.py), so student-facing
renderers cannot leak them by accident. Torch-free, and it imports nothing of the grader
above core/.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from .escape import json_escape_invisible
from .redact import public_data
from .schema import SCHEMA

#: how the note in ``Results.sandbox`` that names the sandbox's tier begins (runner/policy.py
#: writes it, renderers/common.py shows a portable one to the student)
SANDBOX_TIER = "sandbox tier: "


@dataclass
class TestOutcome:
    id: str
    name: str
    skill: str
    visibility: str
    max_score: float
    score: float
    status: str
    summary: str = ""
    check: str | None = None
    problem: str | None = None
    detail: str | None = None
    hints: list[dict] = field(default_factory=list)
    grids: list[dict] = field(default_factory=list)
    frames: list[dict] = field(default_factory=list)
    error: dict | None = None
    credit: dict | None = None
    printed: list[dict] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    seed: int | None = None
    duration: float = 0.0
    # a visible test's score by the visible tests alone (the property rule and the gates applied
    # over them: runner/scoring.py), which is what Gradescope shows before the due date; None if hidden
    visible_score: float | None = None
    # its summary as shown then, where a rule broken in hidden tests alone changed ``summary``
    visible_summary: str | None = None

    @property
    def passed_with_its_points(self) -> bool:
        """Passed, and no rule of its skill took the points (a broken rule of the exercise
        zeroes every test; a property test counts once the skill's other tests earn points):
        what "N/M passed" counts, beside the points, and Gradescope's per-test status."""
        return self.status == "passed" and self.score >= self.max_score


@dataclass
class SkillOutcome:
    id: str
    title: str
    module: str
    sections: list[str]
    points: float
    score: float
    passed: int
    total: int
    tests: list[TestOutcome]
    gated_by: str | None = None  # a rule of the exercise this submission breaks: the skill scores 0
    functions: list[str] = field(default_factory=list)  # the module's public API (exercise_api.skill_functions)


def interrupted_message(exc: KeyboardInterrupt) -> str:
    """What stopped a run: Ctrl-C, or the signal the command line turned into an interrupt
    (cli.interrupt_on_termination: SIGTERM, SIGHUP), named in the ``KeyboardInterrupt``."""
    return f"grading was interrupted ({exc.args[0] if exc.args else 'Ctrl-C'})"


@dataclass
class Results:
    status: str  # complete | error | interrupted
    message: str
    score: float
    max_score: float
    skills: list[SkillOutcome]
    course: str = "Attention exercises"
    seed: int | None = None
    seed_source: str | None = None  # see core/schema.py SEED_SOURCES
    suite_hash: str | None = None  # runner/identity.py
    visible_suite_hash: str | None = None
    not_graded: list[str] = field(default_factory=list)  # a --skill run: the release's skills it left out
    #: ``[course.result_labels]``: "W7" → "Week 7 (docs/lessons/week07-attention.txt)", for the report's legend
    result_labels: dict[str, str] = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    sandbox: list[str] = field(default_factory=list)
    submission: dict = field(default_factory=dict)
    duration: float = 0.0
    schema: str = SCHEMA

    @property
    def tests(self) -> list[TestOutcome]:
        return [t for s in self.skills for t in s.tests]

    def to_dict(self) -> dict:
        return _plain(self)

    def public(self) -> Results:
        """The student-facing view: hidden tests reduced to what core/redact.py whitelists."""
        return from_dict(public_data(self.to_dict()))


def from_dict(data: dict) -> Results:
    skills = []
    for s in data["skills"]:
        tests = [TestOutcome(**t) for t in s["tests"]]
        skills.append(SkillOutcome(**{**s, "tests": tests}))
    return Results(**{**data, "skills": skills})


# --------------------------------------------------------------------------- writing
def write_atomic(path: str | Path, text: str) -> None:
    """Write via a temporary file in the same directory + rename: readers see the old file
    or the new one, never half of one. Any string can be written: what UTF-8 cannot carry
    (a lone surrogate from student text) is backslash-escaped — inside JSON strings that
    is itself a valid JSON escape."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _plain(value: Any) -> Any:
    """``dataclasses.asdict`` for results (dataclasses of dicts, lists and JSON scalars), at a
    fifth of its cost: new containers all the way down, so the copy can be changed freely
    (``public`` does); anything else is deep-copied, as asdict would."""
    tp = type(value)
    if tp is str or tp is int or tp is float or tp is bool or value is None:
        return value
    if tp is list:
        return [_plain(v) for v in value]
    if tp is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    names = _FIELD_NAMES.get(tp)
    if names is None and is_dataclass(tp):
        names = _FIELD_NAMES[tp] = tuple(f.name for f in fields(tp))
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    return asdict(_Box(value))["value"]  # tuples, named tuples, anything else: asdict's own rules


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass
class _Box:
    value: Any


def dumps(data: Any) -> str:
    """JSON for files and stdout: readable Unicode, but every control, BiDi or invisible
    character (and any lone surrogate) written as a ``\\uXXXX`` escape — the same data, and
    a results file shown in a terminal cannot drive it. Non-finite numbers (which JSON
    lacks) become strings."""
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data), indent=2, ensure_ascii=False, allow_nan=False)
    return json_escape_invisible(text) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return repr(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
