"""Skill sdpa_masks, visible tests: the Day 1 §A examples of PyTorch's mask conventions.

Shipped to students. §A.4's two causal masks, §A.3's table (SDPA True = attend,
masked_fill / nn.MultiheadAttention True = blocked, additive 0/−∞, HuggingFace 1/0),
§A.1's KV-cache decoding step (L = 1) and §A.2's batch_first=False module. Expected values
the lessons describe but do not print, and every test's *control inputs* (a required part:
failing it scores the test 0, so recognising the examples and printing their answers earns
nothing), come from the reference solution, run at release time (snapshots/sdpa_masks.json).
The hidden suite checks much more widely, on fresh inputs.
"""

from __future__ import annotations

import torch
from course import masks_data as md
from course import sdpa_masks_data as sd
from course import week07 as w7
from course.tolerances import EXACT, tol

from autograder.testing import Snapshots, expect, noncontiguous

WORKER_SCANNED = ("sdpa_masks",)  # its workers run only the files its rule scan reads (sandbox/codegate.py)
QK = ("query", "key")
FRESH = "control inputs"
WIDE = "float64, non-contiguous"  # a control input in float64 and a strided layout: the dtype is kept, nothing assumes contiguity
NEG_INF = float("-inf")
SDPA_TOL = tol("sdpa_masks.sdpa", torch.float32)  # float32 SDPA vs the reference in float64 (measured table)
MHA_TOL = tol("sdpa_masks.mha_self_attention", torch.float32)
SNAP = Snapshots(__file__)  # control inputs, the reference's outputs and the named mistakes' outputs on them


def test_blocked_to_sdpa_and_to_mha_attn_mask_flip_the_a4_masks(sub, rng, credit):
    T = 4
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # §A.4: True = 屏蔽 (masked_fill)
    allowed = torch.tensor(w7.STATED["mask_T4"])  # §A.4: True = 允许 (SDPA); M_T=4 of Week 7 §10
    for part in credit.parts(["blocked_to_sdpa", "to_mha_attn_mask", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["converters"]
                mask = c["mask"]
                md.mask_equal(
                    sub.sdpa_masks.blocked_to_sdpa(mask),
                    c["blocked_to_sdpa"],
                    what=f"blocked_to_sdpa(control mask {list(mask.shape)}) (Day 1 §A.3)",
                    mistakes={"sdpa_masks/polarity-inverted": mask},
                )
                md.mask_equal(
                    sub.sdpa_masks.to_mha_attn_mask(mask),
                    c["to_mha_attn_mask"],
                    what=f"to_mha_attn_mask(control mask {list(mask.shape)}) (Day 1 §A.3)",
                    mistakes={"sdpa_masks/mha-mask-not-inverted": mask},
                )
            elif part.label == "blocked_to_sdpa":
                md.mask_equal(
                    sub.sdpa_masks.blocked_to_sdpa(blocked),
                    allowed,
                    what="blocked_to_sdpa(triu(ones(4,4), diagonal=1)) = tril (Day 1 §A.4)",
                    mistakes={"sdpa_masks/polarity-inverted": blocked},
                    grid=QK,
                )
            else:
                md.mask_equal(
                    sub.sdpa_masks.to_mha_attn_mask(allowed),
                    blocked,
                    what="to_mha_attn_mask(tril): True = not allowed (Day 1 §A.3)",
                    mistakes={"sdpa_masks/mha-mask-not-inverted": allowed},
                    grid=QK,
                )


def test_to_additive_mask_is_zero_or_minus_inf(sub, rng, credit):
    allowed = torch.tensor(w7.STATED["mask_T4"])  # M_T=4 (Week 7 §10)
    for part in credit.parts(["default float32", "float64", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["additive"]
                mask, dtype = c["mask"], c["dtype"]
                expect.close(
                    sub.sdpa_masks.to_additive_mask(mask, dtype=dtype),
                    c["want"],
                    what=f"to_additive_mask(control mask {list(mask.shape)}, dtype={str(dtype)[6:]}): 0 = keep, −∞ = block",
                    tol=EXACT,
                    mistakes=c["mistakes"],
                    **sd.ADDITIVE_DTYPE,
                )
                continue
            dtype = torch.float32 if part.label == "default float32" else torch.float64
            want = SNAP["additive"]["tril4_float32" if dtype == torch.float32 else "tril4_float64"]
            got = (
                sub.sdpa_masks.to_additive_mask(allowed)
                if dtype == torch.float32
                else sub.sdpa_masks.to_additive_mask(allowed, dtype=torch.float64)
            )
            expect.close(
                got,
                want,
                what=(
                    f"to_additive_mask(tril(4){'' if dtype == torch.float32 else ', dtype=float64'}): 0 = keep, −∞ "
                    "= block (Day 1 §3.3, §A.3)"
                ),
                tol=EXACT,
                mistakes=SNAP["additive"]["tril4_float32_mistakes" if dtype == torch.float32 else "tril4_float64_mistakes"],
                **sd.ADDITIVE_DTYPE,
                grid=QK,
            )


def test_hf_to_sdpa_mask_left_padded_batch_masks_keys_only(sub, rng, credit):
    attention_mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])  # HF: 1 = real, 0 = pad
    for part in credit.parts(["causal=True", "causal=False", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["hf"]
                fresh, causal = c["attention_mask"], c["causal"]
                md.mask_equal(
                    sub.sdpa_masks.hf_to_sdpa_mask(fresh, causal=causal),
                    c["want"],
                    what=(
                        f"hf_to_sdpa_mask(control attention_mask {fresh.tolist()}, causal={causal}): real keys only "
                        "(Day 1 §3.2, §A.3)"
                    ),
                    mistakes=c["mistakes"],
                )
                continue
            causal = part.label == "causal=True"
            want = SNAP["hf"]["lesson_causal" if causal else "lesson_not_causal"]
            md.mask_equal(
                sub.sdpa_masks.hf_to_sdpa_mask(attention_mask, causal=causal),
                want,
                what=(
                    f"hf_to_sdpa_mask([[0,0,1,1,1],[1,1,1,1,1]], causal={causal}) → [B,1,S,S], pad keys blocked "
                    "(Day 1 §3.2, §A.3)"
                ),
                mistakes=SNAP["hf"]["lesson_causal_mistakes" if causal else "lesson_not_causal_mistakes"],
                grid=QK,
            )


def test_kv_cache_mask_is_bottom_right_aligned(sub, rng, credit):
    for part in credit.parts(["L=1, S=5", "L=3, S=5", "L=S=4", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["kv_cache"]  # L = 1 is all True, L = S plain tril: neither alone shows the alignment
                L, S = c["L"], c["S"]
                md.mask_equal(
                    sub.sdpa_masks.kv_cache_mask(L, S),
                    c["want"],
                    what=f"kv_cache_mask({L}, {S}) on control sizes: query i reads keys j <= S−L+i (Day 1 §A.1)",
                    mistakes=c["mistakes"],
                )
                continue
            L, S = {"L=1, S=5": (1, 5), "L=3, S=5": (3, 5), "L=S=4": (4, 4)}[part.label]
            want = SNAP["kv_cache"][f"{L},{S}"]
            md.mask_equal(
                sub.sdpa_masks.kv_cache_mask(L, S),
                want,
                what=f"kv_cache_mask({L}, {S}): query i is position S−L+i (Day 1 §A.1: a new token reads every cached key)",
                mistakes=SNAP["kv_cache"][f"{L},{S} mistakes"],
                grid=QK,
            )


def test_sdpa_matches_manual_attention_with_kv_cache_causal(sub, rng, credit):
    for part in credit.parts(
        ["L=1 decoding step", "L=3, S=5 causal + padding", "dropout_p=0.5 in eval", "dropout_p=0.5 while training", WIDE, FRESH],
        required=[FRESH],
    ):
        with part, sd.mask_and_is_causal_named():
            if part.label == "dropout_p=0.5 while training":
                c = SNAP["sdpa"]
                q, k, v, allowed = c["q"], c["k"], c["v"], c["allowed"]
                what = (
                    f"sdpa(control q {list(q.shape)}, k {list(k.shape)}, key padding, causal=True, dropout_p=0.5, training=True)"
                )
                r = sub.sdpa_masks.run(
                    sd.sdpa_recorded, [q, k, v], {"allowed": allowed, "causal": True, "dropout_p": 0.5, "training": True}
                )
                out = expect.tensor(r["value"], what=what)
                used = sorted({x["dropout_p"] for x in sd.recorded_calls(sub, r, q, k)})
                # SDPA's own dropout at the p given, as the calls recorded show: an output merely
                # unlike the deterministic one (its values shifted by 0.01 while training) passed
                # before (blind red-team tester R-AK)
                differs = (
                    0.5 in used
                    and out.shape == c["want"].shape
                    and bool(torch.isfinite(out).all())
                    and float((out - c["want"]).abs().max()) > 1e-3
                )
                expect.true(
                    differs,
                    what=f"{what} applies dropout: the output differs from the deterministic one (Day 1 §A.1)",
                    detail=f"dropout_p passed to SDPA: {used}",
                    hints=expect.observed("sdpa_masks/dropout-never-applied") if used and all(p == 0.0 for p in used) else [],
                )
                continue
            if part.label == WIDE:
                c = SNAP["sdpa"]
                q, k, v = (noncontiguous(c[n].double()) for n in ("q", "k", "v"))
                allowed = c["allowed"]
                got = sub.sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=True)
                expect.close(
                    got,
                    c["want64"],
                    what=(
                        f"sdpa(control q {list(q.shape)}, k {list(k.shape)} in float64, non-contiguous, key "
                        "padding, causal=True): float64 out"
                    ),
                    tol=tol("sdpa_masks.sdpa", torch.float64),
                    mistakes=lambda: sd.blame_kv_cache(sub, c["mistakes64"], c["top_left"]),
                )
                continue
            if part.label == FRESH:
                c = SNAP["sdpa"]  # key padding (every query keeps a key), L < S
                q, k, v, allowed = c["q"], c["k"], c["v"], c["allowed"]
                got = sub.sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=True)
                expect.close(
                    got,
                    c["want"],
                    what=(
                        f"sdpa(control q {list(q.shape)}, k {list(k.shape)}, key padding, causal=True): "
                        "bottom-right causal AND padding (Day 1 §A.1)"
                    ),
                    tol=SDPA_TOL,
                    mistakes=lambda: sd.blame_kv_cache(sub, c["mistakes"], c["top_left"]),
                )
                continue
            c = SNAP["sdpa_examples"][part.label]
            q, k, v, allowed = c["q"], c["k"], c["v"], c["allowed"]
            if part.label == "L=3, S=5 causal + padding":
                got = sub.sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=True)
                what = (
                    "sdpa(q [1,2,3,4], k [1,2,5,4], allowed=key 3 padded, causal=True): bottom-right causal AND "
                    "padding (Day 1 §A.1)"
                )
            elif part.label == "L=1 decoding step":
                got = sub.sdpa_masks.sdpa(q, k, v, causal=True)
                what = "sdpa(q [1,2,1,4], k [1,2,5,4], causal=True): the new token reads all 5 keys (Day 1 §A.1, not only key 0)"
            else:
                got = sub.sdpa_masks.sdpa(q, k, v, dropout_p=0.5, training=False)
                what = "sdpa(..., dropout_p=0.5, training=False) is deterministic: no dropout in eval (Day 1 §A.1)"
            hints = []
            if "dropout" in part.label and not torch.equal(
                expect.tensor(got, what="sdpa result"), sub.sdpa_masks.sdpa(q, k, v, dropout_p=0.5, training=False)
            ):
                hints = expect.observed("sdpa_masks/dropout-in-eval")  # two eval calls, two answers: dropout ran
            expect.close(
                got,
                c["want"],
                what=what,
                tol=SDPA_TOL,
                mistakes=lambda: sd.blame_kv_cache(sub, c["mistakes"], c["top_left"]),
                hints=hints,
            )


def test_mha_self_attention_runs_a_batch_first_false_module(sub, rng, credit):
    c = SNAP["mha"]  # nn.MultiheadAttention(8, 2), batch_first=False (its default layout), x [B,T,C] = [3,4,8]
    config, state, x, allowed, key_allowed = c["config"], c["state"], c["x"], c["allowed"], c["key_allowed"]
    for part in credit.parts(["no masks", "causal + key padding", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                fresh_config, fresh_state, fresh_x = c["fresh_config"], c["fresh_state"], c["fresh_x"]
                fresh_masks = (c["fresh_allowed"], c["fresh_key_allowed"])
                B, T, C = fresh_x.shape
                r = sd.run_mha(sub, fresh_config, fresh_state, fresh_x, *fresh_masks, want=c["fresh_want"])
                expect.close(
                    r["value"],
                    c["fresh_want"],
                    what=(
                        f"mha_self_attention(nn.MultiheadAttention({C}, {fresh_config['num_heads']}, "
                        f"batch_first={fresh_config['batch_first']}), control x [{B},{T},{C}], causal, key padding) "
                        "(Day 1 §A.2)"
                    ),
                    tol=MHA_TOL,
                    mistakes=c["fresh_mistakes"],
                )
                continue
            masks = (None, None) if part.label == "no masks" else (allowed, key_allowed)
            want = c["want_no_masks" if masks[0] is None else "want_masks"]
            r = sd.run_mha(sub, config, state, x, *masks, want=want)
            expect.close(
                r["value"],
                want,
                what=(
                    "mha_self_attention(nn.MultiheadAttention(8, 2, batch_first=False), x "
                    f"[3,4,8]{'' if masks[0] is None else ', causal, key padding'}) (Day 1 §A.2)"
                ),
                tol=MHA_TOL,
                mistakes=c["mistakes_no_masks" if masks[0] is None else "mistakes_masks"],
            )


def test_sdpa_masks_functions_keep_dtype_and_leave_control_inputs_unchanged(sub, rng, credit):
    # a property test (grading.toml `properties`): the result's dtype is the one asked for (masks bool;
    # to_additive_mask's `dtype`; sdpa the dtype of q, float32 and float64: no up- or downcast) and no input
    # tensor is modified in place, whatever the values (those are the value tests' business); one part per
    # function and dtype, so a mistake costs only its own function's share. sdpa gets a mask without
    # causal=True: what it does with both is another test's business
    mask, hf, c = SNAP["converters"]["mask"], SNAP["hf"]["attention_mask"], SNAP["sdpa"]
    calls = {
        "blocked_to_sdpa": (("blocked_to_sdpa", (mask,), {}), torch.bool),
        "to_additive_mask float32": (("to_additive_mask", (mask,), {}), torch.float32),
        "to_additive_mask float64": (("to_additive_mask", (mask,), {"dtype": torch.float64}), torch.float64),
        "to_mha_attn_mask": (("to_mha_attn_mask", (mask,), {}), torch.bool),
        "hf_to_sdpa_mask": (("hf_to_sdpa_mask", (hf,), {}), torch.bool),
        "sdpa float32": (("sdpa", (c["q"], c["k"], c["v"], c["allowed"]), {}), torch.float32),
        "sdpa float64": (("sdpa", (c["q"].double(), c["k"].double(), c["v"].double(), c["allowed"]), {}), torch.float64),
    }
    for part in credit.parts(list(calls)):
        with part:
            (name, args, kwargs), dtype = calls[part.label]
            r = sub.sdpa_masks.call(name, *args, return_args=True, **kwargs)
            expect.kept_inputs_and_dtype(
                name,
                args,
                r,
                dtype,
                case=part.label,
                dtype_case=part.label,
                in_place="masked_fill_, logical_not_, x[...] =",
                dtype_hints=sd.dtype_hints(name, dtype),
            )


def test_sdpa_and_mha_self_attention_make_the_documented_calls_on_control_inputs(sub, rng, credit):
    # a property test (grading.toml `properties`): it checks only the calls made — sdpa never passes an attn_mask
    # together with is_causal=True to F.scaled_dot_product_attention (Day 1 §A.1), mha_self_attention calls the
    # module with need_weights=False (Day 1 §A.2) — whatever the values (a wrong mask, e.g. is_causal=True when
    # L < S, is the value tests' business); one part per function and case
    c, m = SNAP["sdpa"], SNAP["mha"]
    q, k, v, allowed = c["q"], c["k"], c["v"], c["allowed"]  # key padding; L < S
    for part in credit.parts(
        ["sdpa: allowed + causal, L = S", "sdpa: allowed + causal, L < S", "mha_self_attention: need_weights=False"]
    ):
        with part:
            if part.label.startswith("mha"):
                x = m["fresh_x"]
                what = (
                    f"mha_self_attention(nn.MultiheadAttention(batch_first={m['fresh_config']['batch_first']}), "
                    f"control x {list(x.shape)}, causal, key padding)"
                )
                r = sd.run_mha(
                    sub,
                    m["fresh_config"],
                    m["fresh_state"],
                    x,
                    m["fresh_allowed"],
                    m["fresh_key_allowed"],
                    checking="need_weights=False",
                    want=m["fresh_want"],
                )
                calls = sd.recorded_calls(sub, r)
                weights = [x for x in calls if x["need_weights"]]
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
                continue
            query = k if part.label.endswith("L = S") else q
            what = f"sdpa(control q {list(query.shape)}, k {list(k.shape)}, key padding, causal=True)"
            r = sub.sdpa_masks.run(
                sd.sdpa_recorded, [query, k, v], {"allowed": allowed, "causal": True}, keep_calls_on_error=True
            )
            calls = sd.recorded_calls(sub, r, query, k)
            expect.true(
                len(calls) > 0,
                what=f"{what} calls F.scaled_dot_product_attention on q and k",
                problem="constraint",
                detail=f"no call to F.scaled_dot_product_attention with L = {query.shape[-2]} queries and "
                f"S = {k.shape[-2]} keys was seen",
                hints=["sdpa_masks/sdpa-not-called"],
            )
            both = [x for x in calls if x["mask"] and x["is_causal"]]
            expect.true(
                not both,
                what=f"{what} never passes attn_mask together with is_causal=True (Day 1 §A.1)",
                problem="constraint",
                detail=f"{len(both)} of {len(calls)} calls gave both attn_mask and is_causal=True",
                hints=["sdpa_masks/mask-and-is-causal"],
            )
            expect.true(r["raised"] is None, what=what, detail=f"sdpa raised {r['raised']}")
