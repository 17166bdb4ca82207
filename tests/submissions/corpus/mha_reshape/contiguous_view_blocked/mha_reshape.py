"""contiguous() + view for the reshapes; the buffer is blocked-style (True = masked)."""

import math

import torch
from torch import nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if num_heads <= 0 or C % num_heads != 0:
        raise ValueError("num_heads must divide C")
    return x.contiguous().view(B, T, num_heads, C // num_heads).permute(0, 2, 1, 3)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(B, T, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        blocked = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("blocked", blocked, persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, _ = x.shape
        if T > self.context_length:
            raise ValueError("input too long for context_length")
        q = split_heads(self.w_q(x), self.num_heads)
        k = split_heads(self.w_k(x), self.num_heads)
        v = split_heads(self.w_v(x), self.num_heads)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        blocked = self.blocked[:T, :T].view(1, 1, T, T)
        if key_allowed is not None:
            blocked = blocked | ~key_allowed.bool().view(B, 1, 1, T)
        weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        out = self.w_o(merge_heads(torch.matmul(weights, v)))
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
