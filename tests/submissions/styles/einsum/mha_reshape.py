"""mha_reshape written with einsum everywhere and an additive (0 / -inf) mask buffer."""
import math

import torch
from torch import nn


def split_heads(x, num_heads):
    b, t, c = x.shape
    if c % num_heads:
        raise ValueError("width %d cannot be cut into %d heads" % (c, num_heads))
    return torch.einsum("bthe->bhte", x.unflatten(-1, (num_heads, c // num_heads)))


def merge_heads(x):
    return torch.einsum("bhte->bthe", x).flatten(start_dim=2)


def _project(layer, x):
    y = torch.einsum("btc,oc->bto", x, layer.weight)
    if layer.bias is not None:
        y = y + layer.bias
    return y


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be a multiple of num_heads")
        self.n_head = num_heads
        self.ctx = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        penalty = torch.full((context_length, context_length), float("-inf")).triu(1)
        self.register_buffer("penalty", penalty, persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        n_tok = x.shape[1]
        if n_tok > self.ctx:
            raise ValueError("too many tokens for this context window")
        q = split_heads(_project(self.w_q, x), self.n_head)
        k = split_heads(_project(self.w_k, x), self.n_head)
        v = split_heads(_project(self.w_v, x), self.n_head)
        logits = torch.einsum("bhqe,bhke->bhqk", q, k) / math.sqrt(q.shape[-1])
        logits = logits + self.penalty[:n_tok, :n_tok].to(logits.dtype)
        if key_allowed is not None:
            pad = torch.zeros(key_allowed.shape, dtype=logits.dtype).masked_fill(~key_allowed.bool(), float("-inf"))
            logits = logits + torch.einsum("bk->bk", pad)[:, None, None, :]
        att = logits.softmax(dim=-1)
        mixed = torch.einsum("bhqk,bhke->bhqe", att, v)
        y = _project(self.w_o, merge_heads(mixed))
        return (y, att) if return_weights else y


def score_elements(batch, num_heads, T):
    return batch * num_heads * T ** 2


def mha_flops(T, d):
    return 4 * T * d * (2 * d + T)


def attention_flop_fraction(T, d):
    return T / (T + 2 * d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return score_elements(batch, num_heads, T) * bytes_per_element * layers / 1024 ** 3


def mha_param_count(d, bias=True):
    return 4 * d * (d + (1 if bias else 0))
