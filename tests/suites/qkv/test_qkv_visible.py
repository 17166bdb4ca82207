"""Skill qkv, visible tests: the Week 7 worked example (prompts [我,喜欢] and [猫,喜欢]).

Shipped to students. Every expected number here is printed in week07-attention.txt; the
hidden suite checks the same functions on fresh random inputs and for properties.
"""

from __future__ import annotations

import math

import torch

from autograder.testing import expect
from course import mistakes_qkv as signatures
from course import week07 as w7

QK = ("query", "key")


def test_project_qkv_reproduces_week7_q_k_v(sub, credit):
    ex = w7.example()
    q, k, v = expect.sequence(sub.qkv.project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v), 3, what="project_qkv(x, w_q, w_k, w_v)")
    got = {"Q": q, "K": k, "V": v}
    products = {"Q": ex.x @ ex.w_q, "K": ex.x @ ex.w_k, "V": ex.x @ ex.w_v}
    for part in credit.parts(["Q", "K", "V"]):
        with part:
            name = part.label
            wrong = {f"qkv/swapped-projections": products[o] for o in products if o != name}
            expect.close(
                got[name], w7.t(w7.STATED[name]), what=f"project_qkv: {name} = X @ W_{name} (Week 7 §4)",
                tol=w7.PRINTED_3DP, mistakes=wrong, grid=("token", "feature"),
            )


def test_attention_scores_reproduce_week7_raw_scores(sub):
    ex = w7.example()
    q, k = ex.x @ ex.w_q, ex.x @ ex.w_k
    expect.close(
        sub.qkv.attention_scores(q, k), w7.t(w7.STATED["raw_scores"]),
        what="attention_scores(Q, K) = Q·Kᵀ (Week 7 §4: S_A, S_B)", tol=w7.PRINTED_3DP,
        mistakes={"qkv/missing-transpose": q @ k, "qkv/keys-times-queries": k @ q.transpose(-2, -1)}, grid=QK,
    )


def test_scale_scores_divides_by_sqrt_dk(sub):
    ex = w7.example()
    raw = (ex.x @ ex.w_q) @ (ex.x @ ex.w_k).transpose(-2, -1)
    got = expect.close(
        sub.qkv.scale_scores(raw, 2), raw / math.sqrt(2), what="scale_scores(S, d_k=2) (Week 7 §8)", tol=w7.NEAR_EXACT,
        mistakes={"qkv/divide-by-dk": raw / 2, "qkv/no-scaling": raw}, grid=QK,
    )
    expect.close(got[:, -1, :], w7.t(w7.STATED["scaled_final_rows"]), what="scaled final rows A | B = [0.8, 0.4] | [0.1, 0.4]", tol=w7.NEAR_EXACT)


def test_weighted_values_gives_week7_head_outputs(sub):
    ex = w7.example()
    weights = w7.t(w7.STATED["weights"]).clone()
    weights[:, 1] = w7.t(w7.STATED["final_weights_4dp"])
    v = ex.x @ ex.w_v
    expect.close(
        sub.qkv.weighted_values(weights, v), weights @ v, what="weighted_values(P, V) = P @ V (Week 7 §6)", tol=w7.NEAR_EXACT,
        mistakes={"qkv/transposed-weights": weights.transpose(-2, -1) @ v}, grid=("token", "feature"),
    )


def test_causal_uniform_mean_is_the_week7_baseline(sub):
    ex = w7.example()
    got = expect.close(
        sub.qkv.causal_uniform_mean(ex.x), ex.x.cumsum(-2) / torch.tensor([[1.0], [2.0]]),
        what="causal_uniform_mean(X) (Week 7 §1)", tol=w7.NEAR_EXACT, mistakes=signatures.uniform_mean(ex.x), grid=("token", "feature"),
    )
    expect.close(got[:, 1], w7.t(w7.STATED["uniform_mean_final"]), what="x̄_A,1 = [0.5, 0.5, 0, 0] and x̄_B,1 = [0, 0.5, 0.5, 0]", tol=w7.NEAR_EXACT)


def test_single_head_attention_reproduces_week7_weights_and_outputs(sub, credit):
    ex = w7.example()
    out, weights = expect.sequence(sub.qkv.single_head_attention(ex.x, ex.w_q, ex.w_k, ex.w_v), 2, what="single_head_attention(x, w_q, w_k, w_v)")
    variants = signatures.attention_chain(ex.x, ex.w_q, ex.w_k, ex.w_v)
    for part in credit.parts(["weights", "outputs"]):
        with part:
            if part.label == "weights":
                expect.close(
                    weights, w7.t(w7.STATED["weights"]), what="attention weights P_A, P_B (Week 7 §11)", tol=w7.PRINTED_3DP,
                    mistakes=signatures.weights(variants), grid=QK,
                )
                expect.close(weights[:, 1], w7.t(w7.STATED["final_weights_4dp"]), what="final-row weights (Week 7 §12 expected output)", tol=w7.PRINTED_4DP_F32)
            else:
                expect.close(
                    out[:, 1], w7.t(w7.STATED["final_outputs_4dp"]), what="final head outputs o_A, o_B (Week 7 §6, §12)", tol=w7.PRINTED_4DP_F32,
                    mistakes={h: o[:, 1] for h, o in signatures.outputs(variants).items()},
                )


def test_attention_head_reproduces_week7_numbers(sub, credit):
    ex = w7.example()
    state = {"query.weight": ex.w_q.T.contiguous(), "key.weight": ex.w_k.T.contiguous(), "value.weight": ex.w_v.T.contiguous()}
    result = sub.qkv.construct("AttentionHead", [4, 2, 8], state=state, calls=[("forward", [ex.x], {})])
    info = result["describe"]
    for part in credit.parts(["projections", "causal_mask buffer", "forward"]):
        with part:
            if part.label == "projections":
                linears = {m["name"]: m for m in info["modules"] if m["type"] == "torch.nn.modules.linear.Linear"}
                for name in ("query", "key", "value"):
                    m = linears.get(name)
                    expect.true(m is not None, what=f"AttentionHead.{name}", detail=f"expected a submodule {name} = nn.Linear(4, 2, bias=False); found {sorted(linears) or 'no nn.Linear'}", hints=["qkv/linear-bias"])
                    expect.true((m["in_features"], m["out_features"], m["bias"]) == (4, 2, False), what=f"AttentionHead.{name}", detail=f"expected nn.Linear(4, 2, bias=False), got in={m['in_features']} out={m['out_features']} bias={m['bias']}", hints=["qkv/linear-bias"])
            elif part.label == "causal_mask buffer":
                buffers = {b["name"]: b for b in info["buffers"]}
                mask = buffers.get("causal_mask")
                expect.true(mask is not None, what="AttentionHead.causal_mask", detail=f"no buffer named causal_mask (buffers: {sorted(buffers) or 'none'})", hints=["qkv/mask-buffer"])
                expect.true(not mask["persistent"] and "causal_mask" not in info["state_dict"], what="AttentionHead.causal_mask", detail="the buffer is persistent: state_dict() must hold only the three projection weights", hints=["qkv/mask-buffer"])
                expect.equal(mask["value"], torch.tril(torch.ones(8, 8, dtype=torch.bool)), what="causal_mask for context_length=8 (True = may attend)", grid=QK, hints=["qkv/mask-buffer"])
            else:
                out = result["outputs"][0]
                expect.close(out[:, 1], w7.t(w7.STATED["final_outputs_4dp"]), what="AttentionHead(4, 2, 8) with W_Q, W_K, W_V loaded: final outputs (Week 7 §12–§13)", tol=w7.PRINTED_4DP_F32)


def test_attention_head_rejects_sequences_longer_than_its_context(sub):
    ex = w7.example()
    state = {"query.weight": ex.w_q.T.contiguous(), "key.weight": ex.w_k.T.contiguous(), "value.weight": ex.w_v.T.contiguous()}
    fits = sub.qkv.construct("AttentionHead", [4, 2, 2], state=state, calls=[("forward", [ex.x], {})], describe=False)
    expect.close(fits["outputs"][0][:, 1], w7.t(w7.STATED["final_outputs_4dp"]), what="AttentionHead(4, 2, context_length=2) on T=2 (fits)", tol=w7.PRINTED_4DP_F32)
    longer = torch.cat([ex.x, ex.x[:, :1]], dim=1)
    expect.raises("ValueError", sub.qkv.construct, "AttentionHead", [4, 2, 2], state=state, calls=[("forward", [longer], {})], what="AttentionHead(4, 2, context_length=2) on T=3", hints=["qkv/context-check"])
