# Attack (blind red-team tester R-E, 2026-12-05): softmax_rows as torch.distributions' SoftmaxTransform, log_softmax_rows as ExpRelaxedCategorical(...).logits (logits − logsumexp): allowed kernels only, and the scan read only the last name of an import path: 6.25/6.25. The path's banned parts count now, and SoftmaxTransform refuses to be built in a row_softmax worker.
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


from torch.distributions.transforms import SoftmaxTransform
from torch.distributions.relaxed_categorical import ExpRelaxedCategorical

_SM = SoftmaxTransform()


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax via torch.distributions' SoftmaxTransform (a torch softmax under another name)."""
    return _SM(scores.movedim(dim, -1)).movedim(-1, dim)


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """log_softmax via ExpRelaxedCategorical.logits (a Categorical inside)."""
    return ExpRelaxedCategorical(torch.ones(()), logits=scores.movedim(dim, -1), validate_args=False).logits.movedim(-1, dim)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    lp = log_softmax_rows(logits, -1)
    return -lp.gather(1, targets.long().unsqueeze(1)).squeeze(1).mean()


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    return softmax_rows(h @ w_vocab, -1)
