"""mha_reshape computing internally in float64, softmax as exp(s - logsumexp(s)), cast back."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def split_heads(x, num_heads):
    B, T, C = x.shape
    if C % num_heads:
        raise ValueError(f"{C} features do not split into {num_heads} heads")
    return x.contiguous().view(B, T, num_heads, C // num_heads).permute(0, 2, 1, 3)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(B, T, h * d)


def _lin64(layer, x64):
    b = None if layer.bias is None else layer.bias.double()
    return F.linear(x64, layer.weight.double(), b)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("num_heads must divide embed_dim")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias)
        self.register_buffer("future", torch.ones(context_length, context_length).triu(1).bool(), persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        T = x.size(1)
        if T > self.context_length:
            raise ValueError(f"T={T} > context_length={self.context_length}")
        x64 = x.double()
        q = split_heads(_lin64(self.w_q, x64), self.num_heads)
        k = split_heads(_lin64(self.w_k, x64), self.num_heads)
        v = split_heads(_lin64(self.w_v, x64), self.num_heads)
        s = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(q.size(-1)))
        blocked = self.future[:T, :T]
        if key_allowed is not None:
            blocked = blocked | key_allowed.logical_not()[:, None, None, :]
        s = torch.where(blocked, torch.tensor(float("-inf"), dtype=torch.float64), s)
        p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
        y = _lin64(self.w_o, merge_heads(torch.matmul(p, v))).to(x.dtype)
        if return_weights:
            return y, p.to(x.dtype)
        return y


def score_elements(batch, num_heads, T):
    return int(batch) * int(num_heads) * int(T) * int(T)


def mha_flops(T, d):
    projections = 8 * T * d * d
    attention = 4 * T * T * d
    return projections + attention


def attention_flop_fraction(T, d):
    attention = 4.0 * T * T * d
    return float(attention / (8.0 * T * d * d + attention))


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    n_bytes = score_elements(batch, num_heads, T) * bytes_per_element * layers
    return n_bytes / float(1 << 30)


def mha_param_count(d, bias=True):
    weights = 4 * d * d
    return weights + 4 * d if bias else weights
