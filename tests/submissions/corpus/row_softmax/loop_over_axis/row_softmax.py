"""Explicit Python loops over the normalised axis (max, then sum), any dim."""

import torch


def _stats(scores, dim):
    cols = scores.unbind(dim)
    top = cols[0]
    for c in cols[1:]:
        top = torch.maximum(top, c)
    total = torch.zeros_like(top)
    for c in cols:
        total = total + torch.exp(c - top)
    return top.unsqueeze(dim), total.unsqueeze(dim)


def softmax_rows(scores, dim=-1):
    top, total = _stats(scores, dim)
    return torch.exp(scores - top) / total


def log_softmax_rows(scores, dim=-1):
    top, total = _stats(scores, dim)
    return scores - top - torch.log(total)


def cross_entropy(logits, targets):
    logp = log_softmax_rows(logits, -1)
    losses = [-logp[n, int(t)] for n, t in enumerate(targets.tolist())]
    return torch.stack(losses).mean()


def vocab_probs(h, w_vocab):
    return softmax_rows(h @ w_vocab, dim=-1)
