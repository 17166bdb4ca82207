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


def multi_head_attention(x: torch.Tensor, state: dict, num_heads: int, key_allowed: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Day 1 §4.3's code (view → transpose → causal attention per head → back → W_O), in
    float64, for nn.Linear weights given as a state_dict {w_q.weight, …[, w_q.bias, …]}."""
    x = x.to(torch.float64)
    B, T, C = x.shape
    d = C // num_heads

    def linear(name: str) -> torch.Tensor:
        out = x @ state[f"{name}.weight"].to(torch.float64).T
        return out + state[f"{name}.bias"].to(torch.float64) if f"{name}.bias" in state else out

    q, k, v = (linear(n).view(B, T, num_heads, d).transpose(1, 2) for n in ("w_q", "w_k", "w_v"))
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
    if key_allowed is not None:
        allowed = allowed & key_allowed.to(torch.bool)[:, None, None, :]
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    y = (weights @ v).transpose(1, 2).contiguous().view(B, T, C)
    out = y @ state["w_o.weight"].to(torch.float64).T
    if "w_o.bias" in state:
        out = out + state["w_o.bias"].to(torch.float64)
    return out, weights
