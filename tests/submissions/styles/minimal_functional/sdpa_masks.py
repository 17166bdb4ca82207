"""sdpa_masks, terse functional style: `allowed.to(dtype).log()` for the 0/−∞ mask, an expanded
(stride-0) view as the [B,1,S,S] result, and SDPA always called with an explicit bool mask
(never `is_causal`), dropout as `dropout_p * training`, and converters bound to torch's own
callables (`blocked_to_sdpa = torch.logical_not`, `to_mha_attn_mask = torch.Tensor.logical_not`)."""

import torch
import torch.nn.functional as F


blocked_to_sdpa = torch.logical_not


def to_additive_mask(allowed, dtype=torch.float32):
    return allowed.to(dtype).log()


to_mha_attn_mask = torch.Tensor.logical_not


def hf_to_sdpa_mask(attention_mask, causal=True):
    S = attention_mask.shape[-1]
    return (attention_mask.bool()[:, None, None, :] & (torch.ones(S, S, dtype=torch.bool, device=attention_mask.device).tril() | (not causal))).expand(-1, 1, S, S)


def kv_cache_mask(L, S):
    return torch.ones(L, S, dtype=torch.bool).tril(S - L)


def sdpa(q, k, v, allowed=None, causal=False, dropout_p=0.0, training=False):
    L, S = q.size(-2), k.size(-2)
    mask = kv_cache_mask(L, S).to(q.device) if causal else None
    mask = allowed if mask is None else mask if allowed is None else mask & allowed
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p * training)


def mha_self_attention(mha, x, allowed=None, key_allowed=None):
    t = (lambda y: y) if mha.batch_first else (lambda y: y.transpose(0, 1))
    y = t(x)
    return t(mha(y, y, y, key_padding_mask=None if key_allowed is None else ~key_allowed, attn_mask=None if allowed is None else ~allowed, need_weights=False)[0])
