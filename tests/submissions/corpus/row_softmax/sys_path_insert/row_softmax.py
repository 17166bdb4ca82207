"""Blind tester R-DE (2026-12-07), v20: the common `sys.path.insert(0, dirname(__file__))` line —
the skill scored 0/15 ("sys.path (a module for dynamic code or introspection)")."""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Numerically stable softmax along `dim` (Week 7 §5; by default the key axis).

    softmax(s)_j = exp(s_j − m) / Σ_r exp(s_r − m) with m = max_r s_r: subtracting the row
    maximum changes nothing mathematically (Week 7 §8) but keeps every exp() ≤ 1, so
    scores of magnitude 1e4 do not overflow. Entries at −∞ get weight exactly 0, as long
    as the row has at least one finite entry.

    Args:
        scores: [...,L,S] scores (any shape).
        dim: the axis that is normalised (−1: one distribution per query row).

    Returns:
        A tensor shaped like `scores`, non-negative, summing to 1 along `dim`.
    """
    ### BEGIN SOLUTION
    row_max = scores.amax(dim=dim, keepdim=True)  # [...,L,1] for dim=-1
    exps = torch.exp(scores - row_max)  # every entry in [0, 1]; −∞ → 0
    return exps / exps.sum(dim=dim, keepdim=True)
    ### END SOLUTION


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Stable log-softmax along `dim`: s − logsumexp(s) (log-sum-exp with the max pulled out).

    log softmax(s)_j = (s_j − m) − log Σ_r exp(s_r − m), m = max_r s_r. Never takes the log
    of an underflowed probability, so it stays finite where softmax rounds to 0.

    Args:
        scores: [...,L,S] scores or [N,V] logits (any shape).
        dim: the axis that is normalised.

    Returns:
        A tensor shaped like `scores`: the log-probabilities along `dim`.
    """
    ### BEGIN SOLUTION
    row_max = scores.amax(dim=dim, keepdim=True)
    shifted = scores - row_max  # ≤ 0
    return shifted - torch.log(torch.exp(shifted).sum(dim=dim, keepdim=True))
    ### END SOLUTION


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the next-token targets (Week 7 §16).

    L_n = −log p(target_n | context_n), where p is the softmax over the vocabulary axis;
    the result is the mean over the N examples (reduction "mean"; no ignore_index). Finite
    for logits of any magnitude (1e4 included): a log of a probability that underflowed to
    0 would give +∞.

    Args:
        logits: [N,V] vocabulary scores, one row per example.
        targets: [N] integer class indices in [0, V).

    Returns:
        A 0-dim tensor of the logits' dtype: mean over n of −log_softmax(logits)[n, targets[n]].
    """
    ### BEGIN SOLUTION
    log_probs = log_softmax_rows(logits, dim=-1)  # [N,V]
    picked = log_probs.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)  # [N]: log p(target_n)
    return -picked.mean()
    ### END SOLUTION


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    """Next-token probabilities: logits = h @ W_vocab, softmax over the vocabulary axis (Week 7 §16).

    Args:
        h: [...,C] contextual features (e.g. [B,T,C], or the final position [B,C]).
        w_vocab: [C,V] language-model head.

    Returns:
        [...,V] probabilities; each row sums to 1 over the V vocabulary tokens.
    """
    ### BEGIN SOLUTION
    logits = h @ w_vocab  # [...,V]
    return softmax_rows(logits, dim=-1)  # over the vocabulary, not over positions
    ### END SOLUTION
