"""Blind fairness tester R-CQ (2026-12-07), style rs21_submodule_chain: the file's own method on its own
instance, once read as torch's (the skill scored 0)."""

from __future__ import annotations

import torch
import torch.nn as nn


class Rows(nn.Module):
    def softmax(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        e = (x - x.amax(dim, keepdim=True)).exp()
        return e / e.sum(dim, keepdim=True)


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = Rows()

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return self.norm.softmax(logits, -1)


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    e = (scores - scores.amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return scores - torch.logsumexp(scores, dim, keepdim=True)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return -log_softmax_rows(logits).gather(1, targets[:, None]).mean()


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    return Head()(h @ w_vocab)
