"""Helpers are bound methods of a module-level ops object (holds the reduction axis)."""

from __future__ import annotations

import math

import torch


class _AttentionOps:
    def __init__(self, axis: int = -1) -> None:
        self.axis = axis

    def softmax_backward(self, d_weights, weights):
        return weights * (d_weights - (d_weights * weights).sum(self.axis, keepdim=True))

    def attention_backward(self, d_out, q, k, v, weights, scale):
        dv = weights.transpose(-2, -1) @ d_out
        ds = self.softmax_backward(d_out @ v.transpose(-2, -1), weights)
        return scale * ds @ k, scale * ds.transpose(-2, -1) @ q, dv


_OPS = _AttentionOps()
softmax_backward = _OPS.softmax_backward
attention_backward = _OPS.attention_backward


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(s, dim=-1)
        ctx.save_for_backward(q, k, v, w)
        ctx.scale = scale
        return w @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, w, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
