"""Attack: every function and method of mha_reshape never returns (a `while True: pass` each).
The grader stops each call at its CPU-time limit and the skill at its CPU budget
(autograder/runner/cpu_limits.py); the whole grade stays cheap (tests/benchmarks/hostile_time.py)."""
from __future__ import annotations
import math
import torch
import torch.nn as nn

def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    while True:
        pass

def merge_heads(x: torch.Tensor) -> torch.Tensor:
    while True:
        pass

class MultiHeadAttention(nn.Module):
    """Causal multi-head self-attention written from tensor operations (Week 7 §15, Day 1 §4.3).

    Submodules `w_q`, `w_k`, `w_v`, `w_o` are `nn.Linear(embed_dim, embed_dim, bias=bias)`:
    the h per-head projections [C, C/h] side by side in one [C, C] matrix. The causal mask
    is a buffer over [context_length, context_length] (its name and polarity are free; here
    bool, True = may attend), best registered with `persistent=False` so that `state_dict()`
    holds only the four projections' parameters. Week 7 §13's `register_buffer("causal_mask",
    …)` without it is accepted too: the grader loads weights with the mask left as built.
    """

    def __init__(self, embed_dim: int, num_heads: int, context_length: int, bias: bool=False) -> None:
        while True:
            pass

    def forward(self, x: torch.Tensor, key_allowed: torch.Tensor | None=None, return_weights: bool=False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        while True:
            pass

def score_elements(batch: int, num_heads: int, T: int) -> int:
    while True:
        pass

def mha_flops(T: int, d: int) -> int:
    while True:
        pass

def attention_flop_fraction(T: int, d: int) -> float:
    while True:
        pass

def attention_matrix_gib(batch: int, num_heads: int, T: int, bytes_per_element: int=2, layers: int=1) -> float:
    while True:
        pass

def mha_param_count(d: int, bias: bool=True) -> int:
    while True:
        pass
