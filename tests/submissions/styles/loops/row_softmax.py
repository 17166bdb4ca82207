"""row_softmax with explicit Python loops over the rows (one distribution at a time)."""
import math

import torch


def _rows(x, dim):
    """Move `dim` last and flatten everything else: [R, n]."""
    moved = x.movedim(dim, -1)
    return moved, moved.reshape(-1, moved.shape[-1])


def _row_max(row):
    """The largest entry, found one element at a time (a student's first loop)."""
    biggest = row[0]
    for value in row[1:]:
        if value > biggest:
            biggest = value
    return biggest


def _one_row_softmax(row):
    exps = torch.exp(row - _row_max(row))
    return exps / exps.sum()


def softmax_rows(scores, dim=-1):
    moved, flat = _rows(scores, dim)
    out = torch.empty_like(flat)
    for r in range(flat.shape[0]):
        out[r] = _one_row_softmax(flat[r])
    return out.reshape(moved.shape).movedim(-1, dim)


def log_softmax_rows(scores, dim=-1):
    moved, flat = _rows(scores, dim)
    out = torch.empty_like(flat)
    for r in range(flat.shape[0]):
        row = flat[r]
        m = _row_max(row)
        out[r] = (row - m) - torch.log(torch.exp(row - m).sum())
    return out.reshape(moved.shape).movedim(-1, dim)


def cross_entropy(logits, targets):
    total = torch.zeros((), dtype=logits.dtype)
    n = logits.shape[0]
    for i in range(n):
        row = logits[i]
        m = _row_max(row)
        log_z = m + torch.log(torch.exp(row - m).sum())
        total = total + (log_z - row[int(targets[i])])
    return total / n


def vocab_probs(h, w_vocab):
    lead = h.shape[:-1]
    flat = h.reshape(-1, h.shape[-1])
    out = torch.empty(flat.shape[0], w_vocab.shape[1], dtype=h.dtype)
    for i in range(flat.shape[0]):
        logits = flat[i] @ w_vocab
        out[i] = _one_row_softmax(logits)
    return out.reshape(*lead, w_vocab.shape[1])
