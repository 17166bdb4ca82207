"""torch.linalg.matmul and torch.linalg.vecdot throughout (issue 28 B: refused before)."""

import math

import torch


def softmax_backward(d_weights, weights):
    d = torch.linalg.vecdot(d_weights, weights).unsqueeze(-1)  # D_i = Σ_j Ā_ij A_ij
    return weights * (d_weights - d)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = torch.linalg.matmul(weights.mT, d_out)
    ds = softmax_backward(torch.linalg.matmul(d_out, v.mT), weights)
    dq = torch.linalg.matmul(ds, k) * scale
    dk = torch.linalg.matmul(ds.mT, q) * scale
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        scores = torch.linalg.matmul(q, k.mT) * scale
        if allowed is not None:
            scores = scores.masked_fill(allowed.logical_not(), -math.inf)
        weights = torch.softmax(scores, dim=-1)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return torch.linalg.matmul(weights, v)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        return (*attention_backward(d_out, q, k, v, weights, ctx.scale), None)


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
