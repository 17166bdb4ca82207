"""Skill sdpa_masks, hidden tests: the reference on fresh random masks and inputs (B=1,
T=1, T up to 64, L < S, h=1 and h=C, float32 and float64, non-contiguous inputs, bias on
and off), how the submission calls PyTorch's APIs (never attn_mask with is_causal=True,
dropout only while training, need_weights=False), and dtype/in-place rules.
No free points: a degenerate draw (a 1×1 or constant mask, S = 1, L = S or L = 1 for the
bottom-right mask, T = 1, nothing padded) is only checked inside a case next to a regular
input; the call-convention tests compare the values with the reference too; the dtype test
checks dtypes and inputs only and counts once the skill's other tests earn points
(grading.toml `properties`).
One mistake, one price: every random draw has a fixed structure (shapes, L = S or L < S, mask
layout, padding, dtype) and only the values are random, so a deterministic mistake fails the
same kinds on every seed.
Not shipped to students; on Gradescope students see each test's name and hint only."""

from __future__ import annotations

import torch
from course import oracles
from course import sdpa_masks_data as sd
from course.tolerances import EXACT, tol

from autograder.testing import (
    bernoulli,
    beside_regular,
    choice,
    dtype_name,
    expect,
    long_length,
    mixed,
    noncontiguous,
    randint,
    randn,
    sibling,
)

signatures = sibling(__file__, "mistakes")  # the named mistakes' outputs (beside this suite; never shipped to students)

WORKER_SCANNED = ("sdpa_masks",)  # its workers run only the files its rule scan reads (sandbox/codegate.py)
QK = ("query", "key")
DTYPES = (torch.float32, torch.float64)
NEG_INF = float("-inf")


def _expected_sdpa(ref, q, k, v, allowed, causal, dtype):
    q64, k64, v64 = (t.to(torch.float64) for t in (q, k, v))
    return ref.sdpa_masks.sdpa(q64, k64, v64, allowed=allowed, causal=causal).to(dtype)


# --------------------------------------------------------------------------- converters
def test_mask_converters_match_reference_on_random_masks(sub, ref, rng, credit):
    labels = [
        "blocked_to_sdpa",
        "to_additive_mask default",
        "to_additive_mask float64",
        "to_additive_mask float32 4-D",
        "to_mha_attn_mask",
    ]
    for part in credit.parts(labels):
        with part:
            # a 4-D mask in every part, and a 2-D one beside it but in the "4-D" part;
            # to_mha_attn_mask takes [L,S] or [B·h,L,S] only (its docstring), so its second
            # mask is 3-D (the same draws: the inputs of the other parts do not move)
            lead = (2,) if part.label == "to_mha_attn_mask" else (2, 1)
            shapes = [(*lead, randint(rng, 1, 8), randint(rng, 1, 8))]
            if part.label != "to_additive_mask float32 4-D":
                shapes.insert(0, (randint(rng, 1, 12), randint(rng, 2, 12)))
            masks = [
                mixed(rng, bernoulli(rng, *shape, p=0.5)) for shape in shapes
            ]  # some True, some False: a constant mask makes a constant answer right
            if part.label in ("blocked_to_sdpa", "to_additive_mask default"):  # a 1×1 mask, next to the regular one
                masks.append(bernoulli(rng, 1, 1, p=0.5))
            for mask in masks:
                if part.label == "blocked_to_sdpa":
                    expect.equal(
                        sub.sdpa_masks.blocked_to_sdpa(mask),
                        ref.sdpa_masks.blocked_to_sdpa(mask),
                        what=f"blocked_to_sdpa(mask {list(mask.shape)})",
                        mistakes={"sdpa_masks/polarity-inverted": mask},
                    )
                elif part.label == "to_mha_attn_mask":
                    expect.equal(
                        sub.sdpa_masks.to_mha_attn_mask(mask),
                        ref.sdpa_masks.to_mha_attn_mask(mask),
                        what=f"to_mha_attn_mask(allowed {list(mask.shape)})",
                        mistakes={"sdpa_masks/mha-mask-not-inverted": mask},
                    )
                else:
                    dtype = torch.float64 if "float64" in part.label else torch.float32
                    got = (
                        sub.sdpa_masks.to_additive_mask(mask)
                        if "default" in part.label
                        else sub.sdpa_masks.to_additive_mask(mask, dtype=dtype)
                    )
                    want = ref.sdpa_masks.to_additive_mask(mask, dtype=dtype)
                    expect.close(
                        got,
                        want,
                        what=f"to_additive_mask(allowed {list(mask.shape)}, {dtype_name(dtype)})",
                        tol=EXACT,
                        mistakes=lambda: signatures.distinct(signatures.additive(mask, dtype), EXACT, want),
                        **sd.ADDITIVE_DTYPE,
                    )


def test_hf_to_sdpa_mask_matches_reference_any_nonzero_is_real(sub, ref, rng, credit):
    # draw i of each kind: a fixed padding layout (right, left, random) and dtype; example b has two real
    # tokens and, between them, a pad token, so that both the padding and the causal mask matter
    layouts = {
        "causal=True": [("right", "int64"), ("left", "bool"), ("random", "int32")],
        "causal=False": [("right", "float32 values in (0, 1]"), ("left", "bool"), ("random", "int64 values 1..3")],
    }
    for case in credit.kinds({"causal=True": 3, "causal=False": 3}):
        with case:
            layout, kind = layouts[case.kind][case.draw]
            B, S = randint(rng, 1, 4), randint(rng, 3, 32)
            if case.kind == "causal=True" and case.draw == 0:  # past a causal buffer of fixed length
                S = long_length(rng)
            lengths = torch.randint(1, S + 1, (B, 1), generator=rng)
            b = randint(rng, 0, B - 1)
            lengths[b] = randint(rng, 2, S - 1)  # really padded: with no pad key the mask ignores attention_mask
            pos = torch.arange(S).unsqueeze(0)
            real = {"right": pos < lengths, "left": pos >= S - lengths}.get(layout)
            if real is None:
                real = bernoulli(rng, B, S, p=0.7)
                first, pad, last = sorted(torch.randperm(S, generator=rng)[:3].tolist())
                real[b, first], real[b, pad], real[b, last] = True, False, True
            causal = case.kind == "causal=True"
            reals = [real]
            if case.draw == 0:  # S = 1 (one real or pad token), next to the regular batch
                reals.append(bernoulli(rng, B, 1, p=0.5))
            for real in reals:
                if kind == "bool":
                    attention_mask = real.clone()
                elif kind == "int64 values 1..3":
                    attention_mask = torch.randint(1, 4, real.shape, generator=rng) * real
                elif kind == "float32 values in (0, 1]":  # not only 1.0: `> 0.5` must not pass (blind tester R-CW)
                    attention_mask = (1 - 0.9 * torch.rand(real.shape, generator=rng)) * real
                else:
                    attention_mask = real.to(getattr(torch, kind))
                masks = [(kind, attention_mask)]
                if (
                    kind != "int64 values 1..3"
                ):  # every draw also marks real tokens 1, 2 and 3: `== 1` must not pass by the draw of a dtype
                    masks.append(("int64 values 1..3", (torch.arange(real.numel()).reshape(real.shape) % 3 + 1) * real))
                for name, attention_mask in masks:
                    want = ref.sdpa_masks.hf_to_sdpa_mask(attention_mask, causal=causal)
                    expect.equal(
                        sub.sdpa_masks.hf_to_sdpa_mask(attention_mask, causal=causal),
                        want,
                        what=f"hf_to_sdpa_mask(attention_mask {list(real.shape)} {name}, causal={causal})",
                        mistakes=lambda: signatures.distinct(signatures.hf(attention_mask, causal), EXACT, want),
                    )


def test_kv_cache_mask_matches_reference_for_l_le_s(sub, ref, rng, credit):
    kinds = {"2 ≤ L < S": 1, "and L = 1": 1, "and L = S": 1, "and S = 1": 1, "and L = 1, S ≤ 8": 1}
    for case in credit.kinds(kinds):
        with case:
            S = long_length(rng) if case.kind == "2 ≤ L < S" else choice(rng, (4, randint(rng, 5, 64)))
            # 2 <= L <= S - 2 first (L = S is plain tril: top-left is right; L = 1 all True): at L = S - 1
            # the mask one diagonal short *is* the top-left one, so a failure there could name neither
            regular = (choice(rng, (2, randint(rng, 2, S - 2))), S)
            # next to it, never credited alone: L = S - 1, L = 1, L = S, S = 1
            extra = {
                "2 ≤ L < S": (S - 1, S),
                "and L = 1": (1, S),
                "and L = S": (S, S),
                "and S = 1": (1, 1),
                "and L = 1, S ≤ 8": (1, randint(rng, 2, 8)),
            }
            draws = beside_regular(regular, extra.get(case.kind))
            for L, S in draws:
                want = ref.sdpa_masks.kv_cache_mask(L, S)
                expect.equal(
                    sub.sdpa_masks.kv_cache_mask(L, S),
                    want,
                    what=f"kv_cache_mask({L}, {S})",
                    mistakes=lambda: signatures.distinct(signatures.kv_cache(L, S), EXACT, want),
                )


# --------------------------------------------------------------------------- sdpa
def _fixed_allowed(rng, lead, L: int, S: int, shape: str) -> torch.Tensor:
    """A random allowed mask (S >= 4) broadcastable to [*lead, L, S], of a fixed `shape` ("[L,S]",
    "[B,1,L,S]" or key padding "[B,1,1,S]"), in which every masking mistake shows on every draw:
    every query reads key 0; query 0 also reads keys 1 (blocked by a top-left causal mask when
    L < S) and S − 1 (blocked by the bottom-right causal mask when L >= 2); the last query, which
    the causal mask leaves all keys, has a blocked key."""
    B = lead[:-1] if len(lead) > 1 else ()
    dims = {"[L,S]": (L, S), "[B,1,L,S]": (*B, 1, L, S), "[B,1,1,S]": (*B, 1, 1, S)}[shape]
    allowed = bernoulli(rng, *dims, p=0.6)
    j = randint(rng, 2, S - 2)
    allowed[..., 0] = True
    allowed[..., 0, 1], allowed[..., 0, S - 1], allowed[..., -1, j] = True, True, False  # (a key-padding mask has one row)
    return allowed


def test_sdpa_matches_reference_with_masks_and_bottom_right_causal(sub, ref, rng, credit):
    # every draw has a fixed structure (leading dims, L = S or L < S, mask shape or none, layout, dtype): a
    # masking mistake fails the same kinds on every seed; a KV-cache step of L = 1 (every key readable) is beside
    kinds = {"causal=False": 2, "causal=True": 2, "KV-cache step with a mask": 1, "KV-cache step without a mask": 1}
    structure = {  # kind → per draw: (leading dims, L = S, mask shape or None, non-contiguous q)
        "causal=False": (((1, 1), True, "[L,S]", False), ("bh", False, "[B,1,1,S]", True)),
        "causal=True": (((2,), True, "[L,S]", False), ("bh", False, "[B,1,L,S]", True)),
        "KV-cache step with a mask": (("bh", False, "[B,1,1,S]", True),),
        "KV-cache step without a mask": (((1, 1), False, None, False),),
    }
    for case in credit.kinds(kinds):
        with case:
            dtype = DTYPES[case.draw % 2] if case.kind.startswith("causal") else DTYPES[case.kind.endswith("with a mask")]
            lead, square, shape, strided = structure[case.kind][case.draw]
            lead = (randint(rng, 1, 3), randint(rng, 1, 4)) if lead == "bh" else lead
            kv_step = case.kind.startswith("KV-cache")
            S = randint(rng, 4, 40 if kv_step else 64)
            L = S if square else randint(rng, 2, 3) if kv_step else randint(rng, 2, S - 1)
            d, d_v = randint(rng, 2, 16), randint(rng, 1, 16)  # d = 1: scaling q by 1/√d changes nothing
            q, k, v = (
                randn(rng, *lead, L, d, dtype=dtype),
                randn(rng, *lead, S, d, dtype=dtype),
                randn(rng, *lead, S, d_v, dtype=dtype),
            )
            allowed = None if shape is None else _fixed_allowed(rng, lead, L, S, shape)
            causal = case.kind != "causal=False"
            if strided:
                q = noncontiguous(q)
            inputs = [(q, k, v, allowed)]
            if kv_step:  # L = 1: the bottom-right causal mask blocks nothing, so it is checked beside
                q1 = randn(rng, *lead, 1, d, dtype=dtype)
                inputs.append((q1, k, v, None if allowed is None else _fixed_allowed(rng, lead, 1, S, shape)))
            for q, k, v, allowed in inputs:
                want = _expected_sdpa(ref, q, k, v, allowed, causal, dtype)
                label = (
                    f"q {list(q.shape)}, k {list(k.shape)}, allowed "
                    f"{None if allowed is None else list(allowed.shape)}, causal={causal}, {dtype_name(dtype)}"
                )
                t = tol("sdpa_masks.sdpa", dtype)
                with sd.mask_and_is_causal_named():  # torch's own refusal: the call passed both
                    got = sub.sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=causal)
                expect.close(
                    got,
                    want,
                    what=f"sdpa({label})",
                    tol=t,
                    mistakes=lambda: sd.blame_kv_cache(
                        sub,
                        signatures.distinct(signatures.sdpa(q, k, v, allowed, causal), t, want),
                        signatures.top_left(q.size(-2), k.size(-2)),
                    ),
                )


def test_sdpa_never_passes_both_attn_mask_and_is_causal(sub, ref, rng, credit):
    scenarios = ["allowed + causal, L = S", "allowed + causal, L < S", "causal only, L < S", "causal only, L = S"]
    for part in credit.parts(scenarios):
        with part:
            S = randint(rng, 3, 12)
            L = S if part.label.endswith("L = S") else randint(rng, 2, S - 1)  # L = 1: the causal mask blocks nothing
            q, k, v = randn(rng, 2, 2, L, 4), randn(rng, 2, 2, S, 4), randn(rng, 2, 2, S, 4)
            allowed = None
            if part.label.startswith("allowed"):
                allowed = bernoulli(rng, 2, 1, 1, S, p=0.7)
                allowed[..., 0] = True
            # a property test (grading.toml `properties`): it checks only the calls its name is about, whatever the
            # values (a wrong mask, e.g. is_causal=True when L < S, is the value tests' business)
            r = sub.sdpa_masks.run(sd.sdpa_recorded, [q, k, v], {"allowed": allowed, "causal": True}, keep_calls_on_error=True)
            calls = sd.recorded_calls(sub, r, q, k)
            expect.true(
                len(calls) > 0,
                what=f"sdpa (q [2,2,{L},4], k [2,2,{S},4], {part.label}) calls F.scaled_dot_product_attention",
                problem="constraint",
                detail="no call to F.scaled_dot_product_attention was seen",
                hints=["sdpa_masks/sdpa-not-called"],
            )
            both = [c for c in calls if c["mask"] and c["is_causal"]]
            expect.true(
                not both,
                what=(
                    f"sdpa (q [2,2,{L},4], k [2,2,{S},4], {part.label}) never passes attn_mask together with "
                    "is_causal=True (Day 1 §A.1)"
                ),
                problem="constraint",
                detail=f"{len(both)} of {len(calls)} calls gave both attn_mask and is_causal=True",
                hints=["sdpa_masks/mask-and-is-causal"],
            )
            expect.true(
                r["raised"] is None,
                what=f"sdpa (q [2,2,{L},4], k [2,2,{S},4], {part.label})",
                detail=f"sdpa raised {r['raised']}",
            )


def test_sdpa_dropout_only_while_training(sub, ref, rng, credit):
    B, h, T, d = 2, 2, 16, 8
    q, k = randn(rng, B, h, T, d), randn(rng, B, h, T, d)
    v = torch.eye(T).expand(B, h, T, T).contiguous()  # v = I: the output *is* the (dropped-out) weight matrix
    deterministic = _expected_sdpa(ref, q, k, v, None, True, torch.float32)  # the weights A
    # training drops with p = 0.3, not 0.5: a dropout at 1 − p (a keep probability passed as
    # dropout_p) is the same at 0.5 (blind feedback tester R-AN)
    drop = 0.3
    for part in credit.parts(["eval: dropout_p=0.5 has no effect", "training: dropout_p=0.3 drops weights"]):
        with part, sd.mask_and_is_causal_named():
            training = part.label.startswith("training")
            r = sub.sdpa_masks.run(
                sd.sdpa_recorded, [q, k, v], {"causal": True, "dropout_p": drop if training else 0.5, "training": training}
            )
            used = sorted({c["dropout_p"] for c in sd.recorded_calls(sub, r, q, k)})
            # dropout hints only where the recorded calls prove them; a wrong value for any other
            # reason names only a matching sdpa signature
            mistakes = lambda: signatures.distinct(
                signatures.sdpa(q, k, v, None, True), tol("sdpa_masks.sdpa", torch.float32), deterministic
            )
            if not training:
                expect.true(
                    all(p == 0.0 for p in used),
                    what="sdpa(training=False) passes dropout_p=0 to SDPA",
                    detail=f"dropout_p passed: {used}",
                    hints=["sdpa_masks/dropout-in-eval"],
                )
                expect.close(
                    r["value"],
                    deterministic,
                    what="sdpa(causal=True, dropout_p=0.5, training=False) equals the deterministic result (Day 1 §A.1)",
                    tol=tol("sdpa_masks.sdpa", torch.float32),
                    mistakes=mistakes,
                )
            else:
                out = expect.tensor(r["value"], what="sdpa(causal=True, dropout_p=0.3, training=True)")
                # SDPA's own dropout at the p given, as the calls recorded show: an output merely
                # unlike the deterministic one (its values shifted by 0.01 while training) passed
                # before (blind red-team tester R-AK)
                differs = (
                    drop in used
                    and out.shape == deterministic.shape
                    and bool(torch.isfinite(out).all())
                    and float((out - deterministic).abs().max()) > 1e-3
                )
                expect.true(
                    differs,
                    what="sdpa(dropout_p=0.3, training=True) applies SDPA's dropout at p = 0.3: the output differs from "
                    "the deterministic one",
                    detail=f"dropout_p passed to SDPA: {used}",
                    hints=["sdpa_masks/dropout-never-applied"]
                    if used and all(p == 0.0 for p in used)
                    else ["sdpa_masks/dropout-keep-probability"]
                    if any(abs(p - (1 - drop)) < 1e-9 for p in used)
                    else [],
                )
                # the values: with v = I every weight is either dropped (0) or kept and rescaled (A / (1 − p)), ~30 % dropped
                kept = out.abs() > deterministic  # between 0 and A / 0.7
                expect.close(
                    out,
                    torch.where(kept, deterministic / (1 - drop), torch.zeros_like(deterministic)),
                    what="sdpa(causal=True, dropout_p=0.3, training=True) with v = I: each weight is 0 or A / (1 − p)",
                    tol=tol("sdpa_masks.sdpa", torch.float32),
                )
                share = float(kept[deterministic > 0].float().mean())
                expect.true(
                    0.55 <= share <= 0.85,
                    what="sdpa(dropout_p=0.3, training=True) keeps about 70 % of the weights",
                    detail=f"kept {share:.0%} of the non-zero weights (dropout_p passed to SDPA: {used})",
                )


# --------------------------------------------------------------------------- nn.MultiheadAttention
def _mha_case(rng, case_index: int):
    """Case i (1..6) has a fixed structure: float32 when i is even, batch_first when i % 4 < 2, the
    number of heads (1, C or another divisor), bias, one example or several, the attention mask (a
    causal one, a random one or none) and a key-padding mask (given or not); the values are random.
    So a mask mistake fails the same cases on every seed. Every case masks something and has a
    query that reads two keys (T >= 3; the padded example keeps two real keys)."""
    i = case_index
    dtype = DTYPES[i % 2]
    attn, padded = {
        1: ("causal", True),
        2: (None, True),
        3: ("random", False),
        4: ("causal", False),
        5: ("random", True),
        6: ("causal", True),
    }[i]
    C = choice(rng, (4, 6, 8, 12))
    divisors = [h for h in range(2, C) if C % h == 0]
    h = (1, C, choice(rng, divisors))[i % 3]  # h=1, h=C (d=1) or another divisor
    config = {"embed_dim": C, "num_heads": h, "bias": (i // 2) % 2 == 0, "batch_first": i % 4 < 2}
    B, T = 1 if i in (1, 4) else randint(rng, 2, 3), randint(rng, 3, 10)  # T = 1 is checked next to a regular case
    x = randn(rng, B, T, C, dtype=dtype)
    allowed = None
    if attn == "causal":
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
    elif attn == "random":
        allowed = bernoulli(rng, T, T, p=0.6)
        allowed[:, 0], allowed[0, T - 1], allowed[T - 1, T - 1] = (
            True,
            False,
            True,
        )  # key 0 for every query, something blocked, two keys read
    key_allowed = None
    if padded:  # right padding, key 0 real; one example keeps 2 .. T − 1 real keys
        lengths = torch.randint(1, T + 1, (B, 1), generator=rng)
        lengths[randint(rng, 0, B - 1)] = randint(rng, 2, T - 1)
        key_allowed = torch.arange(T).unsqueeze(0) < lengths
    return dtype, config, sd.mha_state(rng, C, config["bias"], dtype), x, allowed, key_allowed


def test_mha_self_attention_matches_module_in_both_layouts(sub, rng, credit):
    # _mha_case(rng, i): float32 when i is even, batch_first when i % 4 < 2; i = 1 adds T = 1, i = 6 a non-contiguous x
    kinds = {
        "batch_first=True, float32": 4,
        "batch_first=True, float64": 5,
        "batch_first=False, float32": 2,
        "batch_first=False, float64": 3,
        "T = 1 beside a regular batch": 1,
        "non-contiguous x": 6,
    }
    for case in credit.kinds(list(kinds)):
        with case:
            i = kinds[case.kind]
            dtype, config, state, x, allowed, key_allowed = _mha_case(rng, i)
            if i == 6:
                x = noncontiguous(x)
            inputs = [(x, allowed, key_allowed)]
            B, T, C = x.shape
            if i == 1:  # T = 1 (the only key is the query itself), next to the regular case
                inputs.append((randn(rng, B, 1, C, dtype=dtype), None, None))
            for x, allowed, key_allowed in inputs:
                want = oracles.mha_expected(config, state, x, allowed, key_allowed)
                r = sd.run_mha(sub, config, state, x, allowed, key_allowed, want=want)
                label = (
                    f"MultiheadAttention({config['embed_dim']}, {config['num_heads']}, bias={config['bias']}, "
                    f"batch_first={config['batch_first']}), "
                    f"x {list(x.shape)}, allowed={'None' if allowed is None else 'given'}, "
                    f"key_allowed={'None' if key_allowed is None else 'given'}, {dtype_name(dtype)}"
                )
                t = tol("sdpa_masks.mha_self_attention", dtype)
                expect.close(
                    r["value"],
                    want,
                    what=f"mha_self_attention: {label}",
                    tol=t,
                    mistakes=lambda: signatures.distinct(
                        signatures.mha(sd.mha_module(config, state), x, allowed, key_allowed), t, want
                    ),
                )


def test_mha_self_attention_calls_module_with_need_weights_false(sub, rng, credit):
    for part in credit.parts(["batch_first=True", "batch_first=False"]):
        with part:
            dtype, config, state, x, allowed, key_allowed = _mha_case(rng, 1 if part.label.endswith("True") else 3)
            r = sd.run_mha(
                sub,
                config,
                state,
                x,
                allowed,
                key_allowed,
                checking="how it calls the module",
                want=lambda: oracles.mha_expected(config, state, x, allowed, key_allowed),
            )
            # a property test (grading.toml `properties`): it checks only how the module is called, whatever the
            # values (those are test_mha_self_attention_matches_module_in_both_layouts' business)
            calls = sd.recorded_calls(sub, r)
            weights = [c for c in calls if c["need_weights"]]
            causal = [c for c in calls if c["is_causal"]]
            what = f"mha_self_attention({part.label} module, x {list(x.shape)})"
            expect.true(
                len(calls) > 0, what=f"{what} calls the module", problem="constraint", detail="the module was never called"
            )
            expect.true(
                not weights,
                what=f"{what} calls the module with need_weights=False (Day 1 §A.2)",
                problem="constraint",
                detail=f"{len(weights)} of {len(calls)} calls asked for the weights",
                hints=["sdpa_masks/need-weights"],
            )
            expect.true(
                not causal,
                what=f"{what} passes no is_causal hint (Day 1 §A.2)",
                problem="constraint",
                detail="is_causal=True was passed",
                hints=["sdpa_masks/mha-is-causal"],
            )


# --------------------------------------------------------------------------- conventions
def test_sdpa_masks_functions_keep_dtype_and_leave_inputs_unchanged(sub, rng, credit):
    # a property test (grading.toml `properties`): it checks the result's dtype and that the inputs are left
    # unchanged, whatever the values (those are the value tests' business); it counts once the skill's other
    # tests earn points, so plausible garbage with the right dtypes earns nothing here. sdpa gets a mask
    # without causal=True: what it does with both is test_sdpa_never_passes_both_attn_mask_and_is_causal's business
    allowed = bernoulli(rng, 4, 6, p=0.6)
    allowed[:, 0] = True
    allowed[0, 1:] = False  # something blocked
    allowed[-1, -1] = True  # and a query with two keys
    q64, k64, v64 = (
        randn(rng, 1, 2, 4, 3, dtype=torch.float64),
        randn(rng, 1, 2, 6, 3, dtype=torch.float64),
        randn(rng, 1, 2, 6, 5, dtype=torch.float64),
    )
    q32, k32, v32 = q64.float(), k64.float(), v64.float()
    calls = {
        "blocked_to_sdpa": (("blocked_to_sdpa", (allowed,), {}), torch.bool),
        "to_additive_mask float64": (("to_additive_mask", (allowed,), {"dtype": torch.float64}), torch.float64),
        "to_mha_attn_mask": (("to_mha_attn_mask", (allowed,), {}), torch.bool),
        "hf_to_sdpa_mask": (("hf_to_sdpa_mask", (torch.tensor([[0, 1, 1], [1, 1, 1]]),), {}), torch.bool),
        "sdpa float64": (("sdpa", (q64, k64, v64, allowed), {}), torch.float64),
        "sdpa float32": (("sdpa", (q32, k32, v32), {"causal": True}), torch.float32),
    }
    for part in credit.parts(list(calls)):
        with part, sd.mask_and_is_causal_named():
            (name, args, kwargs), dtype = calls[part.label]
            r = sub.sdpa_masks.call(name, *args, return_args=True, **kwargs)
            for before, after in zip(args, r.args or []):
                expect.unchanged(before, after, what=f"{name} leaves its inputs unchanged")
            out = expect.tensor(r.value, what=f"{name} result")
            expect.true(
                out.dtype == dtype,
                what=f"{part.label}: result dtype {dtype_name(dtype)}",
                detail=f"got {dtype_name(out.dtype)}",
                hints=sd.dtype_hints(name, dtype),
            )
