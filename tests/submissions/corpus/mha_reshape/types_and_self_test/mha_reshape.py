"""Correct, from blind tester R-K (2026-12-05): torch's MultiheadAttention named in a type annotation
and an isinstance check, never called, and a self-test against F.scaled_dot_product_attention under
the main guard (Day 1 §B: 再与 F.scaled_dot_product_attention 对拍). None of it runs in the grader."""

from __future__ import annotations

import math

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if C % num_heads != 0:
        raise ValueError("C must be divisible by num_heads")
    return x.view(B, T, num_heads, C // num_heads).transpose(1, 2)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.h = num_heads
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        causal = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", causal, persistent=False)

    @torch.no_grad()
    def load_from_torch(self, mha: nn.MultiheadAttention) -> None:
        """Copy the weights of a torch MultiheadAttention (for comparing outputs)."""
        wq, wk, wv = mha.in_proj_weight.chunk(3)
        self.w_q.weight.copy_(wq)
        self.w_k.weight.copy_(wk)
        self.w_v.weight.copy_(wv)
        self.w_o.weight.copy_(mha.out_proj.weight)

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, d = x.shape
        if T > self.mask.size(0):
            raise ValueError("T > context_length")
        h = self.h
        q = self.w_q(x).view(B, T, h, d // h).transpose(1, 2)
        k = self.w_k(x).view(B, T, h, d // h).transpose(1, 2)
        v = self.w_v(x).view(B, T, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        mask = self.mask[:T, :T]
        if key_allowed is not None:
            mask = mask | ~key_allowed[:, None, None, :]
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, d)
        y = self.w_o(y)
        if return_weights:
            return y, att
        return y


def score_elements(batch, num_heads, T):
    return batch * num_heads * T**2


def mha_flops(T, d):
    return 8 * T * d**2 + 4 * T**2 * d


def attention_flop_fraction(T, d):
    return T / (T + 2 * d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return batch * num_heads * T * T * bytes_per_element * layers / 2**30


def mha_param_count(d, bias=True):
    return 4 * d * d + (4 * d if bias else 0)


def is_torch_mha(m: object) -> bool:
    """True for torch's own module (used only to tell the two apart in my notebook)."""
    return isinstance(m, nn.MultiheadAttention)


if __name__ == "__main__":
    import torch.nn.functional as F

    torch.manual_seed(0)
    m = MultiHeadAttention(8, 2, 16).eval()
    x = torch.randn(2, 5, 8)
    q = split_heads(m.w_q(x), 2)
    k = split_heads(m.w_k(x), 2)
    v = split_heads(m.w_v(x), 2)
    ref = m.w_o(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
    assert torch.allclose(m(x), ref, atol=1e-6)
    print("matches SDPA")
