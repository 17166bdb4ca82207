"""Skill `sdpa_masks`: PyTorch's mask conventions.

Course: Day 1 §A.1 (`F.scaled_dot_product_attention`), §A.2 (`nn.MultiheadAttention`),
§A.3 (the table of mask conventions) and §A.4 (building a causal mask).
Axis names: B batch, T tokens, C model width, h heads, L query length, S key length;
`...` means any leading batch dimensions.

One convention inside this module: a boolean mask is *allowed-style*, `True` = this query
may read this key (the SDPA convention). Every other convention (masked_fill's and
nn.MultiheadAttention's True = blocked, additive 0/−∞, HuggingFace's 1/0) is produced or
consumed only by the explicit converters below.

Fill in every function marked TODO(sdpa_masks), then run `make grade SKILL=sdpa_masks`.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right  # noqa: F401  (bottom-right causal, Day 1 §A.1)


def blocked_to_sdpa(blocked: torch.Tensor) -> torch.Tensor:
    """A `masked_fill`-style mask (True = blocked) as an SDPA bool mask (True = attend).

    Args:
        blocked: bool [...,L,S], `True` = this key is hidden from this query.

    Returns:
        bool [...,L,S], `True` = this query may read this key.
    """
    return ~blocked


def to_additive_mask(allowed: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """An allowed-style bool mask as an additive float mask (Day 1 §3.3, §A.3).

    Args:
        allowed: bool [...,L,S].
        dtype: the floating dtype of the result (the dtype of the scores it is added to).

    Returns:
        [...,L,S] of `dtype`: exactly 0.0 where allowed and exactly −∞ where blocked (the
        mask is added to the scores: any other value would shift or merely damp them).
    """
    z = torch.zeros(allowed.shape, dtype=dtype)
    return z.masked_fill(~allowed, float("-inf"))


def to_mha_attn_mask(allowed: torch.Tensor) -> torch.Tensor:
    """An allowed-style mask as `nn.MultiheadAttention`'s bool `attn_mask` (True = not allowed).

    Args:
        allowed: bool [L,S] (or [B·h,L,S]).

    Returns:
        bool of the same shape, `True` where the query may NOT read the key.
    """
    return ~allowed


def hf_to_sdpa_mask(attention_mask: torch.Tensor, causal: bool = True) -> torch.Tensor:
    """A HuggingFace `attention_mask` (1 = real token, 0 = pad) as an SDPA bool mask.

    Only keys are masked (Day 1 §3.2): a pad key is hidden from every query; padded query
    rows are not blanked. With `causal`, key j is also hidden from queries i < j.

    Args:
        attention_mask: [B,S] ints/bools/floats; any non-zero entry is a real token.
        causal: also apply the causal mask.

    Returns:
        bool [B,1,S,S], allowed-style; the singleton axis broadcasts over heads.
    """
    B, S = attention_mask.shape
    keys = (attention_mask != 0)[:, None, None, :]
    out = keys.expand(B, 1, S, S)
    if causal:
        out = out & torch.tril(torch.ones(S, S, dtype=torch.bool))
    return out.clone()


def kv_cache_mask(L: int, S: int) -> torch.Tensor:
    """The causal mask for L new queries against S cached keys (Day 1 §A.1, L <= S).

    Bottom-right aligned: query i is the token at position S − L + i and reads keys
    j <= S − L + i. With L = 1 the new token reads every key; with L = S it is the usual
    causal mask. (`is_causal=True` in SDPA is top-left aligned instead.)

    Args:
        L: number of queries (new tokens).
        S: number of keys (cached + new tokens).

    Returns:
        bool [L,S] on the CPU, allowed-style.
    """
    i = torch.arange(L).reshape(-1, 1)
    j = torch.arange(S).reshape(1, -1)
    return j <= (S - L + i)


def sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    causal: bool = False,
    dropout_p: float = 0.0,
    training: bool = False,
) -> torch.Tensor:
    """Call `F.scaled_dot_product_attention` correctly (Day 1 §A.1).

    - never passes an `attn_mask` together with `is_causal=True`;
    - causal is bottom-right aligned when L != S (query i reads keys j <= S − L + i);
      with `allowed` and `causal` the mask is `allowed` AND the causal mask;
    - dropout only while `training` (SDPA's `dropout_p` ignores train/eval).

    Args:
        q: [...,L,d] queries; k: [...,S,d] keys; v: [...,S,d_v] values (L <= S).
        allowed: bool, broadcastable to [...,L,S], `True` = may attend; or None.
        causal: apply the causal mask.
        dropout_p: attention dropout probability, used only when `training`.
        training: whether the caller is in training mode.

    Returns:
        [...,L,d_v] attention outputs, in the dtype of `q`.
    """
    mask = allowed
    L, S = q.shape[-2], k.shape[-2]
    if causal:
        c = kv_cache_mask(L, S)
        mask = c if mask is None else (mask & c)
    p = dropout_p if training else 0.0
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=False)


def mha_self_attention(
    mha: nn.MultiheadAttention,
    x: torch.Tensor,
    allowed: torch.Tensor | None = None,
    key_allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Run a given `nn.MultiheadAttention` as self-attention on batch-first `x` (Day 1 §A.2).

    Handles both layouts of `mha` (`batch_first` True or False), converts the
    allowed-style masks to its convention (True = not allowed / ignore this key) and asks
    for no weights.

    Args:
        mha: the module, used as it is (its weights, its `batch_first`).
        x: [B,T,C] inputs; query = key = value = x.
        allowed: bool [T,T] (query, key), `True` = may attend; or None.
        key_allowed: bool [B,T], `True` on real keys; or None.

    Returns:
        [B,T,C] outputs.
    """
    am = None if allowed is None else ~allowed
    kpm = None if key_allowed is None else ~key_allowed
    if mha.batch_first:
        out, _ = mha(x, x, x, attn_mask=am, key_padding_mask=kpm, need_weights=False)
        return out
    xt = x.transpose(0, 1)
    out, _ = mha(xt, xt, xt, attn_mask=am, key_padding_mask=kpm, need_weights=False)
    return out.transpose(0, 1)
