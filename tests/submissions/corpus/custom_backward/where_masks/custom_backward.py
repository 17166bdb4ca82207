"""Masks through torch.where, blocked keys' gradient forced to exactly zero."""

import math

import torch


def softmax_backward(d_weights, weights):
    d = (d_weights * weights).sum(dim=-1, keepdim=True)
    return torch.where(weights > 0, weights * (d_weights - d), torch.zeros_like(weights))


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.transpose(-2, -1) @ d_out
    ds = softmax_backward(d_out @ v.transpose(-2, -1), weights)
    dq = (ds @ k) * scale
    dk = (ds.transpose(-2, -1) @ q) * scale
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.size(-1))
        scores = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
        top = scores.amax(-1, keepdim=True)
        e = torch.exp(scores - top)
        weights = e / e.sum(-1, keepdim=True)
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
