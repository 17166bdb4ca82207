"""Skill row_softmax: the Week 7 §16 vocabulary example and the "no torch softmax" rule.

The numbers are those of ``week07.STATED`` (printed in Week 7 §5 and §16). The rule is
docs/EXERCISES.md §3: ``row_softmax.py`` calls no softmax, log_softmax or cross_entropy of torch,
in any spelling. Every row_softmax test checks it twice — in the file's source and in the
torch functions its calls actually used — *before* judging a single value, so a submission
that breaks it scores 0 in every test of the skill, not just in one constraint test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from autograder.testing import Snapshots, SubmissionError, SubmissionRaised, Tol, check_no_banned, dispatch, expect

from . import week07 as w7

MODULE = "row_softmax"
FILE = "row_softmax.py"
#: the names the grader reads from the file (docs/EXERCISES.md): an import bound to one counts as read
API = ("softmax_rows", "log_softmax_rows", "cross_entropy", "vocab_probs")
HINTS = ["row_softmax/forbidden-softmax"]  # the exercise's own hint says it all; the generic one would repeat it

# Names that may not appear as an attribute or import in row_softmax.py (any spelling:
# torch.x, F.x, Tensor.x, torch.special.x, nn.X, torch.ops.aten.x, from … import x).
BANNED_NAMES = (
    "softmax",
    "_softmax",
    "log_softmax",
    "_log_softmax",
    "special_softmax",
    "special_log_softmax",
    "_masked_softmax",
    "_safe_softmax",
    "softmin",
    "gumbel_softmax",
    "Softmax",
    "LogSoftmax",
    "Softmin",
    "Softmax2d",
    "cross_entropy",
    "cross_entropy_loss",
    "CrossEntropyLoss",
    # torch 2.13's fused linear + cross-entropy (its kernel is refused at run time as well:
    # blind red-team tester R-AH's LinearCrossEntropyLoss(V, V) with an identity weight)
    "linear_cross_entropy",
    "LinearCrossEntropyLoss",
    "scaled_dot_product_attention",
    "MultiheadAttention",
    "multi_head_attention_forward",
    # torch.distributions' Categorical normalises its logits (logits − logsumexp): a log_softmax
    # in another spelling (blind red-team tester H's h18: .logits and .log_prob)
    "distributions",
    "Categorical",
    "OneHotCategorical",
    "RelaxedOneHotCategorical",
)
# Torch functions that may not run inside a row_softmax call (names as recorded at run time;
# an overload such as "softmax.int" counts as "softmax").
BANNED_OP_PARTS = ("softmax", "softmin", "cross_entropy", "scaled_dot_product", "multi_head_attention")


#: the same rule at the level of the dispatcher (autograder/testing/dispatch.py): every ATen
#: operator that computes a softmax (any spelling of softmax, log_softmax, cross_entropy, a
#: fused attention ends in one of these), whatever spelling or route reached it
DENIED_PARTS = ("softmax", "softmin", "cross_entropy", "attention", "_transformer_encoder_layer")
_NO_SOFTMAX_OPERATOR = dispatch.denies_parts(DENIED_PARTS)


def ALLOWS_AT_DISPATCH(op: str) -> bool:
    """No operator computing a softmax, and no derivative of torch's taken inside a call:
    ``autograd.grad(logsumexp(s).sum(), s)`` is torch's softmax by its derivative formula
    (blind red-team tester R-AO: 6.25/6.25); a row_softmax function computes forward only."""
    return _NO_SOFTMAX_OPERATOR(op) and not op.endswith(" (autograd node)") and not op.startswith("autograd::engine")


#: the kernels the worker replaces during a rule-checked call (dispatch.kernel_patterns)
#: torch.distributions' classes that normalise logits with allowed kernels (logsumexp, sub):
#: a softmax and a log_softmax under another name (blind red-team tester R-AG kept 15/15 with
#: Categorical(logits=x).logits), refused for the skill's whole run like the kernels
DISTRIBUTION_CLASSES = ("*categorical*", "multinomial")
REPLACED = dispatch.kernel_patterns(DENIED_PARTS) + DISTRIBUTION_CLASSES


def check_dispatch(sub) -> None:
    """The rule's run-time verdict: no operator computing a softmax ran in this test's calls
    made with ``record_dispatch=True`` (also those that raised)."""
    dispatch.check(
        sub.dispatched,
        None,
        ALLOWS_AT_DISPATCH,
        hints=HINTS,
        family="operators of torch that compute a softmax",
        what=(
            "row_softmax.py at run time: no operator of torch computes a softmax, log_softmax or cross_entropy "
            "(docs/EXERCISES.md §3)"
        ),
    )


def banned_ops(ops: set[str]) -> list[str]:
    return sorted({op for op in ops if any(part in op.split(".")[0] for part in BANNED_OP_PARTS)})


def check_source(sub) -> None:
    """The file's source may not name a torch softmax / log_softmax / cross_entropy."""
    check_no_banned(
        sub.source(MODULE),
        FILE,
        BANNED_NAMES,
        what="row_softmax.py calls no torch softmax, log_softmax or cross_entropy (docs/EXERCISES.md §3)",
        hints=HINTS,
        imports=sub.importable_sources(),
        api=API,
        # the kernels and torch's Python functions are refused wherever they run (REPLACED): a call of
        # the student's own softmax on an object the scan cannot place is judged by what runs
        deferred=BANNED_NAMES,
    )


class Calls:
    """All of a test's calls into row_softmax, made up front with op recording.

        calls = Calls(sub, rng)
        a = calls.add("softmax_rows", s)           # an index
        calls.run()                                # source + run-time constraint, before any value is judged
        got = calls.value(a)                       # the value, or the submission's own error

    A call that raised keeps its error, re-raised by ``value`` inside the check that needs it
    (so a TODO stub reads "not implemented yet" per check, and partial credit still works).
    ``run`` also makes one small call of every function of the file (see ``_canaries``)."""

    def __init__(self, sub, rng: torch.Generator) -> None:
        self.sub = sub
        self.rng = rng
        self._todo: list[tuple[str, tuple, dict, bool]] = []
        self._results: list[Any] = []

    def add(self, fn: str, *args: Any, return_args: bool = False, **kwargs: Any) -> int:
        self._todo.append((fn, args, kwargs, return_args))
        return len(self._todo) - 1

    def _canaries(self) -> list[tuple[str, tuple, dict]]:
        """One small call of every function, so that each test checks the whole file's run-time
        behaviour, not only the functions it grades (a forbidden call in softmax_rows must cost
        the cross_entropy tests too)."""
        g = self.rng
        s = torch.randn(2, 3, 4, generator=g, dtype=torch.float64) * 3
        return [
            ("softmax_rows", (s.float(),), {}),
            ("softmax_rows", (s,), {"dim": 1}),
            ("log_softmax_rows", (s,), {}),
            ("log_softmax_rows", (s.float(),), {"dim": 0}),
            ("cross_entropy", (s[0].float(), torch.randint(0, 4, (3,), generator=g)), {}),
            ("vocab_probs", (s, torch.randn(4, 5, generator=g, dtype=torch.float64)), {}),
        ]

    def run(self) -> Calls:
        check_source(self.sub)
        used: dict[str, list[str]] = {}
        module = getattr(self.sub, MODULE)
        for fn, args, kwargs in self._canaries():
            try:
                result = module.call(fn, *args, record_ops=True, **kwargs)
            except SubmissionError:
                continue  # a TODO stub or a crash: the test's own calls report it
            for op in banned_ops(result.ops):
                used.setdefault(op, []).append(fn)
        for fn, args, kwargs, return_args in self._todo:
            try:
                result = module.call(fn, *args, record_ops=True, return_args=return_args, **kwargs)
            except SubmissionError as exc:
                self._results.append(exc)
                continue
            self._results.append(result)
            for op in banned_ops(result.ops):
                used.setdefault(op, []).append(fn)
        if used:
            listing = "; ".join(f"{op} (in {', '.join(sorted(set(fns)))})" for op, fns in sorted(used.items()))
            expect.true(
                False,
                what="row_softmax calls no torch softmax, log_softmax or cross_entropy at run time (docs/EXERCISES.md §3)",
                detail=f"these torch functions ran inside your calls: {listing}",
                hints=HINTS,
                problem="constraint",
            )
        return self

    def result(self, index: int):
        r = self._results[index]
        if isinstance(r, SubmissionError):
            raise explain(self.sub, self._todo[index][0], r)
        return r

    def value(self, index: int) -> Any:
        return self.result(index).value


def week7_w_vocab(dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return w7.example(dtype).w_vocab


def week7_targets() -> torch.Tensor:
    return torch.tensor(w7.TARGETS)


def vocab_mistakes(sub, h: torch.Tensor, w_vocab: torch.Tensor, own: dict, via: dict):
    """The named mistakes a failed vocab_probs check may name, charged to the function that is
    wrong: vocab_probs calls softmax_rows, so a softmax_rows that normalises the wrong axis
    makes vocab_probs look as if *it* normalised over positions. Evaluated only when the check
    failed: your softmax_rows runs on the same logits; where it is right, the mistakes are
    vocab_probs' own (``own``), else those of softmax_rows as vocab_probs shows them (``via``)."""
    from .tolerances import tol

    def table() -> dict:
        logits = (h.double() @ w_vocab.double()).to(h.dtype)
        try:
            got = sub.row_softmax.softmax_rows(logits, -1)
        except SubmissionError:
            return {}
        right = torch.softmax(logits.double(), -1).to(h.dtype)
        t = tol("row_softmax.softmax_rows", h.dtype)
        if type(got) is torch.Tensor and got.shape == right.shape and expect.distance(got, right, t) <= 1.0:
            return own
        return via

    return table


def cross_entropy_mistakes(sub, logits: torch.Tensor, targets: torch.Tensor, own: Callable[[], dict], via: Callable[[], dict]):
    """The named mistakes a failed cross_entropy check may name, charged to the function that
    is wrong, as ``vocab_mistakes`` does: cross_entropy takes its log-probabilities from
    log_softmax_rows. Evaluated only when the check failed: your log_softmax_rows runs on the
    same logits; where it is right (or raises), the mistakes are cross_entropy's own (``own()``);
    where it matches a mistake of ``via()`` (log_softmax_rows' signatures on these logits), the one
    candidate is the loss a right cross_entropy takes from your log-probabilities, under that
    mistake's name. (At scores of 1e4 a log of the softmax and a missing max shift both give a
    loss of +∞: only your log_softmax_rows' own output tells them apart.)"""
    from .tolerances import tol

    def table() -> dict:
        try:
            got = sub.row_softmax.log_softmax_rows(logits, -1)
        except SubmissionError:
            return _told_apart(sub, own())
        right = torch.log_softmax(logits.double(), -1).to(logits.dtype)
        t = tol("row_softmax.log_softmax_rows", logits.dtype, magnitude=max(1.0, float(logits.abs().max())))
        if type(got) is not torch.Tensor or got.shape != right.shape or expect.distance(got, right, t) <= 1.0:
            return _told_apart(sub, own())
        named = expect.diagnose(got, via, t, right)
        if not named:
            return own()
        rows = torch.arange(logits.size(0))
        return {named[0]: -got.double()[rows, targets.long()].mean().to(logits.dtype)}

    return table


#: where a log of the softmax and a missing max shift part: a target whose probability underflows to 0
#: (log 0 = −∞, a loss of +∞) while nothing overflows, and a logit whose exp overflows (log ∞) while the
#: softmax itself is fine — fixed data: it names a mistake, it earns nothing
_LOG_OF_SOFTMAX_PROBE = ([[0.0, -800.0]], [1])
_NO_MAX_SHIFT_PROBE = ([[1000.0, 0.0]], [0])


def _told_apart(sub, table: dict) -> dict:
    """cross_entropy's own signatures, where a log of the softmax and a missing max shift both
    give +∞ on these logits (blind tester F: a loop of log(softmax_rows(...)) went unnamed on two
    seeds of three): your cross_entropy on one fixed input each keeps the one it reproduces."""
    a, b = table.get("row_softmax/log-of-softmax"), table.get("row_softmax/no-max-subtraction")
    if a is None or b is None or not (bool(torch.isinf(a).all()) and bool(torch.isinf(b).all())):
        return table

    def infinite(case) -> bool:
        logits, targets = case
        try:
            got = sub.row_softmax.cross_entropy(torch.tensor(logits, dtype=torch.float64), torch.tensor(targets))
        except SubmissionError:
            return False
        return type(got) is torch.Tensor and got.numel() == 1 and bool(torch.isposinf(got).all())

    log_of_softmax, no_max_shift = infinite(_LOG_OF_SOFTMAX_PROBE), infinite(_NO_MAX_SHIFT_PROBE)
    if log_of_softmax != no_max_shift:
        drop = "row_softmax/no-max-subtraction" if log_of_softmax else "row_softmax/log-of-softmax"
        return {k: v for k, v in table.items() if k != drop}
    return table


# --------------------------------------------------------------------------- shape errors explained
SKILL_DIR = Path(__file__).resolve().parent.parent / "row_softmax"  # its snapshot holds square_probe
SHAPE_ERRORS = (
    "must match the size",
    "shapes cannot be multiplied",
    "broadcast",
    "size mismatch",
    "out of bounds for dimension 0",
)


def explain(sub, name: str, exc: SubmissionError) -> SubmissionError:
    """A shape error has known causes that run without error on a square input: a sum or a
    log-sum-exp without keepdim ([N] against [N, V] lines up with the wrong axis only when N = V),
    a transposed vocabulary head (h @ W_vocabᵀ runs only when C = V) and targets used as row
    numbers (``gather(0, …)``, ``log_probs[targets]``: out of bounds once a target reaches N). The function is called
    once on the snapshot's square input (fixed data: it names a mistake, it earns nothing) and
    the mistake its answer matches is named; nothing when none matches."""
    if not isinstance(exc, SubmissionRaised) or getattr(exc, "explained", False):
        return exc
    exc.explained = True
    message = str((exc.error or {}).get("message", ""))
    if (exc.error or {}).get("type") not in ("RuntimeError", "IndexError") or not any(word in message for word in SHAPE_ERRORS):
        return exc
    exc.hints = [h for h in square_diagnosis(sub, name) if h not in exc.hints] + exc.hints
    return exc


def square_diagnosis(sub, name: str) -> list[str]:
    """Hint ids of the mistakes ``name``'s answer on the square probe matches."""
    probe = Snapshots(SKILL_DIR)["square_probe"].get(name)
    if probe is None:
        return []
    try:
        got = getattr(sub, MODULE).call(name, *probe["args"]).value
    except SubmissionError:
        return []
    if type(got) is not torch.Tensor or expect.distance(got, probe["want"], Tol(1e-9, 1e-12)) <= 1:
        return []
    return expect.diagnose(got, probe["mistakes"], Tol(1e-9, 1e-12), probe["want"])


def call_explained(sub, name: str, *args: Any, **kwargs: Any):
    """sub.row_softmax.call(name, ...) with its shape errors explained (``explain``)."""
    try:
        return getattr(sub, MODULE).call(name, *args, **kwargs)
    except SubmissionError as exc:
        raise explain(sub, name, exc) from None
