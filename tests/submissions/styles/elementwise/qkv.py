"""qkv written the way the formulas read, one element at a time: each score a torch.dot of one
query and one key, each softmax row's max found by a Python loop over its floats (blind tester
R-M). Correct, and the slowest style here: it sets qkv's CPU limits with the other slow_solutions."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def project_qkv(x, w_q, w_k, w_v):
    B, T, C = x.shape
    outs = []
    for w in (w_q, w_k, w_v):
        rows = []
        for b in range(B):
            toks = []
            for t in range(T):
                toks.append(x[b, t] @ w)
            rows.append(torch.stack(toks))
        outs.append(torch.stack(rows))
    return outs[0], outs[1], outs[2]


def _flat(t, keep):
    lead = t.shape[:-keep]
    return t.reshape((-1,) + tuple(t.shape[-keep:])), lead


def attention_scores(q, k):
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    q = q.expand(lead + q.shape[-2:]).reshape((-1,) + q.shape[-2:])
    k = k.expand(lead + k.shape[-2:]).reshape((-1,) + k.shape[-2:])
    L, S = q.shape[-2], k.shape[-2]
    out = q.new_zeros((q.shape[0], L, S))
    for n in range(q.shape[0]):
        for i in range(L):
            for j in range(S):
                out[n, i, j] = torch.dot(q[n, i], k[n, j])
    return out.reshape(lead + (L, S))


def scale_scores(scores, d_k):
    return scores * (1.0 / math.sqrt(d_k))


def weighted_values(weights, v):
    lead = torch.broadcast_shapes(weights.shape[:-2], v.shape[:-2])
    w = weights.expand(lead + weights.shape[-2:]).reshape((-1,) + weights.shape[-2:])
    vv = v.expand(lead + v.shape[-2:]).reshape((-1,) + v.shape[-2:])
    L, S = w.shape[-2:]
    out = vv.new_zeros((w.shape[0], L, vv.shape[-1]))
    for n in range(w.shape[0]):
        for i in range(L):
            acc = torch.zeros_like(vv[n, 0])
            for j in range(S):
                acc = acc + w[n, i, j] * vv[n, j]
            out[n, i] = acc
    return out.reshape(lead + (L, vv.shape[-1]))


def causal_uniform_mean(x):
    T = x.shape[-2]
    rows = []
    running = torch.zeros_like(x[..., 0, :])
    for t in range(T):
        running = running + x[..., t, :]
        rows.append(running / (t + 1))
    return torch.stack(rows, dim=-2)


def _row_softmax(row):
    m = max(float(val) for val in row if math.isfinite(float(val))) if any(math.isfinite(float(val)) for val in row) else 0.0
    e = torch.exp(row - m)
    return e / e.sum()


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    B, T, d_k = q.shape
    s = scale_scores(attention_scores(q, k), d_k)
    w = torch.empty_like(s)
    for b in range(B):
        for i in range(T):
            row = s[b, i]
            if causal:
                row = torch.cat([row[: i + 1], torch.full((T - i - 1,), float("-inf"), dtype=s.dtype, device=s.device)])
            w[b, i] = _row_softmax(row)
    return weighted_values(w, v), w


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        self.context_length = context_length
        m = torch.zeros(context_length, context_length, dtype=torch.bool)
        for i in range(context_length):
            for j in range(i + 1):
                m[i, j] = True
        self.register_buffer("causal_mask", m)

    def forward(self, x):
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError("sequence longer than context_length")
        q, k, v = self.query(x), self.key(x), self.value(x)
        outs = []
        for b in range(B):
            rows = []
            for i in range(T):
                sc = (k[b, :T] @ q[b, i]) / math.sqrt(q.shape[-1])
                sc = sc.masked_fill(~self.causal_mask[i, :T], float("-inf"))
                w = _row_softmax(sc)
                rows.append(w @ v[b])
            outs.append(torch.stack(rows))
        return torch.stack(outs)
