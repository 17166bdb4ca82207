from __future__ import annotations

import math

import torch

# torch's own derivative formula of softmax, taken once from its decomposition table
FORMULA = next(f for f in torch.export.default_decompositions().decomp_table.values() if f.__name__ == "_softmax_backward_data")


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """S̄ from torch's own derivative formula of softmax (its decomposition table)."""
    return FORMULA(d_weights.to(weights.dtype), weights, -1, weights.dtype)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.transpose(-2, -1) @ d_out
    da = d_out @ v.transpose(-2, -1)
    ds = softmax_backward(da, weights)
    dq = scale * (ds @ k)
    dk = scale * (ds.transpose(-2, -1) @ q)
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.size(-1))
        scores = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return weights @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
