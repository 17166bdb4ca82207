"""Skill `custom_backward`: the backward pass of attention, by hand.

Course: Day 1 §2.3 (反向传播：索引级推导) and §B (手写注意力的 autograd.Function, gradcheck in
float64). Setting, for one head: S = s·Q Kᵀ with s = 1/√d_k, A = softmax_row(S), Y = A V;
given the upstream gradient Ȳ = ∂L/∂Y, find Q̄, K̄, V̄.
Axis names: L query length, S key length, d_k query/key width, d_v value width; `...` means
any leading batch dimensions (e.g. [B,h]). Masks are allowed-style: True = may attend.

Rule of this exercise (breaking it scores the whole skill 0): neither `backward` nor `forward`
uses autograd — no `.backward()`, `torch.autograd.grad`, `enable_grad` or functional
vjp/jacobian (not even to compute gradients in forward for backward to return). The contract
also asks that `backward` goes through `attention_backward`, which uses `softmax_backward`:
one test checks that, and costs its own points only. The grader calls
`AttentionFunction.forward(ctx, …)` and `.backward(ctx, d_out)` directly, with a plain ctx
(save_for_backward/saved_tensors, needs_input_grad, any attribute you set), and checks their
outputs itself — gradcheck included — so only a backward you wrote earns its points.
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
    # TODO: return A ⊙ (Ā − D) with D = rowsum(Ā ⊙ A) over the last axis (Day 1 §2.3 第二步).
    ### BEGIN SOLUTION
    D = (d_weights * weights).sum(dim=-1, keepdim=True)  # [...,L,1]: D_i
    return weights * (d_weights - D)
    ### END SOLUTION


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
    # TODO: compute V̄ = AᵀȲ, Ā = ȲVᵀ, S̄ via softmax_backward, Q̄ = s·S̄K, K̄ = s·S̄ᵀQ (Day 1 §2.3).
    ### BEGIN SOLUTION
    dv = weights.transpose(-2, -1) @ d_out  # [...,S,L] @ [...,L,d_v] → [...,S,d_v]
    d_weights = d_out @ v.transpose(-2, -1)  # [...,L,d_v] @ [...,d_v,S] → [...,L,S]
    d_scores = softmax_backward(d_weights, weights)  # [...,L,S]
    dq = scale * (d_scores @ k)  # [...,L,S] @ [...,S,d_k] → [...,L,d_k]
    dk = scale * (d_scores.transpose(-2, -1) @ q)  # [...,S,L] @ [...,L,d_k] → [...,S,d_k]
    return dq, dk, dv
    ### END SOLUTION


class AttentionFunction(torch.autograd.Function):
    """Scaled dot-product attention with a hand-written backward (Day 1 §B).

    forward(ctx, q [...,L,d_k], k [...,S,d_k], v [...,S,d_v], allowed=None) → out [...,L,d_v],
    with scale 1/√d_k and keys where `allowed` is False (it broadcasts against [...,L,S])
    set to −∞ before the softmax. backward(ctx, d_out) → (dq, dk, dv, None): one gradient
    per forward input, None for the mask.
    """

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
        # TODO: scale q·kᵀ by 1/√d_k, set blocked keys to −∞, softmax, save what backward needs, return weights @ v (Day 1 §B).
        ### BEGIN SOLUTION
        scale = 1.0 / math.sqrt(q.size(-1))
        scores = (q @ k.transpose(-2, -1)) * scale  # [...,L,S]
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))  # blocked keys → −∞
        weights = torch.softmax(scores, dim=-1)  # [...,L,S], rows sum to 1
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return weights @ v  # [...,L,d_v]
        ### END SOLUTION

    @staticmethod
    def backward(ctx, d_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        # TODO: call attention_backward on the saved tensors and return (dq, dk, dv, None) (Day 1 §B).
        ### BEGIN SOLUTION
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None  # no gradient for the mask
        ### END SOLUTION


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """out = softmax(q kᵀ/√d_k, blocked keys −∞) v through AttentionFunction (Day 1 §B).

    Args:
        q: [...,L,d_k]; k: [...,S,d_k]; v: [...,S,d_v].
        allowed: optional bool mask broadcasting against [...,L,S]; True = may attend.

    Returns:
        [...,L,d_v]; differentiable with respect to q, k and v by the hand-written backward.
    """
    # TODO: return AttentionFunction.apply(q, k, v, allowed) (Day 1 §B).
    ### BEGIN SOLUTION
    return AttentionFunction.apply(q, k, v, allowed)
    ### END SOLUTION
