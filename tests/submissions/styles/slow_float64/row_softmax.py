"""row_softmax with explicit Python loops over the rows (one distribution at a time).
All in float64 too: a deliberately slow correct style."""

import functools

import torch


# A deliberately slow style: the explicit loops below, every floating-point input cast to
# float64 first and the result cast back to the input's dtype. The grader's CPU-time limits
# must still let it through (autograder/runner/cpu_limits.py, docs/time-limits.md).
def _float64_everywhere(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        floats = [a.dtype for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.is_floating_point()]

        def up(a):
            return a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a

        def down(out):
            if isinstance(out, tuple):
                return tuple(down(o) for o in out)
            if floats and isinstance(out, torch.Tensor) and out.is_floating_point():
                return out.to(floats[0])
            return out

        return down(fn(*[up(a) for a in args], **{k: up(v) for k, v in kwargs.items()}))

    return run


def _rows(x, dim):
    """Move `dim` last and flatten everything else: [R, n]."""
    moved = x.movedim(dim, -1)
    return moved, moved.reshape(-1, moved.shape[-1])


def _one_row_softmax(row):
    biggest = row[0]
    for value in row[1:]:
        if value > biggest:
            biggest = value
    exps = torch.exp(row - biggest)
    return exps / exps.sum()


@_float64_everywhere
def softmax_rows(scores, dim=-1):
    moved, flat = _rows(scores, dim)
    out = torch.empty_like(flat)
    for r in range(flat.shape[0]):
        out[r] = _one_row_softmax(flat[r])
    return out.reshape(moved.shape).movedim(-1, dim)


@_float64_everywhere
def log_softmax_rows(scores, dim=-1):
    moved, flat = _rows(scores, dim)
    out = torch.empty_like(flat)
    for r in range(flat.shape[0]):
        row = flat[r]
        m = row.max()
        out[r] = (row - m) - torch.log(torch.exp(row - m).sum())
    return out.reshape(moved.shape).movedim(-1, dim)


@_float64_everywhere
def cross_entropy(logits, targets):
    total = torch.zeros((), dtype=logits.dtype)
    n = logits.shape[0]
    for i in range(n):
        row = logits[i]
        m = row.max()
        log_z = m + torch.log(torch.exp(row - m).sum())
        total = total + (log_z - row[int(targets[i])])
    return total / n


@_float64_everywhere
def vocab_probs(h, w_vocab):
    lead = h.shape[:-1]
    flat = h.reshape(-1, h.shape[-1])
    out = torch.empty(flat.shape[0], w_vocab.shape[1], dtype=h.dtype)
    for i in range(flat.shape[0]):
        logits = flat[i] @ w_vocab
        out[i] = _one_row_softmax(logits)
    return out.reshape(*lead, w_vocab.shape[1])
