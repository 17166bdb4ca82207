"""masks with explicit Python loops over rows, examples and documents (a student's version)."""

import torch


def causal_mask(T, device=None):
    m = torch.zeros(T, T, dtype=torch.bool, device=device)
    for i in range(T):
        m[i, : i + 1] = True
    return m


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


def padding_allowed(lengths, T, left_padded=False):
    lengths = [int(n) for n in lengths]
    out = torch.zeros(len(lengths), T, dtype=torch.bool)
    for b, n in enumerate(lengths):
        if n == 0:
            continue
        if left_padded:
            out[b, T - n:] = True
        else:
            out[b, :n] = True
    return out


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


def masked_softmax(scores, allowed):
    shape = torch.broadcast_shapes(scores.shape, allowed.shape)
    s = scores.expand(shape).reshape(-1, shape[-1])
    a = allowed.bool().expand(shape).reshape(-1, shape[-1])
    rows = [_row_softmax(s[r], a[r]) for r in range(s.shape[0])]
    if not rows:
        return scores.new_zeros(shape)
    return torch.stack(rows).reshape(shape)


def prefix_lm_mask(T, prefix_len):
    m = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            m[i, j] = j <= i or j < prefix_len
    return m


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
