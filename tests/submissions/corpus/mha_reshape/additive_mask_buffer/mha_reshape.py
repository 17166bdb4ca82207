"""An additive float mask (0 / −∞) as a persistent buffer, as Week 7 §13 registers it;
torch.nn.functional.softmax of scores + mask."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if num_heads <= 0 or C % num_heads != 0:
        raise ValueError(f"cannot split {C} features into {num_heads} heads")
    return x.reshape(B, T, num_heads, C // num_heads).swapaxes(1, 2)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.swapaxes(1, 2).reshape(B, T, h * d)


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
        self.register_buffer("causal_mask", torch.full((context_length, context_length), float("-inf")).triu(1))

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError("T > context_length")
        q, k, v = (split_heads(w(x), self.num_heads) for w in (self.w_q, self.w_k, self.w_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C / self.num_heads)
        scores = scores + self.causal_mask[:T, :T].to(scores.dtype)
        if key_allowed is not None:
            scores = scores.masked_fill(~key_allowed.bool()[:, None, None, :], float("-inf"))
        weights = F.softmax(scores, dim=-1)
        out = self.w_o(merge_heads(weights @ v))
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
