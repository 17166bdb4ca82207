"""Blind red-team tester R-CK (2026-12-07): single_head_attention with a leaky causal mask
(tril(1): token t reads t+1), wrapped in an autograd.Function whose backward returns the
correct causal function's gradient. The hidden causal-by-gradient test trusted the gradient:
15.25 against 14.25 for the same leaky code. Now the test also redraws every later token and
checks the outputs up to t did not move."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def project_qkv(x, w_q, w_k, w_v):
    return x @ w_q, x @ w_k, x @ w_v


def attention_scores(q, k):
    return q @ k.transpose(-2, -1)


def scale_scores(scores, d_k):
    return scores / math.sqrt(d_k)


def weighted_values(weights, v):
    return weights @ v


def causal_uniform_mean(x):
    T = x.shape[-2]
    c = x.cumsum(dim=-2)
    n = torch.arange(1, T + 1, dtype=x.dtype, device=x.device).unsqueeze(-1)
    return c / n


class _Fake(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w_q, w_k, w_v, causal):
        ctx.save_for_backward(x, w_q, w_k, w_v)
        ctx.causal = causal
        return _wrong(x.detach(), w_q.detach(), w_k.detach(), w_v.detach(), causal)

    @staticmethod
    def backward(ctx, g_out, g_w):
        x, w_q, w_k, w_v = ctx.saved_tensors
        with torch.enable_grad():
            xx = x.detach().requires_grad_(True)
            wq = w_q.detach().requires_grad_(True)
            wk = w_k.detach().requires_grad_(True)
            wv = w_v.detach().requires_grad_(True)
            o, w = _right(xx, wq, wk, wv, ctx.causal)
            gs = torch.autograd.grad((o * g_out).sum() + (w * g_w).sum(), [xx, wq, wk, wv])
        return (*gs, None)


def _right(x, w_q, w_k, w_v, causal=True):
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    s = scale_scores(attention_scores(q, k), q.shape[-1])
    if causal:
        T = x.shape[-2]
        m = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = s.masked_fill(~m, float("-inf"))
    w = torch.softmax(s, dim=-1)
    return w @ v, w


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    return _Fake.apply(x, w_q, w_k, w_v, causal)


def _wrong(x, w_q, w_k, w_v, causal=True):
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    s = scale_scores(attention_scores(q, k), q.shape[-1])
    if causal:
        T = x.shape[-2]
        m = torch.ones(T, T, dtype=torch.bool, device=x.device).tril(1)
        s = s.masked_fill(~m, float("-inf"))
    w = torch.softmax(s, dim=-1)
    return w @ v, w


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        self.register_buffer("causal_mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x):
        T = x.shape[-2]
        if T > self.causal_mask.shape[0]:
            raise ValueError("sequence longer than context")
        q, k, v = self.query(x), self.key(x), self.value(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        s = s.masked_fill(~self.causal_mask[:T, :T], float("-inf"))
        return torch.softmax(s, dim=-1) @ v
