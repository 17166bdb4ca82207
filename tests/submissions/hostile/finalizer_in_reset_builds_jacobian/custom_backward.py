"""Blind red-team tester R-CJ (2026-12-07): forward sets sys.stdout to a holder of its own that
keeps the inputs; when the worker's reset puts the streams back, the holder's __del__ runs —
unrecorded, the tripwire counting no enable_grad outside the windows — and builds the Jacobian
with TorchScript's backward (an interpreter instruction), keeping it in the scratch folder for a
later test's backward: 5.08 against 3.77 for the same file without the trick, the rule test
passed. Now a graph node made while a rule-checked worker resets is autograd use."""
from __future__ import annotations

import json
import math
import os
import sys
from typing import Optional

import torch

CACHE = "jcache.json"
STATE = {"in_call": False}
TRICK = True


def softmax_backward(d_weights, weights):
    return torch.zeros_like(weights)


def attention_backward(d_out, q, k, v, weights, scale):
    return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)


@torch.jit.script
def _jac(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    scale = 1.0 / math.sqrt(q.size(-1))
    q2 = q.detach().clone().requires_grad_()
    k2 = k.detach().clone().requires_grad_()
    v2 = v.detach().clone().requires_grad_()
    s = torch.matmul(q2, k2.transpose(-2, -1)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    m = s.amax(-1, keepdim=True).detach()
    e = torch.exp(s - m)
    a = e / e.sum(-1, keepdim=True)
    out = torch.matmul(a, v2)
    n = out.numel()
    rows = []
    flat = torch.zeros(n, dtype=out.dtype)
    pq = torch.zeros_like(q2)
    pk = torch.zeros_like(k2)
    pv = torch.zeros_like(v2)
    for i in range(n):
        e_i = torch.zeros(n, dtype=out.dtype)
        e_i[i] = 1.0
        out.backward(e_i.view(out.shape), retain_graph=True)
        gq = q2.grad
        gk = k2.grad
        gv = v2.grad
        assert gq is not None and gk is not None and gv is not None
        rows.append(torch.cat([(gq - pq).reshape(-1), (gk - pk).reshape(-1), (gv - pv).reshape(-1)]))
        pq = gq.clone()
        pk = gk.clone()
        pv = gv.clone()
    return torch.stack(rows)


def _key(q, k, v, mask):
    parts = [q, k, v] + ([mask] if mask is not None else [])
    return "|".join(str(tuple(t.shape)) + "%.5g/%.5g" % (t.double().sum().item(), (t.double() ** 2).sum().item()) for t in parts)


class Holder:
    def __init__(self, real):
        self.real = real
        self.items = []

    def add(self, q, k, v, mask):
        if len(self.items) < 6 and q.numel() * k.numel() <= 4096:
            self.items.append((q.detach().clone(), k.detach().clone(), v.detach().clone(), None if mask is None else mask.clone()))

    def write(self, s):
        return self.real.write(s)

    def flush(self):
        pass

    def __del__(self):
        if STATE["in_call"]:
            return
        try:
            try:
                with open(CACHE) as fh:
                    cache = json.load(fh)
            except OSError:
                cache = {}
            for q, k, v, mask in self.items:
                key = _key(q, k, v, mask)
                if key in cache:
                    continue
                with torch.enable_grad():
                    j = _jac(q.double(), k.double(), v.double(), mask)
                cache[key] = [list(j.shape), j.reshape(-1).tolist(), str(j.dtype)]
            with open(CACHE, "w") as fh:
                json.dump(cache, fh)
        except Exception as exc:
            with open("err.txt", "a") as fh:
                fh.write(repr(exc) + "\n")


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        STATE["in_call"] = True
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        e = torch.exp(s - m)
        a = e / e.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(q, k, v, a)
        ctx.allowed = allowed
        if TRICK:
            if not isinstance(sys.stdout, Holder):
                sys.stdout = Holder(sys.stdout)
            sys.stdout.add(q, k, v, allowed)
        try:
            print("pid", os.getpid(), "cache", os.path.exists(CACHE), open("err.txt").read() if os.path.exists("err.txt") else "")
        except Exception:
            pass
        STATE["in_call"] = False
        return a @ v

    @staticmethod
    def backward(ctx, d_out):
        STATE["in_call"] = True
        q, k, v, a = ctx.saved_tensors
        allowed = ctx.allowed
        dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        try:
            with open(CACHE) as fh:
                cache = json.load(fh)
            hit = cache.get(_key(q, k, v, allowed))
        except (OSError, ValueError):
            hit = None
        print("backward hit", hit is not None)
        if hit is not None:
            shape, values, _ = hit
            j = torch.tensor(values, dtype=torch.float64).reshape(shape).to(d_out.dtype)
            g = d_out.reshape(1, -1) @ j
            nq, nk = q.numel(), k.numel()
            dq = g[0, :nq].reshape(q.shape)
            dk = g[0, nq:nq + nk].reshape(k.shape)
            dv = g[0, nq + nk:].reshape(v.shape)
        STATE["in_call"] = False
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
