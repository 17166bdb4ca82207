"""Blind fairness tester R-CS (2026-12-07), style cb_dict_inst: the student's own backward reached
through its own objects, once refused by the rule scan (the skill scored 0)."""

from __future__ import annotations

import logging
import math

import torch

log = logging.getLogger(__name__)


def softmax_backward(d_weights, weights):
    D = (d_weights * weights).sum(dim=-1, keepdim=True)
    return weights * (d_weights - D)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.transpose(-2, -1) @ d_out
    dA = d_out @ v.transpose(-2, -1)
    dS = softmax_backward(dA, weights)
    return scale * (dS @ k), scale * (dS.transpose(-2, -1) @ q), dv


def _fwd(ctx, q, k, v, allowed):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = (q @ k.transpose(-2, -1)) * scale
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    m = s.amax(dim=-1, keepdim=True)
    e = torch.exp(s - m)
    w = e / e.sum(dim=-1, keepdim=True)
    ctx.save_for_backward(q, k, v, w)
    ctx.scale = scale
    return w @ v


class Backward:
    def backward(self, d_out, q, k, v, w, scale):
        return attention_backward(d_out, q, k, v, w, scale)


IMPLS = {"hand": Backward()}


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        return _fwd(ctx, q, k, v, allowed)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = IMPLS["hand"].backward(d_out, q, k, v, w, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
