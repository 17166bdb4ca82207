"""A method of the module named after the lesson's term, written by hand."""

import math

import torch
from torch import nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if num_heads <= 0 or C % num_heads != 0:
        raise ValueError("C must be divisible by num_heads")
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("causal_allowed", torch.tril(torch.ones(context_length, context_length)).bool(), persistent=False)

    def scaled_dot_product_attention(self, q, k, v, allowed):
        scores = (q @ k.mT) / math.sqrt(q.size(-1))
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        return weights @ v, weights

    def forward(self, x, key_allowed=None, return_weights=False):
        T = x.size(1)
        if T > self.context_length:
            raise ValueError("sequence longer than context_length")
        allowed = self.causal_allowed[:T, :T]
        if key_allowed is not None:
            allowed = allowed & key_allowed.bool()[:, None, None, :]
        heads, weights = self.scaled_dot_product_attention(
            split_heads(self.w_q(x), self.num_heads),
            split_heads(self.w_k(x), self.num_heads),
            split_heads(self.w_v(x), self.num_heads),
            allowed,
        )
        out = self.w_o(merge_heads(heads))
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
