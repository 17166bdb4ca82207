"""Blind red-team tester R-DG (2026-12-07): an unused import of the banned class, kept from an
earlier try, while sdpa_masks.py (which names nn.MultiheadAttention itself, as its exercise
requires) imports this file's helpers — the skill scored 0/15."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.nn import MultiheadAttention  # kept from an earlier try


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Cut the feature axis into `num_heads` heads (Day 1 §4.3, Week 7 §9).

    Head i gets the contiguous features i·d:(i+1)·d, d = C / num_heads; the head axis
    moves next to the batch axis so that later matmuls run over (B, h) at once.

    Args:
        x: [B,T,C] projected tokens (e.g. Q = X W_Q for all heads at once).
        num_heads: h; must divide C.

    Returns:
        [B,h,T,d].

    Raises:
        ValueError: if C % num_heads != 0.
    """
    ### BEGIN SOLUTION
    B, T, C = x.shape
    if num_heads <= 0 or C % num_heads != 0:
        raise ValueError(f"model width C={C} is not divisible by num_heads={num_heads}")
    d = C // num_heads
    # [B,T,C] → [B,T,h,d]: the last axis cut into h segments, segment i = head i
    # → transpose(1, 2) → [B,h,T,d]: the head axis sits beside the batch axis.
    return x.reshape(B, T, num_heads, d).transpose(1, 2)
    ### END SOLUTION


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Put the heads back side by side on the feature axis: the inverse of `split_heads`.

    Concat(head_1, …, head_h) along the feature axis (Week 7 §15, Day 1 §A.5: transpose
    first, then merge; merging without the transpose mixes positions).

    Args:
        x: [B,h,T,d] per-head outputs.

    Returns:
        [B,T,h·d]; features i·d:(i+1)·d come from head i.
    """
    ### BEGIN SOLUTION
    B, h, T, d = x.shape
    # [B,h,T,d] → transpose(1, 2) → [B,T,h,d] → reshape (copies when not contiguous) → [B,T,h·d]
    return x.transpose(1, 2).reshape(B, T, h * d)
    ### END SOLUTION


class MultiHeadAttention(nn.Module):
    """Causal multi-head self-attention written from tensor operations (Week 7 §15, Day 1 §4.3).

    Submodules `w_q`, `w_k`, `w_v`, `w_o` are `nn.Linear(embed_dim, embed_dim, bias=bias)`:
    the h per-head projections [C, C/h] side by side in one [C, C] matrix. The causal mask
    is a buffer over [context_length, context_length] (its name and polarity are free; here
    bool, True = may attend), best registered with `persistent=False` so that `state_dict()`
    holds only the four projections' parameters. Week 7 §13's `register_buffer("causal_mask",
    …)` without it is accepted too: the grader loads weights with the mask left as built.
    """

    def __init__(self, embed_dim: int, num_heads: int, context_length: int, bias: bool = False) -> None:
        super().__init__()
        ### BEGIN SOLUTION
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.head_size = embed_dim // num_heads  # d = C / h (Week 7 §15)
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        allowed = torch.tril(torch.ones(context_length, context_length, dtype=torch.bool))  # True = may attend
        self.register_buffer("causal_allowed", allowed, persistent=False)
        ### END SOLUTION

    def forward(
        self, x: torch.Tensor, key_allowed: torch.Tensor | None = None, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """x [B,T,C] → out [B,T,C], or (out, weights [B,h,T,T]) when `return_weights`.

        Causal always; `key_allowed` [B,T] (True = real token) additionally blocks padded
        keys, i.e. columns, for every query (Day 1 §3.2). ValueError when T > context_length.
        """
        ### BEGIN SOLUTION
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError(f"sequence length {T} exceeds context_length {self.context_length}")
        h, d = self.num_heads, self.head_size
        q = split_heads(self.w_q(x), h)  # [B,h,T,d]
        k = split_heads(self.w_k(x), h)  # [B,h,T,d]
        v = split_heads(self.w_v(x), h)  # [B,h,T,d]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # [B,h,T,T], scaled by √(C/h), not √C
        allowed = self.causal_allowed[:T, :T]  # [T,T]
        if key_allowed is not None:
            allowed = allowed & key_allowed.to(torch.bool)[:, None, None, :]  # [B,1,T,T]: keys only
        scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # [B,h,T,T], each query row sums to 1
        heads = weights @ v  # [B,h,T,d]
        out = self.w_o(merge_heads(heads))  # Concat(heads) W_O: [B,T,C]
        if return_weights:
            return out, weights
        return out
        ### END SOLUTION


def score_elements(batch: int, num_heads: int, T: int) -> int:
    """Number of attention scores over all examples and heads: B·h·T² (Week 7 §17)."""
    ### BEGIN SOLUTION
    return batch * num_heads * T * T
    ### END SOLUTION


def mha_flops(T: int, d: int) -> int:
    """FLOPs of one MHA layer on one sequence, a multiply-add counted as 2 (Day 1 §5.1).

    Q, K, V projections 6·T·d² + Q·Kᵀ 2·T²·d + A·V 2·T²·d + W_O 2·T·d² = 8·T·d² + 4·T²·d.
    """
    ### BEGIN SOLUTION
    projections = 3 * 2 * T * d * d + 2 * T * d * d  # W_Q, W_K, W_V and W_O
    attention = 2 * T * T * d + 2 * T * T * d  # Q·Kᵀ and A·V, all heads together
    return projections + attention
    ### END SOLUTION


def attention_flop_fraction(T: int, d: int) -> float:
    """The T² (attention) share of `mha_flops`, a fraction in [0, 1] (Day 1 §5.1: T/(T+2d))."""
    ### BEGIN SOLUTION
    attention = 4 * T * T * d
    return attention / mha_flops(T, d)
    ### END SOLUTION


def attention_matrix_gib(batch: int, num_heads: int, T: int, bytes_per_element: int = 2, layers: int = 1) -> float:
    """Memory of the stored attention weights A [B,h,T,T], in GiB = 2³⁰ bytes (Day 1 §5.2).

    B·h·T²·bytes_per_element·layers / 2³⁰ (bf16: 2 bytes per element).
    """
    ### BEGIN SOLUTION
    elements = batch * num_heads * T * T  # one T×T matrix per example and head
    return elements * bytes_per_element * layers / 2**30
    ### END SOLUTION


def mha_param_count(d: int, bias: bool = True) -> int:
    """Parameters of one MHA layer: W_Q, W_K, W_V, W_O each d×d (+ d bias) (Day 1 §4.4).

    4·d² + 4·d with bias, 4·d² without; independent of the number of heads.
    """
    ### BEGIN SOLUTION
    per_projection = d * d + (d if bias else 0)
    return 4 * per_projection
    ### END SOLUTION
