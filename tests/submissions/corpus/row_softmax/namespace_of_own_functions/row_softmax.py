"""Blind fairness tester R-CQ (2026-12-07), style rs19_partial_named: the file's own method on its own
instance, once read as torch's (the skill scored 0)."""

from __future__ import annotations

import types

import torch


def _stable(x: torch.Tensor, dim: int) -> torch.Tensor:
    e = (x - x.amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)


def _stable_log(x: torch.Tensor, dim: int) -> torch.Tensor:
    return x - torch.logsumexp(x, dim, keepdim=True)


ops = types.SimpleNamespace(softmax=_stable, log_softmax=_stable_log)


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return ops.softmax(scores, dim)


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return ops.log_softmax(scores, dim)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return -log_softmax_rows(logits).gather(1, targets[:, None]).mean()


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    return softmax_rows(h @ w_vocab)
