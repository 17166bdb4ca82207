"""(B·h) flattened into one batch axis for torch.bmm; unflatten/flatten for the heads."""

import math

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    C = x.shape[-1]
    if num_heads <= 0 or C % num_heads != 0:
        raise ValueError("width not divisible by the number of heads")
    return x.unflatten(-1, (num_heads, C // num_heads)).transpose(1, 2)


def merge_heads(x):
    return x.transpose(1, 2).flatten(2)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError("embed_dim % num_heads != 0")
        self.num_heads = num_heads
        self.context_length = context_length
        for name in ("w_q", "w_k", "w_v", "w_o"):
            setattr(self, name, nn.Linear(embed_dim, embed_dim, bias=bias))
        self.register_buffer("causal", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)), persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError(f"T={T} > context_length={self.context_length}")
        h = self.num_heads
        q, k, v = (split_heads(f(x), h).reshape(B * h, T, C // h) for f in (self.w_q, self.w_k, self.w_v))
        scores = torch.bmm(q, k.transpose(1, 2)).mul(1.0 / math.sqrt(C // h)).view(B, h, T, T)
        allowed = self.causal[:T, :T].expand(B, 1, T, T)
        if key_allowed is not None:
            allowed = allowed & key_allowed.to(torch.bool).view(B, 1, 1, T)
        scores = scores.masked_fill(allowed.logical_not(), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        heads = torch.bmm(weights.reshape(B * h, T, T), v).view(B, h, T, C // h)
        out = self.w_o(merge_heads(heads))
        if return_weights:
            return out, weights
        return out


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
