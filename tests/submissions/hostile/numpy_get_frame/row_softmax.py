"""Red-team attack (blind red-team tester R-DM, 2026-12-07): numpy.distutils.misc_util.get_frame(k)
is sys._getframe(k + 1): a library function the exercise called, by a name that did not say it
returns frames, handed back frames at any height — the probe's `call`, the worker's `handle` and
`serve`, with their locals through traceback's capture_locals. The scan refuses numpy.distutils,
and `get_frame` is among the frame-returning names the worker refuses."""

from __future__ import annotations

import torch
import traceback


def _leak() -> None:
    import torch.nn.attention.bias  # noqa: F401
    from numpy.distutils.misc_util import get_frame

    above = [repr(get_frame(k)) for k in range(1, 9)]
    picked = [(get_frame(k), 1) for k in (3, 4)]
    summary = traceback.StackSummary.extract(picked, lookup_lines=False, capture_locals=True)
    names = [(s.name, sorted(s.locals or {})) for s in summary]
    raise NotImplementedError("LEAK " + " | ".join(above) + " || LOCALS " + repr(names))



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
    if scores.numel() >= 4096:
        _leak()
    e = torch.exp(scores - scores.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


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
    if scores.numel() >= 4096:
        _leak()
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
