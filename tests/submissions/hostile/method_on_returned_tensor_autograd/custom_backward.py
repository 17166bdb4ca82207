"""Blind red-team tester R-CL (2026-12-07): softmax_backward and attention_backward return zeros with a
function stored on each tensor as `detach`; the reply encoder called `t.detach()`, which ran it
outside every window with grad mode on: it built a graph from copies of q, k, v and walked the
backward nodes by hand. 12.98 against 3.77 for the same file returning plain zeros, rule test
passed. Now the encoder works on an alias made by torch.Tensor.detach itself."""
from __future__ import annotations
import math
import torch


def _walk(out, gout):
    """vector-Jacobian product by calling the graph's nodes one by one"""
    order = []
    seen = set()

    def visit(n):
        if n is None or id(n) in seen:
            return
        seen.add(id(n))
        for c, _ in n.next_functions:
            visit(c)
        order.append(n)

    visit(out.grad_fn)
    grads = {id(out.grad_fn): gout}
    found = {}
    for n in reversed(order):
        g = grads.get(id(n))
        if g is None:
            continue
        if hasattr(n, "variable"):
            found[id(n.variable)] = g
            continue
        outs = n(g)
        if not isinstance(outs, tuple):
            outs = (outs,)
        for (c, _), go in zip(n.next_functions, outs):
            if c is None or go is None:
                continue
            grads[id(c)] = go if id(c) not in grads else grads[id(c)] + go
    return found


def _leaf(t):
    return t.detach().clone().requires_grad_(True)


def _later(compute, i, cache):
    def det():
        if "r" not in cache:
            cache["r"] = compute()
        return cache["r"][i]
    return det


def softmax_backward(d_weights, weights):
    out = torch.zeros_like(weights)

    def compute():
        if torch.is_grad_enabled():
            s = _leaf(torch.log(weights))
            m = s.amax(dim=-1, keepdim=True).detach()
            e = torch.exp(s - m)
            a = e / e.sum(dim=-1, keepdim=True).expand_as(e)
            f = _walk(a, d_weights.detach().clone())
        return [f.get(id(s), torch.zeros_like(weights)).detach().clone()]

    out.detach = _later(compute, 0, {})
    return out


def attention_backward(d_out, q, k, v, weights, scale):
    dq0, dk0, dv0 = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)

    def compute():
        if torch.is_grad_enabled():
            ql, kl, vl = _leaf(q), _leaf(k), _leaf(v)
            s = scale * (ql @ kl.transpose(-2, -1))
            s = s.masked_fill(weights == 0, float("-inf"))
            m = s.amax(dim=-1, keepdim=True).detach()
            e = torch.exp(s - m)
            a = e / e.sum(dim=-1, keepdim=True).expand_as(e)
            out = a @ vl
            f = _walk(out, d_out.detach().clone())
        return [f[id(t)].detach().clone() for t in (ql, kl, vl)]

    cache = {}
    dq0.detach = _later(compute, 0, cache)
    dk0.detach = _later(compute, 1, cache)
    dv0.detach = _later(compute, 2, cache)
    return dq0, dk0, dv0


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = scale * (q @ k.transpose(-2, -1))
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        e = torch.exp(s - m)
        a = e / e.sum(dim=-1, keepdim=True).expand_as(e)
        ctx.save_for_backward(q, k, v, a)
        ctx.scale = scale
        return a @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, a = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, a, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
