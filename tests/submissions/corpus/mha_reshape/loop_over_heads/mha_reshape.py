"""One head at a time: slices of the feature axis, a loop, torch.stack / torch.cat."""

import math

import torch
import torch.nn as nn


def split_heads(x, num_heads):
    C = x.shape[2]
    if num_heads <= 0 or C % num_heads:
        raise ValueError(f"{C} features cannot be cut into {num_heads} heads")
    d = C // num_heads
    return torch.stack([x[:, :, i * d : (i + 1) * d] for i in range(num_heads)], dim=1)


def merge_heads(x):
    return torch.cat([x[:, i] for i in range(x.shape[1])], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if num_heads <= 0 or embed_dim % num_heads:
            raise ValueError("embed_dim is not divisible by num_heads")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)) > 0, persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError("too long")
        q, k, v = (
            split_heads(self.w_q(x), self.num_heads),
            split_heads(self.w_k(x), self.num_heads),
            split_heads(self.w_v(x), self.num_heads),
        )
        heads, all_weights = [], []
        for i in range(self.num_heads):
            s = q[:, i] @ k[:, i].transpose(-2, -1) / math.sqrt(C // self.num_heads)  # [B,T,T]
            allowed = self.mask[:T, :T].unsqueeze(0)
            if key_allowed is not None:
                allowed = allowed & key_allowed.bool()[:, None, :]
            s = s.masked_fill(~allowed, -math.inf)
            w = torch.softmax(s, dim=-1)
            all_weights.append(w)
            heads.append(w @ v[:, i])
        out = self.w_o(merge_heads(torch.stack(heads, dim=1)))
        if return_weights:
            return out, torch.stack(all_weights, dim=1)
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
