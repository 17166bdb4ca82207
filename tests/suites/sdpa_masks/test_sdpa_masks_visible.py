"""Skill sdpa_masks, visible tests: the Day 1 §A examples of PyTorch's mask conventions.

Shipped to students. §A.4's two causal masks, §A.3's table (SDPA True = attend,
masked_fill / nn.MultiheadAttention True = blocked, additive 0/−∞, HuggingFace 1/0),
§A.1's KV-cache decoding step (L = 1) and §A.2's batch_first=False module. Expected values
are computed here with plain torch; the hidden suite checks fresh random inputs.
"""

from __future__ import annotations

import math

import torch

from autograder.testing import expect
from autograder.testing.inputs import randn
from course import masks_data as md
from course import mistakes_sdpa_masks as signatures
from course import sdpa_masks_data as sd
from course.tolerances import EXACT, Tol

QK = ("query", "key")
NEG_INF = float("-inf")
CLOSE = Tol(rtol=1e-5, atol=1e-6)  # float32 SDPA vs a float64 softmax by hand


def _manual(q, k, v, allowed):
    """softmax(q kᵀ/√d with −∞ on blocked keys) v, in float64."""
    q, k, v = (t.to(torch.float64) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return torch.softmax(scores.masked_fill(~allowed, NEG_INF), -1) @ v


def test_blocked_to_sdpa_and_to_mha_attn_mask_flip_the_a4_masks(sub, credit):
    T = 4
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # §A.4: True = 屏蔽 (masked_fill)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))  # §A.4: True = 允许 (SDPA)
    for part in credit.parts(["blocked_to_sdpa", "to_mha_attn_mask"]):
        with part:
            if part.label == "blocked_to_sdpa":
                md.mask_equal(sub.sdpa_masks.blocked_to_sdpa(blocked), allowed, what="blocked_to_sdpa(triu(ones(4,4), diagonal=1)) = tril (Day 1 §A.4)",
                             mistakes={"sdpa_masks/polarity-inverted": blocked}, grid=QK)
            else:
                md.mask_equal(sub.sdpa_masks.to_mha_attn_mask(allowed), blocked, what="to_mha_attn_mask(tril): True = not allowed (Day 1 §A.3)",
                             mistakes={"sdpa_masks/mha-mask-not-inverted": allowed}, grid=QK)


def test_to_additive_mask_is_zero_or_minus_inf(sub, credit):
    allowed = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    for part in credit.parts(["default float32", "float64"]):
        with part:
            dtype = torch.float32 if part.label == "default float32" else torch.float64
            want = torch.zeros(4, 4, dtype=dtype).masked_fill(~allowed, NEG_INF)
            got = sub.sdpa_masks.to_additive_mask(allowed) if dtype == torch.float32 else sub.sdpa_masks.to_additive_mask(allowed, dtype=torch.float64)
            expect.close(got, want, what=f"to_additive_mask(tril(4){'' if dtype == torch.float32 else ', dtype=float64'}): 0 = keep, −∞ = block (Day 1 §3.3, §A.3)",
                         tol=EXACT, mistakes=signatures.additive(allowed, dtype), grid=QK)


def test_hf_to_sdpa_mask_left_padded_batch_masks_keys_only(sub, credit):
    attention_mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])  # HF: 1 = real, 0 = pad
    real = attention_mask != 0
    for part in credit.parts(["causal=True", "causal=False"]):
        with part:
            causal = part.label == "causal=True"
            want = real[:, None, None, :].expand(2, 1, 5, 5)
            if causal:
                want = want & torch.tril(torch.ones(5, 5, dtype=torch.bool))
            md.mask_equal(sub.sdpa_masks.hf_to_sdpa_mask(attention_mask, causal=causal), want.contiguous(),
                         what=f"hf_to_sdpa_mask([[0,0,1,1,1],[1,1,1,1,1]], causal={causal}) → [B,1,S,S], pad keys blocked (Day 1 §3.2, §A.3)",
                         mistakes=signatures.hf(attention_mask, causal), grid=QK)


def test_kv_cache_mask_is_bottom_right_aligned(sub, credit):
    for part in credit.parts(["L=1, S=5", "L=3, S=5", "L=S=4"]):
        with part:
            L, S = {"L=1, S=5": (1, 5), "L=3, S=5": (3, 5), "L=S=4": (4, 4)}[part.label]
            want = torch.tensor([[j <= S - L + i for j in range(S)] for i in range(L)])
            md.mask_equal(sub.sdpa_masks.kv_cache_mask(L, S), want,
                         what=f"kv_cache_mask({L}, {S}): query i is position S−L+i (Day 1 §A.1: a new token reads every cached key)",
                         mistakes=signatures.kv_cache(L, S), grid=QK)


def test_sdpa_matches_manual_attention_with_kv_cache_causal(sub, rng, credit):
    for part in credit.parts(["L=1 decoding step", "L=3, S=5 causal + padding", "dropout_p=0.5 in eval"]):
        with part:
            L = 1 if part.label.startswith("L=1") else 3
            S = 5
            q, k, v = randn(rng, 1, 2, L, 4), randn(rng, 1, 2, S, 4), randn(rng, 1, 2, S, 3)
            if part.label == "L=3, S=5 causal + padding":
                allowed = torch.tensor([True, True, True, False, True]).expand(L, S)  # key 3 is padding
                got = sub.sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=True)
                want_mask = allowed & torch.tensor([[j <= S - L + i for j in range(S)] for i in range(L)])
                what = "sdpa(q [1,2,3,4], k [1,2,5,4], allowed=key 3 padded, causal=True): bottom-right causal AND padding (Day 1 §A.1)"
            elif part.label == "L=1 decoding step":
                allowed, want_mask = None, torch.ones(L, S, dtype=torch.bool)
                got = sub.sdpa_masks.sdpa(q, k, v, causal=True)
                what = "sdpa(q [1,2,1,4], k [1,2,5,4], causal=True): the new token reads all 5 keys (Day 1 §A.1, not only key 0)"
            else:
                allowed, want_mask = None, torch.ones(L, S, dtype=torch.bool)
                got = sub.sdpa_masks.sdpa(q, k, v, dropout_p=0.5, training=False)
                what = "sdpa(..., dropout_p=0.5, training=False) is deterministic: no dropout in eval (Day 1 §A.1)"
            expect.close(got, _manual(q, k, v, want_mask).float(), what=what, tol=CLOSE,
                         mistakes=signatures.sdpa(q, k, v, allowed, causal=part.label != "dropout_p=0.5 in eval"),
                         hints=["sdpa_masks/dropout-in-eval"] if "dropout" in part.label else [])


def test_mha_self_attention_runs_a_batch_first_false_module(sub, rng, credit):
    config = {"embed_dim": 8, "num_heads": 2, "bias": True, "batch_first": False}  # nn.MultiheadAttention's default layout
    state = sd.mha_state(rng, 8, True, torch.float32)
    x = randn(rng, 3, 4, 8)  # [B,T,C] = [3,4,8]
    allowed = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    key_allowed = torch.tensor([[True] * 4, [True, True, True, False], [True, True, False, False]])
    for part in credit.parts(["no masks", "causal + key padding"]):
        with part:
            masks = (None, None) if part.label == "no masks" else (allowed, key_allowed)
            r = sub.sdpa_masks.run(sd.mha_recorded, config, state, x, *masks)
            want = sd.mha_expected(config, state, x, *masks)
            expect.close(r["value"], want,
                         what=f"mha_self_attention(nn.MultiheadAttention(8, 2, batch_first=False), x [3,4,8]{'' if masks[0] is None else ', causal, key padding'}) (Day 1 §A.2)",
                         tol=CLOSE, mistakes=signatures.mha(sd.mha_module(config, state), x, *masks))
