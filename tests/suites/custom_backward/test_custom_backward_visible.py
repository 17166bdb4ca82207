"""Skill custom_backward, visible tests: the five-line backward of Day 1 §2.3 on the Week 7
example, the AttentionFunction of Day 1 §B (forward, gradcheck in float64) and the Week 7 §16
training step d(mean loss)/dW_Q[1,0] = −0.076159 taken through your `attention`.

Shipped to students. Expected values come from the lessons' printed numbers, from torch's
own softmax and autograd on the same inputs, or from the reference solution run at release
time (snapshots/custom_backward.json, which also holds the named mistakes' outputs); each
test also checks one control input. Your
AttentionFunction's forward and backward are called directly (not through autograd) and
every comparison — gradcheck's included — is made here, by the grader, from their outputs.
"""

from __future__ import annotations

import math

import pytest
import torch
from course import custom_backward_data as data
from course import week07 as w7
from course.tolerances import tol

from autograder.testing import Snapshots, dtype_name, expect

WORKER_SCANNED = ("custom_backward",)  # its workers run only the files its rule scan reads (sandbox/codegate.py)
QK = ("query", "key")
GRADS = ("dq", "dk", "dv")
SNAP = Snapshots(__file__)  # control inputs and the reference's outputs on them


def _causal(L: int, S: int | None = None) -> torch.Tensor:
    return torch.tril(torch.ones(L, L if S is None else S, dtype=torch.bool))


def _autograd_softmax_backward(d_weights: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """∂L/∂S for A = softmax(S) and upstream Ā, by torch's autograd (float64)."""
    s = scores.double().detach().requires_grad_(True)
    a = torch.softmax(s, dim=-1)
    (g,) = torch.autograd.grad((a * d_weights.double()).sum(), [s])
    return g


@pytest.fixture(autouse=True)
def _rule_on_every_call(sub):
    """Every call into custom_backward.py is judged by the exercise's rule (data.watch_rule)."""
    data.watch_rule(sub)


def test_softmax_backward_matches_autograd_on_week7_weights(sub, rng):
    c = SNAP["softmax_backward"]
    scores, weights, d_weights = c["scores"], c["weights"], c["d_weights"]  # Ŝ_A, Ŝ_B (Week 7 §11), P_A, P_B, Ā
    rand_scores, rand_a, rand_da = c["rand_scores"], c["rand_a"], c["rand_da"]
    got = expect.close(
        data.softmax_backward(sub, d_weights, weights),
        _autograd_softmax_backward(d_weights, scores),
        what="softmax_backward(Ā, P) for Week 7's P_A, P_B (Day 1 §2.3 第二步)",
        tol=tol("custom_backward.softmax_backward", torch.float64),
        mistakes=c["mistakes"],
        grid=QK,
    )
    expect.true(
        bool((got[:, 0, 1] == 0).all()),
        what="S̄ is exactly 0 at the masked (future) key (Day 1 §2.3: 掩码怎么处理)",
        detail=f"S̄ at the masked entries: {got[:, 0, 1].tolist()}",
        hints=["custom_backward/backward-ignores-mask"],
    )
    sums = got.sum(-1)
    t64 = tol("custom_backward.softmax_backward", torch.float64)
    expect.true(
        bool(sums.abs().max() <= t64.atol + t64.rtol),
        what=f"every row of S̄ sums to 0 within {t64.atol + t64.rtol:g} (softmax shift invariance, Day 1 §2.3)",
        detail=f"largest |row sum| {sums.abs().max().item():.3g}",
        hints=["custom_backward/missing-d-term", "custom_backward/d-wrong-axis"],
    )
    expect.close(
        data.softmax_backward(sub, rand_da, rand_a),
        _autograd_softmax_backward(rand_da, rand_scores).float(),
        what=f"softmax_backward on random weights {list(rand_a.shape)} (float32)",
        tol=tol("custom_backward.softmax_backward", torch.float32),
        mistakes=c["rand_mistakes"],
        grid=QK,
    )


def test_attention_backward_matches_autograd_on_week7_example(sub, rng, credit):
    c, r = SNAP["week7_attention_backward"], SNAP["attention_backward"]
    q, k, v, d_out, weights, want = c["q"], c["k"], c["v"], c["d_out"], c["weights"], c["want"]
    rq, rk, rv, rd, r_weights, r_want = r["q"], r["k"], r["v"], r["d_out"], r["weights"], r["want"]
    with data.explained(sub):
        got = expect.sequence(
            sub.custom_backward.attention_backward(d_out, q, k, v, weights, 1 / math.sqrt(2)),
            3,
            what="attention_backward(Ȳ, Q, K, V, P, 1/√2) → (dq, dk, dv)",
        )
        r_got = expect.sequence(
            sub.custom_backward.attention_backward(rd, rq, rk, rv, r_weights, r["scale"]),
            3,
            what="attention_backward on control inputs",
        )
    for part in credit.parts(list(GRADS)):
        with part:
            i = GRADS.index(part.label)
            expect.close(
                got[i],
                want[i],
                what=f"attention_backward: {part.label} for Week 7's prompts (Day 1 §2.3)",
                tol=tol("custom_backward.attention_backward", torch.float32),
                mistakes=c["mistakes"][i],
                grid=("token", "feature"),
            )
            expect.close(
                r_got[i],
                r_want[i],
                what=f"attention_backward: {part.label} for q {list(rq.shape)}, k {list(rk.shape)}, v {list(rv.shape)}",
                tol=tol("custom_backward.attention_backward", torch.float32),
                mistakes=r["mistakes"][i],
            )


def test_attention_forward_reproduces_week7_outputs(sub, rng):
    q, k, v = (
        SNAP["week7_attention_backward"]["q"],
        SNAP["week7_attention_backward"]["k"],
        SNAP["week7_attention_backward"]["v"],
    )  # x W_Q, x W_K, x W_V
    c = SNAP["attention_forward"]
    rq, rk, rv = c["q"], c["k"], c["v"]
    direct, _ = data.forward_backward(sub, q, k, v, _causal(2), what="Week 7's prompts")
    out = expect.close(
        direct,
        c["week7"],
        what="AttentionFunction.forward(ctx, Q, K, V, causal) for Week 7's prompts",
        tol=tol("custom_backward.attention", torch.float32),
        mistakes=c["week7_mistakes"],
        grid=("token", "feature"),
    )
    expect.close(
        out[:, 1],
        w7.t(w7.STATED["final_outputs_4dp"]),
        what="final head outputs o_A, o_B (Week 7 §12: [0.5987, 0.4013] | [−0.4256, 0.5744])",
        tol=w7.PRINTED_4DP_F32,
    )
    expect.close(
        sub.custom_backward.attention(rq, rk, rv),
        c["want"],
        what=f"attention(q {list(rq.shape)}, k {list(rk.shape)}, v {list(rv.shape)}) without a mask",
        tol=tol("custom_backward.attention", torch.float32),
        mistakes=c["mistakes"],
    )
    allowed = c["allowed"]
    expect.close(
        sub.custom_backward.attention(rq, rk, rv, allowed),
        c["want_masked"],
        what=f"attention(q, k, v, allowed {list(allowed.shape)}): every query keeps key 0, none the last",
        tol=tol("custom_backward.attention", torch.float32),
        mistakes=_attention_masked_mistakes(c),
    )


def _attention_masked_mistakes(c: dict) -> dict:
    """The named mistakes of attention(q, k, v, allowed), once AttentionFunction.forward applied
    Week 7's causal mask right (the checks before): the unmasked answer there is attention()
    not handing `allowed` on to AttentionFunction.apply, not a forward that ignores masks
    (blind tester R-BL was sent to forward, which was right)."""
    own = {h: v for h, v in c["mistakes_masked"].items() if expect.hint_of(h) != "custom_backward/forward-mask"}
    return {**own, "custom_backward/attention-drops-mask": c["want"]}


def test_week7_loss_gradient_reaches_wq_through_your_attention(sub, credit):
    data.check_backward_source(sub)
    got = data.week7_chain(sub, torch.float32)  # your forward and backward, called directly; the rest of the chain runs here
    want = SNAP["week7_chain"]
    for part in credit.parts(["mean loss (W7-43)", "dL/dW_Q[1,0] (W7-45)", "q_new (W7-46)", "all of dL/dW_Q"]):
        with part:
            grad = got["grad"]
            if part.label.startswith("mean loss"):
                forward = SNAP["attention_forward"]  # Week 7's q, k, v: the chain's own
                data.week7_forward_evidence(got, forward["week7_mistakes"], forward["week7"])
                expect.close(
                    got["loss"],
                    torch.tensor(w7.STATED["loss_mean"]),
                    what="mean CE over the two prompts through your forward (Week 7 §16: 1.316836)",
                    tol=w7.PRINTED_6DP,
                    mistakes=want["loss_mistakes"],
                    hints=["custom_backward/forward-mask"],
                )
            elif part.label.startswith("dL/dW_Q[1,0]"):
                expect.scalar(
                    grad[1, 0],
                    w7.STATED["grad_wq_10"],
                    what="d(mean loss)/dW_Q[1,0] through your backward (Week 7 §16: −0.076159)",
                    tol=w7.PRINTED_6DP,
                    mistakes={h: float(g[1, 0]) for h, g in want["grad_mistakes"].items()},
                )
            elif part.label.startswith("q_new"):
                expect.scalar(
                    1.0 - 0.01 * float(grad[1, 0]),
                    w7.STATED["q_new"],
                    what="q_new = 1 − 0.01 · grad (Week 7 §16: 1.000762)",
                    tol=w7.PRINTED_6DP,
                    mistakes={h: 1.0 - 0.01 * float(g[1, 0]) for h, g in want["grad_mistakes"].items()},
                )
            else:
                expect.close(
                    grad,
                    want["grad"],
                    what="dL/dW_Q (only row 1 is non-zero: x_喜欢 selects it)",
                    tol=w7.PRINTED_6DP,
                    mistakes=want["grad_mistakes"] if data.forward_is_right(got) else None,
                    grid=("C", "d_k"),
                )


def test_attention_function_passes_gradcheck_in_float64(sub, rng):
    data.check_backward_source(sub)
    problems = SNAP["gradcheck"]["problems"]  # control inputs, finite differences of the reference and the mistakes' Jacobians
    # gradcheck, decided here: your backward (one call per output entry) against finite differences, on every problem
    # first, so a mistake whose Jacobian is recognised on one problem is named also where another fails first (a NaN
    # Jacobian through the masked problem names nothing)
    checked = [data.gradcheck(sub, problem) for problem in problems]
    named = next((h for m, h in checked if m is not None and h), [])
    for problem, (message, hints) in zip(problems, checked):
        q, k, v, allowed = problem["q"], problem["k"], problem["v"], problem["allowed"]
        if message is not None:
            hints = hints or named
        else:  # torch's gradcheck runs backward through autograd: one gradient per forward input, None for the mask
            with data.explained(sub):
                r = sub.custom_backward.run(
                    data.function_forward_backward,
                    q,
                    k,
                    v,
                    allowed,
                    [problem["out"]],
                    watch=sub.records_dispatch(data.MODULE),
                    dispatch=sub.records_dispatch(data.MODULE),
                )
            got = (r.get("grads") or [None])[0] if isinstance(r, dict) else None
            n = len(got) if isinstance(got, (list, tuple)) else None
            message = (
                None  # a fourth value that is not None costs the helpers' test, where the contract names it
                if n == 4
                else (
                    f"AttentionFunction.backward returned {n if n is not None else expect.describe(got)} value(s); "
                    "forward takes 4 inputs (q, k, v, allowed), so backward returns 4: (dq, dk, dv, None)"
                )
            )
            hints = [] if message is None else expect.observed("custom_backward/backward-three-values") if n == 3 else []
        expect.true(
            message is None,
            what=f"gradcheck of AttentionFunction (q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}, "
            f"{'causal mask' if allowed is not None else 'no mask'}) in float64 (Day 1 §B)",
            detail=str(message),
            hints=hints or ["custom_backward/gradcheck-failed"],
        )


def test_custom_backward_keeps_dtype_and_leaves_control_inputs_unchanged(sub, rng, credit):
    """A property test (grading.toml ``properties``): each part checks only that the results have
    the inputs' dtype (float32 and float64: no up- or downcast) and that no input tensor is modified
    in place — not their values, which are the value tests' business. The inputs are Week 7's
    square causal problem ([2,2,2], d_k = d_v), on which a misplaced transpose or a missing
    keepdim still runs: only a dtype or in-place mistake fails here."""
    c, sb = SNAP["week7_attention_backward"], SNAP["softmax_backward"]
    allowed = _causal(2)
    calls = {}
    for dtype in (torch.float32, torch.float64):
        q, k, v, d_out, a = (c[n].to(dtype) for n in ("q", "k", "v", "d_out", "weights"))
        name = dtype_name(dtype)
        calls[f"softmax_backward {name}"] = ((sb["d_weights"].to(dtype), sb["weights"].to(dtype)), 1, d_out)
        calls[f"attention_backward {name}"] = ((d_out, q, k, v, a, 1 / math.sqrt(2)), 3, d_out)
        calls[f"AttentionFunction {name}"] = ((q, k, v, allowed), 4, d_out)
    for part in credit.parts(list(calls)):
        with part:
            args, count, d_out = calls[part.label]
            fn, dtype = part.label.split()[0], args[0].dtype
            if fn == "AttentionFunction":
                # forward and backward called directly: out, dq, dk, dv in the inputs' dtype
                out, (grads,) = data.forward_backward(sub, *args, [d_out], what=part.label)
                outs = (out, *grads)
                fn = "attention"
            with data.explained(sub):
                r = sub.custom_backward.call(fn, *args, return_args=True)
            if fn != "attention":
                outs = r.value if isinstance(r.value, (tuple, list)) else (r.value,)
            for i, (before, after) in enumerate(zip(args, r.args or [])):
                if isinstance(before, torch.Tensor):
                    expect.unchanged(
                        before,
                        after,
                        what=f"{fn}: argument {i + 1} ({dtype_name(before.dtype)} {list(before.shape)}) is unchanged "
                        "after the call (no -=, mul_, x[...] = on an input)",
                    )
            expect.true(
                len(outs) == count, what=f"{part.label} result", detail=f"expected {count} tensor(s), got {expect.describe(outs)}"
            )
            for out in outs:
                out = expect.tensor(out, what=f"{part.label} result")
                expect.true(
                    out.dtype == dtype,
                    what=f"{part.label} inputs: result dtype {dtype_name(dtype)}",
                    detail=f"got {dtype_name(out.dtype)}",
                    hints=["general/dtype-changed"],
                )
