"""What students may see of hidden tests: the one whitelist every student-facing output goes
through (``Results.public()``). Security-critical: a hidden test keeps its name, points, status,
our hint text and partial-credit counts, and the student's own frames and exception line only
where a visible test of the skill showed the same; never its inputs, expected values, printed
output, grids, duration or any free text the worker sent (SECURITY.md)."""

from __future__ import annotations

import re
from pathlib import Path

from .schema import STATUS_ERROR, STATUS_NOT_RUN, STATUS_PASSED
from .text import first_line, problem_key


def public_data(data: dict) -> dict:
    """The student-facing view. A whitelist: a hidden test keeps its name, points,
    status, hint ids (with our hint text), partial-credit counts and the student's own
    frames (file:line of their module, function and code read from that file) where a
    visible test showed the same frames — no free text from the worker, no inputs, no
    duration (sleeping could encode data). Its
    summary is rebuilt here from fixed phrases; a TODO is named only when the function
    is one of the skill's module's real functions."""
    hidden_anywhere = False
    for skill in data["skills"]:
        functions = list(skill.get("functions") or [])
        gate = _gate_name(skill)
        module = (data.get("submission") or {}).get("modules", {}).get(Path(skill["module"]).stem) or {}
        module_problem = module.get("problem") if isinstance(module.get("problem"), str) else None

        # a module that does not import or lacks a name fails every test the same way:
        # a hidden test may repeat what a visible test already shows, and nothing else
        shown = {
            problem_key(t["summary"], t["check"])
            for t in skill["tests"]
            if t["visibility"] == "visible" and t.get("problem") == "missing"
        }
        # an exception's text is the student's to write (``raise ValueError(str(x.tolist()))``),
        # and torch's own text about a call names its shapes: a hidden test shows a message
        # only where a visible test of the skill raised the very same one (blind red-team
        # tester R-AH), so it teaches what the visible run taught and tells nothing of the inputs
        raised = {_raised_line(t) for t in skill["tests"] if t["visibility"] == "visible" and t.get("problem") == "raised"}
        # the same for where it raised: which lines a call passed through is the code's to choose
        # (a chain of one-line lambdas, a line per byte of an input: blind red-team tester R-AK
        # read a hidden test's inputs from its frames), so a hidden test shows its frames only
        # where a visible test of the skill showed that very list
        walked = {_frames_key(t) for t in skill["tests"] if t["visibility"] == "visible" and t.get("frames")}
        tests = []
        for test in skill["tests"]:
            if test["visibility"] == "hidden":
                hidden_anywhere = True
                public = _public_hidden(test, skill["id"], functions, gate, module_problem, raised)
                if _frames_key(test) not in walked:
                    public["frames"] = []
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
    return data


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


def _frames_key(test: dict) -> tuple:
    """A test's frames as (file, line, function) triples, in order."""
    return tuple(
        (str(f.get("file", "")), f.get("line"), str(f.get("function") or ""))
        for f in test.get("frames") or []
        if isinstance(f, dict)
    )


def _raised_line(test: dict) -> tuple[str, str]:
    """(exception type, the first line of its message) of a test whose call raised."""
    error = test.get("error") or {}
    return str(error.get("type") or ""), first_line(error.get("message"), 160)


def _public_hidden(
    test: dict, skill_id: str, functions: list[str], gate: str | None, module_problem: str | None, raised: set
) -> dict:
    credit = test.get("credit") or None
    if credit:
        note = credit.get("note")  # the scoring rule in words, built on the trusted side from the test's own labels
        credit = {
            k: credit[k]
            for k in ("passed", "total", "fraction")
            if isinstance(credit.get(k), (int, float)) and not isinstance(credit.get(k), bool)
        }
        if isinstance(note, str):
            credit["note"] = note
    summary = _hidden_summary(test, skill_id, functions, module_problem, raised)
    if gate is not None and test["name"] != gate and (test.get("summary") or "").startswith(_GATED):
        summary = f"{_GATED} ({gate})" + (f"; {summary}" if summary else "")
    problem = test.get("problem")
    return {
        "id": test["id"],
        "name": test["name"],
        "skill": test["skill"],
        "visibility": test["visibility"],
        "max_score": test["max_score"],
        "score": test["score"],
        "status": test["status"],
        "summary": summary,
        "check": None,
        "problem": problem if problem in _PROBLEMS else None,
        "detail": None,
        "hints": [
            {"id": str(h.get("id", "")), "text": str(h.get("text", "")), "section": str(h.get("section", ""))}
            for h in test.get("hints") or []
        ],
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


def _hidden_summary(
    test: dict, skill_id: str, functions: list[str], module_problem: str | None = None, raised: set | None = None
) -> str:
    """What a student may learn from a hidden test: fixed phrases chosen by the problem's
    kind, never its inputs, expected values, or any text the worker sent but an exception's
    line a visible test of the skill showed already (``raised``: (type, first line) pairs)."""
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
            todo = re.search(
                rf"TODO\({re.escape(skill_id)}\): ([\w.]+)", f"{test.get('summary') or ''} {test.get('detail') or ''}"
            )
            if todo and todo.group(1) in functions:  # only a name from the module's own API crosses
                return f"hidden test failed: is not implemented yet — TODO({skill_id}): {todo.group(1)}"
        # (a TODO stub's text is named above only when it is a real function; a made-up type shows no text)
        line = _raised_line(test)
        message = line[1] if kind not in ("an exception", "NotImplementedError") and line in (raised or ()) else ""
        # the student's own exception text (their code's, or torch's about their call) where the
        # visible run showed it: what makes "mat1 and mat2 must have the same dtype" readable;
        # one line, and every renderer escapes it
        return f"hidden test failed: your code raised {kind}" + (f": {message}" if message else "")
    if problem == "constraint":
        # "forbids" belongs to the exercise's rules (gates, weight 0, they zero the skill); a
        # weighted test's constraint is how the contract says to call something — a library
        # function, or the exercise's own helpers (custom_backward: backward → attention_backward)
        return (
            "hidden test failed: uses something this exercise forbids"
            if test.get("max_score") == 0
            else "hidden test failed: does not make the calls the exercise asks for (see its docstrings)"
        )
    words = {
        "type": "returned the wrong kind of value",
        "shape": "returned the wrong shape",
        "dtype": "returned the wrong dtype",
        "nan": "returned NaN",
        "values": "returned wrong values",
        "property": "a required property does not hold",
    }
    return f"hidden test failed: {words.get(problem, 'failed')}"
