"""Scoring: a grading run's ``Results`` (core/results.py), built from the pytest-json-report
and the run's manifest (runner/manifest.py).

Scores are computed here and only here, from data: against the fixed list of test ids in
grading.toml (a test that never reported scores 0 and says why), ``score = weight ×
fraction`` for partial credit, a failed gate zeroes its skill, property tests count once the
skill's other tests earn points, skill and total scores the exact sums of their tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import TestSpec
from ..core.results import Results, SkillOutcome, TestOutcome
from ..core.schema import STATUS_ERROR, STATUS_FAILED, STATUS_NOT_RUN, STATUS_PASSED
from ..core.text import first_line

if TYPE_CHECKING:
    from ..config import Config
    from .manifest import ModuleEntry, RunManifest


def _error_line(longrepr: str) -> str:
    """The line of a traceback that names the exception ("E   ModuleNotFoundError: …")."""
    lines = [line.strip().removeprefix("E").strip() for line in longrepr.splitlines() if line.strip()]
    named = [line for line in lines if "Error" in line.split(":")[0] or "Exception" in line.split(":")[0]]
    return first_line(named[-1] if named else (lines[0] if lines else ""), 300)


def _with_code(frames: list[dict], modules: dict[str, ModuleEntry]) -> list[dict]:
    """The submission's own frames, as facts the trusted side checked: the file must be one
    of the graded modules (shown by its display path), the line a line of that file, and the
    function and code are the ones captured from the copied source — the worker's names (a
    code object's ``co_name`` can be any text) are never shown."""
    from ..core.exercise_api import enclosing_function

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


def score_test(spec: TestSpec, entry: dict | None, modules: dict[str, ModuleEntry], not_run_reason: str) -> TestOutcome:
    base = dict(id=spec.node_id, name=spec.name, skill=spec.skill, visibility=spec.visibility, max_score=spec.weight)
    if entry is None:
        return TestOutcome(**base, score=0.0, status=STATUS_NOT_RUN, summary=not_run_reason)
    meta = entry.get("metadata") or {}
    result = meta.get("result") or {}
    kind = result.get("kind")
    outcome = entry.get("outcome")
    duration = sum(float((entry.get(w) or {}).get("duration", 0.0)) for w in ("setup", "call", "teardown"))
    common = dict(
        seed=meta.get("seed"),
        duration=round(duration, 4),
        printed=meta.get("printed") or [],
        credit=meta.get("credit"),
        targets=meta.get("targets") or [],
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
            **base,
            score=score,
            status=STATUS_FAILED,
            summary=first_line(f"{fb.get('check', '')}: {detail}" if fb.get("check") else detail, 240),
            check=fb.get("check"),
            problem=fb.get("problem"),
            detail=detail,
            hints=fb.get("hints") or [],
            grids=fb.get("grids") or [],
            frames=_with_code(fb.get("frames") or [], modules),
            error=fb.get("error"),
            **common,
        )
    error = result.get("error") or {"type": "error", "message": _longrepr(entry)}
    return TestOutcome(
        **base,
        score=0.0,
        status=STATUS_ERROR,
        summary=(
            f"grader error (not your fault — please tell your instructor): {error.get('type')}: "
            f"{first_line(error.get('message', ''), 240)}"
        ),
        error=error,
        **common,
    )


def _broken_gates(gates: tuple[str, ...], tests: list[TestOutcome]) -> list[TestOutcome]:
    """The gates of ``tests`` that prove a broken rule (problem "constraint": a forbidden name
    in the source, a forbidden operator recorded, the recording switched off). A gate whose
    checked call timed out, crashed or raised proves nothing: it costs what it costs (the
    gate itself weighs 0, the skill's other tests score on their own); nor does one that did
    not run (an empty upload, a broken run: not_run/error) or found no module to check
    ("missing")."""
    return [t for t in tests if t.name in gates and t.status == STATUS_FAILED and t.problem == "constraint"]


def _apply_gates(gates: tuple[str, ...], tests: list[TestOutcome]) -> str | None:
    """A failed gate (a broken rule of the exercise, proven: ``_broken_gates``) zeroes every
    test of the skill. A visible test that keeps points in its ``visible_score`` (the rule
    was broken in hidden tests only) keeps its own summary as ``visible_summary``: what
    Gradescope shows before the due date may not name a hidden test, and the deduction is
    shown with the hidden tests (renderers/gradescope.py)."""
    broken = _broken_gates(gates, tests)
    if not broken:
        return None
    reason = f"{broken[0].name}: {broken[0].summary}" if broken[0].summary else broken[0].name
    for test in tests:
        if test.score:
            if test.visible_score:
                test.visible_summary = test.summary
            test.score = 0.0
            test.summary = f"0 points: this skill breaks a rule of the exercise ({broken[0].name})" + (
                f"; {test.summary}" if test.summary else ""
            )
    return reason


PROPERTY_RULE = "property tests count once the skill's other tests earn points"
#: a visible property test at 0 by the rule: the same words whether or not the hidden tests
#: scored (Gradescope shows a visible test's entry before the due date, and the same entry after)
VISIBLE_PROPERTY_ZERO = f"0 points: {PROPERTY_RULE}, and none of its visible tests did"


def visible_zero_summary(summary: str) -> str:
    return VISIBLE_PROPERTY_ZERO + (f"; {summary}" if summary else "")


def _apply_property_rule(properties: tuple[str, ...], tests: list[TestOutcome]) -> None:
    """Property tests check only what their name says (dtype, inputs unchanged, errors…),
    whatever the values; code that computes nothing (every other test of the skill at 0)
    earns none of them, so right shapes and dtypes alone are worth nothing. Applied over
    every test for ``score``; ``_set_visible_scores`` applies it over the visible tests
    alone."""
    others = [t for t in tests if t.name not in properties and t.max_score > 0]
    if not properties or not others or any(t.score > 0 for t in others):
        return
    for test in tests:
        if test.name in properties and test.score:
            test.score = 0.0
            if test.visibility == "visible":
                test.summary = visible_zero_summary(test.summary)
            else:
                test.summary = f"0 points: {PROPERTY_RULE}, and none did" + (f"; {test.summary}" if test.summary else "")


def _set_visible_scores(gates: tuple[str, ...], properties: tuple[str, ...], tests: list[TestOutcome]) -> None:
    """Each visible test's score by the visible tests alone (issue 28 C: what a student sees
    before the due date may depend on nothing hidden), taken before any rule is applied:
    a gate zeroes it only when a *visible* gate failed (a rule broken in hidden tests alone
    shows with them), and a visible property test counts only when one of the skill's
    visible other tests earned points (with no visible other test, never: only hidden tests
    could show it computes). By the property rule a visible test's ``visible_score`` is never
    above its ``score`` (the visible tests' scoring is one case of "some other test scored");
    only a rule broken in hidden tests alone puts it above."""
    visible = [t for t in tests if t.visibility == "visible"]
    gated = bool(_broken_gates(gates, visible))
    others = [t for t in visible if t.name not in properties and t.max_score > 0]
    has_others = any(t.name not in properties and t.max_score > 0 for t in tests)
    counted = not properties or not has_others or any(t.score > 0 for t in others)
    for test in tests:
        if test.visibility != "visible":
            test.visible_score = None
        elif gated or (test.name in properties and test.score and not counted):
            test.visible_score = 0.0
        else:
            test.visible_score = test.score


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


def _with_definitions(submission: dict, modules: dict[str, ModuleEntry]) -> dict:
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


def build(
    manifest: RunManifest,
    report: dict | None,
    submission: dict,
    *,
    status: str = "complete",
    message: str = "",
    duration: float = 0.0,
) -> Results:
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
        _set_visible_scores(tuple(skill.gates), tuple(skill.properties), tests)
        gated_by = _apply_gates(tuple(skill.gates), tests)
        _apply_property_rule(tuple(skill.properties), tests)
        score = round(sum(t.score for t in tests), 4)
        skills.append(
            SkillOutcome(
                id=skill.id,
                title=skill.title,
                module=skill.module,
                sections=list(skill.sections),
                points=skill.points,
                score=score,
                passed=sum(t.passed_with_its_points for t in tests if t.max_score > 0),
                total=sum(t.max_score > 0 for t in tests),
                tests=tests,
                gated_by=gated_by,  # rules (weight 0) are not counted
                functions=list(skill.functions),
            )
        )
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
        not_graded=list(manifest.not_graded),
        result_labels={
            prefix: f"{text} (docs/{manifest.texts[text]})" if text in manifest.texts else text
            for prefix, text in manifest.result_labels.items()
        },
        versions=meta.get("versions", {}),
        sandbox=meta.get("sandbox", []),
        submission=submission,
        duration=round(duration, 3),
    )


def error_result(
    config: Config | None,
    message: str,
    *,
    submission: str = "",
    status: str = "error",
    duration: float = 0.0,
    max_score: float = 0.0,
) -> Results:
    """The one result of a run that could not grade: every test ``config`` expects at 0 with
    the reason, or — without a config (it could not be read) — a bare error result."""
    if config is None:
        return Results(status=status, message=message, score=0.0, max_score=max_score, skills=[], duration=round(duration, 3))
    from .manifest import RunManifest

    return build(RunManifest.plan(config), None, {"path": submission}, status=status, message=message, duration=duration)
