"""Skill sdpa_masks, visible tests: the Day 1 §A examples of PyTorch's mask conventions.

Shipped to students. §A.4's two causal masks, §A.3's table (SDPA True = attend,
masked_fill / nn.MultiheadAttention True = blocked, additive 0/−∞, HuggingFace 1/0),
§A.1's KV-cache decoding step (L = 1) and §A.2's batch_first=False module. Expected values
are computed here with plain torch. Each test also checks *fresh random inputs* against the
lessons' own formulas (a required part: failing it scores the test 0), so recognising the
examples and printing their answers earns nothing. The hidden suite checks much more widely.
"""

from __future__ import annotations

import math

import torch

from autograder.testing import expect
from autograder.testing.inputs import choice, randint, randn
from course import masks_data as md
from course import mistakes_sdpa_masks as signatures
from course import sdpa_masks_data as sd
from course.tolerances import EXACT, Tol

QK = ("query", "key")
FRESH = "fresh random inputs"
NEG_INF = float("-inf")
CLOSE = Tol(rtol=1e-5, atol=1e-6)  # float32 SDPA vs a float64 softmax by hand


def _fresh_mask(rng, *shape: int) -> torch.Tensor:
    """A random bool mask with at least one True and one False (a constant mask makes a
    constant answer right)."""
    mask = torch.rand(*shape, generator=rng) < 0.5
    flat = mask.view(-1)
    i = randint(rng, 0, flat.numel() - 1)
    flat[i], flat[(i + randint(rng, 1, flat.numel() - 1)) % flat.numel()] = True, False
    return mask


def _bottom_right(L: int, S: int) -> torch.Tensor:
    """Day 1 §A.1: query i sits at position S − L + i and reads keys j <= S − L + i."""
    return torch.tensor([[j <= S - L + i for j in range(S)] for i in range(L)])


def _manual(q, k, v, allowed):
    """softmax(q kᵀ/√d with −∞ on blocked keys) v, in float64."""
    q, k, v = (t.to(torch.float64) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return torch.softmax(scores.masked_fill(~allowed, NEG_INF), -1) @ v


def test_blocked_to_sdpa_and_to_mha_attn_mask_flip_the_a4_masks(sub, rng, credit):
    T = 4
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # §A.4: True = 屏蔽 (masked_fill)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))  # §A.4: True = 允许 (SDPA)
    for part in credit.parts(["blocked_to_sdpa", "to_mha_attn_mask", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                mask = _fresh_mask(rng, randint(rng, 2, 4), randint(rng, 3, 8))
                md.mask_equal(sub.sdpa_masks.blocked_to_sdpa(mask), ~mask, what=f"blocked_to_sdpa(fresh random mask {list(mask.shape)}) = ~blocked (Day 1 §A.3)",
                             mistakes={"sdpa_masks/polarity-inverted": mask})
                md.mask_equal(sub.sdpa_masks.to_mha_attn_mask(mask), ~mask, what=f"to_mha_attn_mask(fresh random mask {list(mask.shape)}) = ~allowed (Day 1 §A.3)",
                             mistakes={"sdpa_masks/mha-mask-not-inverted": mask})
            elif part.label == "blocked_to_sdpa":
                md.mask_equal(sub.sdpa_masks.blocked_to_sdpa(blocked), allowed, what="blocked_to_sdpa(triu(ones(4,4), diagonal=1)) = tril (Day 1 §A.4)",
                             mistakes={"sdpa_masks/polarity-inverted": blocked}, grid=QK)
            else:
                md.mask_equal(sub.sdpa_masks.to_mha_attn_mask(allowed), blocked, what="to_mha_attn_mask(tril): True = not allowed (Day 1 §A.3)",
                             mistakes={"sdpa_masks/mha-mask-not-inverted": allowed}, grid=QK)


def test_to_additive_mask_is_zero_or_minus_inf(sub, rng, credit):
    allowed = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    for part in credit.parts(["default float32", "float64", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                mask = _fresh_mask(rng, randint(rng, 1, 2), randint(rng, 2, 5), randint(rng, 3, 8))
                dtype = choice(rng, (torch.float32, torch.float64))
                expect.close(sub.sdpa_masks.to_additive_mask(mask, dtype=dtype), torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, NEG_INF),
                             what=f"to_additive_mask(fresh random mask {list(mask.shape)}, dtype={str(dtype)[6:]}): 0 = keep, −∞ = block", tol=EXACT,
                             mistakes=signatures.additive(mask, dtype))
                continue
            dtype = torch.float32 if part.label == "default float32" else torch.float64
            want = torch.zeros(4, 4, dtype=dtype).masked_fill(~allowed, NEG_INF)
            got = sub.sdpa_masks.to_additive_mask(allowed) if dtype == torch.float32 else sub.sdpa_masks.to_additive_mask(allowed, dtype=torch.float64)
            expect.close(got, want, what=f"to_additive_mask(tril(4){'' if dtype == torch.float32 else ', dtype=float64'}): 0 = keep, −∞ = block (Day 1 §3.3, §A.3)",
                         tol=EXACT, mistakes=signatures.additive(allowed, dtype), grid=QK)


def test_hf_to_sdpa_mask_left_padded_batch_masks_keys_only(sub, rng, credit):
    attention_mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])  # HF: 1 = real, 0 = pad
    real = attention_mask != 0
    for part in credit.parts(["causal=True", "causal=False", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                B, S = randint(rng, 2, 3), randint(rng, 3, 8)
                fresh = _fresh_mask(rng, B, S).long()
                causal = bool(randint(rng, 0, 1))
                want = (fresh != 0)[:, None, None, :].expand(B, 1, S, S)
                if causal:
                    want = want & torch.tril(torch.ones(S, S, dtype=torch.bool))
                md.mask_equal(sub.sdpa_masks.hf_to_sdpa_mask(fresh, causal=causal), want.contiguous(),
                             what=f"hf_to_sdpa_mask(fresh attention_mask {fresh.tolist()}, causal={causal}): real keys only (Day 1 §3.2, §A.3)",
                             mistakes=signatures.hf(fresh, causal))
                continue
            causal = part.label == "causal=True"
            want = real[:, None, None, :].expand(2, 1, 5, 5)
            if causal:
                want = want & torch.tril(torch.ones(5, 5, dtype=torch.bool))
            md.mask_equal(sub.sdpa_masks.hf_to_sdpa_mask(attention_mask, causal=causal), want.contiguous(),
                         what=f"hf_to_sdpa_mask([[0,0,1,1,1],[1,1,1,1,1]], causal={causal}) → [B,1,S,S], pad keys blocked (Day 1 §3.2, §A.3)",
                         mistakes=signatures.hf(attention_mask, causal), grid=QK)


def test_kv_cache_mask_is_bottom_right_aligned(sub, rng, credit):
    for part in credit.parts(["L=1, S=5", "L=3, S=5", "L=S=4", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                S = randint(rng, 4, 12)
                L = randint(rng, 2, S - 1)  # L = 1 is all True, L = S plain tril: neither alone shows the alignment
                md.mask_equal(sub.sdpa_masks.kv_cache_mask(L, S), _bottom_right(L, S), what=f"kv_cache_mask({L}, {S}) on fresh sizes: query i reads keys j <= S−L+i (Day 1 §A.1)",
                             mistakes=signatures.kv_cache(L, S))
                continue
            L, S = {"L=1, S=5": (1, 5), "L=3, S=5": (3, 5), "L=S=4": (4, 4)}[part.label]
            want = _bottom_right(L, S)
            md.mask_equal(sub.sdpa_masks.kv_cache_mask(L, S), want,
                         what=f"kv_cache_mask({L}, {S}): query i is position S−L+i (Day 1 §A.1: a new token reads every cached key)",
                         mistakes=signatures.kv_cache(L, S), grid=QK)


def test_sdpa_matches_manual_attention_with_kv_cache_causal(sub, rng, credit):
    for part in credit.parts(["L=1 decoding step", "L=3, S=5 causal + padding", "dropout_p=0.5 in eval", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                B, h, S = randint(rng, 1, 2), randint(rng, 1, 3), randint(rng, 4, 10)
                L, d = randint(rng, 2, S - 1), randint(rng, 2, 6)
                q, k, v = randn(rng, B, h, L, d), randn(rng, B, h, S, d), randn(rng, B, h, S, randint(rng, 1, 5))
                allowed = _fresh_mask(rng, B, 1, 1, S)  # key padding
                allowed[..., 0] = True  # every query keeps a key
                allowed[..., -1] = True  # and the last one two
                allowed[0, 0, 0, randint(rng, 1, S - 2)] = False  # a padded key
                got = sub.sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=True)
                expect.close(got, _manual(q, k, v, allowed & _bottom_right(L, S)).float(),
                             what=f"sdpa(fresh q [{B},{h},{L},{d}], k [{B},{h},{S},{d}], key padding, causal=True): bottom-right causal AND padding (Day 1 §A.1)",
                             tol=CLOSE, mistakes=signatures.sdpa(q, k, v, allowed, causal=True))
                continue
            L = 1 if part.label.startswith("L=1") else 3
            S = 5
            q, k, v = randn(rng, 1, 2, L, 4), randn(rng, 1, 2, S, 4), randn(rng, 1, 2, S, 3)
            if part.label == "L=3, S=5 causal + padding":
                allowed = torch.tensor([True, True, True, False, True]).expand(L, S)  # key 3 is padding
                got = sub.sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=True)
                want_mask = allowed & _bottom_right(L, S)
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
    for part in credit.parts(["no masks", "causal + key padding", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                C = choice(rng, (4, 6, 8))
                fresh_config = {"embed_dim": C, "num_heads": choice(rng, (1, 2)), "bias": bool(randint(rng, 0, 1)), "batch_first": bool(randint(rng, 0, 1))}
                fresh_state = sd.mha_state(rng, C, fresh_config["bias"], torch.float32)
                B, T = randint(rng, 2, 3), randint(rng, 3, 6)
                fresh_x = randn(rng, B, T, C)
                fresh_masks = (torch.tril(torch.ones(T, T, dtype=torch.bool)), torch.arange(T).unsqueeze(0) < torch.tensor([[T]] + [[randint(rng, 1, T - 1)] for _ in range(B - 1)]))
                r = sub.sdpa_masks.run(sd.mha_recorded, fresh_config, fresh_state, fresh_x, *fresh_masks)
                expect.close(r["value"], sd.mha_expected(fresh_config, fresh_state, fresh_x, *fresh_masks),
                             what=f"mha_self_attention(nn.MultiheadAttention({C}, {fresh_config['num_heads']}, batch_first={fresh_config['batch_first']}), fresh x [{B},{T},{C}], causal, key padding) (Day 1 §A.2)",
                             tol=CLOSE, mistakes=signatures.mha(sd.mha_module(fresh_config, fresh_state), fresh_x, *fresh_masks))
                continue
            masks = (None, None) if part.label == "no masks" else (allowed, key_allowed)
            r = sub.sdpa_masks.run(sd.mha_recorded, config, state, x, *masks)
            want = sd.mha_expected(config, state, x, *masks)
            expect.close(r["value"], want,
                         what=f"mha_self_attention(nn.MultiheadAttention(8, 2, batch_first=False), x [3,4,8]{'' if masks[0] is None else ', causal, key padding'}) (Day 1 §A.2)",
                         tol=CLOSE, mistakes=signatures.mha(sd.mha_module(config, state), x, *masks))
