"""sdpa_masks, a student's alternative: arithmetic on masks, einsum for layouts."""

import torch
import torch.nn.functional as F


def blocked_to_sdpa(blocked):
    return torch.logical_not(blocked)


def to_additive_mask(allowed, dtype=torch.float32):
    keep = allowed.to(dtype)
    ninf = torch.tensor(float("-inf"), dtype=dtype)
    return torch.where(keep > 0, torch.zeros((), dtype=dtype), ninf)


def to_mha_attn_mask(allowed):
    return allowed == False  # noqa: E712


def hf_to_sdpa_mask(attention_mask, causal=True):
    real = attention_mask.ne(0).double()
    B, S = real.shape
    grid = torch.einsum("bs,q->bqs", real, torch.ones(S, dtype=torch.float64))  # every query row sees the same keys
    if causal:
        grid = grid * torch.ones(S, S, dtype=torch.float64).tril()
    return (grid > 0.5).unsqueeze(1)


def kv_cache_mask(L, S):
    offset = S - L
    q = torch.arange(L).unsqueeze(-1) + offset
    k = torch.arange(S).unsqueeze(0)
    return k <= q


def sdpa(q, k, v, allowed=None, causal=False, dropout_p=0.0, training=False):
    p = dropout_p if training else 0.0
    mask = allowed
    if causal:
        tri = kv_cache_mask(q.shape[-2], k.shape[-2]).to(q.device)
        mask = tri if mask is None else torch.logical_and(mask, tri)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)


def mha_self_attention(mha, x, allowed=None, key_allowed=None):
    inp = x if mha.batch_first else torch.einsum("btc->tbc", x)
    kw = {"need_weights": False}
    if allowed is not None:
        kw["attn_mask"] = to_mha_attn_mask(allowed)
    if key_allowed is not None:
        kw["key_padding_mask"] = torch.logical_not(key_allowed)
    y = mha(inp, inp, inp, **kw)[0]
    return y if mha.batch_first else torch.einsum("tbc->btc", y)
