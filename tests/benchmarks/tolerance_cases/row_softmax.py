"""Tolerance cases for skill row_softmax: the shapes the hidden suite draws, scores around 0
and around ±1e4 (where a softmax without max subtraction overflows), −∞ entries, either axis.

The spread inside a row is kept at 1–3: with a wider spread (the hidden suite also draws
rows spread by 30 and by 1e4) some weights lie between float32's and float64's underflow
(e^-100), the float32 reference rounds them to 0, and the measured *relative* error becomes
1.0 for entries that atol covers anyway — a table rtol of 10 that would accept almost anything."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import randn


def _pick(g: torch.Generator, options):
    return options[int(torch.randint(0, len(options), (1,), generator=g))]


def _int(g: torch.Generator, low: int, high: int) -> int:
    return int(torch.randint(low, high + 1, (1,), generator=g))


def scores(g: torch.Generator, *lead: int, L: int | None = None, S: int | None = None, blocked: bool = True) -> torch.Tensor:
    """Scores [...,L,S]: spread 1 or 3, shifted by 0 or ±1e4, with some −∞ entries (never a whole row)."""
    L = L if L is not None else _pick(g, (1, _int(g, 2, 64), 64))
    S = S if S is not None else _pick(g, (1, 2, _int(g, 3, 64), 64))
    s = randn(g, *lead, L, S, scale=_pick(g, (1.0, 3.0))) + _pick(g, (0.0, 1e4, -1e4))
    if blocked and S > 1 and bool(torch.randint(0, 2, (1,), generator=g)):
        block = torch.rand(*lead, L, S, generator=g, dtype=torch.float64) < 0.3
        keep = torch.randint(0, S, (*lead, L, 1), generator=g)
        block.scatter_(-1, keep, False)
        s = s.masked_fill(block, float("-inf"))
    return s


def cases(load) -> dict:
    """op name → seeded input maker for the row_softmax reference."""
    rs = load("row_softmax")

    def softmax(g):
        lead = _pick(g, ((), (2,), (2, 3)))
        dim = _pick(g, (-1, -2))
        s = scores(g, *lead)
        return (lambda x: rs.softmax_rows(x, dim)), (s.transpose(-1, -2) if dim == -2 else s,)

    def log_softmax(g):
        lead = _pick(g, ((), (2,)))
        return rs.log_softmax_rows, (scores(g, *lead, blocked=False),)

    def ce(g):
        N, V = _int(g, 1, 64), _int(g, 2, 64)
        return (lambda x, t: rs.cross_entropy(x, t).reshape(1)), (
            scores(g, L=N, S=V, blocked=False),
            torch.randint(0, V, (N,), generator=g),
        )

    def vocab(g):
        lead = _pick(g, ((2,), (2, 5), (1, 3)))
        C, V = _int(g, 1, 32), _int(g, 2, 64)
        return rs.vocab_probs, (randn(g, *lead, C, scale=_pick(g, (1.0, 3.0))), randn(g, C, V, scale=C**-0.5))

    return {
        "row_softmax.softmax_rows": softmax,
        "row_softmax.log_softmax_rows": log_softmax,
        "row_softmax.cross_entropy": ce,
        "row_softmax.vocab_probs": vocab,
    }
