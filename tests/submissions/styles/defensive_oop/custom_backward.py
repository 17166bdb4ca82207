"""custom_backward, defensive object-oriented style (a correct submission in another style).

The Function computes in float64 internally (the contract allows it) and returns each result
in its input's dtype; backward reaches attention_backward through a small helper class that
unpacks ctx, and attention_backward reaches softmax_backward through a named helper; backward
is `once_differentiable` and forward turns off `set_materialize_grads` (backward accepts None).
"""

from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

__all__ = ["softmax_backward", "attention_backward", "AttentionFunction", "attention"]


def softmax_backward(d_weights, weights):
    """dS = A * (dA - D), D = rowsum(dA * A)."""
    if d_weights.shape != weights.shape:
        raise ValueError(f"shape mismatch: {tuple(d_weights.shape)} vs {tuple(weights.shape)}")
    row_dot = torch.sum(d_weights * weights, dim=-1, keepdim=True)
    return weights * (d_weights - row_dot)


def _score_gradient(d_weights, weights):
    """S̄ from Ā: the softmax step of the chain (Day 1 §2.3 第二步)."""
    return softmax_backward(d_weights, weights)


def attention_backward(d_out, q, k, v, weights, scale):
    """(dq, dk, dv) of out = softmax(scale q kᵀ) v."""
    d_v = weights.transpose(-1, -2).matmul(d_out)
    d_weights = d_out.matmul(v.transpose(-1, -2))
    d_scores = _score_gradient(d_weights, weights)
    d_q = d_scores.matmul(k).mul(scale)
    d_k = d_scores.transpose(-1, -2).matmul(q).mul(scale)
    return d_q, d_k, d_v


def _forward_weights(q, k, allowed, scale):
    scores = q.matmul(k.transpose(-1, -2)).mul(scale)
    if allowed is not None:
        scores = scores.masked_fill(allowed.logical_not(), float("-inf"))
    return scores.softmax(dim=-1)


class _Saved:
    """What forward kept for backward, unpacked from ctx."""

    def __init__(self, ctx) -> None:
        self.q, self.k, self.v, self.weights = ctx.saved_tensors
        self.scale = ctx.scale
        self.dtypes = ctx.dtypes
        self.needs = getattr(ctx, "needs_input_grad", (True, True, True, False))

    def gradients(self, d_out):
        grads = attention_backward(d_out.double(), self.q, self.k, self.v, self.weights, scale=self.scale)
        return tuple(g.to(dtype) if need else None for g, dtype, need in zip(grads, self.dtypes, self.needs))


class AttentionFunction(torch.autograd.Function):
    """Attention with the hand-written backward above."""

    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        q64, k64, v64 = q.double(), k.double(), v.double()
        weights = _forward_weights(q64, k64, allowed, scale)
        ctx.save_for_backward(q64, k64, v64, weights)
        ctx.scale = scale
        ctx.dtypes = (q.dtype, k.dtype, v.dtype)
        ctx.set_materialize_grads(False)
        return weights.matmul(v64).to(v.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, d_out):
        if d_out is None:  # set_materialize_grads(False): no gradient flowed into the output
            return None, None, None, None
        return (*_Saved(ctx).gradients(d_out), None)


def attention(q, k, v, allowed=None):
    """AttentionFunction.apply(q, k, v, allowed)."""
    return AttentionFunction.apply(q, k, v, allowed)


if __name__ == "__main__":  # a student's self-check: autograd is fine here, outside forward/backward
    torch.manual_seed(0)
    inputs = tuple(torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    print("gradcheck:", torch.autograd.gradcheck(attention, inputs))
    attention(*inputs).sum().backward()
