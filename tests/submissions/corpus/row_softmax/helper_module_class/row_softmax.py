"""Blind fairness tester R-CS (2026-12-07), style rs_helper_class: the student's own softmax reached
through its own objects, once refused by the rule scan (the skill scored 0)."""

from __future__ import annotations

import mathutils as mu
import torch


def softmax_rows(scores, dim=-1):
    return mu.Rows().softmax(scores, dim)


def log_softmax_rows(scores, dim=-1):
    return torch.log(softmax_rows(scores, dim)) if False else (scores - torch.logsumexp(scores, dim=dim, keepdim=True))


def cross_entropy(logits, targets):
    return -log_softmax_rows(logits).gather(-1, targets.long()[:, None]).mean()


def vocab_probs(h, w_vocab):
    return softmax_rows(h @ w_vocab)
