"""Blind fairness tester R-CQ (2026-12-07), style cb17_global_layer: the file's own method on its own
instance, once read as torch's (the skill scored 0)."""

from __future__ import annotations

import math

import torch


class SoftmaxLayer:
    """A hand-written layer (cs231n style): forward caches A, backward uses it."""

    def forward(self, s: torch.Tensor) -> torch.Tensor:
        e = torch.exp(s - s.amax(-1, keepdim=True))
        self.A = e / e.sum(-1, keepdim=True)
        return self.A

    def backward(self, dA: torch.Tensor) -> torch.Tensor:
        A = self.A
        return A * (dA - (dA * A).sum(-1, keepdim=True))


_LAYER = SoftmaxLayer()


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    _LAYER.A = weights
    return _LAYER.backward(d_weights)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.transpose(-1, -2) @ d_out
    dS = softmax_backward(d_out @ v.transpose(-1, -2), weights)
    return scale * dS @ k, scale * dS.transpose(-1, -2) @ q, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = q @ k.transpose(-1, -2) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, -math.inf)
        a = SoftmaxLayer().forward(s)
        ctx.save_for_backward(q, k, v, a)
        ctx.scale = scale
        return a @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, a = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, a, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
