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


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Backward of a row softmax over the last axis (Day 1 §2.3 第二步).

    S̄_il = A_il (Ā_il − D_i) with D_i = Σ_j Ā_ij A_ij, one scalar per row. Entries where
    A_il = 0 (masked keys) get exactly 0 — S̄_il is A_il times a finite number, so this holds
    in floating point too, and is checked exactly — and every row of S̄ sums to 0 (within
    rounding).

    Args:
        d_weights: [...,L,S] Ā = ∂L/∂A.
        weights: [...,L,S] A, the softmax output saved by the forward pass.

    Returns:
        [...,L,S] S̄ = ∂L/∂S.
    """
    d = (d_weights * weights).sum(dim=-1, keepdim=True)
    return weights * (d_weights - d)


def attention_backward(
    d_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weights: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of out = softmax(scale · q kᵀ) v with respect to q, k and v (Day 1 §2.3).

    V̄ = Aᵀ Ȳ,  Ā = Ȳ Vᵀ,  S̄ = softmax_backward(Ā, A),  Q̄ = s S̄ K,  K̄ = s S̄ᵀ Q.

    Args:
        d_out: [...,L,d_v] Ȳ = ∂L/∂out.
        q: [...,L,d_k] queries; k: [...,S,d_k] keys; v: [...,S,d_v] values.
        weights: [...,L,S] A from the forward pass (masked keys hold 0).
        scale: s, the factor the forward pass multiplied q kᵀ by (1/√d_k).

    Returns:
        (dq [...,L,d_k], dk [...,S,d_k], dv [...,S,d_v]).
    """
    dv = weights.transpose(-2, -1) @ d_out
    da = d_out @ v.transpose(-2, -1)
    ds = softmax_backward(da, weights)
    dq = scale * (ds @ k)
    dk = scale * (ds.transpose(-2, -1) @ q)
    return dq, dk, dv


@torch.jit.script
def _mode(on: bool) -> int:
    torch.set_grad_enabled(on)  # C++ GradMode switch: no Python wrapper, no profiler event
    return 0


# never used: their names put autograd's node names on the watch's list of "applied Functions"
class AddBackward0(torch.autograd.Function):
    pass


class BmmBackward0(torch.autograd.Function):
    pass


class DivBackward0(torch.autograd.Function):
    pass


class ExpBackward0(torch.autograd.Function):
    pass


class ExpandBackward0(torch.autograd.Function):
    pass


class MulBackward0(torch.autograd.Function):
    pass


class MulBackward1(torch.autograd.Function):
    pass


class ReshapeAliasBackward0(torch.autograd.Function):
    pass


class SubBackward0(torch.autograd.Function):
    pass


class SumBackward1(torch.autograd.Function):
    pass


class TransposeBackward0(torch.autograd.Function):
    pass


class UnsafeViewBackward0(torch.autograd.Function):
    pass


class ViewBackward0(torch.autograd.Function):
    pass


class MaskedFillBackward0(torch.autograd.Function):
    pass


class CloneBackward0(torch.autograd.Function):
    pass


class MmBackward0(torch.autograd.Function):
    pass


class ViewBackward1(torch.autograd.Function):
    pass


class ExpandBackward1(torch.autograd.Function):
    pass


def _walk(out, d_out, leaves):
    """A reverse pass run by hand: every node of autograd's graph called directly (no engine)."""
    order, seen = [], set()

    def topo(n):
        if n is None or id(n) in seen:
            return
        seen.add(id(n))
        for nx, _ in n.next_functions:
            topo(nx)
        order.append(n)

    topo(out.grad_fn)
    got = {id(out.grad_fn): {0: d_out}}
    acc = {}
    for n in reversed(order):
        g = got.get(id(n))
        if g is None:
            continue
        if type(n).__name__ == "AccumulateGrad":
            acc[id(n.variable)] = g[0]
            continue
        res = n(*[g.get(i) for i in range(max(g) + 1)])
        if not isinstance(res, tuple):
            res = (res,)
        for (nx, i), r in zip(n.next_functions, res):
            if nx is None or r is None:
                continue
            slot = got.setdefault(id(nx), {})
            slot[i] = r if i not in slot else slot[i] + r
    return [acc[id(leaf)].sum_to_size(leaf.shape) if id(leaf) in acc else torch.zeros_like(leaf) for leaf in leaves]


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
        scale = 1.0 / math.sqrt(q.shape[-1])
        _mode(True)
        lq = torch.zeros_like(q, requires_grad=True)
        lk = torch.zeros_like(k, requires_grad=True)
        lv = torch.zeros_like(v, requires_grad=True)
        qq, kk, vv = q.detach() + lq, k.detach() + lk, v.detach() + lv
        s = (qq @ kk.transpose(-2, -1)) * scale
        if allowed is not None:
            s = s.masked_fill(~allowed, float("-inf"))
        m = s.detach().amax(dim=-1, keepdim=True)
        e = torch.exp(s - m)
        w = e / e.sum(dim=-1, keepdim=True).expand_as(e)
        out = w @ vv
        _mode(False)
        ctx.graph = (out, lq, lk, lv)
        ctx.save_for_backward(q, k, v, w.detach())
        ctx.scale = scale
        return out.detach()

    @staticmethod
    def backward(ctx, d_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        q, k, v, w = ctx.saved_tensors
        attention_backward(d_out * 0, q, k, v, w, ctx.scale)  # called (the source check), result unused
        out, lq, lk, lv = ctx.graph
        dq, dk, dv = _walk(out, d_out, [lq, lk, lv])  # torch's derivative formulas, node by node
        return dq, dk, dv, None


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """out = softmax(q kᵀ/√d_k, blocked keys −∞) v through AttentionFunction (Day 1 §B).

    Args:
        q: [...,L,d_k]; k: [...,S,d_k]; v: [...,S,d_v].
        allowed: optional bool mask broadcasting against [...,L,S]; True = may attend.

    Returns:
        [...,L,d_v]; differentiable with respect to q, k and v by the hand-written backward.
    """
    return AttentionFunction.apply(q, k, v, allowed)
