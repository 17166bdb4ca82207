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
    return torch.zeros_like(scores)


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
    return torch.zeros_like(scores)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the next-token targets (Week 7 §16).

    L_n = −log p(target_n | context_n), where p is the softmax over the vocabulary axis;
    the result is the mean over the N examples (reduction "mean"; no ignore_index).

    Args:
        logits: [N,V] vocabulary scores, one row per example.
        targets: [N] integer class indices in [0, V).

    Returns:
        A 0-dim tensor of the logits' dtype: mean over n of −log_softmax(logits)[n, targets[n]].
    """
    return torch.zeros((), dtype=logits.dtype)


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    """Next-token probabilities: logits = h @ W_vocab, softmax over the vocabulary axis (Week 7 §16).

    Args:
        h: [...,C] contextual features (e.g. [B,T,C], or the final position [B,C]).
        w_vocab: [C,V] language-model head.

    Returns:
        [...,V] probabilities; each row sums to 1 over the V vocabulary tokens.
    """
    return torch.zeros_like(h @ w_vocab)


# ---------------------------------------------------------------------------------------------
# What the grader's builtin `call` probe reads as each function is a fresh object per lookup (a
# property of the module's class): inside the recorded window it returns a zero placeholder; when
# the probe returns, its `fn` local dies and the finalizer fills the placeholder with the
# distribution computed by autograd (∂ logsumexp / ∂ s) — after the window, before the reply.
import types
import weakref

import row_softmax as _me


def _dist(s, dim):
    s = s.detach().requires_grad_(True)
    with torch.enable_grad():
        (p,) = torch.autograd.grad(torch.logsumexp(s, dim=dim).sum(), [s])
    return p


def _fill(box):
    if not box:
        return
    kind, args, kwargs, out = box
    with torch.no_grad():
        if kind == "A":
            s = args[0]
            dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
            out.copy_(_dist(s, dim))
        elif kind == "B":
            s = args[0]
            dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
            out.copy_(s - torch.logsumexp(s, dim=dim, keepdim=True))
        elif kind == "C":
            logits, targets = args[0], args[1]
            logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
            out.copy_(-logp.gather(-1, targets.long().unsqueeze(-1)).mean())
        else:
            h, w = args[0], args[1]
            out.copy_(_dist(h @ w, -1))


class _Placeholder:
    def __init__(self, kind, real):
        self.kind = kind
        self.real = real
        self.box = []

    def __call__(self, *args, **kwargs):
        out = self.real(*args, **kwargs)
        self.box += [self.kind, args, kwargs, out]
        return out


def _fresh(kind, real):
    obj = _Placeholder(kind, real)
    weakref.finalize(obj, _fill, obj.box)
    return obj


class _Module(types.ModuleType):
    softmax_rows = property(lambda self: _fresh("A", _zeros_rows))
    log_softmax_rows = property(lambda self: _fresh("B", _zeros_rows))
    cross_entropy = property(lambda self: _fresh("C", _zeros_ce))
    vocab_probs = property(lambda self: _fresh("D", _zeros_vocab))


def _zeros_rows(scores, dim=-1):
    return torch.zeros_like(scores)


def _zeros_ce(logits, targets):
    return torch.zeros((), dtype=logits.dtype)


def _zeros_vocab(h, w_vocab):
    return torch.zeros_like(h @ w_vocab)


_me.__class__ = _Module
