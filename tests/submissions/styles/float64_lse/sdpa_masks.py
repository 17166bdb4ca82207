"""sdpa_masks, computing attention in float64 and casting back (a student's version)."""

import copy

import torch
import torch.nn.functional as F


def blocked_to_sdpa(blocked):
    return blocked.logical_not()


def to_additive_mask(allowed, dtype=torch.float32):
    add = torch.where(allowed, 0.0, float("-inf")).double()
    return add.to(dtype)


def to_mha_attn_mask(allowed):
    return allowed.logical_not()


def hf_to_sdpa_mask(attention_mask, causal=True):
    keys = attention_mask.bool()  # any non-zero is a real token
    S = keys.shape[-1]
    allowed = keys[:, None, None, :].repeat(1, 1, S, 1)
    if causal:
        allowed = allowed & torch.ones(S, S).tril().bool()
    return allowed


def kv_cache_mask(L, S):
    return torch.ones(L, S).tril(S - L).bool()


def sdpa(q, k, v, allowed=None, causal=False, dropout_p=0.0, training=False):
    mask = None if allowed is None else allowed.bool()
    if causal:
        c = kv_cache_mask(q.size(-2), k.size(-2))
        mask = c if mask is None else mask & c
    out = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask,
                                         dropout_p=dropout_p if training else 0.0)
    return out.to(q.dtype)


def mha_self_attention(mha, x, allowed=None, key_allowed=None):
    wide = copy.deepcopy(mha).double()
    x64 = x.double()
    if not wide.batch_first:
        x64 = x64.transpose(0, 1)
    out = wide(x64, x64, x64,
               key_padding_mask=None if key_allowed is None else key_allowed.logical_not(),
               attn_mask=None if allowed is None else allowed.logical_not(),
               need_weights=False)[0]
    if not wide.batch_first:
        out = out.transpose(0, 1)
    return out.to(x.dtype)
