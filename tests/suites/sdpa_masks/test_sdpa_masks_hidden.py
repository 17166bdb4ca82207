"""Skill sdpa_masks, hidden tests: the reference on fresh random masks and inputs (B=1,
T=1, T up to 64, L < S, h=1 and h=C, float32 and float64, non-contiguous inputs, bias on
and off), how the submission calls PyTorch's APIs (never attn_mask with is_causal=True,
dropout only while training, need_weights=False), and dtype/in-place rules.
Not shipped to students; on Gradescope students see each test's name and hint only."""

from __future__ import annotations

import torch

from autograder.testing import expect
from autograder.testing.inputs import choice, noncontiguous, randint, randn
from course import mistakes_sdpa_masks as signatures
from course import sdpa_masks_data as sd
from course.tolerances import EXACT, tol

QK = ("query", "key")
DTYPES = (torch.float32, torch.float64)
NEG_INF = float("-inf")


def _tag(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _bernoulli(rng, *shape: int, p: float) -> torch.Tensor:
    return torch.rand(*shape, generator=rng) < p


def _expected_sdpa(ref, q, k, v, allowed, causal, dtype):
    q64, k64, v64 = (t.to(torch.float64) for t in (q, k, v))
    return ref.sdpa_masks.sdpa(q64, k64, v64, allowed=allowed, causal=causal).to(dtype)


def _sdpa_inputs(rng, dtype, *, L=None, S=None):
    lead = choice(rng, ((1, 1), (2,), (randint(rng, 1, 3), randint(rng, 1, 4))))  # [B,h] with h=1, 3-D inputs, or B×h
    S = S or choice(rng, (1, 2, randint(rng, 3, 64), 64))
    L = L or choice(rng, (1, S, randint(rng, 1, S)))
    d, d_v = randint(rng, 1, 16), randint(rng, 1, 16)
    q, k, v = randn(rng, *lead, L, d, dtype=dtype), randn(rng, *lead, S, d, dtype=dtype), randn(rng, *lead, S, d_v, dtype=dtype)
    return lead, L, S, q, k, v


def _allowed(rng, lead, L, S):
    """None, or a random allowed mask broadcastable to [*lead, L, S]; key 0 is always
    allowed, so every query keeps a key even with the bottom-right causal mask."""
    kind = randint(rng, 0, 3)
    if kind == 0:
        return None
    shape = {1: (L, S), 2: (*lead[:-1], 1, L, S) if len(lead) > 1 else (L, S), 3: (*lead[:-1], 1, 1, S) if len(lead) > 1 else (1, S)}[kind]
    allowed = _bernoulli(rng, *shape, p=0.6)
    allowed[..., 0] = True
    return allowed


# --------------------------------------------------------------------------- converters
def test_mask_converters_match_reference_on_random_masks(sub, ref, rng, credit):
    labels = ["blocked_to_sdpa", "to_additive_mask default", "to_additive_mask float64", "to_additive_mask float32 4-D", "to_mha_attn_mask"]
    for part in credit.parts(labels):
        with part:
            shape = choice(rng, ((1, 1), (randint(rng, 1, 12), randint(rng, 1, 12)), (2, 1, randint(rng, 1, 8), randint(rng, 1, 8))))
            mask = _bernoulli(rng, *shape, p=0.5)
            if part.label == "blocked_to_sdpa":
                expect.equal(sub.sdpa_masks.blocked_to_sdpa(mask), ref.sdpa_masks.blocked_to_sdpa(mask), what=f"blocked_to_sdpa(mask {list(shape)})",
                             mistakes={"sdpa_masks/polarity-inverted": mask})
            elif part.label == "to_mha_attn_mask":
                expect.equal(sub.sdpa_masks.to_mha_attn_mask(mask), ref.sdpa_masks.to_mha_attn_mask(mask), what=f"to_mha_attn_mask(allowed {list(shape)})",
                             mistakes={"sdpa_masks/mha-mask-not-inverted": mask})
            else:
                if part.label == "to_additive_mask float32 4-D":
                    mask = _bernoulli(rng, 2, 1, randint(rng, 1, 8), randint(rng, 1, 8), p=0.5)
                dtype = torch.float64 if "float64" in part.label else torch.float32
                got = sub.sdpa_masks.to_additive_mask(mask) if "default" in part.label else sub.sdpa_masks.to_additive_mask(mask, dtype=dtype)
                want = ref.sdpa_masks.to_additive_mask(mask, dtype=dtype)
                expect.close(got, want, what=f"to_additive_mask(allowed {list(mask.shape)}, {_tag(dtype)})",
                             tol=EXACT, mistakes=signatures.distinct(signatures.additive(mask, dtype), EXACT, want))


def test_hf_to_sdpa_mask_matches_reference_any_nonzero_is_real(sub, ref, rng, credit):
    for case in credit.cases(5):
        with case:
            B, S = choice(rng, (1, randint(rng, 2, 4))), choice(rng, (1, randint(rng, 2, 32)))
            lengths = torch.randint(1, S + 1, (B, 1), generator=rng)
            pos = torch.arange(S).unsqueeze(0)
            real = choice(rng, (pos < lengths, pos >= S - lengths, _bernoulli(rng, B, S, p=0.7)))
            kind = choice(rng, ("int64", "int32", "bool", "float32", "int64 values 1..3"))
            if kind == "bool":
                attention_mask = real.clone()
            elif kind == "int64 values 1..3":
                attention_mask = torch.randint(1, 4, (B, S), generator=rng) * real
            else:
                attention_mask = real.to(getattr(torch, kind))
            causal = bool(randint(rng, 0, 1))
            want = ref.sdpa_masks.hf_to_sdpa_mask(attention_mask, causal=causal)
            expect.equal(sub.sdpa_masks.hf_to_sdpa_mask(attention_mask, causal=causal), want, what=f"hf_to_sdpa_mask(attention_mask [{B},{S}] {kind}, causal={causal})",
                         mistakes=signatures.distinct(signatures.hf(attention_mask, causal), EXACT, want))


def test_kv_cache_mask_matches_reference_for_l_le_s(sub, ref, rng, credit):
    for case in credit.cases(5):
        with case:
            S = choice(rng, (1, randint(rng, 2, 64)))
            L = choice(rng, (1, S, randint(rng, 1, S)))
            want = ref.sdpa_masks.kv_cache_mask(L, S)
            expect.equal(sub.sdpa_masks.kv_cache_mask(L, S), want, what=f"kv_cache_mask({L}, {S})",
                         mistakes=signatures.distinct(signatures.kv_cache(L, S), EXACT, want))


# --------------------------------------------------------------------------- sdpa
def test_sdpa_matches_reference_with_masks_and_bottom_right_causal(sub, ref, rng, credit):
    for case in credit.cases(8):
        with case:
            dtype = DTYPES[int(case.label.split()[-1]) % 2]
            lead, L, S, q, k, v = _sdpa_inputs(rng, dtype)
            allowed = _allowed(rng, lead, L, S)
            causal = bool(randint(rng, 0, 1)) if case.label not in ("case 1", "case 2") else True
            if case.label in ("case 1", "case 2"):  # a KV-cache step: L < S; case 2 without a mask
                lead, L, S, q, k, v = _sdpa_inputs(rng, dtype, S=randint(rng, 4, 40), L=randint(rng, 1, 3))
                allowed = _allowed(rng, lead, L, S) if case.label == "case 1" else None
            if randint(rng, 0, 1):
                q = noncontiguous(q)
            want = _expected_sdpa(ref, q, k, v, allowed, causal, dtype)
            label = f"q {list(q.shape)}, k {list(k.shape)}, allowed {None if allowed is None else list(allowed.shape)}, causal={causal}, {_tag(dtype)}"
            t = tol("sdpa_masks.sdpa", dtype)
            expect.close(sub.sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=causal), want, what=f"sdpa({label})",
                         tol=t, mistakes=signatures.distinct(signatures.sdpa(q, k, v, allowed, causal), t, want))


def test_sdpa_never_passes_both_attn_mask_and_is_causal(sub, rng, credit):
    scenarios = ["allowed + causal, L = S", "allowed + causal, L < S", "causal only, L < S", "causal only, L = S"]
    for part in credit.parts(scenarios):
        with part:
            S = randint(rng, 3, 12)
            L = S if part.label.endswith("L = S") else randint(rng, 1, S - 1)
            q, k, v = randn(rng, 2, 2, L, 4), randn(rng, 2, 2, S, 4), randn(rng, 2, 2, S, 4)
            allowed = None
            if part.label.startswith("allowed"):
                allowed = _bernoulli(rng, 2, 1, 1, S, p=0.7)
                allowed[..., 0] = True
            r = sub.sdpa_masks.run(sd.sdpa_recorded, [q, k, v], {"allowed": allowed, "causal": True})
            calls = r["calls"]
            expect.true(len(calls) > 0, what=f"sdpa ({part.label}) calls F.scaled_dot_product_attention", problem="constraint",
                        detail="no call to F.scaled_dot_product_attention was seen", hints=["sdpa_masks/sdpa-not-called"])
            both = [c for c in calls if c["mask"] and c["is_causal"]]
            expect.true(not both, what=f"sdpa ({part.label}) never passes attn_mask together with is_causal=True (Day 1 §A.1)", problem="constraint",
                        detail=f"{len(both)} of {len(calls)} calls passed both", hints=["sdpa_masks/mask-and-is-causal"])
            top_left = [c for c in calls if c["is_causal"] and c["L"] != c["S"]]
            expect.true(not top_left, what=f"sdpa ({part.label}) uses no is_causal=True when L != S (top-left aligned)", problem="constraint",
                        detail=f"is_causal=True with L={L}, S={S}", hints=["sdpa_masks/top-left-causal"])


def test_sdpa_dropout_only_while_training(sub, ref, rng, credit):
    B, h, T, d = 2, 2, 16, 8
    q, k, v = randn(rng, B, h, T, d), randn(rng, B, h, T, d), randn(rng, B, h, T, d)
    deterministic = _expected_sdpa(ref, q, k, v, None, True, torch.float32)
    for part in credit.parts(["eval: dropout_p=0.5 has no effect", "training: dropout_p=0.5 drops weights"]):
        with part:
            training = part.label.startswith("training")
            r = sub.sdpa_masks.run(sd.sdpa_recorded, [q, k, v], {"causal": True, "dropout_p": 0.5, "training": training})
            used = sorted({c["dropout_p"] for c in r["calls"]})
            if not training:
                expect.true(all(p == 0.0 for p in used), what="sdpa(training=False) passes dropout_p=0 to SDPA",
                            detail=f"dropout_p passed: {used}", hints=["sdpa_masks/dropout-in-eval"])
                expect.close(r["value"], deterministic, what="sdpa(causal=True, dropout_p=0.5, training=False) equals the deterministic result (Day 1 §A.1)",
                             tol=tol("sdpa_masks.sdpa", torch.float32), hints=["sdpa_masks/dropout-in-eval"])
            else:
                out = expect.tensor(r["value"], what="sdpa(causal=True, dropout_p=0.5, training=True)")
                differs = out.shape == deterministic.shape and bool(torch.isfinite(out).all()) and float((out - deterministic).abs().max()) > 1e-3
                expect.true(differs, what="sdpa(dropout_p=0.5, training=True) applies dropout: the output differs from the deterministic one",
                            detail=f"dropout_p passed to SDPA: {used}", hints=["sdpa_masks/dropout-never-applied"])


# --------------------------------------------------------------------------- nn.MultiheadAttention
def _mha_case(rng, case_index: int):
    dtype = DTYPES[case_index % 2]
    C = choice(rng, (4, 6, 8, 12))
    divisors = [h for h in range(1, C + 1) if C % h == 0]
    h = choice(rng, (1, C, choice(rng, divisors)))  # h=1, h=C (d=1) or any divisor
    config = {"embed_dim": C, "num_heads": h, "bias": bool(randint(rng, 0, 1)), "batch_first": case_index % 4 < 2}
    B, T = choice(rng, (1, randint(rng, 2, 3))), choice(rng, (1, randint(rng, 2, 10)))
    x = randn(rng, B, T, C, dtype=dtype)
    kind = randint(rng, 0, 2)
    allowed = None if kind == 0 else torch.tril(torch.ones(T, T, dtype=torch.bool)) if kind == 1 else _bernoulli(rng, T, T, p=0.6)
    if allowed is not None:
        allowed[:, 0] = True
    key_allowed = None
    if randint(rng, 0, 1):
        key_allowed = torch.arange(T).unsqueeze(0) < torch.randint(1, T + 1, (B, 1), generator=rng)  # right padding, key 0 real
    return dtype, config, sd.mha_state(rng, C, config["bias"], dtype), x, allowed, key_allowed


def test_mha_self_attention_matches_module_in_both_layouts(sub, rng, credit):
    for case in credit.cases(6):
        with case:
            i = int(case.label.split()[-1])
            dtype, config, state, x, allowed, key_allowed = _mha_case(rng, i)
            if i == 6:
                x = noncontiguous(x)
            r = sub.sdpa_masks.run(sd.mha_recorded, config, state, x, allowed, key_allowed)
            want = sd.mha_expected(config, state, x, allowed, key_allowed)
            label = (f"MultiheadAttention({config['embed_dim']}, {config['num_heads']}, bias={config['bias']}, batch_first={config['batch_first']}), "
                     f"x {list(x.shape)}, allowed={'None' if allowed is None else 'given'}, key_allowed={'None' if key_allowed is None else 'given'}, {_tag(dtype)}")
            t = tol("sdpa_masks.mha_self_attention", dtype)
            expect.close(r["value"], want, what=f"mha_self_attention: {label}", tol=t,
                         mistakes=signatures.distinct(signatures.mha(sd.mha_module(config, state), x, allowed, key_allowed), t, want))


def test_mha_self_attention_calls_module_with_need_weights_false(sub, rng, credit):
    for part in credit.parts(["batch_first=True", "batch_first=False"]):
        with part:
            _, config, state, x, allowed, key_allowed = _mha_case(rng, 1 if part.label.endswith("True") else 3)
            r = sub.sdpa_masks.run(sd.mha_recorded, config, state, x, allowed, key_allowed)
            weights = [c for c in r["calls"] if c["need_weights"]]
            causal = [c for c in r["calls"] if c["is_causal"]]
            expect.true(not weights, what="mha_self_attention calls the module with need_weights=False (Day 1 §A.2)", problem="constraint",
                        detail=f"{len(weights)} of {len(r['calls'])} calls asked for the weights", hints=["sdpa_masks/need-weights"])
            expect.true(not causal, what="mha_self_attention passes no is_causal hint (Day 1 §A.2)", problem="constraint",
                        detail="is_causal=True was passed", hints=["sdpa_masks/mha-is-causal"])


# --------------------------------------------------------------------------- conventions
def test_sdpa_masks_functions_keep_dtype_and_leave_inputs_unchanged(sub, rng, credit):
    allowed = _bernoulli(rng, 4, 6, p=0.6)
    allowed[:, 0] = True
    q64, k64, v64 = randn(rng, 1, 2, 4, 3, dtype=torch.float64), randn(rng, 1, 2, 6, 3, dtype=torch.float64), randn(rng, 1, 2, 6, 5, dtype=torch.float64)
    q32, k32, v32 = q64.float(), k64.float(), v64.float()
    calls = {
        "blocked_to_sdpa": (("blocked_to_sdpa", (allowed,), {}), torch.bool),
        "to_additive_mask float64": (("to_additive_mask", (allowed,), {"dtype": torch.float64}), torch.float64),
        "to_mha_attn_mask": (("to_mha_attn_mask", (allowed,), {}), torch.bool),
        "hf_to_sdpa_mask": (("hf_to_sdpa_mask", (torch.tensor([[0, 1, 1], [1, 1, 1]]),), {}), torch.bool),
        "sdpa float64": (("sdpa", (q64, k64, v64, allowed), {"causal": True}), torch.float64),
        "sdpa float32": (("sdpa", (q32, k32, v32, allowed), {"causal": True}), torch.float32),
    }
    for part in credit.parts(list(calls)):
        with part:
            (name, args, kwargs), dtype = calls[part.label]
            r = sub.sdpa_masks.call(name, *args, return_args=True, **kwargs)
            for before, after in zip(args, r.args or []):
                expect.unchanged(before, after, what=f"{name} leaves its inputs unchanged")
            out = expect.tensor(r.value, what=f"{name} result")
            expect.true(out.dtype == dtype, what=f"{part.label}: result dtype {_tag(dtype)}", detail=f"got {_tag(out.dtype)}",
                        hints=["general/mask-dtype"] if dtype == torch.bool else ["general/dtype-changed"])
