"""Results: what a grading run concluded, built from the pytest-json-report and grading.toml.

This is the single model every renderer reads. Scores are computed here and only here:
against the fixed list of test ids in grading.toml (a test that never reported scores 0
and says why), ``score = weight × fraction`` for partial credit, skill and total scores
the exact sums of their tests. ``public()`` removes what students must not see of hidden
tests (inputs, expected values, printed output, grids), so student-facing renderers
cannot leak them by accident.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .config import Config, TestSpec

SCHEMA = "attention-autograder/results@1"
STATUS_PASSED, STATUS_FAILED, STATUS_ERROR, STATUS_NOT_RUN = "passed", "failed", "error", "not_run"


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


@dataclass
class Results:
    status: str  # complete | error | interrupted
    message: str
    score: float
    max_score: float
    skills: list[SkillOutcome]
    course: str = "Attention exercises"
    seed: int | None = None
    seed_source: str | None = None  # see runner/seeding.py SOURCES
    suite_hash: str | None = None
    versions: dict = field(default_factory=dict)
    sandbox: list[str] = field(default_factory=list)
    submission: dict = field(default_factory=dict)
    duration: float = 0.0
    schema: str = SCHEMA

    @property
    def tests(self) -> list[TestOutcome]:
        return [t for s in self.skills for t in s.tests]

    def to_dict(self) -> dict:
        return asdict(self)

    def public(self) -> "Results":
        """The student-facing view: hidden tests keep name, status, score and hints only."""
        data = self.to_dict()
        for skill in data["skills"]:
            for test in skill["tests"]:
                if test["visibility"] == "hidden":
                    _redact_hidden(test)
        return from_dict(data)


def _redact_hidden(test: dict) -> None:
    if test["status"] == STATUS_FAILED:
        test["summary"] = _hidden_summary(test)
    test["detail"] = None
    test["grids"] = []
    test["printed"] = []
    test["seed"] = None
    if test.get("credit"):
        test["credit"] = {k: test["credit"][k] for k in ("passed", "total", "fraction", "note") if k in test["credit"]}
    if test.get("error"):
        test["error"] = {"type": test["error"].get("type"), "message": "", "frames": test["error"].get("frames", [])}


def _hidden_summary(test: dict) -> str:
    """What a student may learn from a failed hidden test: never its inputs or expected
    values. Facts about their own file (missing, does not import, timed out, crashed)
    are safe; an exception's message may quote hidden inputs, so only its type is kept."""
    problem = test.get("problem") or "failed"
    if problem in ("missing", "timeout", "crash"):
        return test.get("summary") or "hidden test failed"
    if problem == "raised":
        kind = (test.get("error") or {}).get("type") or "an exception"
        todo = re.search(r"is not implemented yet — TODO\(\w+\): [\w.]+", test.get("summary") or "")
        if kind == "NotImplementedError" and todo:  # the stub's own message names only a function
            return f"hidden test failed: {todo.group(0)}"
        return f"hidden test failed: your code raised {kind}"
    words = {
        "type": "returned the wrong kind of value",
        "shape": "returned the wrong shape",
        "dtype": "returned the wrong dtype",
        "nan": "returned NaN",
        "values": "returned wrong values",
        "property": "a required property does not hold",
        "constraint": "uses something this exercise forbids",
    }
    return f"hidden test failed: {words.get(problem, problem)}"


def from_dict(data: dict) -> Results:
    skills = []
    for s in data["skills"]:
        tests = [TestOutcome(**t) for t in s["tests"]]
        skills.append(SkillOutcome(**{**s, "tests": tests}))
    return Results(**{**data, "skills": skills})


# --------------------------------------------------------------------------- scoring
def _first_line(text: str, limit: int = 240) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _error_line(longrepr: str) -> str:
    """The line of a traceback that names the exception ("E   ModuleNotFoundError: …")."""
    lines = [line.strip().removeprefix("E").strip() for line in longrepr.splitlines() if line.strip()]
    named = [line for line in lines if "Error" in line.split(":")[0] or "Exception" in line.split(":")[0]]
    return _first_line(named[-1] if named else (lines[0] if lines else ""), 300)


def _with_code(frames: list[dict], modules: dict[str, dict]) -> list[dict]:
    """Add the display path and the source line to the submission's own frames."""
    out = []
    for frame in frames:
        name = Path(str(frame.get("file", ""))).stem
        info = modules.get(name, {})
        code = ""
        copy = info.get("copy_path")
        line = frame.get("line")
        if copy and isinstance(line, int) and line > 0:
            try:
                lines = Path(copy).read_text(encoding="utf-8", errors="replace").splitlines()
                code = lines[line - 1].strip()[:200] if line <= len(lines) else ""
            except OSError:
                code = ""
        out.append({"file": info.get("display_path", frame.get("file")), "line": line, "function": frame.get("function", ""), "code": code})
    return out


def score_test(spec: TestSpec, entry: dict | None, modules: dict[str, dict], not_run_reason: str) -> TestOutcome:
    base = dict(id=spec.node_id, name=spec.name, skill=spec.skill, visibility=spec.visibility, max_score=spec.weight)
    if entry is None:
        return TestOutcome(**base, score=0.0, status=STATUS_NOT_RUN, summary=not_run_reason)
    meta = entry.get("metadata") or {}
    result = meta.get("result") or {}
    kind = result.get("kind")
    outcome = entry.get("outcome")
    duration = sum(float((entry.get(w) or {}).get("duration", 0.0)) for w in ("setup", "call", "teardown"))
    common = dict(
        seed=meta.get("seed"), duration=round(duration, 4), printed=meta.get("printed") or [],
        credit=meta.get("credit"), targets=meta.get("targets") or [],
    )
    if outcome == "passed":
        return TestOutcome(**base, score=spec.weight, status=STATUS_PASSED, **common)
    if kind == "skipped" or outcome == "skipped":
        return TestOutcome(**base, score=0.0, status=STATUS_NOT_RUN, summary=f"skipped: {result.get('reason', '')}", **common)
    if kind in ("check", "submission"):
        fb = result.get("feedback") or {}
        fraction = (meta.get("credit") or {}).get("fraction")
        score = round(spec.weight * fraction, 4) if isinstance(fraction, (int, float)) and 0 <= fraction < 1 else 0.0
        detail = fb.get("detail") or ""
        return TestOutcome(
            **base, score=score, status=STATUS_FAILED,
            summary=_first_line(f"{fb.get('check', '')}: {detail}" if fb.get("check") else detail),
            check=fb.get("check"), problem=fb.get("problem"), detail=detail,
            hints=fb.get("hints") or [], grids=fb.get("grids") or [],
            frames=_with_code(fb.get("frames") or [], modules), error=fb.get("error"), **common,
        )
    error = result.get("error") or {"type": "error", "message": _longrepr(entry)}
    return TestOutcome(
        **base, score=0.0, status=STATUS_ERROR,
        summary=f"grader error (not your fault — please tell your instructor): {error.get('type')}: {_first_line(error.get('message', ''))}",
        error=error, **common,
    )


def _apply_gates(gates: tuple[str, ...], tests: list[TestOutcome]) -> str | None:
    """A failed gate (a broken rule of the exercise) zeroes every test of the skill."""
    broken = [t for t in tests if t.name in gates and t.status != STATUS_PASSED]
    if not broken:
        return None
    reason = f"{broken[0].name}: {broken[0].summary}" if broken[0].summary else broken[0].name
    for test in tests:
        if test.score:
            test.score = 0.0
            test.summary = f"0 points: this skill breaks a rule of the exercise ({broken[0].name})" + (f"; {test.summary}" if test.summary else "")
    return reason


def _longrepr(entry: dict) -> str:
    for when in ("setup", "call", "teardown"):
        stage = entry.get(when) or {}
        if stage.get("outcome") not in (None, "passed"):
            return _first_line(str(stage.get("longrepr") or stage.get("crash", {}).get("message", "")), 500)
    return ""


def build(config: Config, report: dict | None, submission: dict, *, modules: dict[str, dict], status: str = "complete", message: str = "", duration: float = 0.0) -> Results:
    """Score every test grading.toml expects; ``report`` None means the run broke."""
    entries = {t.get("nodeid"): t for t in (report or {}).get("tests", [])}
    collect_errors = {
        c.get("nodeid"): _error_line(str(c.get("longrepr", "")))
        for c in (report or {}).get("collectors", [])
        if c.get("outcome") == "failed"
    }
    skills = []
    for skill in config.skills.values():
        tests = []
        for suite in skill.suites:
            reason = message or "did not run"
            if suite.file in collect_errors:
                reason = f"grader error (not your fault): the test file could not be loaded: {collect_errors[suite.file]}"
            for name, weight in suite.weights.items():
                spec = TestSpec(f"{suite.file}::{name}", suite.file, name, skill.id, weight, suite.visibility)
                entry = entries.get(spec.node_id) if status == "complete" else None
                tests.append(score_test(spec, entry, modules, reason))
        gated_by = _apply_gates(skill.gates, tests)
        score = round(sum(t.score for t in tests), 4)
        skills.append(SkillOutcome(
            id=skill.id, title=skill.title, module=skill.module, sections=list(skill.sections), points=skill.points,
            score=score, passed=sum(t.status == STATUS_PASSED for t in tests if t.max_score > 0),
            total=sum(t.max_score > 0 for t in tests), tests=tests, gated_by=gated_by,  # rules (weight 0) are not counted
        ))
    meta = (report or {}).get("autograder") or {}
    return Results(
        status=status,
        message=message,
        score=round(sum(s.score for s in skills), 4),
        max_score=round(sum(s.points for s in skills), 4),
        skills=skills,
        course=config.course,
        seed=meta.get("seed"),
        seed_source=meta.get("seed_source"),
        suite_hash=meta.get("suite_hash"),
        versions=meta.get("versions", {}),
        sandbox=meta.get("sandbox", []),
        submission=submission,
        duration=round(duration, 3),
    )


# --------------------------------------------------------------------------- writing
def write_atomic(path: str | Path, text: str) -> None:
    """Write via a temporary file in the same directory + rename: readers see the old file
    or the new one, never half of one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
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


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
