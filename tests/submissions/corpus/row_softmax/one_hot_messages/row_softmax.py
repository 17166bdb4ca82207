"""Defensive checks whose messages name the functions; a one-hot cross-entropy."""

import warnings

import torch


def _check(scores, dim):
    if not isinstance(scores, torch.Tensor):
        raise TypeError("softmax_rows: expected a tensor")
    if not isinstance(dim, int):
        raise TypeError("softmax")  # a message, not a call
    if not scores.is_floating_point():
        warnings.warn("log_softmax of integer scores", stacklevel=2)


def softmax_rows(scores, dim=-1):
    _check(scores, dim)
    z = scores - scores.max(dim, keepdim=True)[0]
    num = z.exp()
    return num / num.sum(dim, keepdim=True)


def log_softmax_rows(scores, dim=-1):
    _check(scores, dim)
    z = scores - scores.max(dim, keepdim=True)[0]
    return z - z.exp().sum(dim, keepdim=True).log()


def cross_entropy(logits, targets):
    assert logits.dim() == 2, f"cross_entropy expects [N,V] logits, got {tuple(logits.shape)}"
    onehot = torch.zeros_like(logits).scatter_(1, targets.long().unsqueeze(1), 1.0)
    return -(onehot * log_softmax_rows(logits, 1)).sum(1).mean()


def vocab_probs(h, w_vocab):
    return softmax_rows(h.matmul(w_vocab), dim=-1)
