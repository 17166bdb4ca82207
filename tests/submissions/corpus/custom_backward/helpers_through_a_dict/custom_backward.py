"""custom_backward, correct: softmax_backward reached through a default argument, attention_backward
through a dict of functions (blind tester R-AV: the hidden structure check read only the
source and refused it).
"""

from __future__ import annotations

import torch


@torch.no_grad()
def _reduce_to(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a broadcast gradient back to `shape` (for broadcast batch dims)."""
    while grad.dim() > len(shape):
        grad = grad.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[i] != 1:
            grad = grad.sum(i, keepdim=True)
    return grad


def softmax_backward(d_weights, weights):
    prod = d_weights * weights
    D = prod.sum(dim=-1, keepdim=True)
    out = torch.empty_like(weights)
    torch.mul(weights, d_weights - D, out=out)
    return out


def attention_backward(d_out, q, k, v, weights, scale, _sb=softmax_backward):
    dv = weights.transpose(-2, -1) @ d_out
    dA = d_out @ v.transpose(-2, -1)
    dS = _sb(dA, weights)
    dq = (dS @ k) * scale
    dk = (dS.transpose(-2, -1) @ q) * scale
    return dq, dk, dv


_GRADS = {"attention": attention_backward}


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        d_k = q.size(-1)
        scale = d_k**-0.5
        s = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        s = s - s.max(dim=-1, keepdim=True).values
        w = s.exp()
        w = w / w.sum(-1, keepdim=True)
        ctx.save_for_backward(q, k, v, w)
        ctx.scale = scale
        return w @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = _GRADS["attention"](d_out, q, k, v, w, ctx.scale)
        dq, dk, dv = _reduce_to(dq, q.shape), _reduce_to(dk, k.shape), _reduce_to(dv, v.shape)
        needs = getattr(ctx, "needs_input_grad", (True, True, True, False))
        return (dq if needs[0] else None, dk if needs[1] else None, dv if needs[2] else None, None)


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
