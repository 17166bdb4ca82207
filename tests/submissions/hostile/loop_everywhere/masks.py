"""Attack: every function and method of masks never returns (a `while True: pass` each).
The grader stops each call at its CPU-time limit and the skill at its CPU budget
(autograder/runner/cpu_limits.py); the whole grade stays cheap (tests/benchmarks/hostile_time.py)."""
from __future__ import annotations
import torch

def causal_mask(T: int, device: torch.device | str | None=None) -> torch.Tensor:
    while True:
        pass

def apply_mask(scores: torch.Tensor, allowed: torch.Tensor, fill: float=float('-inf')) -> torch.Tensor:
    while True:
        pass

def padding_allowed(lengths: torch.Tensor | list[int], T: int, left_padded: bool=False) -> torch.Tensor:
    while True:
        pass

def combine_masks(causal: torch.Tensor, key_allowed: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def masked_softmax(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def prefix_lm_mask(T: int, prefix_len: int) -> torch.Tensor:
    while True:
        pass

def document_mask(doc_ids: torch.Tensor) -> torch.Tensor:
    while True:
        pass
