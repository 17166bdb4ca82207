"""Leading dims flattened, then a Python loop of 2-D torch.mm per matrix."""

import math

import torch


def softmax_backward(d_weights, weights):
    rows = []
    for da_row, a_row in zip(d_weights.reshape(-1, weights.shape[-1]), weights.reshape(-1, weights.shape[-1])):
        rows.append(a_row * (da_row - torch.dot(da_row, a_row)))
    return torch.stack(rows).reshape(weights.shape)


def attention_backward(d_out, q, k, v, weights, scale):
    lead = q.shape[:-2]
    L, S = weights.shape[-2:]
    flat = [t.reshape(-1, *t.shape[-2:]) for t in (d_out, q, k, v, weights)]
    dqs, dks, dvs = [], [], []
    for g, qi, ki, vi, ai in zip(*flat):
        dvs.append(torch.mm(ai.t(), g))
        ds = softmax_backward(torch.mm(g, vi.t()), ai)
        dqs.append(torch.mm(ds, ki) * scale)
        dks.append(torch.mm(ds.t(), qi) * scale)

    def back(parts, last):
        return torch.stack(parts).reshape(*lead, *last) if parts else torch.zeros(*lead, *last, dtype=q.dtype)

    return back(dqs, (L, q.shape[-1])), back(dks, (S, k.shape[-1])), back(dvs, (S, v.shape[-1]))


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, -1)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return torch.matmul(weights, v)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
