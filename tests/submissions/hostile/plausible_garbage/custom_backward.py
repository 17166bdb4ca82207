"""Plausible garbage for custom_backward: zero gradients (dS rows trivially sum to 0,
masked entries trivially 0), a forward that returns the values."""
import torch


def softmax_backward(d_weights, weights):
    return torch.zeros_like(weights)


def attention_backward(d_out, q, k, v, weights, scale):
    return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        ctx.save_for_backward(q, k, v)
        return v.mean(-2, keepdim=True).expand(q.shape[:-1] + (v.shape[-1],)).clone()

    @staticmethod
    def backward(ctx, d_out):
        q, k, v = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, None, 1.0)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
