"""Skill mha_reshape typed from the lessons: Day 1 §4.3's multi-head forward (view + transpose,
one [d, d] matrix per projection) with Week 7 §13's register_buffer causal mask — persistent,
as printed — and the cost formulas of Week 7 §17 and Day 1 §4.4–§5. Adapted only to the
exercise API (submodule names w_q/w_k/w_v/w_o, split/merge as functions, key padding,
return_weights, the ValueErrors)."""

import math

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    B, T, d = x.shape
    h = num_heads
    if d % h != 0:
        raise ValueError("embed_dim must be divisible by num_heads")
    return x.view(B, T, h, d // h).transpose(1, 2)   # (B, h, T, d_k)  ← 头维挪到前面


def merge_heads(y):
    B, h, T, d_k = y.shape
    return y.transpose(1, 2).contiguous().view(B, T, h * d_k)  # (B, T, d)   ← 拼回去


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
        self.register_buffer(
            "causal_mask",
            torch.tril(
                torch.ones(
                    context_length,
                    context_length,
                    dtype=torch.bool,
                )
            ),
        )

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, d = x.shape
        h = self.h
        if T > self.causal_mask.size(0):
            raise ValueError("Sequence length exceeds context_length")
        q = split_heads(self.w_q(x), h)
        k = split_heads(self.w_k(x), h)
        v = split_heads(self.w_v(x), h)
        mask = ~self.causal_mask[:T, :T]                  # True = blocked
        if key_allowed is not None:
            mask = mask | ~key_allowed[:, None, None, :]   # padded keys are blocked too
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)   # (B, h, T, T)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = att @ v                                       # (B, h, T, d_k)
        y = merge_heads(y)
        y = self.w_o(y)
        if return_weights:
            return y, att
        return y


def score_elements(batch, num_heads, T):
    # Week 7 §17: B × n_head × T²
    return batch * num_heads * T * T


def mha_flops(T, d):
    # Day 1 §5.1: 合计 8Td² + 4T²d
    return 8 * T * d * d + 4 * T * T * d


def attention_flop_fraction(T, d):
    return 4 * T * T * d / mha_flops(T, d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    # Day 1 §5.2: B·h·T² elements of A per layer
    return batch * num_heads * T * T * bytes_per_element * layers / 2**30


def mha_param_count(d, bias=True):
    # Day 1 §4.4: four d×d matrices (+ four biases)
    return 4 * d * d + (4 * d if bias else 0)
