# Attack: raise ValueError everywhere, hoping the tests of the contract's ValueErrors pay.
"""Skill `qkv`: Q, K, V and scaled dot-product scores.

Course: Week 7 §1–§9 and §12–§13 (the two-prompt example [我,喜欢] / [猫,喜欢]).
Axis names: B batch, T tokens, C model width, d_k / d_v head widths, L query length,
S key length; `...` means any leading batch dimensions.

Fill in every function marked TODO(qkv), then run `make grade SKILL=qkv`.
"""
from __future__ import annotations
import math
import torch
import torch.nn as nn

def project_qkv(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Project the inputs into queries, keys and values (Week 7 §2–§4).

    Formula convention: Q = X W_Q, K = X W_K, V = X W_V.

    Args:
        x: [B,T,C] token vectors.
        w_q, w_k: [C,d_k] projection matrices.
        w_v: [C,d_v] projection matrix.

    Returns:
        (q [B,T,d_k], k [B,T,d_k], v [B,T,d_v]).
    """
    raise ValueError('no')

def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Raw scores S = Q Kᵀ, no scaling (Week 7 §4, §9).

    Args:
        q: [...,L,d] queries.
        k: [...,S,d] keys.

    Returns:
        [...,L,S]: entry (i, j) is the dot product of query i with key j.
    """
    raise ValueError('no')

def scale_scores(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    """Divide the scores by √d_k (Week 7 §8: √d_k, not d_k).

    Args:
        scores: [...,L,S] raw scores.
        d_k: the key/query width.

    Returns:
        [...,L,S] scaled scores.
    """
    raise ValueError('no')

def weighted_values(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Mix the values with the attention weights: O = P V (Week 7 §6).

    Args:
        weights: [...,L,S] attention weights (each row sums to 1).
        v: [...,S,d_v] values.

    Returns:
        [...,L,d_v] outputs.
    """
    raise ValueError('no')

def causal_uniform_mean(x: torch.Tensor) -> torch.Tensor:
    """The Week 7 §1 baseline: position t holds the mean of x[..., :t+1, :].

    Args:
        x: [...,T,C] token vectors.

    Returns:
        [...,T,C]: row t is the average of rows 0..t (a fixed, query-independent read).
    """
    raise ValueError('no')

def single_head_attention(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, causal: bool=True) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole chain of Week 7 §7 and §12 for one head.

    X → Q, K, V → scores Q Kᵀ → / √d_k → (−∞ on future keys when `causal`) → softmax over
    the key axis → weights @ V.

    Args:
        x: [B,T,C] token vectors.
        w_q, w_k: [C,d_k]; w_v: [C,d_v].
        causal: mask future keys (key j > query i) before the softmax.

    Returns:
        (out [B,T,d_v], weights [B,T,T]); every row of `weights` sums to 1.
    """
    raise ValueError('no')

class AttentionHead(nn.Module):
    """A reusable causal attention head (Week 7 §13).

    Submodules `query`, `key`, `value` are `nn.Linear(embed_dim, head_size, bias=False)`;
    `causal_mask` is a non-persistent bool buffer [context_length, context_length],
    allowed-style (`True` = may attend, i.e. `tril`), so `state_dict()` holds only the
    three projection weights.
    """

    def __init__(self, embed_dim: int, head_size: int, context_length: int) -> None:
        super().__init__()
        raise ValueError('no')

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B,T,C] → [B,T,head_size]; ValueError when T > context_length."""
        raise ValueError('no')
