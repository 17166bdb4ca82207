"""qkv, written with einsum throughout (a correct submission in another style)."""
import math

import torch
from torch import nn


def project_qkv(x, w_q, w_k, w_v):
    proj = lambda w: torch.einsum("btc,cd->btd", x, w)
    return proj(w_q), proj(w_k), proj(w_v)


def attention_scores(q, k):
    return torch.einsum("...ld,...sd->...ls", q, k)


def scale_scores(scores, d_k):
    return scores * (1.0 / math.sqrt(d_k))


def weighted_values(weights, v):
    return torch.einsum("...ls,...sd->...ld", weights, v)


def causal_uniform_mean(x):
    T = x.shape[-2]
    lower = torch.tril(torch.ones(T, T, dtype=x.dtype, device=x.device))
    lower = lower / lower.sum(dim=-1, keepdim=True)
    return torch.einsum("ts,...sc->...tc", lower, x)


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    s = scale_scores(attention_scores(q, k), q.shape[-1])
    if causal:
        T = s.shape[-1]
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        s = s.masked_fill(future, -math.inf)
    p = s.softmax(dim=-1)
    return weighted_values(p, v), p


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        self.register_buffer("causal_mask", torch.ones(context_length, context_length).tril().bool(), persistent=False)

    def forward(self, x):
        n = x.shape[1]
        if n > self.causal_mask.shape[0]:
            raise ValueError("too long")
        q, k, v = self.query(x), self.key(x), self.value(x)
        s = torch.einsum("bid,bjd->bij", q, k) / math.sqrt(q.shape[-1])
        s = s.masked_fill(self.causal_mask[:n, :n].logical_not(), float("-inf"))
        return torch.einsum("bij,bjd->bid", s.softmax(-1), v)
