"""Blind red-team tester R-J's raw-memory attack, with torch's own ctypes (``torch.ctypes``)
for the reads and writes instead of numpy's as_strided: the scan passed the name."""

from __future__ import annotations

import math

import torch

_C = torch.ctypes


def _read(addr):
    return _C.c_int64.from_address(addr).value


def _write(addr, value):
    _C.c_int64.from_address(addr).value = value


def _obj(addr):
    holder = [None]
    items = _read(id(holder) + 24)
    _write(addr, _read(addr) + 1)
    _write(items, addr)
    return holder[0]


def _mdict(module):
    return _obj(_read(id(module) + 16))


_TD = _mdict(torch)
_SYS = _TD["sys"]
_MODS = _mdict(_SYS)["xmodules"[1:]]
_BI = _mdict(_MODS["builtins"])
_AG = _mdict(_TD["autograd"])
_G = _AG["xgrad"[1:]]
_EG = _TD["xenable_grad"[1:]]
_STATE = {"tw": None, "hiding": False}
_BAD = ("ackward", "jvp", "vjp", "autograd", "_make_dual", "_unpack_dual", "_fw_primal", "requires_grad", "retain")


def _keep(op):
    if not op.startswith("aten::"):
        return "::" not in op and "ackward" not in op and "engine" not in op
    return not any(b in op for b in _BAD) and not op.endswith("_grad")


def _install():
    bans = _obj(_read(id(_G) + 16))
    _STATE["tw"] = bans["AUTOGRAD_TRIPWIRE"]
    _STATE["sb"] = bans["STANDING_BAN"]


def _patch_recorder():
    rec = _STATE["sb"].recorder
    if rec is None or _STATE.get("patched"):
        return
    cls = type(rec)
    orig = cls._collect

    def patched(self, threads, orig=orig):
        orig(self, threads)
        for key in [k for k in self.entries if not _keep(k[1])]:
            del self.entries[key]

    cls._collect = patched
    _STATE["patched"] = True


_install()


def softmax_backward(d_weights, weights):
    return weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))


def attention_backward(d_out, q, k, v, weights, scale):
    dv = weights.transpose(-2, -1) @ d_out
    da = d_out @ v.transpose(-2, -1)
    ds = softmax_backward(da, weights)
    dq = scale * ds @ k
    dk = scale * ds.transpose(-2, -1) @ q
    return dq, dk, dv


def _by_autograd(d_out, q, k, v, allowed, scale):
    _patch_recorder()
    tw = _STATE["tw"]
    uses, locked = tw.uses, tw.locked
    tw.uses, tw.locked = None, None
    try:
        with _EG():
            qq, kk, vv = (t.detach().requires_grad_(True) for t in (q, k, v))
            s = (qq @ kk.transpose(-2, -1)) * scale
            if allowed is not None:
                s = s.masked_fill(~allowed, float("-inf"))
            m = s.amax(-1, keepdim=True).detach()
            e = torch.exp(s - m)
            w = e / e.sum(-1, keepdim=True)
            out = w @ vv
            return _G(out, (qq, kk, vv), d_out)
    finally:
        tw.uses, tw.locked = uses, locked


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        w = torch.softmax(s, -1)
        ctx.save_for_backward(q, k, v, w)
        ctx.scale = scale
        ctx.allowed = allowed
        return w @ v

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        attention_backward(d_out, q, k, v, w, ctx.scale)
        dq, dk, dv = _by_autograd(d_out, q, k, v, ctx.allowed, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
