"""custom_backward — loops over batch rows."""
from __future__ import annotations

import math

import torch


def softmax_backward(d_weights, weights):
    shape = torch.broadcast_shapes(d_weights.shape, weights.shape)
    dA = d_weights.expand(shape).reshape(-1, shape[-1])
    A = weights.expand(shape).reshape(-1, shape[-1])
    out = torch.empty_like(A)
    for r in range(A.shape[0]):
        D = torch.dot(dA[r], A[r])
        out[r] = A[r] * (dA[r] - D)
    return out.reshape(shape)


def _each(*ts):
    lead = torch.broadcast_shapes(*[t.shape[:-2] for t in ts])
    return lead, [t.expand(lead + t.shape[-2:]).reshape((-1,) + t.shape[-2:]) for t in ts]


def attention_backward(d_out, q, k, v, weights, scale):
    lead, (dy, q2, k2, v2, a2) = _each(d_out, q, k, v, weights)
    dS = softmax_backward(dy @ v2.transpose(-1, -2), a2)
    dqs, dks, dvs = [], [], []
    for n in range(a2.shape[0]):
        dvs.append(a2[n].T @ dy[n])
        dqs.append(scale * (dS[n] @ k2[n]))
        dks.append(scale * (dS[n].T @ q2[n]))
    dq = torch.stack(dqs).reshape(lead + q.shape[-2:])
    dk = torch.stack(dks).reshape(lead + k.shape[-2:])
    dv = torch.stack(dvs).reshape(lead + v.shape[-2:])
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1 / math.sqrt(q.shape[-1])
        lead, (q2, k2, v2) = _each(q, k, v)
        if allowed is not None:
            full = torch.broadcast_shapes(allowed.shape, lead + (q.shape[-2], k.shape[-2]))
            al = allowed.expand(full).reshape((-1, q.shape[-2], k.shape[-2]))
        outs, ws = [], []
        for n in range(q2.shape[0]):
            s = (q2[n] @ k2[n].T) * scale
            if allowed is not None:
                s = s.masked_fill(~al[n], float("-inf"))
            rows = []
            for i in range(s.shape[0]):
                e = torch.exp(s[i] - s[i].max())
                rows.append(e / e.sum())
            w = torch.stack(rows)
            ws.append(w)
            outs.append(w @ v2[n])
        weights = torch.stack(ws).reshape(lead + (q.shape[-2], k.shape[-2]))
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return torch.stack(outs).reshape(lead + (q.shape[-2], v.shape[-1]))

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        # reduce broadcast leading dims back to the inputs' shapes
        def fit(g, like):
            while g.dim() > like.dim():
                g = g.sum(0)
            for ax in range(like.dim()):
                if like.shape[ax] == 1 and g.shape[ax] != 1:
                    g = g.sum(ax, keepdim=True)
            return g
        return fit(dq, q), fit(dk, k), fit(dv, v), None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
