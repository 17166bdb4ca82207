"""Every product written as an einsum over any leading dims."""

import torch


def softmax_backward(d_weights, weights):
    d = torch.einsum("...ls,...ls->...l", d_weights, weights)[..., None]
    return weights * (d_weights - d)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = torch.einsum("...ls,...ld->...sd", weights, d_out)
    d_weights = torch.einsum("...ld,...sd->...ls", d_out, v)
    ds = softmax_backward(d_weights, weights)
    dq = scale * torch.einsum("...ls,...sd->...ld", ds, k)
    dk = scale * torch.einsum("...ls,...ld->...sd", ds, q)
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = q.size(-1) ** -0.5
        scores = torch.einsum("...ld,...sd->...ls", q, k) * scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = scores.softmax(-1)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return torch.einsum("...ls,...sd->...ld", weights, v)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
