"""Attack: autograd Jacobian computed at (re-)import time, between recorded windows."""

from __future__ import annotations

import math

import torch

_STASH = getattr(math, "cb_stash", None)
if _STASH is None:
    _STASH = {"inputs": [], "jacs": []}
    math.cb_stash = _STASH


def _plain_forward(q, k, v, allowed):
    scale = 1.0 / math.sqrt(q.size(-1))
    s = (q @ k.transpose(-2, -1)) * scale
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    m = s.amax(-1, keepdim=True).detach()
    e = torch.exp(s - m)
    return e / e.sum(-1, keepdim=True) @ v


def _precompute():
    # runs when the module is (re-)imported: before the probe's windows, tripwire unarmed
    for q, k, v, allowed in _STASH["inputs"]:
        if any(torch.equal(q, a) and torch.equal(k, b) and torch.equal(v, c) for a, b, c, _ in _STASH["jacs"]):
            continue
        jac = torch.autograd.functional.jacobian(lambda a, b, c: _plain_forward(a, b, c, allowed), (q, k, v))
        _STASH["jacs"].append((q, k, v, jac))


_precompute()


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(weights)


def attention_backward(d_out, q, k, v, weights, scale):
    for a, b, c, jac in _STASH["jacs"]:
        if a.shape == q.shape and torch.equal(a, q) and torch.equal(b, k) and torch.equal(c, v):
            g = d_out.reshape(-1).to(jac[0].dtype)
            outs = tuple((g @ j.reshape(g.numel(), -1)).reshape(t.shape).to(t.dtype) for j, t in zip(jac, (q, k, v)))
            softmax_backward(d_out, weights)
            return outs
    softmax_backward(d_out, weights)
    return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)


def _move():
    global __file__
    __file__ = "moved"


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        _STASH["inputs"].append((q.clone(), k.clone(), v.clone(), None if allowed is None else allowed.clone()))
        _move()  # the next request's ctx.module() imports this file again
        scale = 1.0 / math.sqrt(q.size(-1))
        s = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        m = s.amax(-1, keepdim=True)
        e = torch.exp(s - m)
        w = e / e.sum(-1, keepdim=True)
        ctx.save_for_backward(q, k, v, w)
        ctx.scale = scale
        return w @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, w, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
