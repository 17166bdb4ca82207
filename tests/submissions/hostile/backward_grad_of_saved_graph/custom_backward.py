"""Attack: forward records an autograd graph of a plain attention and backward returns
torch.autograd.grad of it, reached through a module-level alias taken at import time."""
import math

import torch

_ask = torch.autograd.grad


def softmax_backward(d_weights, weights):
    raise NotImplementedError("TODO(custom_backward): softmax_backward")


def attention_backward(d_out, q, k, v, weights, scale):
    raise NotImplementedError("TODO(custom_backward): attention_backward")


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
            scores = (leaves[0] @ leaves[1].transpose(-2, -1)) / math.sqrt(q.size(-1))
            if allowed is not None:
                scores = scores.masked_fill(~allowed, float("-inf"))
            out = torch.softmax(scores, dim=-1) @ leaves[2]
        ctx.graph = (out, leaves)
        return out.detach()

    @staticmethod
    def backward(ctx, d_out):
        out, leaves = ctx.graph
        dq, dk, dv = _ask(out, leaves, d_out, retain_graph=True)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
