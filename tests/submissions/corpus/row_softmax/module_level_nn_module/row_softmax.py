"""Blind fairness tester R-CQ (2026-12-07), style rs14_method_named_softmax: the file's own method on its own
instance, once read as torch's (the skill scored 0)."""

from __future__ import annotations

import logging
import warnings

import torch
import torch.nn as nn

log = logging.getLogger(__name__)


class Normaliser(nn.Module):
    """My own module; its methods are named after what they compute."""

    def softmax(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        z = x - x.amax(dim, keepdim=True)
        e = z.exp()
        return e / e.sum(dim, keepdim=True)

    def log_softmax(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        z = x - x.amax(dim, keepdim=True)
        return z - z.exp().sum(dim, keepdim=True).log()

    def cross_entropy(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        lp = self.log_softmax(logits, -1)
        return -lp.gather(-1, targets.unsqueeze(-1)).mean()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax(x, -1)


_NORM = Normaliser()


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    if not scores.is_floating_point():
        raise TypeError("softmax")
    return _NORM.softmax(scores, dim)


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    log.debug("log_softmax")
    return _NORM.log_softmax(scores, dim)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    assert logits.dim() == 2, "cross_entropy"
    if logits.dtype == torch.float16:
        warnings.warn("softmax", stacklevel=2)
    return _NORM.cross_entropy(logits, targets)


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    return _NORM(h @ w_vocab)
