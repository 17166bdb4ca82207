"""Partial credit inside one test, by *kind* of case.

One rule for every test, shown to the student with the result:

* A test's cases are grouped into named **kinds** (``"float32"``, ``"causal, L ≠ S"``,
  ``"worked example P_A"``). A kind may hold several random draws; it **passes only if every
  draw passes**, so a fixed wrong answer cannot earn a kind by matching one lucky draw, and a
  single, deterministic mistake fails the same kinds whatever the seed.
* ``credit = weight × passed kinds / kinds``.
* A **required** kind (e.g. the fresh-random-input control of a worked-example test) is a
  gate, not a share: it is not counted among the kinds, and when it fails the test scores 0
  and the feedback says which part failed and why it is required.

API::

    for case in credit.kinds(["float32", "float64"], draws=3):   # case.kind, case.draw
        with case: ...
    for part in credit.parts(["Q", "K", "V", FRESH], required={FRESH: "why"}):
        with part: ...                                            # one kind per label
    for case in credit.cases(8):                                  # one kind, 8 draws: all or nothing
        with case: ...

Each ``with`` block that fails is caught and counted; the loop raises, after the last
item, one ``CheckFailed`` that summarises the failures (first failure's details, hints of
the failures, most frequent first). A worker that died stays dead for the rest of the
test, so later cases fail fast instead of each waiting out a timeout.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from .failures import NOT_CALLED_AGAIN, CheckFailed, Feedback, SubmissionError

DEFAULT_REQUIRED_REASON = (
    "it checks the same function on fresh random inputs, so reproducing the worked example's printed numbers alone earns nothing"
)
RULE = "a case counts when every random draw of it passes, and the test's points are shared equally by its cases"
# a kind named "and T = 1" checks a regular draw first and that input beside it (inputs.beside_regular):
# a ✗ there may be the regular draw's, which the failure's first line names
BESIDE = "; a case named 'and …' checks a regular draw first, then that input, so its ✗ may be the regular draw's"


@dataclass
class _Outcome:
    label: str
    kind: str
    passed: bool = True
    feedback: Feedback | None = None


class Item:
    """One draw of one kind: a context manager that records instead of raising."""

    def __init__(self, outcome: _Outcome, draw: int) -> None:
        self._outcome = outcome
        self.draw = draw

    @property
    def label(self) -> str:
        return self._outcome.label

    @property
    def kind(self) -> str:
        return self._outcome.kind

    def __enter__(self) -> Item:
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
    required: dict[str, str] = field(default_factory=dict)  # kind → why it is required

    # ------------------------------------------------------------------ loops
    def kinds(
        self, kinds: Iterable[str] | Mapping[str, int], draws: int = 1, required: Iterable[str] | Mapping[str, str] = ()
    ) -> Iterator[Item]:
        """``draws`` random draws of each kind (or ``{kind: draws}``), kind after kind."""
        names = list(kinds.keys()) if isinstance(kinds, Mapping) else list(kinds)
        counts = dict(kinds) if isinstance(kinds, Mapping) else {k: draws for k in names}
        if len(counts) != len(names) or not counts or any(n < 1 for n in counts.values()):
            raise ValueError("kinds must be distinct and each needs at least one draw")
        self._require(counts, required)
        plan = [(kind, i) for kind, n in counts.items() for i in range(n)]
        # the failures are counted by draw, the points by kind ("input cases"): where a kind has
        # several draws, "4 of 6 draws failed" beside "0 of 3 input cases passed" (blind tester R-BV
        # read "4 of 6 cases failed" beside "0 of 3 cases")
        noun = "draw" if any(n > 1 for n in counts.values()) else "case"
        return self._loop([(f"{kind} · draw {i + 1}" if counts[kind] > 1 else kind, kind, i) for kind, i in plan], noun)

    def parts(self, labels: list[str], required: Iterable[str] | Mapping[str, str] = ()) -> Iterator[Item]:
        """One kind per label (deterministic parts). A failed *required* part makes the
        whole test score 0, while the other parts still run and report — so a student
        sees the worked example's grid."""
        if len(set(labels)) != len(labels):
            raise ValueError("part labels must be distinct")
        self._require(labels, required)
        return self._loop([(label, label, 0) for label in labels], "part")

    def cases(self, count: int, label: str = "case") -> Iterator[Item]:
        """``count`` random draws of one kind: the test passes or fails as a whole."""
        return self._loop([(f"{label} {i + 1}", f"{label}s" if count > 1 else label, i) for i in range(count)], "case")

    def _require(self, labels: Iterable[str], required: Iterable[str] | Mapping[str, str]) -> None:
        reasons = dict(required) if isinstance(required, Mapping) else {r: DEFAULT_REQUIRED_REASON for r in required}
        unknown = set(reasons) - set(labels)
        if unknown:
            raise ValueError(f"required parts {sorted(unknown)} are not among the labels")
        self.required.update(reasons)

    def _loop(self, plan: list[tuple[str, str, int]], noun: str) -> Iterator[Item]:
        start = len(self.outcomes)
        for label, kind, draw in plan:
            outcome = _Outcome(label, kind)
            self.outcomes.append(outcome)
            yield Item(outcome, draw)
        mine = self.outcomes[start:]
        self.fraction = self._fraction()
        failed = [o for o in mine if not o.passed]
        if failed:
            raise CheckFailed(_summary(failed, mine, noun, self))

    # ------------------------------------------------------------------ the rule
    def kind_results(self) -> dict[str, bool]:
        """kind → passed (every draw passed), in the order the kinds ran."""
        result: dict[str, bool] = {}
        for o in self.outcomes:
            result[o.kind] = result.get(o.kind, True) and o.passed
        return result

    def failed_required(self) -> list[str]:
        return [k for k, ok in self.kind_results().items() if k in self.required and not ok]

    def _fraction(self) -> float:
        results = self.kind_results()
        if self.failed_required():
            return 0.0
        shares = [ok for k, ok in results.items() if k not in self.required]
        if not shares:  # only required kinds: all passed
            return 1.0
        return sum(shares) / len(shares)

    def note(self) -> str:
        """The rule applied to this test, in one sentence for the student."""
        results = self.kind_results()
        if results and not any(results.values()):
            # nothing passed: 0 points needs no rule, and the one reason comes first (a stub's
            # "not implemented yet" was followed by why the control part is required: tester R-AY)
            return ""
        failed_required = self.failed_required()
        if failed_required:
            kind = failed_required[0]
            return f"0 points: the required part '{kind}' failed — it is required because {self.required[kind]}."
        shares = {k: ok for k, ok in results.items() if k not in self.required}
        if not shares or all(shares.values()):
            return ""
        marks = " · ".join(f"{'✓' if ok else '✗'} {k}" for k, ok in list(shares.items())[:12])  # kinds may hold commas
        beside = BESIDE if any(k.startswith("and ") for k in shares) else ""
        # a required part is one of the "N parts" the detail counts, but no case of its own: said,
        # so that "1 of 4 parts failed" beside "2 of 3 input cases passed" adds up (blind tester R-BW)
        required = [k for k in results if k in self.required]
        also = (
            f", beside the required {'parts' if len(required) > 1 else 'part'} {', '.join(required)} (passed)" if required else ""
        )
        return f"{sum(shares.values())} of {len(shares)} input cases passed ({marks}){also}; {RULE}{beside}."

    def summary(self) -> dict:
        results = {k: ok for k, ok in self.kind_results().items() if k not in self.required}
        return {
            "passed": sum(results.values()),
            "total": len(results),  # the kinds that share the points: passed + len(failed_kinds)
            "failed_kinds": [k for k, ok in results.items() if not ok],
            "failed": [o.label for o in self.outcomes if not o.passed][:50],  # every part and draw, required ones too
            "required_failed": self.failed_required(),  # any: the test scores 0, whatever ``passed`` says
            "note": self.note(),
        }


def _summary(failed: list[_Outcome], mine: list[_Outcome], noun: str, credit: Credit) -> Feedback:
    first = failed[0].feedback or Feedback(check="?", problem="values")
    votes: Counter[str] = Counter()
    order: list[str] = []
    for outcome in failed:
        for h in outcome.feedback.hints if outcome.feedback else []:
            votes[h] += 1
            if h not in order:
                order.append(h)
    hints = sorted(order, key=lambda h: (-votes[h], order.index(h)))
    total = len(mine)
    sep = " · " if any("," in o.label for o in failed[:8]) else ", "  # "P_A, P_B" is one part's label
    labels = sep.join(o.label for o in failed[:8]) + (" …" if len(failed) > 8 else "")
    plural = "s" if total > 1 else ""
    details = {o.feedback.detail if o.feedback else "" for o in failed}
    missing = all(o.feedback is not None and o.feedback.problem == "missing" for o in failed)
    # the same reason everywhere (or the module missing, said by each part its own way): once, first
    if (len(details) == 1 or missing) and len(failed) == total:
        detail = f"{first.detail} (all {total} {noun}{plural})"
    else:
        head, _, rest = first.detail.partition("\n")
        # cases after a call that ran out of time were never run (R-BX read "7 of 8 cases
        # failed" as seven wrong answers to one slow call)
        unrun = sum(1 for o in failed[1:] if o.feedback is not None and o.feedback.detail.endswith(NOT_CALLED_AGAIN))
        if unrun:
            head += f"; {unrun} of them were not run (a function that ran out of time or broke the protocol is not called again)"
        detail = f"{len(failed)} of {total} {noun}{plural} failed ({labels}); first, {failed[0].label}: {head}" + (
            f"\n{rest}" if rest else ""
        )
    note = credit.note()
    if note and not missing:
        detail = f"{detail}\n{note}"  # (not when the module or function is missing: that one reason says it all)
    return Feedback(
        check=first.check,
        problem=first.problem,
        detail=detail,
        hints=hints,
        grids=first.grids,
        frames=first.frames,
        error=first.error,
    )
