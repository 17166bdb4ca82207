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
    # TODO(custom_backward): return A ⊙ (Ā − D) with D = rowsum(Ā ⊙ A) over the last axis (Day 1 §2.3 第二步).
    raise NotImplementedError("TODO(custom_backward): softmax_backward")


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
    # TODO(custom_backward): compute V̄ = AᵀȲ, Ā = ȲVᵀ, S̄ via softmax_backward, Q̄ = s·S̄K, K̄ = s·S̄ᵀQ (Day 1 §2.3).
    raise NotImplementedError("TODO(custom_backward): attention_backward")


class AttentionFunction(torch.autograd.Function):
    """Scaled dot-product attention with a hand-written backward (Day 1 §B).

    forward(ctx, q [...,L,d_k], k [...,S,d_k], v [...,S,d_v], allowed=None) → out [...,L,d_v],
    with scale 1/√d_k and keys where `allowed` is False (it broadcasts against [...,L,S])
    set to −∞ before the softmax. backward(ctx, d_out) → (dq, dk, dv, None): one gradient
    per forward input, None for the mask.
    """

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
        # TODO(custom_backward): scale q·kᵀ by 1/√d_k, set blocked keys to −∞, softmax, save what backward needs, return weights @ v (Day 1 §B).
        raise NotImplementedError("TODO(custom_backward): AttentionFunction.forward")

    @staticmethod
    def backward(ctx, d_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        # TODO(custom_backward): call attention_backward on the saved tensors and return (dq, dk, dv, None) (Day 1 §B).
        raise NotImplementedError("TODO(custom_backward): AttentionFunction.backward")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """out = softmax(q kᵀ/√d_k, blocked keys −∞) v through AttentionFunction (Day 1 §B).

    Args:
        q: [...,L,d_k]; k: [...,S,d_k]; v: [...,S,d_v].
        allowed: optional bool mask broadcasting against [...,L,S]; True = may attend.

    Returns:
        [...,L,d_v]; differentiable with respect to q, k and v by the hand-written backward.
    """
    # TODO(custom_backward): return AttentionFunction.apply(q, k, v, allowed) (Day 1 §B).
    raise NotImplementedError("TODO(custom_backward): attention")
