"""Leading dims flattened into one batch axis for torch.bmm, reshaped back."""

import math

import torch


def _bmm(a, b):
    lead = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a3 = a.expand(*lead, *a.shape[-2:]).reshape(-1, *a.shape[-2:])
    b3 = b.expand(*lead, *b.shape[-2:]).reshape(-1, *b.shape[-2:])
    return torch.bmm(a3, b3).reshape(*lead, a.shape[-2], b.shape[-1])


def softmax_backward(d_weights, weights):
    d = torch.bmm(
        (d_weights * weights).reshape(-1, 1, weights.shape[-1]),
        torch.ones(weights.numel() // weights.shape[-1] if weights.shape[-1] else 0, weights.shape[-1], 1, dtype=weights.dtype),
    ).reshape(*weights.shape[:-1], 1)
    return weights * (d_weights - d)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = _bmm(weights.transpose(-2, -1), d_out)
    ds = softmax_backward(_bmm(d_out, v.transpose(-2, -1)), weights)
    return _bmm(ds, k) * scale, _bmm(ds.transpose(-2, -1), q) * scale, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        scores = _bmm(q, k.transpose(-2, -1)) * scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return _bmm(weights, v)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
