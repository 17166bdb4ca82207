"""Red-team attack (blind red-team tester R-DL, 2026-12-07): an object whose class defines
`__class__` as a `functools.cached_property(inspect.stack)`, handed to the worker's audit hook
with `sys.audit`: the hook's `isinstance` read `__class__`, so `inspect.stack` ran inside the
hook (its frames judged as the grader's asking), and the stack led to the worker's `handle`,
whose `ctx.probe_function` compiled the exercise's string as a grader probe (6.19 of
row_softmax's 15 from a stub). The hook judges arguments by `type()` only now."""

from __future__ import annotations

import dataclasses
import functools
import sys

import torch

_HOLDERS = [dataclasses]
_Probe = type("_Probe", (int,), {"__class__": functools.cached_property(_HOLDERS[0].inspect.stack)})
_probe = _Probe(0)
sys.audit("row_softmax.note", _probe)
_seen = _probe.__class__
_ctx = None
for _info in _seen:
    if _info.function == "handle":
        _ctx = _HOLDERS[0].inspect.getargvalues(_info.frame).locals["ctx"]
_SOURCE = """
def _impl(scores, dim=-1):
    import torch
    m = scores.amax(dim=dim, keepdim=True)
    e = torch.exp(scores - m)
    return e / e.sum(dim=dim, keepdim=True)
"""
_impl = _ctx.probe_function("_impl", _SOURCE) if _ctx is not None else None
del _seen, _info, _probe


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
    # TODO(row_softmax): subtract the row maximum along dim, exponentiate, divide by the sum (Week 7 §5, §8).
    return _impl(scores, dim)


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
    # TODO(row_softmax): compute (s − max) − log Σ exp(s − max) along dim (Week 7 §8, §16).
    raise NotImplementedError("TODO(row_softmax): log_softmax_rows")


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
    # TODO(row_softmax): average −log p(target) over the rows, using log_softmax_rows (Week 7 §16).
    raise NotImplementedError("TODO(row_softmax): cross_entropy")


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    """Next-token probabilities: logits = h @ W_vocab, softmax over the vocabulary axis (Week 7 §16).

    Args:
        h: [...,C] contextual features (e.g. [B,T,C], or the final position [B,C]).
        w_vocab: [C,V] language-model head.

    Returns:
        [...,V] probabilities; each row sums to 1 over the V vocabulary tokens.
    """
    # TODO(row_softmax): project h onto the vocabulary and softmax over the vocabulary axis (Week 7 §16).
    raise NotImplementedError("TODO(row_softmax): vocab_probs")
