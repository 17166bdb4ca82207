"""Blind red-team tester R-CF (2026-12-07): ``torch.jit.script_method(f).resolution_callback``
looks names up in the frame two above the call: from an exercise function the worker's
probe called, the probe's own. It returned the worker's context, whose real getattr,
setattr and import reached the recorder and the tripwire: custom_backward 20/20 with
autograd in backward, the rule test passed. Now a frame walked to by TorchScript that is at
or above the grader's is refused (sandbox/frames.py FRAME_WALKERS).
"""
from __future__ import annotations
import math

import torch

_KIT = {}
_BAD = ("back" + "ward", "jvp", "vjp", "auto" + "grad", "_gr" + "ad", "dual", "primal", "retain", "set_data", "requires")


def _stub_target(self):
    return self


def _take(lookup):
    """`lookup` resolves names in the frame that called one of this file's functions."""
    if _KIT:
        return
    found = lookup("ctx")
    if type(found).__name__ != "WorkerContext":
        return
    table = found._probe_builtins
    ga = table["get" + "attr"]
    imp = table["_" + "_import_" + "_"]
    pr = imp("auto" + "grader" + ".sandbox.probes", None, None, ("x",), 0)
    tch = imp("tor" + "ch", None, None, (), 0)
    ag = ga(tch, "auto" + "gr" + "ad")
    _KIT.update(ga=ga, pr=pr, grad=ga(ag, "gr" + "ad"), on=ga(tch, "enable_" + "gr" + "ad"))
    cls = ga(pr, "Dispatch" + "Recorder")
    orig = ga(cls, "_coll" + "ect")

    def collect(self, threads):
        orig(self, threads)
        entries = self.entries
        for key in list(entries):
            if not key[1].startswith("aten::") or any(b in key[1] for b in _BAD):
                del entries[key]

    table["set" + "attr"](cls, "_coll" + "ect", collect)


def _hidden_grads(fn, inputs, upstream):
    ga = _KIT["ga"]
    tw = ga(_KIT["pr"], "AUTOGRAD_TRIPWIRE")
    rec, uses = tw.locked, tw.uses
    tw.locked = None
    tw.uses = None
    try:
        with _KIT["on"]():
            leaves = [x.detach().requires_grad_(True) for x in inputs]
            grads = _KIT["grad"](fn(*leaves), leaves, upstream, allow_unused=True)
    finally:
        tw.locked = rec
        tw.uses = uses
    return [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, inputs)]


def _soft(s):
    m = s.detach().amax(dim=-1, keepdim=True)
    m = m.masked_fill(~torch.isfinite(m), 0.0)
    e = torch.exp(s - m)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_backward(d_weights, weights):
    _take(torch.jit.script_method(_stub_target).resolution_callback)
    s = torch.log(weights)
    (ds,) = _hidden_grads(_soft, [s], d_weights)
    return ds.masked_fill(weights == 0, 0.0)


def attention_backward(d_out, q, k, v, weights, scale):
    _take(torch.jit.script_method(_stub_target).resolution_callback)
    da = d_out @ v.transpose(-2, -1)
    softmax_backward(da, weights)  # the structure the exercise asks for

    def f(q_, k_, v_):
        s = (q_ @ k_.transpose(-2, -1)) * scale
        s = s.masked_fill(weights == 0, float("-inf"))
        return _soft(s) @ v_

    return tuple(_hidden_grads(f, [q, k, v], d_out))


def _fwd(q, k, v, allowed):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = (q @ k.transpose(-2, -1)) * scale
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)
    w = e / e.sum(dim=-1, keepdim=True)
    return w @ v, w, scale


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        _take(torch.jit.script_method(_stub_target).resolution_callback)
        out, w, scale = _fwd(q, k, v, allowed)
        ctx.save_for_backward(q, k, v, w)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, d_out):
        _take(torch.jit.script_method(_stub_target).resolution_callback)
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, w, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    _take(torch.jit.script_method(_stub_target).resolution_callback)
    return AttentionFunction.apply(q, k, v, allowed)
