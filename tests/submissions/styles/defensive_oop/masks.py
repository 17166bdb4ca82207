"""masks, defensive object-oriented style: explicit broadcasting (`expand` + `clone` +
`masked_fill_` on the copy), arange comparisons, and a masked softmax that replaces every
excluded score by the finite `finfo.min`, runs `Tensor.softmax` and multiplies the excluded
weights by 0 (no −∞ anywhere, so neither the forward pass nor the gradients can be NaN)."""

from __future__ import annotations

import torch

__all__ = ["causal_mask", "apply_mask", "padding_allowed", "combine_masks", "masked_softmax", "prefix_lm_mask", "document_mask"]


def causal_mask(T, device=None):
    """bool [T,T], True where key j <= query i."""
    if T < 0:
        raise ValueError("T must be non-negative")
    rows = torch.arange(T, device=device).unsqueeze(1)
    cols = torch.arange(T, device=device).unsqueeze(0)
    return cols <= rows


def _broadcast(scores: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    shape = torch.broadcast_shapes(scores.shape, allowed.shape)
    return scores.expand(shape), allowed.to(torch.bool).expand(shape)


def apply_mask(scores, allowed, fill=float("-inf")):
    """A new tensor: scores where allowed, fill elsewhere (broadcast shape)."""
    scores_b, allowed_b = _broadcast(scores, allowed)
    out = scores_b.clone()
    out.masked_fill_(~allowed_b, fill)
    return out


def padding_allowed(lengths, T, left_padded=False):
    """bool [B,T], True on real tokens."""
    lengths = torch.as_tensor(lengths, dtype=torch.long)
    if lengths.dim() != 1:
        raise ValueError("lengths must be one-dimensional")
    positions = torch.arange(T, device=lengths.device)
    if left_padded:
        return positions.unsqueeze(0) >= (T - lengths).unsqueeze(1)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)


def combine_masks(causal, key_allowed):
    """causal [L,S] and key_allowed [B,S] -> bool [B,1,L,S]."""
    return torch.logical_and(causal.view(1, 1, *causal.shape), key_allowed[:, None, None, :])


class _RestrictedSoftmax:
    """Softmax over the keys that are allowed and not -inf; empty rows give zeros.

    Every excluded entry is replaced by the finite finfo.min before the softmax (so no row
    is ever all -inf and nothing is NaN, gradients included) and multiplied by 0 after.
    """

    def __call__(self, scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        scores_b, allowed_b = _broadcast(scores, allowed)
        keep = allowed_b & ~torch.isneginf(scores_b)
        finite = scores_b.masked_fill(~keep, torch.finfo(scores_b.dtype).min)
        return finite.softmax(dim=-1) * keep


def masked_softmax(scores, allowed):
    """Softmax restricted to allowed keys; a row with no allowed (finite) key is all zeros."""
    return _RestrictedSoftmax()(scores, allowed)


def prefix_lm_mask(T, prefix_len):
    """bool [T,T] on the CPU: (j <= i) or (j < prefix_len)."""
    j = torch.arange(T)
    return causal_mask(T) | (j < prefix_len).expand(T, T)


def document_mask(doc_ids):
    """bool [...,T,T] on the CPU: causal and same document."""
    ids = torch.as_tensor(doc_ids).cpu()
    same = ids.unsqueeze(-1).eq(ids.unsqueeze(-2))
    return same.logical_and(causal_mask(ids.size(-1)))
