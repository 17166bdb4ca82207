"""Plausible garbage for sdpa_masks: right shapes/dtypes, wrong polarity and values."""
import torch


def blocked_to_sdpa(blocked):
    return blocked.clone()


def to_additive_mask(allowed, dtype=torch.float32):
    return torch.zeros(allowed.shape, dtype=dtype)


def to_mha_attn_mask(allowed):
    return allowed.clone()


def hf_to_sdpa_mask(attention_mask, causal=True):
    B, S = attention_mask.shape
    return torch.ones(B, 1, S, S, dtype=torch.bool)


def kv_cache_mask(L, S):
    return torch.ones(L, S, dtype=torch.bool).tril()


def sdpa(q, k, v, allowed=None, causal=False, dropout_p=0.0, training=False):
    return torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype)


def mha_self_attention(mha, x, allowed=None, key_allowed=None):
    return torch.zeros_like(x)
