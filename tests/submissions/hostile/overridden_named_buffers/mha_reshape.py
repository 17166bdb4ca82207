"""Blind red-team tester R-CL (2026-12-07): MultiHeadAttention builds its mask in forward, holds no
buffer, and overrides named_buffers to report one: 15 against 14.06. Now describe_module reads
nn.Module's own dicts."""
from __future__ import annotations
import math
import torch
import torch.nn as nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if C % num_heads != 0:
        raise ValueError("C % h")
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim % num_heads")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.ctxlen = context_length

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        n = self.ctxlen
        yield "mask", torch.ones(n, n, dtype=torch.bool).tril()

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError("too long")
        q = split_heads(self.w_q(x), self.num_heads)
        k = split_heads(self.w_k(x), self.num_heads)
        v = split_heads(self.w_v(x), self.num_heads)
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.num_heads)
        allowed = torch.ones(T, T, dtype=torch.bool).tril()
        if key_allowed is not None:
            allowed = allowed & key_allowed[:, None, None, :]
        s = s.masked_fill(~allowed, float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        e = torch.exp(s - m)
        w = e / e.sum(dim=-1, keepdim=True)
        out = self.w_o(merge_heads(w @ v))
        return (out, w) if return_weights else out


def score_elements(batch, num_heads, T):
    return batch * num_heads * T * T


def mha_flops(T, d):
    return 8 * T * d * d + 4 * T * T * d


def attention_flop_fraction(T, d):
    return (4 * T * T * d) / mha_flops(T, d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return batch * num_heads * T * T * bytes_per_element * layers / 2**30


def mha_param_count(d, bias=True):
    return 4 * d * d + (4 * d if bias else 0)
