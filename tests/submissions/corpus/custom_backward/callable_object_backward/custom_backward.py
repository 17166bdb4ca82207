"""attention_backward is a callable object; softmax_backward a plain function reached by its global name."""

from __future__ import annotations

import math

import torch


def softmax_backward(d_weights, weights):
    return weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))


class _AttnBackward:
    def __call__(self, d_out, q, k, v, weights, scale):
        dv = weights.transpose(-2, -1) @ d_out
        ds = softmax_backward(d_out @ v.transpose(-2, -1), weights)
        return scale * ds @ k, scale * ds.transpose(-2, -1) @ q, dv


attention_backward = _AttnBackward()


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
