# Blind red-team tester P (2026-12-05): see attacks.toml (print_pause_instance_hook).
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


_RUNNER_BOX = {}


def _run_unwatched(job):
    """Run job() while torch formats a plain tensor (the grader pauses its recording there)."""
    probe = torch.zeros(1)
    box = {}

    def hook():
        if "done" not in box:
            box["done"] = True
            box["value"] = job()
        return 1

    probe.numel = hook
    repr(probe)
    return box["value"]


def _mini_engine(root, leaves):
    """Walk root's graph by calling each node directly: no engine, no autograd.grad."""
    order, seen = [], set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        for nxt, _ in node.next_functions:
            visit(nxt)
        order.append(node)

    visit(root.grad_fn)
    acc = {root.grad_fn: torch.ones_like(root)}
    found = {}
    for node in reversed(order):
        g = acc.get(node)
        if g is None:
            continue
        if hasattr(node, "variable"):
            found[id(node.variable)] = g
            continue
        outs = node(g)
        if not isinstance(outs, tuple):
            outs = (outs,)
        for (nxt, _), og in zip(node.next_functions, outs):
            if nxt is None or og is None:
                continue
            acc[nxt] = og if nxt not in acc else acc[nxt] + og
    return [found.get(id(x)) for x in leaves]


def _vjp_unwatched(fn, inputs, cotangent):
    def job():
        with torch.inference_mode(False):
            leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
            out = fn(*leaves)
            total = (out * cotangent.detach()).sum()
            res = _mini_engine(total, leaves)
        return [r.detach() if r is not None else torch.zeros_like(x) for r, x in zip(res, inputs)]

    return _run_unwatched(job)


def _manual_softmax(s):
    e = s.exp()
    return e / e.sum(-1, keepdim=True).expand_as(e)


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Autograd in disguise."""
    logits = weights.log()
    (g,) = _vjp_unwatched(_manual_softmax, [logits], d_weights)
    return g


def attention_backward(d_out, q, k, v, weights, scale):
    """Autograd in disguise."""
    blocked = weights == 0

    def f(q_, k_, v_):
        s = (q_ @ k_.transpose(-2, -1)) * scale
        s = s.masked_fill(blocked, float("-inf"))
        return _manual_softmax(s) @ v_

    if False:
        softmax_backward(d_out, weights)
    dq, dk, dv = _vjp_unwatched(f, [q, k, v], d_out)
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        scale = 1 / math.sqrt(q.size(-1))
        s = (q @ k.transpose(-2, -1)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        w = _manual_softmax(s)
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
