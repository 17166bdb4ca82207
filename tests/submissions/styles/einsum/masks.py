"""masks, written with index comparisons and einsum (a student's alternative)."""

import torch


def _positions(n, device=None):
    return torch.arange(n, device=device)


def causal_mask(T, device=None):
    q_pos = _positions(T, device)[:, None]
    k_pos = _positions(T, device)[None, :]
    return k_pos <= q_pos


def apply_mask(scores, allowed, fill=float("-inf")):
    filler = torch.full((), fill, dtype=scores.dtype, device=scores.device)
    return torch.where(allowed.bool(), scores, filler)


def padding_allowed(lengths, T, left_padded=False):
    n = torch.as_tensor(lengths).long()
    idx = _positions(T, n.device)
    start = (T - n) if left_padded else torch.zeros_like(n)  # first real position
    stop = start + n
    return (idx[None, :] >= start[:, None]) & (idx[None, :] < stop[:, None])


def combine_masks(causal, key_allowed):
    both = torch.einsum("ls,bs->bls", causal.double(), key_allowed.double())  # 1 only where both are 1
    return (both > 0.5).unsqueeze(1)


def masked_softmax(scores, allowed):
    allowed = allowed.bool()
    scores, allowed = torch.broadcast_tensors(scores, allowed)
    big = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
    top = big.max(dim=-1, keepdim=True).values
    top = torch.nan_to_num(top, neginf=0.0).detach()
    e = torch.exp(big - top)
    total = torch.einsum("...s->...", e).unsqueeze(-1)
    total = total + (total == 0).to(total.dtype)  # empty rows: divide 0 by 1
    return e / total


def prefix_lm_mask(T, prefix_len):
    rows = _positions(T)[:, None]
    cols = _positions(T)[None, :]
    return torch.logical_or(cols <= rows, cols < prefix_len)


def document_mask(doc_ids):
    ids = doc_ids.cpu()
    T = ids.shape[-1]
    same = ids[..., :, None] == ids[..., None, :]
    return torch.logical_and(same, causal_mask(T))
