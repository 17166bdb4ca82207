"""row_softmax — loops over rows."""
from __future__ import annotations

import math

import torch


def _rows(scores, dim):
    moved = scores.movedim(dim, -1)
    return moved, moved.reshape(-1, moved.shape[-1])


def softmax_rows(scores, dim=-1):
    moved, flat = _rows(scores, dim)
    out = []
    for r in range(flat.shape[0]):
        row = flat[r]
        m = row.max()
        e = torch.exp(row - m)
        out.append(e / e.sum())
    res = torch.stack(out) if out else flat.clone()
    return res.reshape(moved.shape).movedim(-1, dim)


def log_softmax_rows(scores, dim=-1):
    moved, flat = _rows(scores, dim)
    out = []
    for r in range(flat.shape[0]):
        row = flat[r]
        m = row.max()
        out.append((row - m) - torch.log(torch.exp(row - m).sum()))
    res = torch.stack(out) if out else flat.clone()
    return res.reshape(moved.shape).movedim(-1, dim)


def cross_entropy(logits, targets):
    lp = log_softmax_rows(logits, dim=-1)
    total = torch.zeros((), dtype=logits.dtype, device=logits.device)
    N = logits.shape[0]
    for n in range(N):
        total = total - lp[n, int(targets[n])]
    return total / N


def vocab_probs(h, w_vocab):
    logits = h @ w_vocab
    return softmax_rows(logits, dim=-1)
