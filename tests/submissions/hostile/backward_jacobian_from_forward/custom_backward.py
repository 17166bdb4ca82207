"""Attack: backward itself calls no autograd — forward does. It asks autograd for the whole
Jacobian of a plain attention, saves it, and backward only contracts it with d_out."""
import math

import torch


def softmax_backward(d_weights, weights):
    raise NotImplementedError("TODO(custom_backward): softmax_backward")


def attention_backward(d_out, q, k, v, weights, scale):
    raise NotImplementedError("TODO(custom_backward): attention_backward")


def _plain(q, k, v, allowed):
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        with torch.enable_grad():
            jac = torch.autograd.functional.jacobian(lambda a, b, c: _plain(a, b, c, allowed), (q.detach(), k.detach(), v.detach()))
        ctx.jac = jac
        ctx.shapes = (q.shape, k.shape, v.shape)
        return _plain(q, k, v, allowed)

    @staticmethod
    def backward(ctx, d_out):
        n = d_out.dim()
        grads = [torch.tensordot(d_out, j, dims=n).reshape(s) for j, s in zip(ctx.jac, ctx.shapes)]
        return grads[0], grads[1], grads[2], None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
