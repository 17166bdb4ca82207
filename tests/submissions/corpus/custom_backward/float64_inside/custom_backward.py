"""Gradients computed in float64 inside, returned in the inputs' dtype."""

import math

import torch


def softmax_backward(d_weights, weights):
    a, da = weights.double(), d_weights.double()
    return (a * (da - (da * a).sum(-1, keepdim=True))).to(weights.dtype)


def attention_backward(d_out, q, k, v, weights, scale):
    dt = q.dtype
    d_out64, q64, k64, v64, a64 = (t.to(torch.float64) for t in (d_out, q, k, v, weights))
    ds = softmax_backward(d_out64 @ v64.transpose(-2, -1), a64)
    dq = scale * (ds @ k64)
    dk = scale * (ds.transpose(-2, -1) @ q64)
    dv = a64.transpose(-2, -1) @ d_out64
    return dq.to(dt), dk.to(dt), dv.to(dt)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.size(-1))
        scores = (q.double() @ k.double().transpose(-2, -1)) * scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return (weights @ v.double()).to(q.dtype)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
