"""Computed in float64 inside, returned in the input's dtype."""

import torch


def softmax_rows(scores, dim=-1):
    s = scores.to(torch.float64)
    e = (s - s.max(dim=dim, keepdim=True).values).exp()
    return (e / e.sum(dim=dim, keepdim=True)).to(scores.dtype)


def log_softmax_rows(scores, dim=-1):
    s = scores.double()
    m = s.max(dim=dim, keepdim=True).values
    return (s - m - (s - m).exp().sum(dim=dim, keepdim=True).log()).to(scores.dtype)


def cross_entropy(logits, targets):
    logp = log_softmax_rows(logits.double(), dim=1)
    loss = -logp.gather(1, targets.to(torch.int64).view(-1, 1)).mean()
    return loss.to(logits.dtype)


def vocab_probs(h, w_vocab):
    return softmax_rows(h.double() @ w_vocab.double()).to(torch.promote_types(h.dtype, w_vocab.dtype))
