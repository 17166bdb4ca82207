"""mha_reshape, terse functional style: `unflatten`/`flatten`, one `F.linear` over the three
projections' concatenated weights (split back into heads), a blocked-style (True = blocked)
non-persistent buffer, `mha_flops` as a lambda, and `4·d·(d + bias)` with bool arithmetic."""

import torch
import torch.nn.functional as F
from torch import nn


def split_heads(x, num_heads):
    if x.shape[-1] % num_heads:
        raise ValueError(f"{num_heads} heads do not divide C={x.shape[-1]}")
    return x.unflatten(-1, (num_heads, -1)).transpose(1, 2)


def merge_heads(x):
    return x.transpose(1, 2).flatten(2)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("embed_dim % num_heads != 0")
        self.h = num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(embed_dim, embed_dim, bias=bias) for _ in range(4))
        self.register_buffer("future", torch.ones(context_length, context_length, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        T = x.size(1)
        if T > self.future.size(0):
            raise ValueError("T > context_length")
        lins = (self.w_q, self.w_k, self.w_v)
        b = None if self.w_q.bias is None else torch.cat([l.bias for l in lins])
        q, k, v = split_heads(F.linear(x, torch.cat([l.weight for l in lins]), b), 3 * self.h).split(self.h, 1)
        blocked = self.future[:T, :T] if key_allowed is None else self.future[:T, :T] | ~key_allowed.bool()[:, None, None]
        a = (q @ k.mT * q.size(-1) ** -0.5).masked_fill(blocked, -torch.inf).softmax(-1)
        out = self.w_o(merge_heads(a @ v))
        return (out, a) if return_weights else out


def score_elements(batch, num_heads, T):
    return batch * num_heads * T**2


mha_flops = lambda T, d: 8 * T * d * d + 4 * T * T * d


def attention_flop_fraction(T, d):
    return T / (T + 2 * d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return batch * num_heads * T**2 * bytes_per_element * layers / 2**30


def mha_param_count(d, bias=True):
    return 4 * d * (d + bias)
