"""Skill sdpa_masks typed from the lessons: Day 1 §A.1 (SDPA and its five edges), §A.2
(nn.MultiheadAttention), §A.3 (the convention table) and §A.4. Adapted only to the
exercise API."""

import torch
import torch.nn.functional as F


def blocked_to_sdpa(blocked):
    # §A.3: masked_fill's True = 屏蔽; SDPA's True = 参与注意力
    return ~blocked


def to_additive_mask(allowed, dtype=torch.float32):
    # §A.3: 加法掩码（0 保留、−∞ 屏蔽）
    additive_mask = torch.zeros(allowed.shape, dtype=dtype)
    return additive_mask.masked_fill(~allowed, float("-inf"))


def to_mha_attn_mask(allowed):
    # §A.3: nn.MultiheadAttention(attn_mask=) True = 不允许参与
    return ~allowed


def hf_to_sdpa_mask(attention_mask, causal=True):
    # §A.3: HuggingFace attention_mask 1 = 真实 token, 0 = pad; §3.2: mask the key axis only
    B, S = attention_mask.shape
    keys = (attention_mask != 0)[:, None, None, :]  # [B,1,1,S]
    allowed = keys.expand(B, 1, S, S)
    if causal:
        allowed = allowed & torch.tril(torch.ones(S, S, dtype=torch.bool))
    return allowed.clone()


def kv_cache_mask(L, S):
    # §A.1: is_causal=True is torch.ones(L, S).tril(diagonal=0) (top-left); a KV cache needs bottom-right
    return torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)


def sdpa(q, k, v, allowed=None, causal=False, dropout_p=0.0, training=False):
    # §A.1: 要"因果 + padding"就自己合成一个 attn_mask; dropout_p=self.p if self.training else 0.0
    attn_mask = allowed
    if causal:
        causal_allowed = kv_cache_mask(q.size(-2), k.size(-2))
        attn_mask = causal_allowed if attn_mask is None else attn_mask & causal_allowed
    return F.scaled_dot_product_attention(
        q, k, v,
        attn_mask=attn_mask,
        dropout_p=dropout_p if training else 0.0,
        is_causal=False,
    )


def mha_self_attention(mha, x, allowed=None, key_allowed=None):
    # §A.2: batch_first defaults to False: (T, B, d); self-attention passes x three times
    if not mha.batch_first:
        x = x.transpose(0, 1)
    out, _ = mha(
        x, x, x,
        key_padding_mask=None if key_allowed is None else ~key_allowed,  # True = 忽略这个 key
        need_weights=False,
        attn_mask=None if allowed is None else ~allowed,                 # True = 不允许
    )
    if not mha.batch_first:
        out = out.transpose(0, 1)
    return out
