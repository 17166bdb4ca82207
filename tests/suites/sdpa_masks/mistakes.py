"""What the named mistakes of skill `sdpa_masks` would return (Day 1 §A.1–§A.4).

A test computes these for the same inputs it sends to the submission, and
``expect.close/equal(..., mistakes=...)`` names the one the submission's answer matches.
They reproduce *wrong* code (run through the same PyTorch APIs a student would call), so
they hold nothing a student could use as an answer.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from autograder.testing import distinct  # (re-exported: drop mistakes that coincide on these inputs)

NEG_INF = float("-inf")


def _tri(L: int, S: int, diagonal: int) -> torch.Tensor:
    return torch.ones(L, S, dtype=torch.bool).tril(diagonal=diagonal)


def top_left(L: int, S: int) -> torch.Tensor:
    """kv_cache_mask's top-left mistake: query i reads keys j <= i (what course.sdpa_masks_data.blame_kv_cache looks for)."""
    return _tri(L, S, 0)


def additive(allowed: torch.Tensor, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """to_additive_mask(allowed, dtype) with a mistake."""
    zeros = torch.zeros(allowed.shape, dtype=dtype)
    return {
        "sdpa_masks/additive-wrong-values": allowed.to(dtype),  # 1 = keep, 0 = block
        # 0 = keep, 1 = block: the right polarity, 1 for −∞ (blind tester R-BY: no hint)
        "sdpa_masks/additive-wrong-values#blocked-one": (~allowed).to(dtype),
        "sdpa_masks/polarity-inverted": zeros.masked_fill(allowed, NEG_INF),  # −∞ on the allowed entries
        "sdpa_masks/additive-finite": zeros.masked_fill(~allowed, torch.finfo(dtype).min),
        "sdpa_masks/additive-zero-times-inf": (~allowed).to(dtype) * NEG_INF,  # 0 · (−∞) = NaN on the allowed entries
        "sdpa_masks/additive-plus-inf": zeros.masked_fill(~allowed, -NEG_INF),  # +∞ on the blocked entries
    }


def hf(attention_mask: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """hf_to_sdpa_mask(attention_mask, causal) with a mistake."""
    real = attention_mask.ne(0)
    B, S = real.shape
    tri = _tri(S, S, 0) if causal else torch.ones(S, S, dtype=torch.bool)
    keys = real[:, None, None, :] & tri
    out = {
        "sdpa_masks/hf-masks-queries": keys & real[:, None, :, None],
        # the padding put on the query axis instead of the key axis (blind tester R-AW: no hint)
        "sdpa_masks/hf-masks-queries#instead-of-keys": real[:, None, :, None] & tri,
        "sdpa_masks/hf-pad-polarity": (~real)[:, None, None, :] & tri,
        "sdpa_masks/polarity-inverted": ~keys,
    }
    if causal:
        out["sdpa_masks/hf-causal-ignored"] = real[:, None, None, :].expand(B, 1, S, S).clone()
        # the blocked-style triangle (triu, diagonal 1: the future) ANDed in as if allowed (blind tester R-BO)
        out["sdpa_masks/hf-causal-polarity"] = real[:, None, None, :] & ~tri
    else:  # the triangle applied whatever causal says (blind tester R-B)
        out["sdpa_masks/hf-causal-always"] = real[:, None, None, :] & _tri(S, S, 0)
    out["sdpa_masks/hf-head-axis"] = keys[:, 0].clone()  # [B,S,S]: the head axis left out
    if attention_mask.dtype != torch.bool:
        out["sdpa_masks/hf-nonzero"] = (attention_mask == 1)[:, None, None, :] & tri  # only the value 1 taken as real
    if attention_mask.is_floating_point():  # `> 0.5` for "non-zero": a weight of 0.3 is a real token (blind tester R-CW)
        out["sdpa_masks/hf-nonzero#over-a-half"] = (attention_mask > 0.5)[:, None, None, :] & tri
    return out


def kv_cache(L: int, S: int) -> dict[str, torch.Tensor]:
    """kv_cache_mask(L, S) with a mistake."""
    return {
        "sdpa_masks/kv-cache-top-left": _tri(L, S, 0),
        "sdpa_masks/polarity-inverted": ~_tri(L, S, S - L),
        # shifted by one either way: one key too many (S − L + 1; with L = 1 that is all True, right)
        # or one too few (S − L − 1, which blocks each query's own position)
        "sdpa_masks/kv-cache-off-by-one": _tri(L, S, S - L + 1) if L > 1 else _tri(L, S, S - L - 1),
        "sdpa_masks/kv-cache-off-by-one#too-few": _tri(L, S, S - L - 1),
        "sdpa_masks/kv-cache-offset-sign": _tri(L, S, L - S),
    }  # shifted up by S − L instead of down


def sdpa(q, k, v, allowed=None, causal=False) -> dict[str, torch.Tensor]:
    """sdpa(q, k, v, allowed, causal) with a mistake, evaluated with SDPA in float64."""
    q64, k64, v64 = (t.to(torch.float64) for t in (q, k, v))
    L, S = q.shape[-2], k.shape[-2]
    run = lambda mask: F.scaled_dot_product_attention(q64, k64, v64, attn_mask=mask).to(q.dtype)
    both = lambda a, c: c if a is None else a & c
    out = {}
    right_mask = both(allowed, _tri(L, S, S - L)) if causal else allowed
    out["sdpa_masks/scaled-twice"] = F.scaled_dot_product_attention(q64 / q64.size(-1) ** 0.5, k64, v64, attn_mask=right_mask).to(
        q.dtype
    )
    # scale=√E: SDPA's scale multiplies q·kᵀ (its default is 1/√E) (blind tester R-CW: no hint)
    out["sdpa_masks/scale-as-divisor"] = F.scaled_dot_product_attention(
        q64, k64, v64, attn_mask=right_mask, scale=q64.size(-1) ** 0.5
    ).to(q.dtype)
    if allowed is not None:
        out["sdpa_masks/polarity-inverted"] = run(both(~allowed, _tri(L, S, S - L)) if causal else ~allowed)
    if causal:  # the whole mask, causal part included, flipped before SDPA (blind tester R-AW: no hint)
        out["sdpa_masks/polarity-inverted#whole-mask"] = run(~both(allowed, _tri(L, S, S - L)))
    if right_mask is not None:  # the right mask as float 1/0: SDPA adds it to the scores (blind tester F)
        out["sdpa_masks/float-mask-added"] = run(right_mask.to(torch.float64))
    if causal:
        if L != S:
            out["sdpa_masks/top-left-causal"] = run(both(allowed, _tri(L, S, 0)))
        out["sdpa_masks/causal-ignored"] = run(allowed)
        if allowed is not None:  # allowed OR causal: a key either one allows is read
            out["sdpa_masks/causal-or-allowed"] = run(allowed | _tri(L, S, S - L))
            out["sdpa_masks/allowed-ignored-with-causal"] = run(_tri(L, S, S - L))  # the causal mask replaced allowed
        # the bottom-right mask one diagonal off, either way; a query left without a key (one short
        # at L = S: row 0) is whatever SDPA itself gives there (zeros on torch 2.13's CPU), as the
        # submission's own SDPA call gets
        for shift, key in ((1, "sdpa_masks/kv-cache-off-by-one"), (-1, "sdpa_masks/kv-cache-off-by-one#too-few")):
            out[key] = run(both(allowed, _tri(L, S, S - L + shift)))
    return out


def mha(module, x, allowed=None, key_allowed=None) -> dict[str, torch.Tensor]:
    """mha_self_attention(module, x, allowed, key_allowed) with a mistake; `module` is a
    float64 copy of the student's module, in eval mode."""
    from course.oracles import merged_blocked

    x64 = x.to(torch.float64)
    bf = module.batch_first

    def run(seq, attn_mask, key_padding_mask, transpose: bool):
        mask = merged_blocked(module.num_heads, x.shape[1], attn_mask, key_padding_mask)  # = passing both (no sympy import)
        with torch.no_grad():
            out, _ = module(seq, seq, seq, attn_mask=mask, need_weights=False)
        return (out.transpose(0, 1) if transpose else out).to(x.dtype)

    seq = x64 if bf else x64.transpose(0, 1)
    attn = None if allowed is None else ~allowed
    kpm = None if key_allowed is None else ~key_allowed
    out = {}
    if allowed is not None:
        out["sdpa_masks/mha-mask-not-inverted"] = run(seq, allowed, kpm, not bf)
    if kpm is not None:  # a padding mask was given
        out["sdpa_masks/key-padding-polarity"] = run(seq, attn, key_allowed, not bf)
        out["sdpa_masks/key-padding-ignored"] = run(seq, attn, None, not bf)  # key_allowed dropped (blind tester R-G)
        # key_padding_mask=(~key_allowed).float(): a float mask is added to the scores, +1 on the
        # padded keys, which blocks nothing (blind tester R-BJ); with attn_mask, torch adds the two
        B, T = key_allowed.shape
        added = (~key_allowed).to(torch.float64)[:, None, None, :].expand(B, module.num_heads, T, T)
        if attn is not None:
            added = added + torch.zeros(T, T, dtype=torch.float64).masked_fill(attn, -math.inf)
        out["sdpa_masks/key-padding-float"] = run(seq, added.reshape(B * module.num_heads, T, T), None, not bf)
    square = x.size(0) == x.size(1)  # B = T: the masks fit either reading, so nothing raises
    if not bf and (square or (key_allowed is None and allowed is None)):
        # (B,T,C) fed as (T,B,C); where B = T the same as reshaping it (blind tester R-BB's
        # batch-first-reshaped): both are in the table, so such a draw names neither
        out["sdpa_masks/batch-first-ignored"] = run(x64, attn, kpm, False)
    if not bf:
        out["sdpa_masks/output-not-transposed-back"] = run(seq, attn, kpm, False)  # the module's (T,B,C) returned as it is
        # (B,T,C) reshaped to (T,B,C) and back, not transposed: the sequences' tokens mixed (blind tester R-BB)
        B, T, C = x64.shape
        out["sdpa_masks/batch-first-reshaped"] = run(x64.reshape(T, B, C), attn, kpm, False).reshape(B, T, C)
    return out
