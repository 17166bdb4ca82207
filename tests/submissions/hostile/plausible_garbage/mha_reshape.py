"""Plausible garbage for mha_reshape: shapes right, values wrong, counts off."""
import torch
from torch import nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if C % num_heads:
        raise ValueError("C % h")
    return torch.zeros(B, num_heads, T, C // num_heads, dtype=x.dtype)


def merge_heads(x):
    B, h, T, d = x.shape
    return torch.zeros(B, T, h * d, dtype=x.dtype)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("embed_dim % num_heads")
        self.num_heads = num_heads
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.mask.shape[0]:
            raise ValueError("T > context_length")
        out = torch.zeros_like(x)
        if return_weights:
            w = self.mask[:T, :T].to(x.dtype)
            w = (w / w.sum(-1, keepdim=True)).expand(B, self.num_heads, T, T).clone()
            return out, w
        return out


def score_elements(batch, num_heads, T):
    return batch * num_heads * T


def mha_flops(T, d):
    return 8 * T * d * d


def attention_flop_fraction(T, d):
    return 0.5


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return 0.0


def mha_param_count(d, bias=True):
    return 4 * d * d
