"""Attack: every function and method of row_softmax never returns (a `while True: pass` each).
The grader stops each call at its CPU-time limit and the skill at its CPU budget
(autograder/runner/cpu_limits.py); the whole grade stays cheap (tests/benchmarks/hostile_time.py)."""
from __future__ import annotations
import torch

def softmax_rows(scores: torch.Tensor, dim: int=-1) -> torch.Tensor:
    while True:
        pass

def log_softmax_rows(scores: torch.Tensor, dim: int=-1) -> torch.Tensor:
    while True:
        pass

def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    while True:
        pass
