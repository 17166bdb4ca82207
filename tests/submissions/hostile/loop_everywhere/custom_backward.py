"""Attack: every function and method of custom_backward never returns (a `while True: pass` each).
The grader stops each call at its CPU-time limit and the skill at its CPU budget
(autograder/runner/cpu_limits.py); the whole grade stays cheap (tests/benchmarks/hostile_time.py)."""
from __future__ import annotations
import math
import torch

def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def attention_backward(d_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weights: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    while True:
        pass

class AttentionFunction(torch.autograd.Function):
    """Scaled dot-product attention with a hand-written backward (Day 1 §B).

    forward(ctx, q [...,L,d_k], k [...,S,d_k], v [...,S,d_v], allowed=None) → out [...,L,d_v],
    with scale 1/√d_k and keys where `allowed` is False (it broadcasts against [...,L,S])
    set to −∞ before the softmax. backward(ctx, d_out) → (dq, dk, dv, None): one gradient
    per forward input, None for the mask.
    """

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None=None) -> torch.Tensor:
        while True:
            pass

    @staticmethod
    def backward(ctx, d_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        while True:
            pass

def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None=None) -> torch.Tensor:
    while True:
        pass
