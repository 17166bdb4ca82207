"""Skill qkv, visible tests: the Week 7 worked example (prompts [我,喜欢] and [猫,喜欢]).

Shipped to students. Every expected number of the worked example is printed in
week07-attention.txt. Each test also checks *control inputs* whose expected values were
computed by the reference solution at release time (snapshots/qkv.json; a required part:
failing it scores the test 0), so recognising the example and printing its numbers earns
nothing. The outputs of the named mistakes (for the hints) come from the same file. The hidden suite checks the same functions much more widely, on fresh inputs.
"""

from __future__ import annotations


import torch

from autograder.testing import Snapshots, SubmissionRaised, expect
from course import week07 as w7
from course.tolerances import tol

QK = ("query", "key")
FRESH = "control inputs"
F32 = torch.float32
SNAP = Snapshots(__file__)  # control inputs and the reference's outputs on them


def _week7_state(ex) -> dict:
    """W_Q, W_K, W_V in nn.Linear's layout ([d_head, C]: the transpose, Week 7 §12)."""
    return {"query.weight": ex.w_q.T.contiguous(), "key.weight": ex.w_k.T.contiguous(), "value.weight": ex.w_v.T.contiguous()}


def test_project_qkv_reproduces_week7_q_k_v(sub, rng, credit):
    ex = w7.example()
    mistakes = SNAP["week7"]["project_qkv"]
    got = None
    for part in credit.parts(["Q", "K", "V", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["project_qkv"]
                fresh = expect.sequence(sub.qkv.project_qkv(c["x"], c["w_q"], c["w_k"], c["w_v"]), 3, what="project_qkv on control inputs")
                for name, g, want in zip("QKV", fresh, c["want"]):
                    expect.close(g, want, what=f"project_qkv: {name} = X @ W_{name} on control inputs", tol=tol("qkv.project_qkv", F32))
                continue
            if got is None:
                got = dict(zip("QKV", expect.sequence(sub.qkv.project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v), 3, what="project_qkv(x, w_q, w_k, w_v)")))
            name = part.label
            expect.close(
                got[name], w7.t(w7.STATED[name]), what=f"project_qkv: {name} = X @ W_{name} (Week 7 §4)", tol=w7.PRINTED_3DP,
                mistakes=mistakes[name], grid=("token", "feature"),
            )


def test_attention_scores_reproduce_week7_raw_scores(sub, rng, credit):
    c7 = SNAP["week7"]
    for part in credit.parts(["S_A, S_B", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["attention_scores"]
                q, k = c["q"], c["k"]
                expect.close(sub.qkv.attention_scores(q, k), c["want"], what=f"attention_scores on control q {list(q.shape)}, k {list(k.shape)}", tol=tol("qkv.attention_scores", F32),
                             mistakes=c["mistakes"])
            else:
                expect.close(
                    sub.qkv.attention_scores(c7["q"], c7["k"]), w7.t(w7.STATED["raw_scores"]), what="attention_scores(Q, K) = Q·Kᵀ (Week 7 §4: S_A, S_B)", tol=w7.PRINTED_3DP,
                    mistakes=c7["scores_mistakes"], grid=QK,
                )


def test_scale_scores_divides_by_sqrt_dk(sub, rng, credit):
    c7 = SNAP["week7"]
    raw = c7["raw"]
    for part in credit.parts(["d_k = 2", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["scale_scores"]
                s, d_k = c["scores"], c["d_k"]
                expect.close(sub.qkv.scale_scores(s, d_k), c["want"], what=f"scale_scores on control scores, d_k={d_k}", tol=tol("qkv.scale_scores", F32),
                             mistakes=c["mistakes"])
            else:
                got = expect.close(
                    sub.qkv.scale_scores(raw, 2), c7["scaled"], what="scale_scores(S, d_k=2) (Week 7 §8)", tol=w7.NEAR_EXACT,
                    mistakes=c7["scale_mistakes"], grid=QK,
                )
                expect.close(got[:, -1, :], w7.t(w7.STATED["scaled_final_rows"]), what="scaled final rows A | B = [0.8, 0.4] | [0.1, 0.4]", tol=w7.NEAR_EXACT)


def test_weighted_values_gives_week7_head_outputs(sub, rng, credit):
    c7 = SNAP["week7"]
    weights, v = c7["weights"], c7["v"]
    for part in credit.parts(["o_A, o_B", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["weighted_values"]
                expect.close(sub.qkv.weighted_values(c["weights"], c["v"]), c["want"], what="weighted_values on control weights [..., L, S] and values [..., S, d_v]", tol=tol("qkv.weighted_values", F32))
            else:
                expect.close(
                    sub.qkv.weighted_values(weights, v), c7["mixed"], what="weighted_values(P, V) = P @ V (Week 7 §6)", tol=w7.NEAR_EXACT,
                    mistakes=c7["mixed_mistakes"], grid=("token", "feature"),
                )


def test_causal_uniform_mean_is_the_week7_baseline(sub, rng, credit):
    ex, c7 = w7.example(), SNAP["week7"]
    for part in credit.parts(["x̄_A,1 and x̄_B,1", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["causal_uniform_mean"]
                expect.close(sub.qkv.causal_uniform_mean(c["x"]), c["want"], what="causal_uniform_mean on control x", tol=tol("qkv.causal_uniform_mean", F32), mistakes=c["mistakes"])
            else:
                got = expect.close(
                    sub.qkv.causal_uniform_mean(ex.x), c7["uniform_mean"], what="causal_uniform_mean(X) (Week 7 §1)", tol=w7.NEAR_EXACT,
                    mistakes=c7["uniform_mean_mistakes"], grid=("token", "feature"),
                )
                expect.close(got[:, 1], w7.t(w7.STATED["uniform_mean_final"]), what="x̄_A,1 = [0.5, 0.5, 0, 0] and x̄_B,1 = [0, 0.5, 0.5, 0]", tol=w7.NEAR_EXACT)


def test_single_head_attention_reproduces_week7_weights_and_outputs(sub, rng, credit):
    ex, c7 = w7.example(), SNAP["week7"]
    got = None
    for part in credit.parts(["weights P_A, P_B", "outputs o_A, o_B", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["single_head_attention"]
                x, w = c["x"], [c["w_q"], c["w_k"], c["w_v"]]
                out, weights = expect.sequence(sub.qkv.single_head_attention(x, *w), 2, what="single_head_attention on control inputs")
                t = tol("qkv.single_head_attention", F32)
                expect.close(weights, c["want_weights"], what="single_head_attention weights on control inputs", tol=t, mistakes=c["mistakes_weights"])
                expect.close(out, c["want_out"], what="single_head_attention output on control inputs", tol=t, mistakes=c["mistakes_out"])
                continue
            if got is None:
                got = expect.sequence(sub.qkv.single_head_attention(ex.x, ex.w_q, ex.w_k, ex.w_v), 2, what="single_head_attention(x, w_q, w_k, w_v)")
            out, weights = got
            if part.label.startswith("weights"):
                expect.close(weights, w7.t(w7.STATED["weights"]), what="attention weights P_A, P_B (Week 7 §11)", tol=w7.PRINTED_3DP, mistakes=c7["mistakes_weights"], grid=QK)
                expect.close(weights[:, 1], w7.t(w7.STATED["final_weights_4dp"]), what="final-row weights (Week 7 §12 expected output)", tol=w7.PRINTED_4DP_F32)
            else:
                expect.close(out[:, 1], w7.t(w7.STATED["final_outputs_4dp"]), what="final head outputs o_A, o_B (Week 7 §6, §12)", tol=w7.PRINTED_4DP_F32,
                             mistakes={h: o[:, 1] for h, o in c7["mistakes_out"].items()})


def _fresh_head(sub, rng) -> None:
    c = SNAP["attention_head"]
    r = sub.qkv.construct("AttentionHead", c["args"], state=c["state"], calls=[("forward", [c["x"]], {})], describe=False)
    C, d, ctx = c["args"]
    expect.close(r["outputs"][0], c["want"], what=f"AttentionHead({C}, {d}, {ctx}) on control weights and x", tol=tol("qkv.AttentionHead", F32))


def test_attention_head_reproduces_week7_numbers(sub, rng, credit):
    ex = w7.example()
    result = None
    for part in credit.parts(["projections", "causal_mask buffer", "forward", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                _fresh_head(sub, rng)
                continue
            if result is None:
                result = sub.qkv.construct("AttentionHead", [4, 2, 8], state=_week7_state(ex), calls=[("forward", [ex.x], {})])
            info = result["describe"]
            if part.label == "projections":
                linears = {m["name"]: m for m in info["modules"] if m["type"] == "torch.nn.modules.linear.Linear"}
                for name in ("query", "key", "value"):
                    m = linears.get(name)
                    expect.true(m is not None, what=f"AttentionHead.{name}", detail=f"expected a submodule {name} = nn.Linear(4, 2, bias=False); found {sorted(linears) or 'no nn.Linear'}")
                    expect.true((m["in_features"], m["out_features"], m["bias"]) == (4, 2, False), what=f"AttentionHead.{name}", detail=f"expected nn.Linear(4, 2, bias=False), got in={m['in_features']} out={m['out_features']} bias={m['bias']}", hints=["qkv/linear-bias"] if m["bias"] else [])
            elif part.label == "causal_mask buffer":
                buffers = {b["name"]: b for b in info["buffers"]}
                mask = buffers.get("causal_mask")
                expect.true(mask is not None, what="AttentionHead.causal_mask", detail=f"no buffer named causal_mask (buffers: {sorted(buffers) or 'none'})", hints=["qkv/mask-buffer"])
                # persistent or not: Week 7 §13 registers it persistent, Day 1 §A.4 recommends persistent=False — both are right
                expect.equal(mask["value"], SNAP["week7"]["causal_mask_8"], what="causal_mask for context_length=8 (True = may attend)", grid=QK, hints=["qkv/mask-buffer"])
            else:
                expect.close(result["outputs"][0][:, 1], w7.t(w7.STATED["final_outputs_4dp"]), what="AttentionHead(4, 2, 8) with W_Q, W_K, W_V loaded: final outputs (Week 7 §12–§13)", tol=w7.PRINTED_4DP_F32)


def test_attention_head_rejects_sequences_longer_than_its_context(sub, rng, credit):
    """Only the context check: T = context_length runs and T = context_length + 1 raises
    ValueError. What the head computes is checked by the tests above, so a slip in the scores
    does not cost here (snapshots/qkv.json "context_check": inputs only, square projections)."""
    c = SNAP["context_check"]
    C, d, ctx = c["args"]
    fits, longer = f"T = context_length = {ctx} runs", f"T = {ctx + 1} > context_length raises ValueError"
    for part in credit.parts([fits, longer], required={fits: "a head that raises on an input that fits has no context check to credit"}):
        with part:
            if part.label == fits:
                try:
                    sub.qkv.construct("AttentionHead", c["args"], state=c["state"], calls=[("forward", [c["fits"]], {})], describe=False)
                except SubmissionRaised as exc:
                    if (exc.error or {}).get("type") != "ValueError":
                        raise
                    try:  # only `T >= context_length` rejects T = context_length but not T − 1
                        sub.qkv.construct("AttentionHead", c["args"], state=c["state"], calls=[("forward", [c["fits"][:, :-1]], {})], describe=False)
                    except SubmissionRaised:
                        raise exc from None
                    expect.true(False, what=f"AttentionHead({C}, {d}, context_length={ctx}) on T={ctx}",
                                detail=f"forward raised ValueError for T = context_length = {ctx}, which fits, but works for T={ctx - 1}: {exc.message}",
                                hints=expect.observed("qkv/context-check-off-by-one"))
            else:
                expect.raises("ValueError", sub.qkv.construct, "AttentionHead", c["args"], state=c["state"], calls=[("forward", [c["longer"]], {})],
                              what=f"AttentionHead({C}, {d}, context_length={ctx}) on T={ctx + 1}", hints=["qkv/context-check"])
