"""masks — loops."""
from __future__ import annotations

import math

import torch


def causal_mask(T, device=None):
    m = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            if j <= i:
                m[i, j] = True
    return m.to(device) if device is not None else m


def apply_mask(scores, allowed, fill=float("-inf")):
    shape = torch.broadcast_shapes(scores.shape, allowed.shape)
    s = scores.expand(shape).clone()
    a = allowed.expand(shape)
    flat_s = s.reshape(-1)
    flat_a = a.reshape(-1)
    for n in range(flat_s.numel()):
        if not bool(flat_a[n]):
            flat_s[n] = fill
    return flat_s.reshape(shape)


def padding_allowed(lengths, T, left_padded=False):
    lens = [int(l) for l in lengths]
    dev = lengths.device if isinstance(lengths, torch.Tensor) else None
    out = torch.zeros(len(lens), T, dtype=torch.bool, device=dev)
    for b, n in enumerate(lens):
        for t in range(T):
            out[b, t] = (t >= T - n) if left_padded else (t < n)
    return out


def combine_masks(causal, key_allowed):
    B, S = key_allowed.shape
    L = causal.shape[0]
    out = torch.zeros(B, 1, L, S, dtype=torch.bool, device=causal.device)
    for b in range(B):
        for i in range(L):
            for j in range(S):
                out[b, 0, i, j] = bool(causal[i, j]) and bool(key_allowed[b, j])
    return out


def masked_softmax(scores, allowed):
    shape = torch.broadcast_shapes(scores.shape, allowed.shape)
    s = scores.expand(shape)
    a = allowed.expand(shape)
    S = shape[-1]
    s2 = s.reshape(-1, S)
    a2 = a.reshape(-1, S)
    rows = []
    for r in range(s2.shape[0]):
        row = s2[r]
        ok = a2[r]
        masked = torch.where(ok, row, torch.full_like(row, float("-inf")))
        finite = [float(masked[j]) for j in range(S) if math.isfinite(float(masked[j]))]
        if not finite:
            rows.append(torch.zeros_like(row) * row.detach().nan_to_num(0.0, 0.0, 0.0))  # zeros, grad 0
            continue
        m = max(finite)
        e = torch.exp(masked - m)
        rows.append(e / e.sum())
    return torch.stack(rows).reshape(shape)


def prefix_lm_mask(T, prefix_len):
    m = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            m[i, j] = (j <= i) or (j < prefix_len)
    return m


def document_mask(doc_ids):
    ids = torch.as_tensor(doc_ids).cpu()
    T = ids.shape[-1]
    flat = ids.reshape(-1, T)
    out = torch.zeros(flat.shape[0], T, T, dtype=torch.bool)
    for n in range(flat.shape[0]):
        for i in range(T):
            for j in range(i + 1):
                out[n, i, j] = bool(flat[n, i] == flat[n, j])
    return out.reshape(ids.shape + (T,))
