"""mha_reshape — loops over heads."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if C % num_heads != 0:
        raise ValueError("C must be divisible by num_heads")
    d = C // num_heads
    return torch.stack([x[:, :, i * d : (i + 1) * d] for i in range(num_heads)], dim=1)


def merge_heads(x):
    return torch.cat([x[:, i] for i in range(x.shape[1])], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("embed_dim % num_heads != 0")
        self.h = num_heads
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)))

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.mask.shape[0]:
            raise ValueError("too long")
        d = C // self.h
        Q, K, V = self.w_q(x), self.w_k(x), self.w_v(x)
        heads_out = []
        heads_w = []
        for hd in range(self.h):
            sl = slice(hd * d, (hd + 1) * d)
            q, k, v = Q[..., sl], K[..., sl], V[..., sl]
            per_b_o, per_b_w = [], []
            for b in range(B):
                s = (q[b] @ k[b].T) / math.sqrt(d)
                allowed = self.mask[:T, :T]
                if key_allowed is not None:
                    allowed = allowed & key_allowed[b].bool()[None, :]
                s = s.masked_fill(~allowed, float("-inf"))
                w = torch.softmax(s, dim=-1)
                per_b_w.append(w)
                per_b_o.append(w @ v[b])
            heads_out.append(torch.stack(per_b_o))
            heads_w.append(torch.stack(per_b_w))
        out = self.w_o(torch.cat(heads_out, dim=-1))
        if return_weights:
            return out, torch.stack(heads_w, dim=1)
        return out


def score_elements(batch, num_heads, T):
    n = 0
    for _ in range(batch * num_heads):
        n += T * T
    return n


def mha_flops(T, d):
    proj = 4 * (2 * T * d * d)
    attn = 2 * (2 * T * T * d)
    return proj + attn


def attention_flop_fraction(T, d):
    return T / (T + 2 * d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return (batch * num_heads * T**2 * bytes_per_element * layers) / math.pow(2, 30)


def mha_param_count(d, bias=True):
    total = 0
    for _ in range(4):
        total += d * d
        if bias:
            total += d
    return total
