"""TorchScript helpers (``@torch.jit.script``) in the forward and in the backward (blind
fairness tester R-AI: read as autograd's machinery before; the scripted function's own scope
is no operator, every operator inside it is recorded)."""

import math

import torch


@torch.jit.script
def _softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    return weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))


@torch.jit.script
def _masked_softmax(scores: torch.Tensor) -> torch.Tensor:
    shifted = scores - scores.amax(-1, keepdim=True)
    e = torch.exp(shifted)
    return e / e.sum(-1, keepdim=True)


def softmax_backward(d_weights, weights):
    return _softmax_backward(d_weights, weights)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.mT @ d_out
    ds = softmax_backward(d_out @ v.mT, weights)
    return scale * (ds @ k), scale * (ds.mT @ q), dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        scores = (q @ k.mT) * scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed, -math.inf)
        weights = _masked_softmax(scores)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return weights @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
