"""mha_reshape, defensive object-oriented style: `reshape` + `permute` / `contiguous().view`,
an additive float causal buffer (0 / −∞, non-persistent: the contract leaves the buffer's name
and polarity free), and the attention of all heads in the module's own method named
`scaled_dot_product_attention` (tensor operations, not the torch function)."""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["split_heads", "merge_heads", "MultiHeadAttention", "score_elements", "mha_flops", "attention_flop_fraction", "attention_matrix_gib", "mha_param_count"]


def _head_width(width: int, num_heads: int) -> int:
    if num_heads <= 0 or width % num_heads != 0:
        raise ValueError(f"num_heads={num_heads} must divide the feature width {width}")
    return width // num_heads


def split_heads(x, num_heads):
    """[B,T,C] -> [B,h,T,C/h]."""
    if x.dim() != 3:
        raise ValueError("x must be [B,T,C]")
    B, T, C = x.shape
    d = _head_width(C, num_heads)
    return x.reshape(B, T, num_heads, d).permute(0, 2, 1, 3)


def merge_heads(x):
    """[B,h,T,d] -> [B,T,h*d]."""
    if x.dim() != 4:
        raise ValueError("x must be [B,h,T,d]")
    B, h, T, d = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(B, T, h * d)


class MultiHeadAttention(nn.Module):
    """Causal MHA from tensor operations; the causal mask is kept as an additive float buffer."""

    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        self.head_width = _head_width(embed_dim, num_heads)
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        future = torch.ones(context_length, context_length, dtype=torch.bool).triu(diagonal=1)
        additive = torch.zeros(context_length, context_length).masked_fill(future, float("-inf"))
        self.register_buffer("additive_causal", additive, persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        if x.dim() != 3:
            raise ValueError("x must be [B,T,C]")
        T = x.size(1)
        if T > self.context_length:
            raise ValueError(f"T={T} exceeds context_length={self.context_length}")
        q, k, v = (split_heads(proj(x), self.num_heads) for proj in (self.w_q, self.w_k, self.w_v))
        mixed, weights = self.scaled_dot_product_attention(q, k, v, key_allowed)
        out = self.w_o(merge_heads(mixed))
        return (out, weights) if return_weights else out

    def scaled_dot_product_attention(self, q, k, v, key_allowed=None):
        """All heads at once, from tensor operations (this module's own method, not torch's)."""
        T = q.size(-2)
        scores = q.matmul(k.transpose(-2, -1)) / math.sqrt(self.head_width)
        scores = scores + self.additive_causal[:T, :T].to(dtype=scores.dtype, device=scores.device)
        if key_allowed is not None:
            blocked = key_allowed.to(torch.bool).logical_not()[:, None, None, :]
            scores = scores.masked_fill(blocked, float("-inf"))
        weights = scores.softmax(dim=-1)
        return weights.matmul(v), weights


def score_elements(batch, num_heads, T):
    return batch * num_heads * T * T


def mha_flops(T, d):
    projections = 4 * (2 * T * d * d)
    scores_and_mix = 2 * (2 * T * T * d)
    return projections + scores_and_mix


def attention_flop_fraction(T, d):
    total = mha_flops(T, d)
    return (4 * T * T * d) / total if total else 0.0


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return score_elements(batch, num_heads, T) * bytes_per_element * layers / float(1 << 30)


def mha_param_count(d, bias=True):
    per_projection = d * d + (d if bias else 0)
    return 4 * per_projection
