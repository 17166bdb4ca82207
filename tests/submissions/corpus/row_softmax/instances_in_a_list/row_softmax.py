"""Blind fairness tester R-CS (2026-12-07), style rs_list: the student's own softmax reached
through its own objects, once refused by the rule scan (the skill scored 0)."""

from __future__ import annotations

import torch


def _sm(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = (x - m).exp()
    return e / e.sum(dim=dim, keepdim=True)


def _lsm(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    return (x - m) - torch.logsumexp(x - m, dim=dim, keepdim=True)


class Rows:
    def softmax(self, x, dim=-1):
        return _sm(x, dim)


HELPER_LIST = [Rows()]


def softmax_rows(scores, dim=-1):
    return HELPER_LIST[0].softmax(scores, dim)


def log_softmax_rows(scores, dim=-1):
    return _lsm(scores, dim)


def cross_entropy(logits, targets):
    return -_lsm(logits).gather(-1, targets.long()[:, None]).mean()


def vocab_probs(h, w_vocab):
    return _sm(h @ w_vocab, -1)
