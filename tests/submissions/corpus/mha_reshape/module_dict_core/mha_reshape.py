"""Blind fairness tester R-CS (2026-12-07), style mh_moduledict: the student's own scaled_dot_product_attention reached
through its own objects, once refused by the rule scan (the skill scored 0)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    B, T, C = x.shape
    if C % num_heads != 0:
        raise ValueError("C must be divisible by num_heads")
    return x.view(B, T, num_heads, C // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    B, h, T, d = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, h * d)


def _attend(q, k, v, allowed):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~allowed, float("-inf"))
    w = torch.softmax(s, dim=-1)
    return w @ v, w


class Core(nn.Module):
    def scaled_dot_product_attention(self, q, k, v, allowed):
        return _attend(q, k, v, allowed)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim % num_heads != 0")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)), persistent=False)
        self.ops = nn.ModuleDict({"core": Core()})

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError("T > context_length")
        q = split_heads(self.w_q(x), self.num_heads)
        k = split_heads(self.w_k(x), self.num_heads)
        v = split_heads(self.w_v(x), self.num_heads)
        allowed = self.mask[:T, :T]
        if key_allowed is not None:
            allowed = allowed & key_allowed[:, None, None, :].bool()
        o, w = self.ops["core"].scaled_dot_product_attention(q, k, v, allowed)
        out = self.w_o(merge_heads(o))
        if return_weights:
            return out, w
        return out


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
