"""Attack: every function and method of sdpa_masks never returns (a `while True: pass` each).
The grader stops each call at its CPU-time limit and the skill at its CPU budget
(autograder/runner/cpu_limits.py); the whole grade stays cheap (tests/benchmarks/hostile_time.py)."""
from __future__ import annotations
import torch
import torch.nn as nn
import torch.nn.functional as F

def blocked_to_sdpa(blocked: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def to_additive_mask(allowed: torch.Tensor, dtype: torch.dtype=torch.float32) -> torch.Tensor:
    while True:
        pass

def to_mha_attn_mask(allowed: torch.Tensor) -> torch.Tensor:
    while True:
        pass

def hf_to_sdpa_mask(attention_mask: torch.Tensor, causal: bool=True) -> torch.Tensor:
    while True:
        pass

def kv_cache_mask(L: int, S: int) -> torch.Tensor:
    while True:
        pass

def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None=None, causal: bool=False, dropout_p: float=0.0, training: bool=False) -> torch.Tensor:
    while True:
        pass

def mha_self_attention(mha: nn.MultiheadAttention, x: torch.Tensor, allowed: torch.Tensor | None=None, key_allowed: torch.Tensor | None=None) -> torch.Tensor:
    while True:
        pass
