"""The lessons' own formulas, as plain torch, for *visible* tests' fresh random controls.

Every visible test checks the worked example *and* fresh random inputs (drawn from the
test's seeded ``rng``), so a submission that recognises the example and returns the
printed numbers earns nothing. Nothing here goes beyond the code printed in the lessons
(Week 7 §12–§13, Day 1 §2.3, §4.3, §A.4).
"""

from __future__ import annotations

import math

import torch


def attention(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, causal: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Week 7 §12, in float64: (out, weights)."""
    x, w_q, w_k, w_v = (t.to(torch.float64) for t in (x, w_q, w_k, w_v))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        T = x.size(-2)
        scores = scores.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
