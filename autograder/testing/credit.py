"""Partial credit inside one test: independent parts, or many random cases.

    for case in credit.cases(12):          # or: for part in credit.parts(["Q", "K", "V"]):
        with case:
            expect.close(...)

Each ``with`` block that fails is caught and counted; the loop itself raises, after the
last item, one ``CheckFailed`` that summarises the failures (first failure's details,
every distinct hint). The fraction that passed is recorded on the test and turns into
``weight × fraction`` points. A worker that died stays dead for the rest of the test, so
later cases fail fast instead of each waiting out a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from .failures import CheckFailed, Feedback, SubmissionError


@dataclass
class _Outcome:
    label: str
    passed: bool = True
    feedback: Feedback | None = None


class Item:
    """One part or case: a context manager that records instead of raising."""

    def __init__(self, outcome: _Outcome) -> None:
        self._outcome = outcome

    @property
    def label(self) -> str:
        return self._outcome.label

    def __enter__(self) -> "Item":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            return False
        if isinstance(exc, CheckFailed):
            self._outcome.passed = False
            self._outcome.feedback = exc.feedback
            return True
        if isinstance(exc, SubmissionError):
            self._outcome.passed = False
            self._outcome.feedback = exc.feedback()
            return True
        return False  # a bug in the test itself: let it surface as a grader error


@dataclass
class Credit:
    """The ``credit`` fixture. ``fraction`` is None until a loop finishes."""

    outcomes: list[_Outcome] = field(default_factory=list)
    fraction: float | None = None
    required: set[str] = field(default_factory=set)

    def parts(self, labels: list[str], required: tuple[str, ...] | list[str] = ()) -> Iterator[Item]:
        """One item per label. A failed *required* part (e.g. the fresh-random-input
        control of a worked-example test) makes the whole test score 0, while the other
        parts still run and report — so a student sees the worked example's grid."""
        unknown = set(required) - set(labels)
        if unknown:
            raise ValueError(f"required parts {sorted(unknown)} are not among the labels")
        self.required.update(required)
        return self._loop(labels, kind="part")

    def cases(self, count: int, label: str = "case") -> Iterator[Item]:
        return self._loop([f"{label} {i + 1}" for i in range(count)], kind="case")

    def _loop(self, labels: list[str], kind: str) -> Iterator[Item]:
        start = len(self.outcomes)
        for label in labels:
            outcome = _Outcome(label)
            self.outcomes.append(outcome)
            yield Item(outcome)
        mine = self.outcomes[start:]
        passed = sum(o.passed for o in self.outcomes)
        self.fraction = passed / len(self.outcomes)
        if any(not o.passed and o.label in self.required for o in self.outcomes):
            self.fraction = 0.0
        failed = [o for o in mine if not o.passed]
        if failed:
            raise CheckFailed(_summary(failed, len(mine), kind))

    def summary(self) -> dict:
        return {
            "passed": sum(o.passed for o in self.outcomes),
            "total": len(self.outcomes),
            "failed": [o.label for o in self.outcomes if not o.passed][:50],
        }


def _summary(failed: list[_Outcome], total: int, kind: str) -> Feedback:
    first = failed[0].feedback or Feedback(check="?", problem="values")
    hints: list[str] = []
    for outcome in failed:
        if outcome.feedback:
            hints.extend(h for h in outcome.feedback.hints if h not in hints)
    labels = ", ".join(o.label for o in failed[:8]) + (" …" if len(failed) > 8 else "")
    plural = "s" if total > 1 else ""
    details = {o.feedback.detail if o.feedback else "" for o in failed}
    if len(details) == 1 and len(failed) == total:  # the same reason everywhere: say it once, first
        detail = f"{first.detail} (all {total} {kind}{plural})"
    else:
        head, _, rest = first.detail.partition("\n")
        detail = f"{len(failed)} of {total} {kind}{plural} failed ({labels}); first, {failed[0].label}: {head}" + (f"\n{rest}" if rest else "")
    return Feedback(
        check=first.check,
        problem=first.problem,
        detail=detail,
        hints=hints,
        grids=first.grids,
        frames=first.frames,
        error=first.error,
    )
