"""What a failed check or a misbehaving submission looks like on the trusted side.

Two families, both recorded into the pytest-json-report metadata by the plugin:

- ``CheckFailed`` (an ``AssertionError``): a check of ours found the submission's answer
  wrong. It carries ``Feedback``: what was checked, what was wrong, hints, grids.
- ``SubmissionError`` and subclasses: calling the submission did not produce an answer —
  it raised, was missing, timed out, crashed or sent malformed data.

Anything else escaping a test is a bug in the grader's own test code; the plugin reports
it as a grader error ("not your fault") instead of blaming the student.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Feedback:
    check: str  # what was checked, in course terms
    problem: str  # type | shape | dtype | nan | values | property | constraint | raised | missing | timeout | crash
    detail: str = ""  # expected vs got; shown for visible tests only
    hints: list[str] = field(default_factory=list)  # hint ids, e.g. "masks/zero-fill"
    grids: list[dict] = field(default_factory=list)  # visible tests only
    frames: list[dict] = field(default_factory=list)  # the student's own traceback lines
    error: dict | None = None  # exception facts when the submission raised

    def to_dict(self) -> dict:
        return asdict(self)


class CheckFailed(AssertionError):
    def __init__(self, feedback: Feedback) -> None:
        super().__init__(f"{feedback.check}: {feedback.detail}")
        self.feedback = feedback


class SubmissionError(Exception):
    """Calling into the submission did not give an answer."""

    problem = "raised"

    def __init__(self, call: str, message: str, *, error: dict | None = None, hints: list[str] | None = None) -> None:
        super().__init__(f"{call}: {message}")
        self.call = call
        self.message = message
        self.error = error
        self.hints = list(hints or [])

    @property
    def frames(self) -> list[dict]:
        return list((self.error or {}).get("frames", []))

    def feedback(self) -> Feedback:
        return Feedback(
            check=self.call, problem=self.problem, detail=self.message, hints=self.hints, frames=self.frames, error=self.error
        )


class SubmissionRaised(SubmissionError):
    problem = "raised"


class SubmissionMissing(SubmissionError):
    """The module or the name the test needs does not exist, or did not import."""

    problem = "missing"


class SubmissionTimeout(SubmissionError):
    problem = "timeout"


#: how a call the run did not make ends its message: its function (or module) timed out or
#: broke the protocol earlier, and is not called again (testing/remote.py); a test's summary
#: counts such cases apart (credit.py), so that one slow call does not read as many wrong ones
NOT_CALLED_AGAIN = "earlier in this run; not called again"


class SubmissionCrashed(SubmissionError):
    problem = "crash"


class SubmissionProtocolError(SubmissionError):
    problem = "crash"


def is_todo_stub(error: dict, module: str) -> bool:
    """Still the exercise's TODO stub: a ``NotImplementedError("TODO(<module>): …")`` raised
    by the exercise module's own code. torch's own NotImplementedError ("… not implemented
    for 'Float'") or one raised elsewhere is an ordinary error of the code."""
    return (
        error.get("type") == "NotImplementedError"
        and str(error.get("message", "")).startswith(f"TODO({module})")
        and error.get("raised_in") == f"{module}.py"
    )


def thread_refused(error: dict) -> bool:
    """The error CPython raises when a thread cannot start — in the worker, always: it
    has no way to start one (sandbox/seccomp.thread_program, probes.THREAD_BAN)."""
    return error.get("type") == "RuntimeError" and str(error.get("message", "")).startswith("can't start new thread")


def describe_error(error: dict) -> str:
    kind = error.get("type", "Exception")
    message = error.get("message", "")
    if kind == "SystemExit":
        return f"called sys.exit({error.get('exit_code') or message})"
    if error.get("todo"):
        return f"is not implemented yet — {message}"
    if thread_refused(error):
        return f"exercise code runs on one thread: it tried to start a thread (raised {kind}: {message})"
    return f"raised {kind}: {message}" if message else f"raised {kind}"
