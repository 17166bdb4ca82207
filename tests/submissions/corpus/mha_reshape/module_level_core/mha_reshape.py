"""Blind fairness tester R-CQ (2026-12-07), style mr7_global_core: the file's own method on its own
instance, once read as torch's (the skill scored 0)."""

from __future__ import annotations

import torch
import torch.nn as nn


class _Core:
    @staticmethod
    def scaled_dot_product_attention(q, k, v, allowed):
        """My own attention core (not torch's fused kernel)."""
        s = torch.einsum("bhid,bhjd->bhij", q, k) * (q.shape[-1] ** -0.5)
        s = s.masked_fill(allowed.logical_not(), float("-inf"))
        w = s.softmax(dim=-1)
        return torch.einsum("bhij,bhjd->bhid", w, v), w


_CORE = _Core()


def split_heads(x, num_heads):
    if x.shape[-1] % num_heads:
        raise ValueError("C % num_heads")
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)


def merge_heads(x):
    return torch.cat(tuple(x.unbind(dim=1)), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("embed_dim % num_heads")
        self.h = num_heads
        self.T_max = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("blocked", torch.ones(context_length, context_length).triu(1) > 0, persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        T = x.shape[1]
        if T > self.T_max:
            raise ValueError("T > context_length")
        allowed = ~self.blocked[:T, :T]
        if key_allowed is not None:
            allowed = allowed[None, None] & key_allowed[:, None, None, :]
        o, w = _CORE.scaled_dot_product_attention(
            split_heads(self.w_q(x), self.h), split_heads(self.w_k(x), self.h), split_heads(self.w_v(x), self.h), allowed
        )
        y = self.w_o(merge_heads(o))
        return (y, w) if return_weights else y


def score_elements(batch, num_heads, T):
    return batch * num_heads * T * T


def mha_flops(T, d):
    return 8 * T * d * d + 4 * T * T * d


def attention_flop_fraction(T, d):
    return T / (T + 2 * d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return batch * num_heads * T * T * bytes_per_element * layers / (1 << 30)


def mha_param_count(d, bias=True):
    return 4 * d * d + (4 * d if bias else 0)
