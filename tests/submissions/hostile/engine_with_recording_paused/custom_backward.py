"""Skill `custom_backward`: the backward pass of attention, by hand.

Course: Day 1 §2.3 (反向传播：索引级推导) and §B (手写注意力的 autograd.Function, gradcheck in
float64). Setting, for one head: S = s·Q Kᵀ with s = 1/√d_k, A = softmax_row(S), Y = A V;
given the upstream gradient Ȳ = ∂L/∂Y, find Q̄, K̄, V̄.
Axis names: L query length, S key length, d_k query/key width, d_v value width; `...` means
any leading batch dimensions (e.g. [B,h]). Masks are allowed-style: True = may attend.

Rule of this exercise (breaking it scores the whole skill 0): neither `backward` nor `forward`
uses autograd — no `.backward()`, `torch.autograd.grad`, `enable_grad` or functional
vjp/jacobian (not even to compute gradients in forward for backward to return); `backward`
goes through `attention_backward`, which uses `softmax_backward`. The grader calls
`AttentionFunction.forward(ctx, …)` and `.backward(ctx, d_out)` directly, with a plain ctx
(save_for_backward/saved_tensors, needs_input_grad, any attribute you set), and checks their
outputs itself — gradcheck included — so only a backward you wrote earns its points.

Fill in every function marked TODO(custom_backward), then run `make grade SKILL=custom_backward`.
"""

from __future__ import annotations

import math

import torch

import functools

import jinja2

_G = jinja2.Environment().getattr
_TC = _G(torch, "".join(["_", "C"]))
_AG = torch.autograd


def _unwrapped(fn):
    """The function a wrapper closes over (the grader's tripwire), else fn."""
    for cell in _G(fn, "__closure__") or ():
        c = _G(cell, "cell_contents")
        if type(c).__name__ == "builtin_function_or_method":
            return c
    return fn


_SET_MODE = _unwrapped(_G(_TC, "_set_grad_enabled"))
_ENGINE = _G(_G(torch.autograd.Variable, "_execution_engine"), "_engine")
_PROF_ON = _G(_AG, "_profiler_enabled")
_OFF = _G(_AG, "_disable_profiler_legacy")
_ON = _G(_AG, "_enable_profiler_legacy")
_PROFMOD = _G(_TC, "_profiler")
_MARK = _G(_PROFMOD, "_RecordFunctionFast")
_XCFG = _G(_PROFMOD, "_ExperimentalConfig")
_RUN = _G(_ENGINE, "run_" + "b" + "ackward")


def _vjp(fn, inputs, cotangent):
    """Gradients of fn at inputs, by the autograd engine, with the op recording paused."""
    recording = bool(_PROF_ON())
    if recording:
        functools.partial(_OFF)()
    was = torch.is_grad_enabled()
    functools.partial(_SET_MODE, True)()
    try:
        xs = [x.detach().requires_grad_(True) for x in inputs]
        out = fn(*xs)
        grads = _RUN((out,), (cotangent,), False, False, tuple(xs), True, False)
    finally:
        functools.partial(_SET_MODE, was)()
        if recording:
            cfg = _AG.ProfilerConfig(_AG.ProfilerState.CPU, False, False, True, False, False, _XCFG())
            functools.partial(_ON, cfg)()
            with _MARK("autograder::recording-start"):
                pass
    return tuple(g if g is not None else torch.zeros_like(x) for g, x in zip(grads, inputs))


def _sm(s):
    m = s.amax(-1, keepdim=True).detach()
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)
    return e / e.sum(-1, keepdim=True)


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """dS by autograd (the rule forbids this)."""
    return _vjp(lambda s: _sm(s), [torch.log(weights)], d_weights)[0]


def attention_backward(d_out, q, k, v, weights, scale):
    """(dq, dk, dv) by autograd (the rule forbids this)."""
    blocked = weights == 0
    softmax_backward(d_out[..., :1, :1] * 0, weights[..., :1, :1])  # 'uses softmax_backward'

    def f(q_, k_, v_):
        s = (q_ @ k_.transpose(-2, -1)) * scale
        s = s.masked_fill(blocked, float("-inf"))
        return _sm(s) @ v_

    return _vjp(f, [q, k, v], d_out)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1.0 / math.sqrt(q.size(-1))
        s = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        w = _sm(s)
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
