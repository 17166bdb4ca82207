"""Weights as exp(S − logsumexp(S)); heads with chunk/stack."""

import math

import torch
from torch import nn


def split_heads(x, num_heads):
    if num_heads <= 0 or x.shape[-1] % num_heads != 0:
        raise ValueError("C % num_heads != 0")
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)


def merge_heads(x):
    return torch.cat(x.unbind(1), dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias)
        self.register_buffer("keep", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)), persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        T = x.shape[-2]
        if T > self.context_length:
            raise ValueError("T exceeds the context length")
        q, k, v = [split_heads(layer(x), self.num_heads) for layer in (self.w_q, self.w_k, self.w_v)]
        scores = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1]))
        allowed = self.keep[:T, :T]
        if key_allowed is not None:
            allowed = allowed & key_allowed.bool()[:, None, None]
        scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))
        out = self.w_o(merge_heads(weights @ v))
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
