"""masks with explicit Python loops over rows, examples and documents (a student's version).
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


@_float64_everywhere
def causal_mask(T, device=None):
    m = torch.zeros(T, T, dtype=torch.bool, device=device)
    for i in range(T):
        m[i, : i + 1] = True
    return m


@_float64_everywhere
def apply_mask(scores, allowed, fill=float("-inf")):
    shape = torch.broadcast_shapes(scores.shape, allowed.shape)
    out = scores.expand(shape).clone()
    mask = allowed.bool().expand(shape)
    flat_out = out.reshape(-1, shape[-1])
    flat_mask = mask.reshape(-1, shape[-1])
    for r in range(flat_out.shape[0]):
        for c in range(flat_out.shape[1]):
            if not flat_mask[r, c]:
                flat_out[r, c] = fill
    return flat_out.reshape(shape)


@_float64_everywhere
def padding_allowed(lengths, T, left_padded=False):
    lengths = [int(n) for n in lengths]
    out = torch.zeros(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths):
        if n == 0:
            continue
        if left_padded:
            out[b, T - n :] = True
        else:
            out[b, :n] = True
    return out


@_float64_everywhere
def combine_masks(causal, key_allowed):
    B, S = key_allowed.shape
    L = causal.shape[0]
    out = torch.zeros(B, 1, L, S, dtype=torch.bool)
    for b in range(B):
        for i in range(L):
            out[b, 0, i] = causal[i] & key_allowed[b]
    return out


def _row_softmax(row, ok):
    nothing = row.masked_fill(torch.ones_like(ok), 0.0)  # all zeros, still attached to the graph
    if not bool(ok.any()):
        return nothing  # no key to read
    kept = row[ok]
    best = kept.max().detach()
    if torch.isinf(best):  # every allowed score is -inf
        return nothing
    e = torch.zeros_like(row).masked_scatter(ok, torch.exp(kept - best))
    return e / e.sum()


@_float64_everywhere
def masked_softmax(scores, allowed):
    shape = torch.broadcast_shapes(scores.shape, allowed.shape)
    s = scores.expand(shape).reshape(-1, shape[-1])
    a = allowed.bool().expand(shape).reshape(-1, shape[-1])
    rows = [_row_softmax(s[r], a[r]) for r in range(s.shape[0])]
    if not rows:
        return scores.new_zeros(shape)
    return torch.stack(rows).reshape(shape)


@_float64_everywhere
def prefix_lm_mask(T, prefix_len):
    m = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            m[i, j] = j <= i or j < prefix_len
    return m


@_float64_everywhere
def document_mask(doc_ids):
    ids = doc_ids.cpu()
    T = ids.shape[-1]
    flat = ids.reshape(-1, T)
    out = torch.zeros(flat.shape[0], T, T, dtype=torch.bool)
    for n in range(flat.shape[0]):
        for i in range(T):
            for j in range(i + 1):
                if flat[n, i] == flat[n, j]:
                    out[n, i, j] = True
    return out.reshape(*ids.shape, T)
