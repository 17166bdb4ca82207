# Blind fairness tester R-AQ: helper autograd.Function classes (setup_context style, once_differentiable)
# applied inside softmax_backward and attention_backward; their backwards are hand-written too.
from __future__ import annotations

import functools
import math

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable


class _RowDot(torch.autograd.Function):
    """Helper: D = rowsum(a*b) with its own hand-written backward."""

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(a, b)
        return (a * b).sum(-1, keepdim=True)

    @staticmethod
    @once_differentiable
    def backward(ctx, g: Tensor):
        a, b = ctx.saved_tensors
        return g * b, g * a


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(x: Tensor, s: float) -> Tensor:
        return x * s

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.s = inputs[1]

    @staticmethod
    def backward(ctx, g):
        return g * ctx.s, None


def _checked(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        out = fn(*args, **kwargs)
        assert all(torch.isfinite(o).all() for o in out if o is not None), "non-finite gradient"
        return out

    return inner


def softmax_backward(d_weights: Tensor, weights: Tensor) -> Tensor:
    return weights * (d_weights - _RowDot.apply(d_weights, weights))


def attention_backward(d_out, q, k, v, weights, scale):
    dv = torch.bmm(weights.flatten(0, -3), d_out.flatten(0, -3)) if False else weights.transpose(-2, -1) @ d_out
    dS = softmax_backward(d_out @ v.transpose(-2, -1), weights)
    dq = _Scale.apply(dS @ k, scale)
    dk = _Scale.apply(dS.transpose(-2, -1) @ q, scale)
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        q64, k64, v64 = q.double(), k.double(), v.double()
        scale = 1 / math.sqrt(q.shape[-1])
        s = torch.einsum("...ld,...sd->...ls", q64, k64) * scale
        if allowed is not None:
            s = torch.where(allowed, s, torch.tensor(float("-inf"), dtype=s.dtype, device=s.device))
        m = s.amax(-1, keepdim=True)
        e = (s - m).exp()
        w = e / e.sum(-1, keepdim=True)
        ctx.mark_non_differentiable()  # nothing of the output is non-differentiable: a no-op
        ctx.save_for_backward(q, k, v, w.to(q.dtype))
        ctx.scale = scale
        return (w @ v64).to(q.dtype)

    @staticmethod
    @_checked
    def backward(ctx, d_out):
        return AttentionFunction._grads(ctx, d_out)

    @staticmethod
    def _grads(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        grads = attention_backward(d_out, q, k, v, w, ctx.scale)
        return (*grads, None)


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
