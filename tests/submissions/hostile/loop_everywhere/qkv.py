"""Attack: every function and method of qkv never returns (a `while True: pass` each).
The grader stops each call at its CPU-time limit and the skill at its CPU budget
(autograder/runner/cpu_limits.py); the whole grade stays cheap (tests/benchmarks/hostile_time.py)."""
from __future__ import annotations
import math
import torch
import torch.nn as nn

def project_qkv(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    while True:
        pass

def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def scale_scores(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    while True:
        pass

def weighted_values(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def causal_uniform_mean(x: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def single_head_attention(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, causal: bool=True) -> tuple[torch.Tensor, torch.Tensor]:
    while True:
        pass

class AttentionHead(nn.Module):
    """A reusable causal attention head (Week 7 §13).

    Submodules `query`, `key`, `value` are `nn.Linear(embed_dim, head_size, bias=False)`;
    `causal_mask` is a registered bool buffer [context_length, context_length],
    allowed-style (`True` = may attend, i.e. `tril`), sliced to [:T, :T] in `forward`.
    Persistent or not, both are accepted: Week 7 §13 registers it as a plain (persistent)
    buffer; Day 1 §A.4 recommends `persistent=False`, which keeps it out of `state_dict()`
    (the tests load only the three projection weights, with `strict=False`).
    """

    def __init__(self, embed_dim: int, head_size: int, context_length: int) -> None:
        while True:
            pass

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while True:
            pass
