"""Helpers for the named mistakes' outputs ("signatures") that every skill's
``tests/suites/<skill>/mistakes.py`` shares. They only compare and reshape tables of
outputs; what a mistake computes stays in the skill's own module (never shipped to
students: visible suites read the outputs from their snapshot file instead)."""

from __future__ import annotations

from typing import Any

import torch

from .expect import Tol, distance, hint_of


def distinct(mistakes: dict[str, torch.Tensor], tol: Tol, want: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Only the mistakes whose output differs from every other mistake's (and from the
    right answer `want`, when given) on these inputs.

    Random inputs sometimes make two mistakes coincide (e.g. with one key per row, or
    scores of 1e4 where a 0 fill and a −1e9 fill both vanish), or make a mistake harmless
    (T = 1); naming those would only confuse, so such a case names neither and the other
    cases name the right one. (A pure comparison: it records no match for the hint rule.)"""
    loose = Tol(max(tol.rtol, 1e-6), max(tol.atol, 1e-6))
    keep = {}
    for hint, out in mistakes.items():
        # variants of one mistake (``hint#variant``) may coincide: they name the same hint
        others = [o for h, o in mistakes.items() if hint_of(h) != hint_of(hint)] + ([want] if want is not None else [])
        if all(distance(out, o, loose) > 1.0 for o in others):
            keep[hint] = out
    return keep


def keep_if_wrong(variants: dict[str, torch.Tensor], right: torch.Tensor) -> dict[str, torch.Tensor]:
    """The variants that differ from the right answer on these inputs (NaN equals NaN):
    a mistake that is harmless here can never be named here."""
    out = {}
    for hint, t in variants.items():
        if t.shape != right.shape:
            out[hint] = t
            continue
        if not bool(torch.isclose(t.double(), right.double(), rtol=1e-6, atol=1e-9, equal_nan=True).all()):
            out[hint] = t
    return out


def outputs(pairs: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
    """{hint: (out, weights)} → {hint: out}."""
    return {hint: pair[0] for hint, pair in pairs.items()}


def weights(pairs: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
    """{hint: (out, weights)} → {hint: weights}."""
    return {hint: pair[1] for hint, pair in pairs.items()}


def whole(
    variants: dict[str, tuple[Any, ...]], got: tuple[Any, ...], want: tuple[Any, ...], tol: Tol
) -> dict[str, tuple[Any, ...]]:
    """The variants whose whole signature the submission shows: every component a mistake
    changes (it differs from the right answer ``want``) must be what the submission returned
    (``got``), within ``tol`` (never tighter than 1e-6). A mistake is named from one failed
    component only when the others agree: ``q.mul_(s)`` in forward leaves K̄ off by s and Q̄
    right, which is not "the scale was applied twice" (that changes Q̄ too). Components the
    mistake leaves right are not compared, so a second, unrelated mistake elsewhere does not
    hide the first one's name."""
    loose = Tol(max(tol.rtol, 1e-6), max(tol.atol, 1e-6))
    keep, changes = {}, {}
    for hint, parts in variants.items():
        ok, changed = True, set()
        for i, (mine, theirs, right) in enumerate(zip(parts, got, want)):
            if type(mine) is not torch.Tensor or type(right) is not torch.Tensor:
                continue
            if distance(mine, right, loose) <= 1.0:
                continue  # this mistake leaves the component right: nothing to compare
            if distance(theirs, mine, loose) > 1.0:
                ok = False
                break
            changed.add(i)
        if ok:
            keep[hint], changes[hint] = parts, changed
    # a mistake that explains only part of what another one explains in full is not named: a
    # backward applying s twice (Q̄ and K̄ off by s) is not "forward saved a scaled q" (K̄ only)
    return {h: p for h, p in keep.items() if not any(changes[h] < changes[o] for o in keep if o != h)}
