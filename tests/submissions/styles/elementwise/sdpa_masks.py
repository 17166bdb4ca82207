"""sdpa_masks — loops."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def blocked_to_sdpa(blocked):
    return blocked == False  # noqa: E712


def to_additive_mask(allowed, dtype=torch.float32):
    out = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    out[~allowed] = -math.inf
    return out


def to_mha_attn_mask(allowed):
    return allowed.logical_not()


def hf_to_sdpa_mask(attention_mask, causal=True):
    B, S = attention_mask.shape
    out = torch.zeros(B, 1, S, S, dtype=torch.bool, device=attention_mask.device)
    for b in range(B):
        for i in range(S):
            for j in range(S):
                out[b, 0, i, j] = bool(attention_mask[b, j] != 0) and (not causal or j <= i)
    return out


def kv_cache_mask(L, S):
    m = torch.zeros(L, S, dtype=torch.bool)
    for i in range(L):
        for j in range(S):
            m[i, j] = j <= S - L + i
    return m


def sdpa(q, k, v, allowed=None, causal=False, dropout_p=0.0, training=False):
    L, S = q.shape[-2], k.shape[-2]
    drop = dropout_p if training else 0.0
    if causal and allowed is None and L == S:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop, is_causal=True)
    mask = allowed
    if causal:
        cm = kv_cache_mask(L, S).to(q.device)
        mask = cm if mask is None else (mask & cm)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)


def mha_self_attention(mha, x, allowed=None, key_allowed=None):
    outs = []
    for b in range(x.shape[0]):
        xb = x[b : b + 1]
        if not mha.batch_first:
            xb = xb.transpose(0, 1)
        am = None if allowed is None else ~allowed
        kpm = None if key_allowed is None else ~key_allowed[b : b + 1]
        o, _ = mha(xb, xb, xb, attn_mask=am, key_padding_mask=kpm, need_weights=False)
        if not mha.batch_first:
            o = o.transpose(0, 1)
        outs.append(o)
    return torch.cat(outs, dim=0)
