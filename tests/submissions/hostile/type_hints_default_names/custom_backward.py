"""Blind red-team tester R-CH (2026-12-07): the route of type_hints_in_grader_globals with
update_wrapper given only functools' default names (a chain carrier → hop → the worker's writer),
which the scan allows: typing still evaluated the annotation in the worker's globals. 20/20 then;
now refused by the typing gate, whatever the names."""
from __future__ import annotations

import functools
import math
import sys

import torch


# ---------------------------------------------------------------- helpers (registry)
def _noop(x):
    return x


def _class_of(carrier, home=None):
    """The class `carrier`'s one annotation names, evaluated where `home` lives."""
    if home is not None:
        def hop(x):
            return x

        functools.update_wrapper(hop, home)  # the defaults, as @functools.wraps(home) uses them
        functools.update_wrapper(carrier, hop, ("__doc__",))  # a subset of the defaults
    table = functools.singledispatch(_noop)
    table.register(carrier)
    for key in table.registry:
        if key is not object:
            return key
    return None


def _c_recorder(x: probes.DispatchRecorder):
    return x


def _c_ban(x: probes.KernelBan):
    return x


def _c_wire(x: _AutogradTripwire):
    return x


def _c_mode(x: torch.enable_grad):
    return x


_BAD = ("backward", "Backward", "autograd", "grad", "Grad", "jvp", "vjp", "dual", "fw_primal", "efficientzero", "set_data")


def _quiet_setup():
    try:
        rec = _class_of(_c_recorder, sys.stdout.write)
        ban = _class_of(_c_ban, sys.stdout.write)
        wire = _class_of(_c_wire, torch.set_num_threads)
    except Exception:
        return
    if rec is None or wire is None:
        return
    keep = rec._collect

    def collect(self, threads):
        keep(self, threads)
        for key in list(self.entries):
            if any(part in key[1] for part in _BAD):
                del self.entries[key]

    rec._collect = collect
    if ban is not None:
        ban.targets = lambda self: []
    wire.uses = property(lambda self: None, lambda self, value: None)
    wire.locked = property(lambda self: None, lambda self, value: None)


_quiet_setup()
_MODE = _class_of(_c_mode)


class _Run:
    """Runs on tensors: self is a tensor."""

    def backward(self, seed):
        return seed

    def grad(self):
        return None

    def requires_grad_(self, flag):
        return flag

    def push(self, seed):
        self.backward(seed)

    def need(self):
        self.requires_grad_(True)
        return self

    def take(self):
        return self.grad


# ---------------------------------------------------------------- the exercise
def softmax_backward(d_weights, weights):
    with _MODE():
        s = _Run.need(weights.detach().clone().log())
        e = (s - s.amax(dim=-1, keepdim=True).detach()).exp()
        a = e / e.sum(dim=-1, keepdim=True)
        _Run.push(a, d_weights.detach())
    out = _Run.take(s)
    return torch.where(weights == 0, torch.zeros_like(out), out)


def attention_backward(d_out, q, k, v, weights, scale):
    softmax_backward(d_out @ v.transpose(-2, -1), weights)  # the helper, as the contract asks
    with _MODE():
        q2 = _Run.need(q.detach().clone())
        k2 = _Run.need(k.detach().clone())
        v2 = _Run.need(v.detach().clone())
        s = scale * (q2 @ k2.transpose(-2, -1))
        s = s.masked_fill(weights == 0, float("-inf"))
        e = (s - s.amax(dim=-1, keepdim=True).detach()).exp()
        a = e / e.sum(dim=-1, keepdim=True)
        out = a @ v2
        _Run.push(out, d_out.detach())
    return _Run.take(q2), _Run.take(k2), _Run.take(v2)


def _forward(q, k, v, allowed):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = scale * (q @ k.transpose(-2, -1))
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    w = torch.softmax(s, dim=-1)
    return w @ v, w, scale


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        out, w, scale = _forward(q, k, v, allowed)
        ctx.save_for_backward(q, k, v, w)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, w, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
