"""Skill masks typed from the lessons: Week 7 §10–§11 and Day 1 §3 (§3.3's masked_fill,
§3.4's finite-fill fix, §3.5's masks) and §A.4's tril. Adapted only to the exercise API:
allowed-style masks (True = may attend) at the edges, converted once with `~`."""

import torch


def causal_mask(T, device=None):
    # Day 1 §A.4: True = 允许（配合 SDPA 的布尔 attn_mask）
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=device))
    return allowed


def apply_mask(scores, allowed, fill=float("-inf")):
    # Day 1 §3.3 写法一：布尔掩码 + masked_fill（True = 屏蔽）
    mask = ~allowed
    S = scores.masked_fill(mask, fill)
    return S


def padding_allowed(lengths, T, left_padded=False):
    # Day 1 §3.2 / §3.4: right padding keeps the real tokens first, left padding last
    lengths = torch.as_tensor(lengths).reshape(-1, 1)
    positions = torch.arange(T).reshape(1, -1)
    if left_padded:
        return positions >= T - lengths
    return positions < lengths


def combine_masks(causal, key_allowed):
    # Day 1 §3.2: 逻辑或 on the blocked masks — blocked if either blocks
    key_padding = ~key_allowed  # [B,S], True = pad
    blocked = (~causal)[None, None, :, :] | key_padding[:, None, None, :]
    return ~blocked


def masked_softmax(scores, allowed):
    # Day 1 §3.4 fix (1): a finite large negative number instead of −∞, so no row is 0/0 ...
    S = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    A = torch.softmax(S, dim=-1)
    # ... which leaves a fully blocked row uniform; the exercise wants it all zeros
    return A * allowed


def prefix_lm_mask(T, prefix_len):
    # Day 1 §3.5: 前缀部分双向、后半部分因果
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    return (j <= i) | (j < prefix_len)


def document_mask(doc_ids):
    # Day 1 §3.5: 块对角 × 因果
    T = doc_ids.size(-1)
    same_doc = doc_ids.unsqueeze(-1) == doc_ids.unsqueeze(-2)
    return same_doc & causal_mask(T)
