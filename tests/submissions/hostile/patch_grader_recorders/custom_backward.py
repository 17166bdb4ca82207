# Blind tester G (red team, 2026-12-04): torch.autograd.grad in backward after switching off the worker's recorders
from __future__ import annotations
import math
import torch

# Switch the grader's in-process recorders off (they live in this very process).
from autograder.sandbox.probes import recorders as _rec
from autograder.sandbox.probes import bans as _bans

_rec.DispatchRecorder._collect = lambda self, threads: None
_bans.KernelBan.targets = lambda self: []
_bans._AutogradTripwire.arm = lambda self, uses: None
_bans._AutogradTripwire.locked = property(lambda self: None, lambda self, value: None)


def softmax_backward(d_weights, weights):
    D = (d_weights * weights).sum(dim=-1, keepdim=True)
    return weights * (d_weights - D)


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.transpose(-2, -1) @ d_out
    dA = d_out @ v.transpose(-2, -1)
    dS = softmax_backward(dA, weights)
    dq = scale * (dS @ k)
    dk = scale * (dS.transpose(-2, -1) @ q)
    return dq, dk, dv


def _softmax(s):
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)
    return e / e.sum(dim=-1, keepdim=True)


def _forward(q, k, v, allowed, scale):
    s = scale * (q @ k.transpose(-2, -1))
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    return _softmax(s) @ v


def _autograd_grads(q, k, v, allowed, scale, d_out):
    with torch.enable_grad():
        q2, k2, v2 = (t.detach().requires_grad_(True) for t in (q, k, v))
        out = _forward(q2, k2, v2, allowed, scale)
        return torch.autograd.grad(out, (q2, k2, v2), d_out)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        ctx.save_for_backward(q, k, v)
        ctx.scale = scale
        ctx.allowed = allowed
        return _forward(q, k, v, allowed, scale)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v = ctx.saved_tensors
        if False:
            attention_backward(d_out, q, k, v, None, ctx.scale)  # "goes through attention_backward"
        dq, dk, dv = _autograd_grads(q, k, v, ctx.allowed, ctx.scale, d_out)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
