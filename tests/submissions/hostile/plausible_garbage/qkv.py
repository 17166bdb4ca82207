"""Plausible garbage: every function returns the right shapes and dtypes, and whatever
properties are cheap to fake (rows summing to 1, zero future weight, equivariance),
but never the right values. Any test it passes gives points for nothing."""
import torch
from torch import nn


def _causal_uniform(B, T, dtype):
    w = torch.tril(torch.ones(T, T, dtype=dtype))
    return (w / w.sum(-1, keepdim=True)).expand(B, T, T).clone()


def project_qkv(x, w_q, w_k, w_v):
    B, T, _ = x.shape
    return torch.zeros(B, T, w_q.shape[1], dtype=x.dtype), torch.zeros(B, T, w_k.shape[1], dtype=x.dtype), torch.zeros(B, T, w_v.shape[1], dtype=x.dtype)


def attention_scores(q, k):
    return torch.zeros(q.shape[:-1] + (k.shape[-2],), dtype=q.dtype)


def scale_scores(scores, d_k):
    return torch.zeros_like(scores)


def weighted_values(weights, v):
    return torch.zeros(weights.shape[:-1] + (v.shape[-1],), dtype=v.dtype)


def causal_uniform_mean(x):
    return torch.zeros_like(x)


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    B, T, _ = x.shape
    return torch.zeros(B, T, w_v.shape[1], dtype=x.dtype), _causal_uniform(B, T, x.dtype)


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        self.register_buffer("causal_mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x):
        if x.shape[1] > self.causal_mask.shape[0]:
            raise ValueError("T > context_length")
        return torch.zeros(x.shape[0], x.shape[1], self.value.out_features, dtype=x.dtype)
