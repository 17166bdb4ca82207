"""qkv, defensive object-oriented style (a correct submission in another style): Tensor methods
(`.mT`, `.matmul`), a small callable class that fills future scores with `finfo.min` instead of
−∞ (exp underflows to exactly 0, so future weights are still exactly 0), the lesson's persistent
`causal_mask` buffer, and rank checks that raise only on inputs outside the contract."""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["project_qkv", "attention_scores", "scale_scores", "weighted_values", "causal_uniform_mean", "single_head_attention", "AttentionHead"]


def _require_rank(name: str, t: torch.Tensor, rank: int) -> None:
    if t.dim() != rank:
        raise ValueError(f"{name} must have {rank} dimensions, got shape {tuple(t.shape)}")


def project_qkv(x, w_q, w_k, w_v):
    """Q = X W_Q, K = X W_K, V = X W_V; x [B,T,C], w_q/w_k [C,d_k], w_v [C,d_v]."""
    _require_rank("x", x, 3)
    return tuple(torch.matmul(x, w) for w in (w_q, w_k, w_v))


def attention_scores(q, k):
    """S = Q Kᵀ: [...,L,d] x [...,S,d] -> [...,L,S], unscaled."""
    return q.matmul(k.mT)


def scale_scores(scores, d_k):
    """scores / sqrt(d_k)."""
    return scores.mul(1.0 / math.sqrt(float(d_k)))


def weighted_values(weights, v):
    """[...,L,S] @ [...,S,d_v] -> [...,L,d_v]."""
    return weights.matmul(v)


def causal_uniform_mean(x):
    """Row t is the mean of rows 0..t (Week 7 §1), as a lower-triangular averaging matrix."""
    T = x.size(-2)
    counts = torch.arange(1, T + 1, dtype=x.dtype, device=x.device)
    averaging = torch.ones(T, T, dtype=x.dtype, device=x.device).tril_().div_(counts.unsqueeze(-1))
    return averaging @ x


class _CausalFill:
    """Fills future scores with the most negative finite number of the dtype.

    exp(finfo.min - rowmax) underflows to exactly 0, so future weights are exactly 0
    while rows never become NaN.
    """

    def __init__(self, allowed: torch.Tensor) -> None:
        self.allowed = allowed

    def __call__(self, scores: torch.Tensor) -> torch.Tensor:
        return scores.masked_fill(self.allowed.logical_not(), torch.finfo(scores.dtype).min)


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    """The whole chain for one head; returns (out [B,T,d_v], weights [B,T,T])."""
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    scores = scale_scores(attention_scores(q, k), d_k=q.shape[-1])
    if causal:
        T = x.shape[-2]
        scores = _CausalFill(torch.ones(T, T, dtype=torch.bool, device=x.device).tril())(scores)
    weights = scores.softmax(dim=-1)
    return weighted_values(weights, v), weights


class AttentionHead(nn.Module):
    """Causal attention head (Week 7 §13) with the lesson's persistent buffer."""

    def __init__(self, embed_dim: int, head_size: int, context_length: int) -> None:
        super().__init__()
        self.head_size = head_size
        self.context_length = context_length
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        self.register_buffer(
            "causal_mask", torch.ones(context_length, context_length, dtype=torch.bool).tril()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _require_rank("x", x, 3)
        T = x.size(1)
        if T > self.context_length:
            raise ValueError(f"sequence length {T} exceeds context_length {self.context_length}")
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = scale_scores(attention_scores(q, k), d_k=self.head_size)
        scores = _CausalFill(self.causal_mask[:T, :T])(scores)
        return weighted_values(scores.softmax(dim=-1), v)
