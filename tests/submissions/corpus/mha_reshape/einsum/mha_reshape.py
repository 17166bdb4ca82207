"""Heads by view/permute, attention by einsum."""

import math

import torch
from torch import nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if num_heads <= 0 or C % num_heads:
        raise ValueError(f"C={C} is not divisible by num_heads={num_heads}")
    return x.reshape(B, T, num_heads, C // num_heads).permute(0, 2, 1, 3)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.permute(0, 2, 1, 3).reshape(B, T, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if num_heads <= 0 or embed_dim % num_heads:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.h, self.T_max = num_heads, context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("tril", torch.ones(context_length, context_length).tril().bool(), persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        T = x.shape[1]
        if T > self.T_max:
            raise ValueError("sequence longer than the context")
        q, k, v = (split_heads(w(x), self.h) for w in (self.w_q, self.w_k, self.w_v))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
        allowed = self.tril[:T, :T]
        if key_allowed is not None:
            allowed = allowed & key_allowed.bool()[:, None, None, :]
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        out = self.w_o(merge_heads(torch.einsum("bhqk,bhkd->bhqd", weights, v)))
        return (out, weights) if return_weights else out


def score_elements(batch, num_heads, T):
    return batch * num_heads * T**2


def mha_flops(T, d):
    return 8 * T * d * d + 4 * T * T * d


def attention_flop_fraction(T, d):
    return (4 * T * T * d) / mha_flops(T, d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return score_elements(batch, num_heads, T) * bytes_per_element * layers / 2**30


def mha_param_count(d, bias=True):
    return 4 * d * d + (4 * d if bias else 0)
