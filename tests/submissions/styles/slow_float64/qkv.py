"""qkv with explicit Python loops over the batch and over query rows (correct, slow-ish).
All in float64 too: a deliberately slow correct style."""

import functools
import math

import torch
import torch.nn as nn


# A deliberately slow style: the explicit loops below, every floating-point input cast to
# float64 first and the result cast back to the input's dtype. The grader's CPU-time limits
# must still let it through (autograder/runner/cpu_limits.py, docs/time-limits.md).
def _float64_everywhere(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        floats = [a.dtype for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.is_floating_point()]

        def up(a):
            return a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a

        def down(out):
            if isinstance(out, tuple):
                return tuple(down(o) for o in out)
            if floats and isinstance(out, torch.Tensor) and out.is_floating_point():
                return out.to(floats[0])
            return out

        return down(fn(*[up(a) for a in args], **{k: up(v) for k, v in kwargs.items()}))

    return run


@_float64_everywhere
def project_qkv(x, w_q, w_k, w_v):
    qs, ks, vs = [], [], []
    for b in range(x.shape[0]):
        qs.append(torch.matmul(x[b], w_q))
        ks.append(torch.matmul(x[b], w_k))
        vs.append(torch.matmul(x[b], w_v))
    return torch.stack(qs), torch.stack(ks), torch.stack(vs)


@_float64_everywhere
def attention_scores(q, k):
    return torch.matmul(q, torch.transpose(k, -1, -2))


@_float64_everywhere
def scale_scores(scores, d_k):
    return scores / d_k**0.5


@_float64_everywhere
def weighted_values(weights, v):
    return torch.matmul(weights, v)


@_float64_everywhere
def causal_uniform_mean(x):
    rows = []
    for t in range(x.shape[-2]):
        rows.append(x[..., : t + 1, :].mean(dim=-2))
    return torch.stack(rows, dim=-2)


def _softmax_row(row):
    m = row.max()
    e = torch.exp(row - m)
    return e / e.sum()


@_float64_everywhere
def single_head_attention(x, w_q, w_k, w_v, causal=True):
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    B, T, d = q.shape
    weights = torch.zeros(B, T, T, dtype=x.dtype)
    for b in range(B):
        for i in range(T):
            scores = (k[b] @ q[b, i]) / math.sqrt(d)
            if causal:
                scores = torch.cat([scores[: i + 1], torch.full((T - i - 1,), float("-inf"), dtype=x.dtype)])
            weights[b, i] = _softmax_row(scores)
    out = torch.stack([weights[b] @ v[b] for b in range(B)])
    return out, weights


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        m = torch.zeros(context_length, context_length, dtype=torch.bool)
        for i in range(context_length):
            m[i, : i + 1] = True
        self.register_buffer("causal_mask", m, persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        if T > len(self.causal_mask):
            raise ValueError(f"T={T} > context_length={len(self.causal_mask)}")
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~self.causal_mask[:T, :T], float("-inf"))
        return torch.softmax(scores, dim=2) @ v
