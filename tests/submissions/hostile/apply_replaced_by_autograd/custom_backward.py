"""Attack: no backward written; `attention` skips AttentionFunction.apply and lets torch's
autograd differentiate a plain attention. Gradients taken *through attention()* in the
worker are then right although nothing of the exercise was done."""
import math

import torch


def softmax_backward(d_weights, weights):
    raise NotImplementedError("TODO(custom_backward): softmax_backward")


def attention_backward(d_out, q, k, v, weights, scale):
    raise NotImplementedError("TODO(custom_backward): attention_backward")


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        raise NotImplementedError("TODO(custom_backward): AttentionFunction.forward")

    @staticmethod
    def backward(ctx, d_out):
        raise NotImplementedError("TODO(custom_backward): AttentionFunction.backward")


def attention(q, k, v, allowed=None):
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
