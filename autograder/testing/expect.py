"""Checks that explain themselves.

Every comparison runs in the trusted process on decoded data, checks in this order — type
(exactly ``torch.Tensor``), shape, dtype, NaN — then values with both ``rtol`` and
``atol``, and on failure reports the first mismatching index with expected vs got. Pass
``mistakes={hint_id: what_that_mistake_would_have_returned}`` and the check names the
mistake whose output the submission's answer matches (ARENA / CS336 style diagnosis) — or
``mistakes=lambda: {...}``, computed only when the check fails: what each mistake would
have returned costs the grader time that a right answer never needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import torch

from .error_hints import unit_axes
from .failures import CheckFailed, Feedback, SubmissionRaised
from .inputs import dtype_name
from .precision import float32_slip
from .values import as_float, describe, dtype_text, fmt_number, fmt_pair, fmt_tensor, index_text

GRID_MAX = 12


@dataclass(frozen=True)
class Tol:
    rtol: float
    atol: float

    def __str__(self) -> str:
        return f"rtol={self.rtol:g}, atol={self.atol:g}"


EXACT = Tol(0.0, 0.0)


# --------------------------------------------------------------------------- diagnosis
# The hint rule, enforced here for every suite: a mistake is named only when the submission's
# output matches its predicted output (its signature) within the check's tolerance AND closer
# than the correct answer; of several, only the closest, and none when two predict the same
# numbers. Each id named is recorded for the running test (a single NaN's, only by another
# match); the grading plugin drops a hint that declares a `function` unless recorded.
_MATCHED: set[str] = set()


def reset_matches() -> None:
    """Called by the grading plugin before each test."""
    _MATCHED.clear()


def matched_hints() -> set[str]:
    """Hint ids whose signature matched during the running test."""
    return set(_MATCHED)


def distance(got: torch.Tensor, target: torch.Tensor, tol: Tol) -> float:
    """How far ``got`` is from ``target`` in units of the tolerance: the largest
    |got − target| / (atol + rtol·|target|) over the entries (0 = identical, ≤ 1 = within
    tolerance). Same-signed infinities and NaN against NaN count as equal; a shape or kind
    mismatch is infinitely far. Integer and bool tensors: 0 if equal, else the number of
    differing entries + 1 (never within tolerance)."""
    if type(got) is not torch.Tensor or type(target) is not torch.Tensor or tuple(got.shape) != tuple(target.shape):
        return math.inf
    if got.numel() == 0:
        return 0.0
    try:
        if not got.is_floating_point() and not target.is_floating_point():
            differ = int((got != target.to(got.dtype)).sum())
            return 0.0 if differ == 0 else differ + 1.0
        a, b = got.to(torch.float64), target.to(torch.float64)
        # Most comparisons hold no NaN, and there the six operators below give the same
        # number as the full rule (an entry equal to its target is 0 either way): a check
        # costs a third of the operators (~2 100 checks a full grade). Any NaN among the
        # units — a NaN entry, inf − inf, 0/0 — takes the full rule.
        quick = float(((a - b).abs() / (tol.atol + tol.rtol * b.abs())).max())
        if quick == quick:
            return quick
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
        scale = tol.atol + tol.rtol * b.abs()
        units = torch.where(same, torch.zeros_like(a), (a - b).abs() / scale)
        units = torch.nan_to_num(units, nan=math.inf, posinf=math.inf)
        return float(units.max())
    except (RuntimeError, TypeError):
        return math.inf


STANDIN = 1e4  # a finite number this large, in place of ±∞, is a stand-in for it (−1e9, finfo.min)


def infinite_standin(got: Any, want: Any, tol: Tol) -> bool:
    """``got`` equals ``want`` (within ``tol``) except where ``want`` is ±∞, and there ``got`` is
    finite, of the same sign and at least 1e4 in size: −1e9 or finfo.min written for −∞. The
    fill value is the student's choice, so this compares the pattern, not the numbers."""
    if type(got) is not torch.Tensor or type(want) is not torch.Tensor or tuple(got.shape) != tuple(want.shape):
        return False
    if not got.is_floating_point() or not want.is_floating_point():
        return False
    g, w = got.to(torch.float64), want.to(torch.float64)
    inf = torch.isinf(w)
    if not bool(inf.any()):
        return False
    stand = inf & torch.isfinite(g) & (g.abs() >= STANDIN) & (torch.sign(g) == torch.sign(w))
    if not bool(stand.any()) or not bool((stand | (g == w)).masked_select(inf).all()):
        return False
    rest = ~inf
    return bool(torch.isclose(g[rest], w[rest], rtol=tol.rtol, atol=tol.atol, equal_nan=True).all())


def hint_of(key: str) -> str:
    """The hint a mistakes table's key names: ``skill/id``, or ``skill/id#variant`` for one of
    several outputs of the same mistake (a mask shifted by one either way): each variant is a
    candidate of its own, and a match names the hint."""
    return key.split("#", 1)[0]


def _loose(tol: Tol) -> Tol:
    """Signatures are computed in float64; a float32 submission with the same mistake
    differs by rounding, so matching never uses a tolerance tighter than 1e-6."""
    return Tol(max(tol.rtol, 1e-6), max(tol.atol, 1e-6))


def diagnose(
    got: Any, mistakes: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None, tol: Tol, want: Any = None
) -> list[str]:
    """Hint ids of the mistake whose predicted output ``got`` matches — within ``tol`` and,
    when ``want`` (the correct answer) is given, strictly closer than to ``want``. Only the
    closest match is named, and none when another mistake predicts the same numbers. ``mistakes`` may be a
    callable, evaluated only here — i.e. only when a check has already failed."""
    if callable(mistakes):
        mistakes = mistakes()
    if type(got) is not torch.Tensor or not mistakes:
        return []
    # a single NaN (a loss) agrees with every mistake that makes a NaN upstream: it names one only
    # where a pattern or value matched it in the same test too (R-BS c38 was told its mask was
    # inverted: a boolean index that did not broadcast), so it is not recorded here
    weak = got.is_floating_point() and got.numel() == 1 and bool(torch.isnan(got).all())
    loose = _loose(tol)
    floor = distance(got, want, loose) if type(want) is torch.Tensor else math.inf
    standin = infinite_standin(got, want, loose)
    scored = []
    for hint, candidate in mistakes.items():
        if type(candidate) is not torch.Tensor:
            continue
        d = distance(got, candidate, loose)
        if d > 1.0 and standin and infinite_standin(candidate, want, loose):
            d = 0.0  # both write a large finite number where ±∞ belongs: the same mistake, whatever the number
        if d <= 1.0 and d < floor:
            scored.append((d, hint, candidate))
    if not scored:
        return []
    scored.sort(key=lambda item: item[0])
    best = scored[0][2]
    # two mistakes that predict the same numbers on these inputs (e.g. √C = d_k when C = 4,
    # d_k = 2) cannot be told apart here: name neither — another input will
    named = hint_of(scored[0][1])
    if any(hint_of(h) != named and distance(candidate, best, loose) <= 0.01 for _, h, candidate in scored):
        return []
    if not weak:
        _MATCHED.add(named)
    return [named]


def observed(hint_id: str) -> list[str]:
    """A mistake recognised from behaviour rather than from output values — e.g. the code
    raises on T < context_length but not on T = context_length, which only an unsliced mask
    does. The test has established the signature; record it as matched and return [id]."""
    _MATCHED.add(hint_id)
    return [hint_id]


def float32_hints(got: Any, want: Any) -> list[str]:
    """For a property check (rows sum to 1) failed by rounding alone: the float32 hint where ``got``
    is ``want`` to float32's precision only (``float32_slip``), the dtype's where it came back
    narrower than ``want`` (blind tester R-CP: float32 weights, rows 1e-7 off 1, no word why)."""
    if isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor) and got.is_floating_point():
        if torch.finfo(got.dtype).bits < torch.finfo(want.dtype).bits:
            return ["general/dtype-changed"]
    return observed("general/float32-precision") if float32_slip(got, want) else []


def observed_raise(exc: SubmissionRaised, predicted: Mapping[str, str]) -> None:
    """Name the mistake whose code raises what the submission raised: ``predicted`` maps a
    hint id to the first line of the error that mistake's code raises on the same inputs
    (computed by the test, or stored in a snapshot). The hint joins the exception's own; the
    test still fails as a raise, with the submission's message."""
    for key, message in predicted.items():
        if message and message in exc.message:
            exc.hints.extend(h for h in observed(hint_of(key)) if h not in exc.hints)


@contextmanager
def raise_named(predicted: Mapping[str, str] | Callable[[], Mapping[str, str]]) -> Iterator[None]:
    """``observed_raise`` around a call into the submission: a ``SubmissionRaised`` leaving the
    block names the mistake whose code raises the same error (``predicted``, or a callable that
    computes it, called only then), and is raised on."""
    try:
        yield
    except SubmissionRaised as exc:
        observed_raise(exc, predicted() if callable(predicted) else predicted)
        raise


def diagnose_number(
    value: float, mistakes: Mapping[str, float] | Callable[[], Mapping[str, float]] | None, tol: Tol, want: float | None = None
) -> list[str]:
    """``diagnose`` for Python numbers: the mistake whose number ``value`` equals (within
    ``tol``, and closer than to ``want``)."""
    table = mistakes() if callable(mistakes) else (mistakes or {})
    loose = Tol(max(tol.rtol, 1e-9), max(tol.atol, 1e-12))

    def units(a: float, b: float) -> float:
        if a == b:
            return 0.0
        return abs(a - b) / (loose.atol + loose.rtol * abs(b))

    floor = units(float(value), float(want)) if want is not None else math.inf
    scored = sorted(
        (units(float(value), float(v)), h, float(v))
        for h, v in table.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
    )
    scored = [s for s in scored if s[0] <= 1.0 and s[0] < floor]
    if not scored:
        return []
    best, named = scored[0][2], hint_of(scored[0][1])
    if any(hint_of(h) != named and units(v, best) <= 0.01 for _, h, v in scored):
        return []  # indistinguishable here
    _MATCHED.add(named)
    return [named]


def _fail(check: str, problem: str, detail: str, hints: list[str], grids: list[dict] | None = None) -> NoReturn:
    raise CheckFailed(Feedback(check=check, problem=problem, detail=detail, hints=list(dict.fromkeys(hints)), grids=grids or []))


def _grid(
    title: str, got: torch.Tensor, want: torch.Tensor, bad: torch.Tensor, first: tuple[int, ...], labels: tuple[str, str]
) -> list[dict]:
    if got.dim() < 2 or got.shape[-1] > GRID_MAX or got.shape[-2] > GRID_MAX:
        return []
    prefix = tuple(first[:-2])
    g, w, b = got[prefix], want[prefix], bad[prefix]

    def cells(t: torch.Tensor) -> list[list[str]]:
        if t.dtype == torch.bool:  # masks print as the lessons print them: 1 = may attend
            return [["1" if v else "0" for v in row] for row in t.tolist()]
        return [[fmt_number(v) if not isinstance(v, float) else _cell(v) for v in row] for row in t.tolist()]

    where = f" at batch index {index_text(prefix)}" if prefix else ""
    return [
        {
            "title": f"{title}{where}",
            "rows": labels[0],
            "cols": labels[1],
            "expected": cells(w),
            "got": cells(g),
            "bad": [[bool(v) for v in row] for row in b.tolist()],
        }
    ]


def _cell(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "−∞" if value < 0 else "+∞"
    text = f"{value:.3f}"
    return "0" if text in ("0.000", "-0.000") else text


# --------------------------------------------------------------------------- checks
def _type_and_shape(got: Any, want: torch.Tensor, what: str, mistakes: Any, tol: Tol, hints: list[str]) -> None:
    """The first two questions of every comparison: a plain tensor, of the right shape?"""
    if type(got) is not torch.Tensor:
        _fail(
            what,
            "type",
            f"expected a torch.Tensor, got {describe(got)}",
            diagnose(got, mistakes, tol, want) or _wrapped(got, want, tol) or hints,
        )
    if tuple(got.shape) != tuple(want.shape):
        found = diagnose(got, mistakes, tol, want) or unit_axes(got.shape, want.shape) or hints
        _fail(what, "shape", f"expected shape {list(want.shape)}, got {list(got.shape)}", found)


def _wrapped(got: Any, want: torch.Tensor, tol: Tol) -> list[str]:
    """A tuple or list whose first item is the right tensor: the answer returned inside the
    pair a library call gives (``nn.MultiheadAttention`` returns ``(output, weights)``). The
    failed check itself proves it, so the hint names no function."""
    if isinstance(got, (tuple, list)) and got and distance(got[0], want, _loose(tol)) <= 1.0:
        return ["general/returns-tuple"]
    number = as_float(got)
    if (
        number is not None
        and want.numel() == 1
        and want.is_floating_point()
        and distance(torch.tensor(number, dtype=torch.float64), want.double().reshape(()), _loose(tol)) <= 1.0
    ):
        return ["general/returns-number"]  # the right value as a Python number: `.item()` (blind tester I)
    return []


def _side_by_side(got: torch.Tensor, want: torch.Tensor) -> str:
    """Small results are shown whole, expected above yours."""
    return f"\nexpected {fmt_tensor(want)}\n     got {fmt_tensor(got)}" if got.numel() <= 16 else ""


def tensor(
    got: Any, *, what: str, hints: Iterable[str] = (), shape: Iterable[int] | None = None, floating: bool = False
) -> torch.Tensor:
    """``got`` must be exactly a ``torch.Tensor`` (no subclass, no other object); with
    ``shape``, of that shape; with ``floating``, of a real floating dtype (any: a float64
    answer to float32 inputs is the dtype test's to judge). A check that goes on to index
    the result (``out[:, 1]``) or to arithmetic a bool, integer or complex tensor has not got
    (``abs``, ``s - s.mT``) asks these first, so an odd result fails here as the student's
    answer instead of raising inside the test (a "grader error")."""
    if type(got) is not torch.Tensor:
        _fail(what, "type", f"expected a torch.Tensor, got {describe(got)}", list(hints))
    if shape is not None and tuple(got.shape) != tuple(shape):
        _fail(what, "shape", f"expected shape {list(shape)}, got {list(got.shape)}", unit_axes(got.shape, shape) or list(hints))
    if floating and not got.is_floating_point():
        _fail(what, "dtype", f"expected a floating-point tensor, got dtype {dtype_text(got.dtype)}", list(hints))
    return got


def tensors(
    got: Any, length: int, *, what: str, shape: Iterable[int] | None = None, floating: bool = False
) -> tuple[torch.Tensor, ...]:
    """``sequence`` of ``length`` items, each a ``tensor`` (of ``shape``, ``floating``)."""
    items = sequence(got, length, what=what)
    return tuple(tensor(t, what=f"{what}: item {i + 1}", shape=shape, floating=floating) for i, t in enumerate(items))


def sequence(got: Any, length: int, *, what: str, hints: Iterable[str] = ()) -> tuple:
    """``got`` must be a tuple or list of ``length`` items (e.g. ``(q, k, v)``)."""
    if not isinstance(got, (tuple, list)) or len(got) != length:
        _fail(what, "type", f"expected a tuple of {length} items, got {describe(got)}", list(hints))
    return tuple(got)


def close(
    got: Any,
    want: torch.Tensor,
    *,
    what: str,
    tol: Tol,
    mistakes: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
    hints: Iterable[str] = (),
    grid: tuple[str, str] | None = None,
    check_dtype: bool = True,
    dtype_from: str = "the input's dtype",
    dtype_hints: Iterable[str] = ("general/dtype-changed",),
) -> torch.Tensor:
    """``got`` must equal ``want`` within ``tol`` (both rtol and atol; ±∞ must match exactly).
    ``dtype_from`` says where ``want``'s dtype comes from and ``dtype_hints`` what a wrong one
    shows (a function told its dtype by an argument: not the input's)."""
    hints = list(hints)
    _type_and_shape(got, want, what, mistakes, tol, hints)
    if check_dtype and got.dtype != want.dtype:
        _fail(
            what,
            "dtype",
            f"expected dtype {dtype_text(want.dtype)} ({dtype_from}), got {dtype_text(got.dtype)}",
            list(dtype_hints),
        )
    if not got.is_floating_point() and not want.is_floating_point():
        return equal(got, want, what=what, mistakes=mistakes, hints=hints, grid=grid)
    g = got.to(torch.float64)
    w = want.to(torch.float64)
    ok = torch.isclose(g, w, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    new_nan = torch.isnan(g) & ~torch.isnan(w)
    if bool(new_nan.any()):
        first = tuple(torch.nonzero(new_nan)[0].tolist())
        count = int(new_nan.sum())
        others = int((~ok & ~new_nan).sum())  # said too, and marked in the grid: the NaN is rarely the only problem
        grids = _grid(what, g, w, ~ok, first, grid) if grid else []
        also = f"; {others} other value{'s' if others > 1 else ''} differ too" if others else ""
        _fail(
            what,
            "nan",
            f"NaN at index {index_text(first)} ({count} NaN value{'s' if count > 1 else ''}); expected "
            f"{fmt_number(w[first].item())} there{also}",
            diagnose(got, mistakes, tol, want) or hints,
            grids,
        )
    if bool(ok.all()):
        return got
    bad = ~ok
    first = tuple(torch.nonzero(bad)[0].tolist())
    diff = (g - w).abs()
    worst = float(diff[bad].max())  # +∞ where one side is infinite and the other is not
    count = int(bad.sum())
    infinite = bad & torch.isinf(w) & torch.isfinite(g)
    if bool(infinite.any()):  # say so first: "largest difference 0" hid −1e9 in place of −∞
        at = tuple(torch.nonzero(infinite)[0].tolist())
        n = int(infinite.sum())
        counted = f"{n} of the {int(torch.isinf(w).sum())} entries that must be infinite are finite"
        # a stand-in (−1e9, finfo.min) explained as one only where every such entry holds one: a score
        # left as it was (a mask of the other polarity) is no "large finite number"
        standin = (g.abs() >= STANDIN) & (torch.sign(g) == torch.sign(w))
        if bool(standin[infinite].all()):
            detail = (
                f"expected {fmt_number(w[at].item())} at index {index_text(at)}, got {fmt_number(g[at].item())}: a large "
                f"finite number is not {fmt_number(w[at].item())} ({counted}). "
                "exp(−1e9 − max) is 0 only while the row has a real score: in a row whose keys are all blocked, or whose "
                "scores are as low, softmax still gives the blocked keys weight"
            )
        else:
            detail = f"expected {fmt_number(w[at].item())} at index {index_text(at)}, got {fmt_number(g[at].item())} ({counted})"
        if n < count:
            detail += f"; {count - n} other values differ too (first at index {index_text(first)})"
    else:
        shown_want, shown_got = fmt_pair(w[first].item(), g[first].item())
        detail = (
            f"first mismatch at index {index_text(first)}: expected {shown_want}, got "
            f"{shown_got}; {count} of {bad.numel()} values differ (largest difference "
            f"{fmt_number(worst)}, tolerance {tol})"
        )
    detail += _side_by_side(got, want)
    grids = _grid(what, g, w, bad, first, grid) if grid else []
    named = diagnose(got, mistakes, tol, want)
    if not named and float32_slip(got, want):
        named = observed("general/float32-precision") + [h for h in hints if h != "general/float32-precision"]
    _fail(what, "values", detail, named or hints, grids)
    return got


def equal(
    got: Any,
    want: torch.Tensor,
    *,
    what: str,
    mistakes: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
    hints: Iterable[str] = (),
    grid: tuple[str, str] | None = None,
) -> torch.Tensor:
    """Exact equality, for masks and integer results (dtype must match too)."""
    hints = list(hints)
    _type_and_shape(got, want, what, mistakes, EXACT, hints)
    if got.dtype != want.dtype:
        hint = ["general/mask-dtype"] if want.dtype is torch.bool else ["general/dtype-changed"]
        _fail(
            what,
            "dtype",
            f"expected dtype {dtype_text(want.dtype)}, got {dtype_text(got.dtype)}",
            diagnose(got.to(want.dtype), mistakes, EXACT, want) + hint,
        )
    bad = got != want
    if not bool(bad.any()):
        return got
    first = tuple(torch.nonzero(bad)[0].tolist())
    count = int(bad.sum())
    detail = (
        f"first mismatch at index {index_text(first)}: expected {fmt_number(want[first].item())}, got "
        f"{fmt_number(got[first].item())}; {count} of {bad.numel()} entries differ"
    )
    detail += _side_by_side(got, want)
    grids = _grid(what, got, want, bad, first, grid) if grid else []
    _fail(what, "values", detail, diagnose(got, mistakes, EXACT, want) or hints, grids)
    return got


def scalar(
    got: Any,
    want: float,
    *,
    what: str,
    tol: Tol,
    hints: Iterable[str] = (),
    integer: bool = False,
    mistakes: Mapping[str, float] | Callable[[], Mapping[str, float]] | None = None,
) -> float:
    """A Python number (or a 0-dim tensor) within ``tol`` of ``want``; ``mistakes`` maps
    hint ids to the number each mistake would give."""
    value = got
    if type(got) is torch.Tensor and got.dim() == 0:
        value = got.item()
    number = as_float(value)
    if number is None:
        _fail(what, "type", f"expected a number, got {describe(got)}", list(hints))
    if integer and not (isinstance(value, int) or number.is_integer()):
        _fail(what, "type", f"expected a whole number, got {fmt_number(value)}", list(hints))
    if not math.isclose(number, float(want), rel_tol=tol.rtol, abs_tol=tol.atol):
        matched = diagnose_number(number, mistakes, tol, want)
        _fail(what, "values", f"expected {fmt_number(want)}, got {fmt_number(value)} (tolerance {tol})", matched or list(hints))
    return value


def true(
    condition: bool,
    *,
    what: str,
    detail: str,
    hints: Iterable[str] = (),
    problem: str = "property",
    grids: list[dict] | None = None,
) -> None:
    """A property that must hold; ``detail`` says what was seen when it does not."""
    if not condition:
        _fail(what, problem, detail, list(hints), grids)


def sums_detail(sums: torch.Tensor) -> str:
    """What a "rows sum to 1" check says of ``sums``: their range and how far the farthest is
    from 1, which the range alone hides once rounded (1 − 1e-9 prints as 1: blind tester R-BJ
    read "row sums range from 1 to 1" for an ε in the denominator)."""
    if sums.numel() == 0:
        return "no row to sum"
    s = sums.double()
    off = (s - 1).abs().nan_to_num(nan=math.inf).max().item()
    return f"row sums range from {s.min().item():.6g} to {s.max().item():.6g}, up to {off:.3g} away from 1"


def raises(kind: str, call, *args, what: str, hints: Iterable[str] = (), **kwargs) -> dict:
    """``call(*args, **kwargs)`` (a remote function) must raise ``kind`` (e.g. "ValueError")."""
    try:
        value = call(*args, **kwargs)
    except SubmissionRaised as exc:
        error = exc.error or {}
        if error.get("type") == kind or error.get("base") == kind:
            return error
        if error.get("todo"):
            raise  # still a TODO stub: say that, not "wrong exception"
        # an `assert` made the check: the test's hints (a check missing) point the wrong way (R-BL)
        named = observed("general/assert-for-check") if error.get("type") == "AssertionError" else list(hints)
        _fail(what, "values", f"expected {kind}, but it raised {error.get('type')}: {error.get('message', '')[:200]}", named)
    if getattr(call, "__name__", "") == "construct" and args:  # the grader's own record of the object, not the student's value
        ran = f"{args[0]}(…) was built{' and its calls ran' if kwargs.get('calls') else ''} without raising"
        _fail(what, "values", f"expected {kind} to be raised, but {ran}", list(hints))
    _fail(what, "values", f"expected {kind} to be raised, but it returned {describe(value)}", list(hints))
    return {}


def unchanged(before: Any, after: Any, *, what: str) -> None:
    """Inputs must not be modified in place."""
    if type(before) is torch.Tensor and type(after) is not torch.Tensor:
        # what the worker sent back for the argument is no plain tensor: its class was swapped
        # in place (``x.__class__ = Sub``), which also hid a change of its values from the
        # comparison below (blind red-team tester R-AK)
        _fail(
            what,
            "property",
            "the input tensor was changed in place (its class replaced); compute a new tensor instead",
            ["general/in-place"],
        )
    if type(before) is torch.Tensor and type(after) is torch.Tensor:
        same = (
            before.shape == after.shape
            and before.dtype == after.dtype
            and bool(
                torch.equal(before, after)
                or (before.is_floating_point() and torch.isclose(before, after, rtol=0, atol=0, equal_nan=True).all())
            )
        )
        if not same:
            _fail(what, "property", "the input tensor was modified in place; compute a new tensor instead", ["general/in-place"])


def kept_inputs_and_dtype(
    name: str,
    args: tuple,
    called: Any,
    dtype: torch.dtype,
    *,
    case: str,
    dtype_case: str,
    in_place: str,
    dtype_hints: Iterable[str] | None = None,
):
    """The checks after ``called = sub.<module>.call(name, *args, return_args=True)`` on a
    control input: every tensor argument is unchanged (``in_place``: the in-place operations
    that would change one, for the message), the result is a tensor, of ``dtype``. ``case``
    names the input in the result check, ``dtype_case`` in the dtype check; ``dtype_hints``
    replace the general ones where the dtype comes from an argument. The result."""
    for i, (before, after) in enumerate(zip(args, called.args or [])):
        if type(before) is torch.Tensor:
            unchanged(
                before,
                after,
                what=f"{name}: argument {i + 1} ({dtype_name(before.dtype)} {list(before.shape)}) is unchanged "
                f"after the call (no {in_place} on an input)",
            )
    out = tensor(called.value, what=f"{name} result ({case})")
    true(
        out.dtype == dtype,
        what=f"{name} ({dtype_case}): result dtype {dtype_name(dtype)}",
        detail=f"got {dtype_name(out.dtype)}",
        hints=list(dtype_hints)
        if dtype_hints is not None
        else ["general/mask-dtype"]
        if dtype == torch.bool
        else ["general/dtype-changed"],
    )
    return out
