"""torch's newer style: forward without ctx, setup_context saves what backward needs."""

from __future__ import annotations

import math

import torch


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    return weights * d_weights - weights * (weights * d_weights).sum(-1, keepdim=True)


def attention_backward(d_out, q, k, v, weights, scale):
    d_scores = softmax_backward(d_out @ v.mT, weights)
    return d_scores @ k * scale, d_scores.mT @ q * scale, weights.mT @ d_out


def _weights(q, k, allowed):
    scores = q @ k.mT / math.sqrt(q.shape[-1])
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(dim=-1)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(q, k, v, allowed=None):
        return _weights(q, k, allowed) @ v

    @staticmethod
    def setup_context(ctx, inputs, output):
        q, k, v, allowed = inputs
        ctx.save_for_backward(q, k, v, _weights(q, k, allowed))
        ctx.scale = 1.0 / math.sqrt(q.shape[-1])

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
