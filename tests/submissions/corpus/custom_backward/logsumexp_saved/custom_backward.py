"""forward keeps the row log-sum-exp (as flash attention does); backward rebuilds
A = exp(S − lse) from it with torch.special.logsumexp's value (issue 28 B)."""

import math

import torch


def softmax_backward(d_weights, weights):
    row = torch.sum(d_weights * weights, dim=-1, keepdim=True)
    return torch.mul(weights, torch.sub(d_weights, row))


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.transpose(-1, -2).matmul(d_out)
    ds = softmax_backward(d_out.matmul(v.transpose(-1, -2)), weights)
    return ds.matmul(k).mul(scale), ds.transpose(-1, -2).matmul(q).mul(scale), dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.size(-1))
        scores = q.matmul(k.transpose(-1, -2)) * scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        lse = torch.special.logsumexp(scores, dim=-1, keepdim=True)
        weights = torch.exp(scores - lse)
        ctx.save_for_backward(q, k, v, scores, lse)
        ctx.scale = scale
        return weights.matmul(v)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, scores, lse = ctx.saved_tensors
        weights = torch.exp(scores - lse)
        grads = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return grads[0], grads[1], grads[2], None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
