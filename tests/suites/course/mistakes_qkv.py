"""What the named mistakes of the lessons' debugging lists would return.

A test computes these for the same inputs it sends to the submission, and
``expect.close(..., mistakes=...)`` names the one the submission's answer matches. They
are reproductions of *wrong* code, so they hold nothing a student could use as an answer.
"""

from __future__ import annotations

import math

import torch


def _softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(scores, dim=dim)


def attention_chain(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, causal: bool = True) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """hint id → (out, weights) that single_head_attention would return with that mistake."""
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    d_k, T, C = q.size(-1), x.size(-2), x.size(-1)
    raw = q @ k.transpose(-2, -1)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
    neg_inf = float("-inf")

    def chain(scores: torch.Tensor, *, fill: float = neg_inf, mask: torch.Tensor | None = allowed if causal else None, dim: int = -1, retrieve: torch.Tensor = v):
        if mask is not None:
            scores = scores.masked_fill(~mask, fill)
        weights = _softmax(scores, dim)
        return weights @ retrieve, weights

    out: dict[str, tuple[torch.Tensor, torch.Tensor]] = {
        "qkv/divide-by-dk": chain(raw / d_k),
        "qkv/no-scaling": chain(raw),
        "qkv/softmax-wrong-axis": chain(raw / math.sqrt(d_k), dim=-2),
        "qkv/keys-times-queries": chain(raw.transpose(-2, -1) / math.sqrt(d_k)),
    }
    if C != d_k:
        out["qkv/scale-by-model-width"] = chain(raw / math.sqrt(C))
    if causal:
        out["qkv/zero-fill"] = chain(raw / math.sqrt(d_k), fill=0.0)
        out["qkv/no-causal-mask"] = chain(raw / math.sqrt(d_k), mask=None)
        out["qkv/diagonal-masked"] = chain(raw / math.sqrt(d_k), mask=torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1))
        after = _softmax(raw / math.sqrt(d_k)).masked_fill(~allowed, 0.0)
        out["qkv/mask-after-softmax"] = (after @ v, after)
    if k.shape == v.shape:
        out["qkv/weights-times-keys"] = chain(raw / math.sqrt(d_k), retrieve=k)
    if q.size(-2) == k.size(-1):
        out["qkv/missing-transpose"] = chain((q @ k) / math.sqrt(d_k))
    return out


def outputs(variants: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {hint: pair[0] for hint, pair in variants.items()}


def weights(variants: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {hint: pair[1] for hint, pair in variants.items()}


def uniform_mean(x: torch.Tensor) -> dict[str, torch.Tensor]:
    T = x.size(-2)
    return {
        "qkv/uniform-mean-future": x.mean(dim=-2, keepdim=True).expand_as(x).clone(),
        "qkv/uniform-mean-count": x.cumsum(-2) / torch.arange(0, T, dtype=x.dtype).clamp(min=1).unsqueeze(-1),
    }
