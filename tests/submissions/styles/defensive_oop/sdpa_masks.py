"""sdpa_masks, defensive object-oriented style: additive float masks throughout — SDPA gets a
0/−∞ `attn_mask` (and `is_causal=True` only when L = S and no mask is given), and
nn.MultiheadAttention gets float `attn_mask` and `key_padding_mask` of the input's dtype."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["blocked_to_sdpa", "to_additive_mask", "to_mha_attn_mask", "hf_to_sdpa_mask", "kv_cache_mask", "sdpa", "mha_self_attention"]


def blocked_to_sdpa(blocked):
    return torch.logical_not(blocked)


def to_additive_mask(allowed, dtype=torch.float32):
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be floating, got {dtype}")
    zeros = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return zeros.masked_fill(allowed.logical_not(), float("-inf"))


def to_mha_attn_mask(allowed):
    # nn.MultiheadAttention takes a 2-D or 3-D attn_mask: refuse anything else, as the docstring allows
    if allowed.dim() not in (2, 3):
        raise ValueError(f"to_mha_attn_mask: expected [L,S] or [B*h,L,S], got {tuple(allowed.shape)}")
    return allowed.logical_not()


def hf_to_sdpa_mask(attention_mask, causal=True):
    real = attention_mask.ne(0)
    B, S = real.shape
    allowed = real.view(B, 1, 1, S).repeat(1, 1, S, 1)
    if causal:
        allowed &= torch.ones(S, S, dtype=torch.bool, device=real.device).tril()
    return allowed


def kv_cache_mask(L, S):
    if L > S:
        raise ValueError("kv_cache_mask needs L <= S")
    query_pos = torch.arange(S - L, S).unsqueeze(-1)
    return torch.arange(S).unsqueeze(0) <= query_pos


class _SdpaCall:
    """Decides how to call F.scaled_dot_product_attention for one (q, k, allowed, causal)."""

    def __init__(self, q, k, allowed, causal):
        self.L, self.S = q.size(-2), k.size(-2)
        self.dtype, self.device = q.dtype, q.device
        self.allowed = allowed
        self.causal = causal

    def kwargs(self):
        if self.allowed is None and self.causal and self.L == self.S:
            return {"attn_mask": None, "is_causal": True}
        mask = self.allowed
        if self.causal:
            cm = kv_cache_mask(self.L, self.S).to(self.device)
            mask = cm if mask is None else mask.to(torch.bool) & cm
        if mask is None:
            return {"attn_mask": None, "is_causal": False}
        return {"attn_mask": to_additive_mask(mask, dtype=self.dtype), "is_causal": False}


def sdpa(q, k, v, allowed=None, causal=False, dropout_p=0.0, training=False):
    call = _SdpaCall(q, k, allowed, causal)
    return F.scaled_dot_product_attention(
        q, k, v, dropout_p=dropout_p if training else 0.0, **call.kwargs()
    )


def mha_self_attention(mha: nn.MultiheadAttention, x, allowed=None, key_allowed=None):
    inputs = x if mha.batch_first else x.transpose(0, 1)
    attn_mask = None if allowed is None else to_additive_mask(allowed, dtype=x.dtype)
    key_padding_mask = None if key_allowed is None else to_additive_mask(key_allowed, dtype=x.dtype)
    out, _ = mha(
        inputs, inputs, inputs,
        key_padding_mask=key_padding_mask,
        need_weights=False,
        attn_mask=attn_mask,
    )
    return out if mha.batch_first else out.transpose(0, 1)
