"""custom_backward — torch.vmap (torch.func) used for the per-row softmax backward (batching only,
no autograd transform); forward with ctx.needs_input_grad-independent saving; mask kept as attribute."""

from __future__ import annotations

import math

import torch
from torch.func import vmap


def _row(d_row, a_row):
    return a_row * (d_row - torch.dot(d_row, a_row))


def softmax_backward(d_weights, weights):
    S = weights.shape[-1]
    flat = vmap(_row)(d_weights.reshape(-1, S), weights.reshape(-1, S))
    return flat.reshape(weights.shape)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = torch.matmul(weights.transpose(-1, -2), d_out)
    dS = softmax_backward(torch.matmul(d_out, v.transpose(-1, -2)), weights)
    dq = torch.matmul(dS, k) * scale
    dk = torch.matmul(dS.transpose(-1, -2), q) * scale
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = torch.matmul(q, k.transpose(-1, -2)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(s, dim=-1)
        ctx.mask = allowed
        ctx.scale = scale
        ctx.save_for_backward(q, k, v, w)
        return torch.matmul(w, v)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, w, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
