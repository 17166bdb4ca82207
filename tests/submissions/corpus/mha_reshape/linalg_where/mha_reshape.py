"""torch.linalg.matmul for the products, torch.where for the masks."""

import math

import torch
from torch import nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if num_heads <= 0 or C % num_heads != 0:
        raise ValueError("C must be divisible by num_heads")
    return torch.transpose(torch.reshape(x, (B, T, num_heads, C // num_heads)), 1, 2)


def merge_heads(x):
    B, h, T, d = x.shape
    return torch.reshape(torch.transpose(x, 1, 2), (B, T, h * d))


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be a multiple of num_heads")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        rows = torch.arange(context_length)
        self.register_buffer("allowed", rows[:, None] >= rows[None, :], persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        T = x.size(1)
        if T > self.context_length:
            raise ValueError("input longer than context_length")
        q = split_heads(self.w_q(x), self.num_heads)
        k = split_heads(self.w_k(x), self.num_heads)
        v = split_heads(self.w_v(x), self.num_heads)
        scores = torch.linalg.matmul(q, k.mT) / math.sqrt(q.size(-1))
        allowed = self.allowed[:T, :T]
        if key_allowed is not None:
            allowed = torch.logical_and(allowed, key_allowed.bool().unsqueeze(1).unsqueeze(1))
        scores = torch.where(allowed, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
        e = torch.exp(scores - scores.amax(-1, keepdim=True))
        weights = e / e.sum(-1, keepdim=True)
        out = self.w_o(merge_heads(torch.linalg.matmul(weights, v)))
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
