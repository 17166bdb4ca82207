"""Skill `qkv`: Q, K, V and scaled dot-product scores.

Course: Week 7 §1–§9 and §12–§13 (the two-prompt example [我,喜欢] / [猫,喜欢]).
Axis names: B batch, T tokens, C model width, d_k / d_v head widths, L query length,
S key length; `...` means any leading batch dimensions.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn


def project_qkv(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Project the inputs into queries, keys and values (Week 7 §2–§4).

    Formula convention: Q = X W_Q, K = X W_K, V = X W_V.

    Args:
        x: [B,T,C] token vectors.
        w_q, w_k: [C,d_k] projection matrices.
        w_v: [C,d_v] projection matrix.

    Returns:
        (q [B,T,d_k], k [B,T,d_k], v [B,T,d_v]).
    """
    # TODO: project x into queries, keys and values (Week 7 §4).
    ### BEGIN SOLUTION
    return x @ w_q, x @ w_k, x @ w_v
    ### END SOLUTION


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Raw scores S = Q Kᵀ, no scaling (Week 7 §4, §9).

    Args:
        q: [...,L,d] queries.
        k: [...,S,d] keys.

    Returns:
        [...,L,S]: entry (i, j) is the dot product of query i with key j.
    """
    # TODO: score every query against every key (Week 7 §4, §9).
    ### BEGIN SOLUTION
    return q @ k.transpose(-2, -1)
    ### END SOLUTION


def scale_scores(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    """Divide the scores by √d_k (Week 7 §8: √d_k, not d_k).

    Args:
        scores: [...,L,S] raw scores.
        d_k: the key/query width.

    Returns:
        [...,L,S] scaled scores.
    """
    # TODO: scale the scores (Week 7 §8).
    ### BEGIN SOLUTION
    return scores / math.sqrt(d_k)
    ### END SOLUTION


def weighted_values(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Mix the values with the attention weights: O = P V (Week 7 §6).

    Args:
        weights: [...,L,S] attention weights (each row sums to 1).
        v: [...,S,d_v] values.

    Returns:
        [...,L,d_v] outputs.
    """
    # TODO: mix the values with the weights (Week 7 §6).
    ### BEGIN SOLUTION
    return weights @ v
    ### END SOLUTION


def causal_uniform_mean(x: torch.Tensor) -> torch.Tensor:
    """The Week 7 §1 baseline: position t holds the mean of x[..., :t+1, :].

    Args:
        x: [...,T,C] token vectors.

    Returns:
        [...,T,C]: row t is the average of rows 0..t (a fixed, query-independent read).
    """
    # TODO: average each prefix x[..., :t+1, :] (Week 7 §1).
    ### BEGIN SOLUTION
    T = x.shape[-2]
    counts = torch.arange(1, T + 1, dtype=x.dtype, device=x.device).unsqueeze(-1)  # [T,1]
    return x.cumsum(dim=-2) / counts
    ### END SOLUTION


def single_head_attention(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, causal: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole chain of Week 7 §7 and §12 for one head.

    X → Q, K, V → scores Q Kᵀ → / √d_k → (−∞ on future keys when `causal`) → softmax over
    the key axis → weights @ V.

    Args:
        x: [B,T,C] token vectors.
        w_q, w_k: [C,d_k]; w_v: [C,d_v].
        causal: mask future keys (key j > query i) before the softmax.

    Returns:
        (out [B,T,d_v], weights [B,T,T]); every row of `weights` sums to 1. With `causal`,
        the weights on future keys are exactly 0 (exp(−∞) = 0 exactly, so a non-zero
        weight there means the future leaked), and so is every ∂out_t/∂x_s for s > t.
    """
    # TODO: chain projection, scores, scaling, causal mask, row softmax and values (Week 7 §7, §12).
    ### BEGIN SOLUTION
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # [B,T,d_k], [B,T,d_k], [B,T,d_v]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [B,T,T]
    if causal:
        T = x.size(-2)
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))  # True = may attend
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # over the key axis
    return weights @ v, weights
    ### END SOLUTION


class AttentionHead(nn.Module):
    """A reusable causal attention head (Week 7 §13).

    Submodules `query`, `key`, `value` are `nn.Linear(embed_dim, head_size, bias=False)`;
    `causal_mask` is a registered bool buffer [context_length, context_length],
    allowed-style (`True` = may attend, i.e. `tril`), sliced to [:T, :T] in `forward`.
    Persistent or not, both are accepted: Week 7 §13 registers it as a plain (persistent)
    buffer; Day 1 §A.4 recommends `persistent=False`, which keeps it out of `state_dict()`
    (the tests load only the three projection weights, with `strict=False`).
    """

    def __init__(self, embed_dim: int, head_size: int, context_length: int) -> None:
        super().__init__()
        # TODO: create query/key/value projections and the causal_mask buffer (Week 7 §13).
        ### BEGIN SOLUTION
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        mask = torch.tril(torch.ones(context_length, context_length, dtype=torch.bool))
        self.register_buffer("causal_mask", mask, persistent=False)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B,T,C] → [B,T,head_size]; ValueError when T > context_length."""
        # TODO: run the causal attention chain on x (Week 7 §13).
        ### BEGIN SOLUTION
        _, T, _ = x.shape
        if T > self.causal_mask.size(0):
            raise ValueError(f"sequence length {T} exceeds context_length {self.causal_mask.size(0)}")
        q, k, v = self.query(x), self.key(x), self.value(x)  # [B,T,head_size] each
        scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))  # [B,T,T]
        scores = scores.masked_fill(~self.causal_mask[:T, :T], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v
        ### END SOLUTION
