"""Snapshot cases of the visible sdpa_masks suite: inputs, the reference's outputs and the
named mistakes' outputs (`make snapshots` → snapshots/sdpa_masks.json). Instructors only:
students get the data file, never the code that replays a mistake."""

from __future__ import annotations

import torch
from course import sdpa_masks_data as sd

from autograder.testing import choice, in_float64, randint, randn, sibling

signatures = sibling(__file__, "mistakes")


def _mask(rng, *shape: int) -> torch.Tensor:
    """A random bool mask with at least one True and one False (a constant mask makes a
    constant answer right)."""
    mask = torch.rand(*shape, generator=rng) < 0.5
    flat = mask.view(-1)
    i = randint(rng, 0, flat.numel() - 1)
    flat[i], flat[(i + randint(rng, 1, flat.numel() - 1)) % flat.numel()] = True, False
    return mask


def converters(rng, ref):
    mask = _mask(rng, randint(rng, 2, 4), randint(rng, 3, 8))
    return {
        "mask": mask,
        "blocked_to_sdpa": ref.sdpa_masks.blocked_to_sdpa(mask),
        "to_mha_attn_mask": ref.sdpa_masks.to_mha_attn_mask(mask),
    }


def additive(rng, ref):
    mask = _mask(rng, randint(rng, 1, 2), randint(rng, 2, 5), randint(rng, 3, 8))
    dtype = choice(rng, (torch.float32, torch.float64))
    allowed = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    return {
        "mask": mask,
        "dtype": dtype,
        "want": ref.sdpa_masks.to_additive_mask(mask, dtype=dtype),
        "tril4_float32": ref.sdpa_masks.to_additive_mask(allowed),
        "tril4_float64": ref.sdpa_masks.to_additive_mask(allowed, dtype=torch.float64),
        "mistakes": signatures.additive(mask, dtype),
        "tril4_float32_mistakes": signatures.additive(allowed, torch.float32),
        "tril4_float64_mistakes": signatures.additive(allowed, torch.float64),
    }


def hf(rng, ref):
    B, S = randint(rng, 2, 3), randint(rng, 3, 8)
    mask = _mask(rng, B, S).long()
    mask = mask * torch.randint(1, 4, mask.shape, generator=rng)  # real tokens marked 1, 2 or 3: any non-zero entry is real
    real = mask.view(-1).nonzero().view(-1)
    mask.view(-1)[real[randint(rng, 0, real.numel() - 1)]] = 2  # at least one real token marked 2
    causal = bool(randint(rng, 0, 1))
    lesson = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])  # Day 1 §3.4: HF 1 = real, 0 = pad
    return {
        "attention_mask": mask,
        "causal": causal,
        "want": ref.sdpa_masks.hf_to_sdpa_mask(mask, causal=causal),
        "lesson_causal": ref.sdpa_masks.hf_to_sdpa_mask(lesson, causal=True),
        "lesson_not_causal": ref.sdpa_masks.hf_to_sdpa_mask(lesson, causal=False),
        "mistakes": signatures.hf(mask, causal),
        "lesson_causal_mistakes": signatures.hf(lesson, True),
        "lesson_not_causal_mistakes": signatures.hf(lesson, False),
    }


def kv_cache(rng, ref):
    S = randint(rng, 4, 12)
    L = randint(rng, 2, S - 1)  # L = 1 is all True, L = S plain tril: neither alone shows the alignment
    out = {"L": L, "S": S, "want": ref.sdpa_masks.kv_cache_mask(L, S), "mistakes": signatures.kv_cache(L, S)}
    for L0, S0 in ((1, 5), (3, 5), (4, 4)):
        out[f"{L0},{S0}"] = ref.sdpa_masks.kv_cache_mask(L0, S0)
        out[f"{L0},{S0} mistakes"] = signatures.kv_cache(L0, S0)
    return out


def sdpa(rng, ref):
    B, h, S = randint(rng, 1, 2), randint(rng, 1, 3), randint(rng, 4, 10)
    L, d = randint(rng, 2, S - 1), randint(rng, 2, 6)
    q, k, v = randn(rng, B, h, L, d), randn(rng, B, h, S, d), randn(rng, B, h, S, randint(rng, 1, 5))
    allowed = _mask(rng, B, 1, 1, S)  # key padding
    allowed[..., 0] = True  # every query keeps a key
    allowed[..., -1] = True  # and the last one two
    allowed[0, 0, 0, randint(rng, 1, S - 2)] = False  # a padded key
    q64, k64, v64 = q.double(), k.double(), v.double()  # the float64 control (sent non-contiguous)
    return {
        "q": q,
        "k": k,
        "v": v,
        "allowed": allowed,
        "want": in_float64(ref.sdpa_masks.sdpa, q, k, v, allowed=allowed, causal=True),
        "mistakes": signatures.sdpa(q, k, v, allowed, causal=True),
        "top_left": signatures.top_left(L, S),
        "want64": in_float64(ref.sdpa_masks.sdpa, q64, k64, v64, allowed=allowed, causal=True, dtype=torch.float64),
        "mistakes64": signatures.sdpa(q64, k64, v64, allowed, causal=True),
    }


def sdpa_examples(rng, ref):
    """Day 1 §A.1's decoding step, causal + padding with L < S, and dropout in eval."""
    out = {}
    for label, L in (("L=1 decoding step", 1), ("L=3, S=5 causal + padding", 3), ("dropout_p=0.5 in eval", 3)):
        q, k, v = randn(rng, 1, 2, L, 4), randn(rng, 1, 2, 5, 4), randn(rng, 1, 2, 5, 3)
        if label.startswith("L=3"):
            allowed = torch.tensor([True, True, True, False, True]).expand(L, 5)  # key 3 is padding
            want = in_float64(ref.sdpa_masks.sdpa, q, k, v, allowed=allowed, causal=True)
        elif label.startswith("L=1"):
            allowed, want = None, in_float64(ref.sdpa_masks.sdpa, q, k, v, causal=True)
        else:
            allowed, want = None, in_float64(ref.sdpa_masks.sdpa, q, k, v, dropout_p=0.5, training=False)
        out[label] = {
            "q": q,
            "k": k,
            "v": v,
            "allowed": allowed,
            "want": want,
            "mistakes": signatures.sdpa(q, k, v, allowed, causal=not label.startswith("dropout")),
            "top_left": signatures.top_left(L, 5),
        }
    return out


def _mha(ref, config, state, x, allowed=None, key_allowed=None):
    with torch.no_grad():
        return ref.sdpa_masks.mha_self_attention(sd.mha_module(config, state), x.double(), allowed, key_allowed).float()


def mha(rng, ref):
    config = {"embed_dim": 8, "num_heads": 2, "bias": True, "batch_first": False}  # nn.MultiheadAttention's default layout
    state = sd.mha_state(rng, 8, True, torch.float32)
    x = randn(rng, 3, 4, 8)  # [B,T,C] = [3,4,8]
    allowed = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    key_allowed = torch.tensor([[True] * 4, [True, True, True, False], [True, True, False, False]])
    C = choice(rng, (4, 6, 8))
    fresh_config = {
        "embed_dim": C,
        "num_heads": choice(rng, (1, 2)),
        "bias": bool(randint(rng, 0, 1)),
        "batch_first": bool(randint(rng, 0, 1)),
    }
    fresh_state = sd.mha_state(rng, C, fresh_config["bias"], torch.float32)
    B, T = randint(rng, 2, 3), randint(rng, 3, 6)
    fresh_x = randn(rng, B, T, C)
    fresh_masks = (
        torch.tril(torch.ones(T, T, dtype=torch.bool)),
        torch.arange(T).unsqueeze(0) < torch.tensor([[T]] + [[randint(rng, 1, T - 1)] for _ in range(B - 1)]),
    )
    return {
        "config": config,
        "state": state,
        "x": x,
        "allowed": allowed,
        "key_allowed": key_allowed,
        "want_no_masks": _mha(ref, config, state, x),
        "want_masks": _mha(ref, config, state, x, allowed, key_allowed),
        "fresh_config": fresh_config,
        "fresh_state": fresh_state,
        "fresh_x": fresh_x,
        "fresh_allowed": fresh_masks[0],
        "fresh_key_allowed": fresh_masks[1],
        "fresh_want": _mha(ref, fresh_config, fresh_state, fresh_x, *fresh_masks),
        "mistakes_no_masks": signatures.mha(sd.mha_module(config, state), x),
        "mistakes_masks": signatures.mha(sd.mha_module(config, state), x, allowed, key_allowed),
        "fresh_mistakes": signatures.mha(sd.mha_module(fresh_config, fresh_state), fresh_x, *fresh_masks),
    }


CASES = [converters, additive, hf, kv_cache, sdpa, sdpa_examples, mha]
