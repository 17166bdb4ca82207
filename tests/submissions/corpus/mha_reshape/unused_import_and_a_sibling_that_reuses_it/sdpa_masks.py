"""R-DG's sdpa_masks.py: the reference's, reusing the student's own helpers from mha_reshape."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from mha_reshape import merge_heads, split_heads  # the student's own helpers, reused


def blocked_to_sdpa(blocked: torch.Tensor) -> torch.Tensor:
    """A `masked_fill`-style mask (True = blocked) as an SDPA bool mask (True = attend).

    Args:
        blocked: bool [...,L,S], `True` = this key is hidden from this query.

    Returns:
        bool [...,L,S], `True` = this query may read this key.
    """
    ### BEGIN SOLUTION
    return ~blocked.to(torch.bool)
    ### END SOLUTION


def to_additive_mask(allowed: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """An allowed-style bool mask as an additive float mask (Day 1 §3.3, §A.3).

    Args:
        allowed: bool [...,L,S].
        dtype: the floating dtype of the result (the dtype of the scores it is added to).

    Returns:
        [...,L,S] of `dtype`: exactly 0.0 where allowed and exactly −∞ where blocked (the
        mask is added to the scores: any other value would shift or merely damp them).
    """
    ### BEGIN SOLUTION
    additive = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return additive.masked_fill(~allowed.to(torch.bool), float("-inf"))  # 0 keeps, −∞ blocks
    ### END SOLUTION


def to_mha_attn_mask(allowed: torch.Tensor) -> torch.Tensor:
    """An allowed-style mask as `nn.MultiheadAttention`'s bool `attn_mask` (True = not allowed).

    Args:
        allowed: bool [L,S] (or [B·h,L,S]).

    Returns:
        bool of the same shape, `True` where the query may NOT read the key.
    """
    ### BEGIN SOLUTION
    return ~allowed.to(torch.bool)  # Day 1 §A.3: the same tensor means the opposite in nn.MultiheadAttention
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    real = attention_mask != 0  # [B,S], any non-zero = real token
    B, S = real.shape
    allowed = real[:, None, None, :].expand(B, 1, S, S)  # [B,1,S(query),S(key)]: mask key columns
    if causal:
        tril = torch.tril(torch.ones(S, S, dtype=torch.bool, device=real.device))  # [S,S]
        allowed = allowed & tril
    return allowed.clone()
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    return torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    L, S = q.size(-2), k.size(-2)
    p = dropout_p if training else 0.0  # dropout_p does not look at train/eval
    if causal and allowed is None and L == S:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # top-left == bottom-right
    mask = allowed
    if causal:
        bottom_right = torch.ones(L, S, dtype=torch.bool, device=q.device).tril(diagonal=S - L)  # [L,S]
        mask = bottom_right if mask is None else mask.to(torch.bool) & bottom_right
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=False)
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    attn_mask = None if allowed is None else ~allowed.to(torch.bool)  # [T,T], True = not allowed
    key_padding_mask = None if key_allowed is None else ~key_allowed.to(torch.bool)  # [B,T], True = ignore
    seq = x if mha.batch_first else x.transpose(0, 1)  # [B,T,C] or [T,B,C]
    out, _ = mha(seq, seq, seq, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)
    return out if mha.batch_first else out.transpose(0, 1)  # back to [B,T,C]
    ### END SOLUTION
