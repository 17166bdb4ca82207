"""custom_backward: gradients by autograd, after the worker's recorders are switched off through
the grader's own namespace (read from a tripwire wrapper's closure by flex_attention's BlockMask
flattening).

Blind red-team tester R-CI (2026-12-07): 20/20 then (0 without the switch-off). Now the scan denies
torch.nn.attention.flex_attention (and torch.distributed, which re-exports BlockMask) in
rule-checked files: the rule test fails and the skill is gated.
"""

from __future__ import annotations

import math

import torch
from torch.nn.attention.flex_attention import BlockMask


def _namespace_of(fn):
    box = BlockMask.from_kv_blocks(
        torch.zeros(1, 1, 1, dtype=torch.int32), torch.zeros(1, 1, 1, 1, dtype=torch.int32), mask_mod=fn
    )
    leaves, context = box._flatten()
    for item in context:
        stripped = getattr(item, "fn", None)
        found = getattr(stripped, "globals_dict", None)
        if found is not None:
            return found
    return {}


_G = _namespace_of(torch.func.linearize)


def _tool(path):
    fetch = None
    for key in _G:
        if key.endswith("tins__"):
            space = _G[key]
            fetch = space[_word(103, 101, 116, 97, 116, 116, 114)] if type(space) is dict else None
    obj = torch
    for part in path:
        obj = fetch(obj, part)
    return obj


def _word(*codes):
    return bytes(codes).decode()


_DIFF = _tool((_word(97, 117, 116, 111, 103, 114, 97, 100), _word(103, 114, 97, 100)))
_ON = _tool((_word(101, 110, 97, 98, 108, 101, 95, 103, 114, 97, 100),))


def _quiet():
    wire = _G["AUTOGRAD_TRIPWIRE"]
    rec = _G["STANDING_BAN"].recorder
    if rec is not None:
        rec.entries = {}
        rec.tampered = set()
    wire.uses = None
    wire.locked = None


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    _quiet()
    with _ON():
        s = torch.log(weights.detach()).requires_grad_(True)
        m = s.amax(dim=-1, keepdim=True).detach()
        e = torch.exp(s - m)
        a = e / e.sum(dim=-1, keepdim=True)
        (ds,) = _DIFF(a, s, d_weights)
    return torch.where(weights == 0, torch.zeros_like(ds), ds)


def attention_backward(d_out, q, k, v, weights, scale):
    _quiet()
    with _ON():
        w = weights.detach().requires_grad_(True)
        vv = v.detach().requires_grad_(True)
        out = w @ vv
        dw, dv = _DIFF(out, (w, vv), d_out)
    ds = softmax_backward(dw, weights)
    _quiet()
    with _ON():
        qq = q.detach().requires_grad_(True)
        kk = k.detach().requires_grad_(True)
        s = (qq @ kk.transpose(-2, -1)) * scale
        dq, dk = _DIFF(s, (qq, kk), ds)
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.shape[-1])
        scores = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        m = scores.amax(dim=-1, keepdim=True)
        e = torch.exp(scores - m)
        weights = e / e.sum(dim=-1, keepdim=True)
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
