"""Blocked (−∞) entries handled explicitly with torch.where and masked_fill."""

import torch


def softmax_rows(scores, dim=-1):
    blocked = torch.isneginf(scores)
    top = scores.masked_fill(blocked, float("-inf")).amax(dim=dim, keepdim=True)
    e = torch.where(blocked, torch.zeros_like(scores), torch.exp(scores - top))
    return e / e.sum(dim=dim, keepdim=True)


def log_softmax_rows(scores, dim=-1):
    top = scores.amax(dim=dim, keepdim=True)
    e = torch.where(torch.isneginf(scores), torch.zeros_like(scores), torch.exp(scores - top))
    return scores - top - torch.log(e.sum(dim=dim, keepdim=True))


def cross_entropy(logits, targets):
    picked = torch.zeros_like(logits, dtype=torch.bool)
    picked[torch.arange(logits.size(0)), targets.long()] = True
    logp = log_softmax_rows(logits)
    return -torch.where(picked, logp, torch.zeros_like(logp)).sum() / logits.size(0)


def vocab_probs(h, w_vocab):
    return softmax_rows(h @ w_vocab, -1)
