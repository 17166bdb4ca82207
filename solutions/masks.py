"""Skill `masks`: causal, padding and other attention masks.

Course: Week 7 §10–§11 (the causal mask, −∞ before the softmax) and Day 1 §3 (causal,
padding, additive vs boolean masks, the fully blocked row of a left-padded batch,
prefix-LM and document masks).
Axis names: B batch, T tokens, L query length, S key length; `...` means any leading
batch dimensions.

One convention inside this module: a boolean mask is *allowed-style*, `True` = this query
may read this key (the SDPA convention, Day 1 §A.3). A blocked (`masked_fill`-style) mask
is only ever formed at the point of use, as `~allowed`.
"""

from __future__ import annotations

import torch


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The causal mask M of Week 7 §10: M[i, j] = (j <= i).

    Args:
        T: number of tokens (queries = keys = T).
        device: where to build the mask (default: CPU).

    Returns:
        bool [T,T], `True` on and below the diagonal (query i may read keys 0..i).
    """
    # TODO: build the [T,T] allowed-style causal mask, True where key j <= query i (Week 7 §10).
    ### BEGIN SOLUTION
    return torch.tril(torch.ones(T, T, dtype=torch.bool, device=device))  # [T,T], tril = j <= i
    ### END SOLUTION


def apply_mask(scores: torch.Tensor, allowed: torch.Tensor, fill: float = float("-inf")) -> torch.Tensor:
    """Set the blocked scores to `fill` (Week 7 §11: −∞ before the softmax, not 0).

    Args:
        scores: [...,L,S] attention scores.
        allowed: bool, broadcastable against `scores` (e.g. [L,S], [B,1,L,S], [B,1,1,S]);
            `True` = keep the score.
        fill: the value for blocked entries (default −∞).

    Returns:
        A new tensor of the broadcast shape and the dtype of `scores`: `scores` where
        allowed, `fill` elsewhere. `scores` is not modified.
    """
    # TODO: return a new tensor with the blocked scores set to `fill` (Week 7 §11).
    ### BEGIN SOLUTION
    blocked = ~allowed.to(torch.bool)  # masked_fill convention: True = fill
    return scores.masked_fill(blocked, fill)  # out of place: a new tensor
    ### END SOLUTION


def padding_allowed(lengths: torch.Tensor | list[int], T: int, left_padded: bool = False) -> torch.Tensor:
    """Key-padding mask of a batch padded to T tokens (Day 1 §3.2, §3.4).

    Args:
        lengths: [B] ints (tensor or list), the number of real tokens of each example,
            each in [0, T].
        T: the padded length.
        left_padded: real tokens sit at the end (left padding, used for generation)
            instead of at the start (right padding).

    Returns:
        bool [B,T], `True` on real tokens.
    """
    # TODO: mark the real tokens of each padded example, on the right or on the left (Day 1 §3.2, §3.4).
    ### BEGIN SOLUTION
    lengths = torch.as_tensor(lengths, dtype=torch.long)
    lengths = lengths.reshape(-1, 1)  # [B,1]
    positions = torch.arange(T, device=lengths.device).unsqueeze(0)  # [1,T]
    if left_padded:
        return positions >= T - lengths  # the last `length` positions are real
    return positions < lengths  # the first `length` positions are real
    ### END SOLUTION


def combine_masks(causal: torch.Tensor, key_allowed: torch.Tensor) -> torch.Tensor:
    """Causal mask and key-padding mask together (Day 1 §3.2: blocked if either blocks).

    Args:
        causal: bool [L,S], allowed-style.
        key_allowed: bool [B,S], `True` on real keys.

    Returns:
        bool [B,1,L,S]: allowed where both allow; the singleton axis broadcasts over heads.
    """
    # TODO: allow a key only where both masks allow it, shape [B,1,L,S] (Day 1 §3.2).
    ### BEGIN SOLUTION
    causal = causal.to(torch.bool)[None, None, :, :]  # [1,1,L,S]
    keys = key_allowed.to(torch.bool)[:, None, None, :]  # [B,1,1,S]: masks keys (columns), never queries
    return causal & keys  # [B,1,L,S]
    ### END SOLUTION


def masked_softmax(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Softmax over the key axis, restricted to the allowed keys (Week 7 §11, Day 1 §3.4).

    Blocked keys get weight exactly 0 (exp(−∞) = 0 exactly, so any weight left on a
    blocked key is a leak, not rounding).

    More than the lesson shows — fully blocked rows: a row with no allowed key (or whose
    allowed scores are all −∞), like the pad queries of a left-padded causal batch, must be
    all zeros, never NaN, with finite gradients. Day 1 §3.4's three fixes do not give
    that: a finite fill (−1e9, finfo.min) makes such a row uniform (1/S each), unmasking the
    diagonal makes the pad query read itself (weight 1), and SDPA's fused kernels differ by
    backend. Here: mask with −∞, shift each row by its max only where that max is finite,
    and divide by the row sum only where it is > 0 (rows summing to 0 stay 0).

    Args:
        scores: [...,L,S] attention scores.
        allowed: bool, broadcastable against `scores`.

    Returns:
        [broadcast shape] weights in the dtype of `scores`; every row sums to 1 or is all 0.
    """
    # TODO: softmax over allowed keys only; empty rows are all zeros, never NaN (Week 7 §11, Day 1 §3.4).
    ### BEGIN SOLUTION
    neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
    masked = torch.where(allowed.to(torch.bool), scores, neg_inf)  # [...,L,S], blocked = −∞
    row_max = masked.amax(dim=-1, keepdim=True).detach()  # [...,L,1]
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))  # empty rows: shift by 0
    exp = torch.exp(masked - row_max)  # blocked → exp(−∞) = 0, largest allowed → 1
    denom = exp.sum(dim=-1, keepdim=True)  # [...,L,1]; 0 only for rows with nothing allowed
    safe = torch.where(denom > 0, denom, torch.ones_like(denom))  # never 0/0
    return exp / safe
    ### END SOLUTION


def prefix_lm_mask(T: int, prefix_len: int) -> torch.Tensor:
    """Prefix-LM mask (Day 1 §3.5): the prefix is read bidirectionally, the rest causally.

    Args:
        T: number of tokens.
        prefix_len: the first `prefix_len` tokens form the prefix (0 = plain causal).

    Returns:
        bool [T,T] on the CPU: allowed[i, j] = (j <= i) or (j < prefix_len).
    """
    # TODO: allow j <= i or j < prefix_len (Day 1 §3.5).
    ### BEGIN SOLUTION
    i = torch.arange(T).unsqueeze(1)  # [T,1] query positions
    j = torch.arange(T).unsqueeze(0)  # [1,T] key positions
    return (j <= i) | (j < prefix_len)
    ### END SOLUTION


def document_mask(doc_ids: torch.Tensor) -> torch.Tensor:
    """Block-diagonal × causal mask for documents packed into one sequence (Day 1 §3.5).

    Args:
        doc_ids: [...,T] ints, the document each token belongs to.

    Returns:
        bool [...,T,T] on the CPU: query i may read key j when j <= i and both tokens
        belong to the same document.
    """
    # TODO: allow causal reads inside the same document only (Day 1 §3.5).
    ### BEGIN SOLUTION
    doc_ids = doc_ids.cpu()
    T = doc_ids.size(-1)
    same_doc = doc_ids.unsqueeze(-1) == doc_ids.unsqueeze(-2)  # [...,T,T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))  # [T,T]
    return same_doc & causal
    ### END SOLUTION
