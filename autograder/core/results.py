"""Results: what a grading run concluded, built from the pytest-json-report and grading.toml.

This is the single model every renderer reads. Scores are computed here and only here,
from data (the report and the run's manifest, runner/manifest.py): against the fixed list
of test ids in grading.toml (a test that never reported scores 0 and says why),
``score = weight × fraction`` for partial credit, skill and total scores the exact sums of
their tests. ``public()`` removes what students must not see of hidden
tests (inputs, expected values, printed output, grids), so student-facing renderers
cannot leak them by accident.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import TestSpec

if TYPE_CHECKING:
    from ..config import Config
    from ..runner.manifest import ModuleEntry, RunManifest

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
    functions: list[str] = field(default_factory=list)  # the module's public API (exercise_api.skill_functions)


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
    suite_hash: str | None = None  # runner/identity.py
    visible_suite_hash: str | None = None
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

    def public(self) -> "Results":
        """The student-facing view. A whitelist: a hidden test keeps its name, points,
        status, hint ids (with our hint text), partial-credit counts and the student's own
        frames (file:line of their module, function and code read from that file) — no free
        text from the worker, no inputs, no duration (sleeping could encode data). Its
        summary is rebuilt here from fixed phrases; a TODO is named only when the function
        is one of the skill's module's real functions."""
        data = self.to_dict()
        hidden_anywhere = False
        for skill in data["skills"]:
            functions = list(skill.get("functions") or [])
            gate = _gate_name(skill)
            module = (data.get("submission") or {}).get("modules", {}).get(Path(skill["module"]).stem) or {}
            module_problem = module.get("problem") if isinstance(module.get("problem"), str) else None
            from ..renderers.common import problem_key

            # a module that does not import or lacks a name fails every test the same way:
            # a hidden test may repeat what a visible test already shows, and nothing else
            shown = {problem_key(t["summary"], t["check"]) for t in skill["tests"] if t["visibility"] == "visible" and t.get("problem") == "missing"}
            tests = []
            for test in skill["tests"]:
                if test["visibility"] == "hidden":
                    hidden_anywhere = True
                    public = _public_hidden(test, skill["id"], functions, gate, module_problem)
                    same = problem_key(test["summary"], test["check"])
                    if test.get("problem") == "missing" and same in shown:
                        public["summary"] = same
                    tests.append(public)
                else:
                    tests.append(test)
            skill["tests"] = tests
            if gate is not None:
                gate_test = next(t for t in tests if t["name"] == gate)
                skill["gated_by"] = f"{gate}: {gate_test['summary']}" if gate_test["summary"] else gate
        if hidden_anywhere:
            data["duration"] = 0.0  # the run's wall time includes the hidden tests'
        return from_dict(data)


_PROBLEMS = ("type", "shape", "dtype", "nan", "values", "property", "constraint", "raised", "missing", "timeout", "crash")
_GATED = "0 points: this skill breaks a rule of the exercise"


def _gate_name(skill: dict) -> str | None:
    """The gate test a skill failed (``gated_by`` is "name: summary"), checked against the
    skill's own test names."""
    gated = skill.get("gated_by")
    if not gated:
        return None
    name = gated.split(":", 1)[0].strip()
    return name if any(t["name"] == name for t in skill["tests"]) else None


def _builtin_exception(name: object) -> str | None:
    """An exception type name the worker reported, kept only when it is one of Python's
    own (a submission can name its classes anything, including text meant for us)."""
    import builtins

    value = getattr(builtins, name, None) if isinstance(name, str) and name.isidentifier() else None
    return name if isinstance(value, type) and issubclass(value, BaseException) else None


def _public_hidden(test: dict, skill_id: str, functions: list[str], gate: str | None, module_problem: str | None) -> dict:
    credit = test.get("credit") or None
    if credit:
        note = credit.get("note")  # the scoring rule in words, built on the trusted side from the test's own labels
        credit = {k: credit[k] for k in ("passed", "total", "fraction") if isinstance(credit.get(k), (int, float)) and not isinstance(credit.get(k), bool)}
        if isinstance(note, str):
            credit["note"] = note
    summary = _hidden_summary(test, skill_id, functions, module_problem)
    if gate is not None and test["name"] != gate and (test.get("summary") or "").startswith(_GATED):
        summary = f"{_GATED} ({gate})" + (f"; {summary}" if summary else "")
    problem = test.get("problem")
    return {
        "id": test["id"], "name": test["name"], "skill": test["skill"], "visibility": test["visibility"],
        "max_score": test["max_score"], "score": test["score"], "status": test["status"],
        "summary": summary,
        "check": None,
        "problem": problem if problem in _PROBLEMS else None,
        "detail": None,
        "hints": [{"id": str(h.get("id", "")), "text": str(h.get("text", "")), "section": str(h.get("section", ""))} for h in test.get("hints") or []],
        "grids": [],
        "frames": [_public_frame(f) for f in test.get("frames") or [] if isinstance(f, dict)],
        "error": None,
        "credit": credit or None,
        "printed": [],
        "targets": [t for t in test.get("targets") or [] if isinstance(t, str) and re.fullmatch(r"\w+\.(probe:)?[\w.]+", t)],
        "seed": None,
        "duration": 0.0,
    }


def _public_frame(frame: dict) -> dict:
    line = frame.get("line")
    return {
        "file": str(frame.get("file", "")),
        "line": line if isinstance(line, int) and not isinstance(line, bool) else None,
        "function": str(frame.get("function") or ""),
        "code": str(frame.get("code") or ""),
    }


def _hidden_summary(test: dict, skill_id: str, functions: list[str], module_problem: str | None = None) -> str:
    """What a student may learn from a hidden test: fixed phrases chosen by the problem's
    kind, never its inputs, expected values, or any text the worker sent."""
    status = test["status"]
    if status == STATUS_PASSED:
        return ""
    summary = test.get("summary") or ""
    if status == STATUS_NOT_RUN:  # the run's own reason (interrupted, broken, …), never a test's text
        if summary.startswith(("grader error", "skipped")):
            return "hidden test did not run (not your fault)"
        return summary or "hidden test did not run"
    if status == STATUS_ERROR:
        return "grader error (not your fault — please tell your instructor)"
    problem = test.get("problem") or "failed"
    if problem == "missing":
        if module_problem:  # the grader's own facts about the file, found without running it
            return f"hidden test failed: {module_problem}"
        if re.fullmatch(r"[\w.]+\(…\): \S+ defines no '[\w.]+'", summary):  # built by the grader from the test's target
            return summary
        return "hidden test failed: a function it needs is missing or its module did not import (see the visible tests)"
    if problem == "timeout":
        return "hidden test failed: your code did not finish within the time limit"
    if problem == "crash":
        return "hidden test failed: your code stopped its worker process (exit, crash or a limit)"
    if problem == "raised":
        kind = _builtin_exception((test.get("error") or {}).get("type")) or "an exception"
        if kind == "NotImplementedError":
            todo = re.search(rf"TODO\({re.escape(skill_id)}\): ([\w.]+)", f"{test.get('summary') or ''} {test.get('detail') or ''}")
            if todo and todo.group(1) in functions:  # only a name from the module's own API crosses
                return f"hidden test failed: is not implemented yet — TODO({skill_id}): {todo.group(1)}"
        # (a TODO stub's text is named above only when it is a real function; a made-up type shows no text)
        message = first_line((test.get("error") or {}).get("message"), 160) if kind not in ("an exception", "NotImplementedError") else ""
        # the student's own exception text (their code's, or torch's about their call): what makes
        # "mat1 and mat2 must have the same dtype" readable; one line, and every renderer escapes it
        return f"hidden test failed: your code raised {kind}" + (f": {message}" if message else "")
    if problem == "constraint":
        # "forbids" belongs to the exercise's rules (gates, weight 0, they zero the skill); a
        # weighted test's constraint is how the contract says to call something
        return ("hidden test failed: uses something this exercise forbids" if test.get("max_score") == 0
                else "hidden test failed: does not call the library the way the exercise asks")
    words = {
        "type": "returned the wrong kind of value",
        "shape": "returned the wrong shape",
        "dtype": "returned the wrong dtype",
        "nan": "returned NaN",
        "values": "returned wrong values",
        "property": "a required property does not hold",
    }
    return f"hidden test failed: {words.get(problem, 'failed')}"


def from_dict(data: dict) -> Results:
    skills = []
    for s in data["skills"]:
        tests = [TestOutcome(**t) for t in s["tests"]]
        skills.append(SkillOutcome(**{**s, "tests": tests}))
    return Results(**{**data, "skills": skills})


# --------------------------------------------------------------------------- scoring
def first_line(text: Any, limit: int = 300) -> str:
    """The first non-blank line of ``text`` (None → ""), cut to ``limit`` characters with "…"
    (torch-free, so the CLI's side and the suites' side share it)."""
    text = "" if text is None else str(text).strip()
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _error_line(longrepr: str) -> str:
    """The line of a traceback that names the exception ("E   ModuleNotFoundError: …")."""
    lines = [line.strip().removeprefix("E").strip() for line in longrepr.splitlines() if line.strip()]
    named = [line for line in lines if "Error" in line.split(":")[0] or "Exception" in line.split(":")[0]]
    return first_line(named[-1] if named else (lines[0] if lines else ""), 300)


def _with_code(frames: list[dict], modules: dict[str, "ModuleEntry"]) -> list[dict]:
    """The submission's own frames, as facts the trusted side checked: the file must be one
    of the graded modules (shown by its display path), the line a line of that file, and the
    function and code are the ones captured from the copied source — the worker's names (a
    code object's ``co_name`` can be any text) are never shown."""
    from .exercise_api import enclosing_function

    out = []
    for frame in frames[-16:]:
        if not isinstance(frame, dict):
            continue
        file, line = str(frame.get("file", "")), frame.get("line")
        name = file[:-3] if file.endswith(".py") else ""
        info = modules.get(name)
        if info is None or not isinstance(line, int) or isinstance(line, bool) or line < 1:
            continue
        code, function = "", "<module>"
        if info.copy_path:
            if line > len(info.lines):
                continue
            code = info.lines[line - 1]
            function = enclosing_function(info.definitions, line) or "<module>"
        out.append({"file": info.display_path or file, "line": line, "function": function, "code": code})
    return out


def score_test(spec: TestSpec, entry: dict | None, modules: dict[str, "ModuleEntry"], not_run_reason: str) -> TestOutcome:
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
            summary=first_line(f"{fb.get('check', '')}: {detail}" if fb.get("check") else detail, 240),
            check=fb.get("check"), problem=fb.get("problem"), detail=detail,
            hints=fb.get("hints") or [], grids=fb.get("grids") or [],
            frames=_with_code(fb.get("frames") or [], modules), error=fb.get("error"), **common,
        )
    error = result.get("error") or {"type": "error", "message": _longrepr(entry)}
    return TestOutcome(
        **base, score=0.0, status=STATUS_ERROR,
        summary=f"grader error (not your fault — please tell your instructor): {error.get('type')}: {first_line(error.get('message', ''), 240)}",
        error=error, **common,
    )


def _apply_gates(gates: tuple[str, ...], tests: list[TestOutcome]) -> str | None:
    """A failed gate (a broken rule of the exercise) zeroes every test of the skill. A gate that
    failed *on the submission* counts whatever the way (a violation seen, or the checked call
    timing out or crashing — no way around the rule); one that did not run (an empty upload, a
    broken run: not_run/error) or found no module to check ("missing") breaks no rule."""
    broken = [t for t in tests if t.name in gates and t.status == STATUS_FAILED and t.problem != "missing"]
    if not broken:
        return None
    reason = f"{broken[0].name}: {broken[0].summary}" if broken[0].summary else broken[0].name
    for test in tests:
        if test.score:
            test.score = 0.0
            test.summary = f"0 points: this skill breaks a rule of the exercise ({broken[0].name})" + (f"; {test.summary}" if test.summary else "")
    return reason


PROPERTY_RULE = "property tests count once the skill's other tests earn points"


def _apply_property_rule(properties: tuple[str, ...], tests: list[TestOutcome]) -> None:
    """Property tests check only what their name says (dtype, inputs unchanged, errors…),
    whatever the values; code that computes nothing (every other test of the skill at 0)
    earns none of them, so right shapes and dtypes alone are worth nothing."""
    others = [t for t in tests if t.name not in properties and t.max_score > 0]
    if not properties or not others or any(t.score > 0 for t in others):
        return
    for test in tests:
        if test.name in properties and test.score:
            test.score = 0.0
            test.summary = f"0 points: {PROPERTY_RULE}, and none did" + (f"; {test.summary}" if test.summary else "")


def _longrepr(entry: dict) -> str:
    """What broke a stage our hooks did not classify: pytest's crash line ("Type: message"),
    else the last line of the (native-style) traceback, which names the exception."""
    for when in ("setup", "call", "teardown"):
        stage = entry.get(when) or {}
        if stage.get("outcome") not in (None, "passed"):
            crash = (stage.get("crash") or {}).get("message")
            if crash:
                return first_line(str(crash), 500)
            lines = [line for line in str(stage.get("longrepr") or "").splitlines() if line.strip()]
            return first_line(lines[-1].strip() if lines else "", 500)
    return ""


def _with_definitions(submission: dict, modules: dict[str, "ModuleEntry"]) -> dict:
    """Each graded module's definition lines (``name → line``, captured from the graded
    copy), so renderers can point at a student's function without reading their files."""
    listed = submission.get("modules")
    if not isinstance(listed, dict):
        return submission
    out = {}
    for name, info in listed.items():
        entry = modules.get(name)
        defs = {k: first for k, (first, _last) in entry.definitions.items()} if entry is not None and entry.copy_path else {}
        out[name] = {**info, "definitions": defs} if isinstance(info, dict) else info
    return {**submission, "modules": out}


def build(manifest: "RunManifest", report: dict | None, submission: dict, *, status: str = "complete", message: str = "", duration: float = 0.0) -> Results:
    """Score every test the run's manifest expects, from data only (the report, the manifest
    and the module facts it carries — no file is read); ``report`` None means the run broke."""
    entries = {t.get("nodeid"): t for t in (report or {}).get("tests", [])}
    collect_errors = {
        c.get("nodeid"): _error_line(str(c.get("longrepr", "")))
        for c in (report or {}).get("collectors", [])
        if c.get("outcome") == "failed"
    }
    modules = manifest.modules
    skills = []
    for skill in manifest.skills:
        tests = []
        for spec in manifest.tests:
            if spec.skill != skill.id:
                continue
            reason = message or "did not run"
            if spec.file in collect_errors:
                reason = f"grader error (not your fault): the test file could not be loaded: {collect_errors[spec.file]}"
            entry = entries.get(spec.node_id) if status == "complete" else None
            tests.append(score_test(spec, entry, modules, reason))
        gated_by = _apply_gates(tuple(skill.gates), tests)
        _apply_property_rule(tuple(skill.properties), tests)
        score = round(sum(t.score for t in tests), 4)
        skills.append(SkillOutcome(
            id=skill.id, title=skill.title, module=skill.module, sections=list(skill.sections), points=skill.points,
            score=score, passed=sum(t.status == STATUS_PASSED for t in tests if t.max_score > 0),
            total=sum(t.max_score > 0 for t in tests), tests=tests, gated_by=gated_by,  # rules (weight 0) are not counted
            functions=list(skill.functions),
        ))
    meta = (report or {}).get("autograder") or {}
    submission = _with_definitions(submission, modules)
    return Results(
        status=status,
        message=message,
        score=round(sum(s.score for s in skills), 4),
        max_score=round(sum(s.points for s in skills), 4),
        skills=skills,
        course=manifest.course,
        seed=meta.get("seed"),
        seed_source=meta.get("seed_source"),
        suite_hash=meta.get("suite_hash", manifest.suite_hash),
        visible_suite_hash=meta.get("visible_suite_hash", manifest.visible_suite_hash),
        versions=meta.get("versions", {}),
        sandbox=meta.get("sandbox", []),
        submission=submission,
        duration=round(duration, 3),
    )


def error_result(config: "Config | None", message: str, *, submission: str = "", status: str = "error", duration: float = 0.0, max_score: float = 0.0) -> Results:
    """The one result of a run that could not grade: every test ``config`` expects at 0 with
    the reason, or — without a config (it could not be read) — a bare error result."""
    if config is None:
        return Results(status=status, message=message, score=0.0, max_score=max_score, skills=[], duration=round(duration, 3))
    from ..runner.manifest import RunManifest

    return build(RunManifest.plan(config), None, {"path": submission}, status=status, message=message, duration=duration)


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
    from .escape import json_escape_invisible

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
