"""Skill qkv, visible tests: the Week 7 worked example (prompts [我,喜欢] and [猫,喜欢]).

Shipped to students. Every expected number of the worked example is printed in
week07-attention.txt. Each test also checks *control inputs* whose expected values were
computed by the reference solution at release time (snapshots/qkv.json; a required part:
failing it scores the test 0), so recognising the example and printing its numbers earns
nothing. The outputs of the named mistakes (for the hints) come from the same file; the
control inputs come first, so a failure's first line names the function, the input and what
differs. The last test draws its inputs from the seed: it checks no values, only that
float32 and float64 inputs keep their dtype, non-contiguous inputs give what their contiguous
copies give, and no input is modified. The hidden suite checks the same functions much more
widely, on fresh inputs.
"""

from __future__ import annotations

import torch
from course import qkv_data
from course import week07 as w7
from course.tolerances import tol

from autograder.testing import Snapshots, SubmissionRaised, expect, noncontiguous, probe, randn, weight

QK = ("query", "key")
FRESH = "control inputs"
F32, F64 = torch.float32, torch.float64
SNAP = Snapshots(__file__)  # control inputs and the reference's outputs on them


def _shape(t) -> str:
    return str(list(t.shape)).replace(" ", "")


def _week7_state(ex) -> dict:
    """W_Q, W_K, W_V in nn.Linear's layout ([d_head, C]: the transpose, Week 7 §12)."""
    return {"query.weight": ex.w_q.T.contiguous(), "key.weight": ex.w_k.T.contiguous(), "value.weight": ex.w_v.T.contiguous()}


def test_project_qkv_reproduces_week7_q_k_v(sub, rng, credit):
    ex = w7.example()
    mistakes = SNAP["week7"]["project_qkv"]
    got = None
    for part in credit.parts([FRESH, "Q", "K", "V"], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["project_qkv"]
                what = (
                    f"project_qkv(x {_shape(c['x'])}, w_q {_shape(c['w_q'])}, w_k "
                    f"{_shape(c['w_k'])}, w_v {_shape(c['w_v'])}) on control inputs"
                )
                fresh = expect.sequence(qkv_data.project(sub, c["x"], c["w_q"], c["w_k"], c["w_v"]), 3, what=what)
                for name, g, want in zip("QKV", fresh, c["want"]):
                    expect.close(
                        g,
                        want,
                        what=f"{what}: {name} = X @ W_{name}",
                        tol=tol("qkv.project_qkv", F32),
                        mistakes=c["mistakes"][name],
                    )
                continue
            if got is None:
                got = dict(
                    zip(
                        "QKV",
                        expect.sequence(
                            qkv_data.project(sub, ex.x, ex.w_q, ex.w_k, ex.w_v),
                            3,
                            what="project_qkv(Week 7 x [2,2,4], w_q, w_k, w_v [4,2])",
                        ),
                    )
                )
            name = part.label
            expect.close(
                got[name],
                w7.t(w7.STATED[name]),
                what=f"project_qkv(Week 7 x, w_q, w_k, w_v): {name} = X @ W_{name} (Week 7 §4)",
                tol=w7.PRINTED_3DP,
                mistakes=mistakes[name],
                grid=("token", "feature"),
            )


def test_attention_scores_reproduce_week7_raw_scores(sub, rng, credit):
    c7 = SNAP["week7"]
    t = tol("qkv.attention_scores", F32)
    for part in credit.parts([FRESH, "S_A, S_B"], required=[FRESH]):
        with part:
            if part.label == FRESH:
                for c in SNAP["attention_scores"]["inputs"]:  # batched L ≠ S, and two leading dims
                    q, k = c["q"], c["k"]
                    with expect.raise_named(c["mistakes_raised"]):
                        got = sub.qkv.attention_scores(q, k)
                    expect.close(
                        got,
                        c["want"],
                        what=f"attention_scores(q {_shape(q)}, k {_shape(k)}) on control inputs",
                        tol=t,
                        mistakes=c["mistakes"],
                        hints=expect.diagnose(got, c["mistakes_dot_t"], t, c["want"]),
                    )
            else:
                got = sub.qkv.attention_scores(c7["q"], c7["k"])
                want = w7.t(w7.STATED["raw_scores"])
                expect.close(
                    got,
                    want,
                    what="attention_scores(Week 7 Q, K [2,2,2]) = Q·Kᵀ (Week 7 §4: S_A, S_B)",
                    tol=w7.PRINTED_3DP,
                    mistakes=c7["scores_mistakes"],
                    hints=expect.diagnose(got, c7["scores_mistakes_dot_t"], w7.PRINTED_3DP, want),
                    grid=QK,
                )


def test_scale_scores_divides_by_sqrt_dk(sub, rng, credit):
    c7 = SNAP["week7"]
    raw = c7["raw"]
    for part in credit.parts([FRESH, "d_k = 2"], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["scale_scores"]
                s, d_k = c["scores"], c["d_k"]
                expect.close(
                    sub.qkv.scale_scores(s, d_k),
                    c["want"],
                    what=f"scale_scores(control scores {_shape(s)}, d_k={d_k})",
                    tol=tol("qkv.scale_scores", F32),
                    mistakes=c["mistakes"],
                )
            else:
                got = expect.close(
                    sub.qkv.scale_scores(raw, 2),
                    c7["scaled"],
                    what="scale_scores(Week 7 S [2,2,2], d_k=2) (Week 7 §8)",
                    tol=w7.NEAR_EXACT,
                    mistakes=c7["scale_mistakes"],
                    grid=QK,
                )
                expect.close(
                    got[:, -1, :],
                    w7.t(w7.STATED["scaled_final_rows"]),
                    what="scale_scores(Week 7 S, d_k=2): final rows A | B = [0.8, 0.4] | [0.1, 0.4]",
                    tol=w7.NEAR_EXACT,
                )


def test_weighted_values_gives_week7_head_outputs(sub, rng, credit):
    c7 = SNAP["week7"]
    weights, v = c7["weights"], c7["v"]
    for part in credit.parts([FRESH, "o_A, o_B"], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["weighted_values"]
                expect.close(
                    sub.qkv.weighted_values(c["weights"], c["v"]),
                    c["want"],
                    what=f"weighted_values(control weights {_shape(c['weights'])}, v {_shape(c['v'])})",
                    tol=tol("qkv.weighted_values", F32),
                )
            else:
                expect.close(
                    sub.qkv.weighted_values(weights, v),
                    c7["mixed"],
                    what="weighted_values(Week 7 P [2,2,2], V [2,2,2]) = P @ V (Week 7 §6)",
                    tol=w7.NEAR_EXACT,
                    mistakes=c7["mixed_mistakes"],
                    grid=("token", "feature"),
                )


def test_causal_uniform_mean_is_the_week7_baseline(sub, rng, credit):
    ex, c7 = w7.example(), SNAP["week7"]
    for part in credit.parts([FRESH, "x̄_A,1 and x̄_B,1"], required=[FRESH]):
        with part:
            if part.label == FRESH:  # [2, T, 3], then [T', 3]: no leading axis ([..., T, C])
                for c in (SNAP["causal_uniform_mean"], SNAP["causal_uniform_mean"]["flat"]):
                    with expect.raise_named(c["mistakes_raised"]):
                        got = sub.qkv.causal_uniform_mean(c["x"])
                    expect.close(
                        got,
                        c["want"],
                        what=f"causal_uniform_mean(control x {_shape(c['x'])})",
                        tol=tol("qkv.causal_uniform_mean", F32),
                        mistakes=c["mistakes"],
                    )
            else:
                got = expect.close(
                    sub.qkv.causal_uniform_mean(ex.x),
                    c7["uniform_mean"],
                    what="causal_uniform_mean(Week 7 X [2,2,4]) (Week 7 §1)",
                    tol=w7.NEAR_EXACT,
                    mistakes=c7["uniform_mean_mistakes"],
                    grid=("token", "feature"),
                )
                expect.close(
                    got[:, 1],
                    w7.t(w7.STATED["uniform_mean_final"]),
                    what="causal_uniform_mean(Week 7 X): x̄_A,1 = [0.5, 0.5, 0, 0] and x̄_B,1 = [0, 0.5, 0.5, 0]",
                    tol=w7.NEAR_EXACT,
                )


def test_single_head_attention_reproduces_week7_weights_and_outputs(sub, rng, credit):
    ex, c7 = w7.example(), SNAP["week7"]
    c = SNAP["single_head_attention"]
    x, w = c["x"], [c["w_q"], c["w_k"], c["w_v"]]
    control = f"x {_shape(x)}, w_q {_shape(w[0])}, w_k {_shape(w[1])}, w_v {_shape(w[2])}"
    t = tol("qkv.single_head_attention", F32)
    got = None
    unmasked = "causal=False: no mask (control inputs)"
    for part in credit.parts([FRESH, "weights P_A, P_B", "outputs o_A, o_B", unmasked], required=[FRESH]):
        with part:
            if part.label in (FRESH, unmasked):
                key, flag = ("", "") if part.label == FRESH else ("_unmasked", ", causal=False")
                what = f"single_head_attention({control}{flag}) on control inputs"
                out, weights = expect.sequence(
                    sub.qkv.single_head_attention(x, *w, **({"causal": False} if key else {})), 2, what=what
                )
                expect.close(
                    weights, c[f"want_weights{key}"], what=f"{what}: weights", tol=t, mistakes=c[f"mistakes_weights{key}"]
                )
                expect.close(out, c[f"want_out{key}"], what=f"{what}: output", tol=t, mistakes=c[f"mistakes_out{key}"])
                continue
            if got is None:
                got = expect.tensors(
                    sub.qkv.single_head_attention(ex.x, ex.w_q, ex.w_k, ex.w_v),
                    2,
                    what="single_head_attention(Week 7 x [2,2,4], w_q, w_k, w_v [4,2])",
                    shape=(2, 2, 2),
                    floating=True,
                )
            out, weights = got
            if part.label.startswith("weights"):
                expect.close(
                    weights,
                    w7.t(w7.STATED["weights"]),
                    what="single_head_attention(Week 7 x, w_q, w_k, w_v): weights P_A, P_B (Week 7 §11)",
                    tol=w7.PRINTED_3DP,
                    mistakes=c7["mistakes_weights"],
                    grid=QK,
                )
                expect.close(
                    weights[:, 1],
                    w7.t(w7.STATED["final_weights_4dp"]),
                    what="single_head_attention(Week 7 x, …): final-row weights (Week 7 §12 expected output)",
                    tol=w7.PRINTED_4DP_F32,
                )
            else:
                expect.close(
                    out[:, 1],
                    w7.t(w7.STATED["final_outputs_4dp"]),
                    what="single_head_attention(Week 7 x, …): final head outputs o_A, o_B (Week 7 §6, §12)",
                    tol=w7.PRINTED_4DP_F32,
                    mistakes={h: o[:, 1] for h, o in c7["mistakes_out"].items()},
                )


def _head_output(sub, c: dict, x) -> torch.Tensor:
    return sub.qkv.construct("AttentionHead", c["args"], state=c["state"], calls=[("forward", [x], {})], describe=False)[
        "outputs"
    ][0]


def _fresh_head(sub) -> None:
    """Two control heads against the reference, both with T < context_length: a square one
    (C = head_size), then C ≠ head_size (where √C ≠ √head_size)."""
    c = SNAP["attention_head"]
    for head in (c["square"], c):
        C, d, ctx = head["args"]
        what = f"AttentionHead({C}, {d}, {ctx}).forward(x {_shape(head['x'])}) on control weights"
        try:
            got = _head_output(sub, head, head["x"])
        except SubmissionRaised as exc:
            try:  # only an unsliced mask breaks T < context_length while T = context_length works
                _head_output(sub, head, head["x_full"])
            except SubmissionRaised:
                raise exc from None
            expect.true(
                False,
                what=what,
                detail=(
                    f"forward raised for T={head['x'].size(1)} < context_length={ctx} "
                    f"but works for T = context_length: {exc.message}"
                ),
                hints=expect.observed("qkv/mask-not-sliced"),
            )
        expect.close(got, head["want"], what=what, tol=tol("qkv.AttentionHead", F32), mistakes=head["mistakes"])


def test_attention_head_reproduces_week7_numbers(sub, rng, credit):
    ex, c7 = w7.example(), SNAP["week7"]
    built = None  # the module as __init__ made it: a forward that raises costs the forward part alone
    for part in credit.parts([FRESH, "projections", "causal_mask buffer", "forward"], required=[FRESH]):
        with part:
            if part.label == FRESH:
                _fresh_head(sub)
                continue
            if part.label != "forward" and built is None:
                built = sub.qkv.construct("AttentionHead", [4, 2, 8], state=_week7_state(ex))
            if part.label == "projections":
                info = built["describe"]
                linears = {m["name"]: m for m in info["modules"] if m.get("linear")}  # nn.Linear or a class derived from it
                for name in ("query", "key", "value"):
                    m = linears.get(name)
                    expect.true(
                        m is not None,
                        what=f"AttentionHead(4, 2, 8).{name}",
                        detail=(
                            f"expected a submodule {name} = nn.Linear(4, 2, "
                            f"bias=False); found {sorted(linears) or 'no nn.Linear'}"
                        ),
                    )
                    expect.true(
                        (m["in_features"], m["out_features"], m["bias"]) == (4, 2, False),
                        what=f"AttentionHead(4, 2, 8).{name}",
                        detail=(
                            "expected nn.Linear(4, 2, bias=False), got "
                            f"in={m['in_features']} out={m['out_features']} bias={m['bias']}"
                        ),
                        hints=["qkv/linear-bias"] if m["bias"] else [],
                    )
            elif part.label == "causal_mask buffer":
                buffers = {b["name"]: b for b in built["describe"]["buffers"]}
                mask = buffers.get("causal_mask")
                expect.true(
                    mask is not None,
                    what="AttentionHead(4, 2, 8).causal_mask",
                    detail=f"no buffer named causal_mask (buffers: {sorted(buffers) or 'none'})",
                    hints=["qkv/mask-buffer"],
                )
                # persistent or not: Week 7 §13 registers it persistent, Day 1 §A.4 recommends persistent=False — both are right
                expect.equal(
                    mask["value"],
                    SNAP["week7"]["causal_mask_8"],
                    what="AttentionHead(4, 2, 8).causal_mask for context_length=8 (True = may attend)",
                    grid=QK,
                    # tril(-1) is the diagonal masked, not the buffer's layout (blind tester R-DF)
                    mistakes=lambda: {"qkv/diagonal-masked": torch.ones(8, 8, dtype=torch.bool).tril(-1)},
                    hints=["qkv/mask-buffer"],
                )
            else:
                result = sub.qkv.construct(
                    "AttentionHead", [4, 2, 8], state=_week7_state(ex), calls=[("forward", [ex.x], {})], describe=False
                )
                out = expect.tensor(
                    result["outputs"][0],
                    what="AttentionHead(4, 2, 8) on Week 7 x [2,2,4]: forward's output",
                    shape=(2, 2, 2),
                    floating=True,
                )
                expect.close(
                    out[:, 1],
                    w7.t(w7.STATED["final_outputs_4dp"]),
                    what="AttentionHead(4, 2, 8) with Week 7's W_Q, W_K, W_V loaded, on Week 7 x: final outputs (Week 7 §12–§13)",
                    tol=w7.PRINTED_4DP_F32,
                    mistakes={h: o[:, 1] for h, o in c7["head_mistakes"].items()},
                )


def test_attention_head_rejects_sequences_longer_than_its_context(sub, rng, credit):
    """Only the context check: T = context_length runs and T = context_length + 1 raises
    ValueError. What the head computes is checked by the tests above, so a slip in the scores
    does not cost here (snapshots/qkv.json "context_check": inputs only, square projections)."""
    c = SNAP["context_check"]
    C, d, ctx = c["args"]
    fits, longer = f"T = context_length = {ctx} runs", f"T = {ctx + 1} > context_length raises ValueError"
    for part in credit.parts(
        [fits, longer], required={fits: "a head that raises on an input that fits has no context check to credit"}
    ):
        with part:
            if part.label == fits:
                try:
                    sub.qkv.construct(
                        "AttentionHead", c["args"], state=c["state"], calls=[("forward", [c["fits"]], {})], describe=False
                    )
                except SubmissionRaised as exc:
                    if (exc.error or {}).get("type") != "ValueError":
                        raise
                    try:  # only `T >= context_length` rejects T = context_length but not T − 1
                        sub.qkv.construct(
                            "AttentionHead",
                            c["args"],
                            state=c["state"],
                            calls=[("forward", [c["fits"][:, :-1]], {})],
                            describe=False,
                        )
                    except SubmissionRaised:
                        if _narrow_head_fits(sub, ctx):  # the check compared the width C, not T
                            expect.true(
                                False,
                                what=f"AttentionHead({C}, {d}, context_length={ctx}): T = context_length must run",
                                detail=(
                                    f"forward raised ValueError for T = {ctx} and T = {ctx - 1}, which fit, "
                                    f"while a head of width 2 runs: {exc.message}"
                                ),
                                hints=expect.observed("qkv/context-check-wrong-size"),
                            )
                        raise exc from None
                    expect.true(
                        False,
                        what=(
                            f"AttentionHead({C}, {d}, context_length={ctx}).forward(x "
                            f"{_shape(c['fits'])}): T = context_length must run"
                        ),
                        detail=(
                            f"forward raised ValueError for T = context_length = {ctx}, "
                            f"which fits, but works for T={ctx - 1}: {exc.message}"
                        ),
                        hints=expect.observed("qkv/context-check-off-by-one"),
                    )
            else:
                expect.raises(
                    "ValueError",
                    sub.qkv.construct,
                    "AttentionHead",
                    c["args"],
                    state=c["state"],
                    calls=[("forward", [c["longer"]], {})],
                    what=(
                        f"AttentionHead({C}, {d}, context_length={ctx}).forward(x "
                        f"{_shape(c['longer'])}): T = {ctx + 1} > context_length must raise ValueError"
                    ),
                    hints=["qkv/context-check"],
                )


def _narrow_head_fits(sub, ctx: int) -> bool:
    """Whether AttentionHead(2, 2, ctx) runs on T = ctx tokens: a head that rejects inputs of
    T ≤ context_length at its own width but not at width 2 checks C, not T (blind tester R-DD:
    ``if C > self.context_length`` had no hint)."""
    x = torch.linspace(-1.0, 1.0, 2 * ctx).reshape(1, ctx, 2)
    try:
        sub.qkv.construct("AttentionHead", [2, 2, ctx], calls=[("forward", [x], {})], describe=False)
    except SubmissionRaised:
        return False
    return True


# --------------------------------------------------------------------------- dtype, layout, no in-place change
@probe
def head_forward_and_input(ctx, args, state, x):
    """AttentionHead(*args) in x's dtype with the projection weights `state` loaded, run on x;
    hands back the output and x as it is afterwards (the in-place check)."""
    import torch

    torch.manual_seed(0)  # parameters the state does not set (a bias) start the same in every call
    head = ctx.module("qkv").AttentionHead(*args).to(x.dtype)
    head.load_state_dict(state, strict=False)
    head.eval()
    out = head(x)
    return {"value": out, "x": x}


PROPERTY_FUNCTIONS = [
    "project_qkv",
    "attention_scores",
    "scale_scores",
    "weighted_values",
    "causal_uniform_mean",
    "single_head_attention",
    "AttentionHead.forward",
]
LAYOUTS = [("float32", F32, False), ("float64", F64, False), ("float64, non-contiguous", F64, True)]


def _property_inputs(rng, name: str) -> list[tuple]:
    """(args, head args or None) of ``name`` for two fixed shape plans, values random: all sizes
    4 (square: a wrong axis, transpose or x @ linear.weight still runs) and a regular one
    (B=2, T=5, C=6, d_k=3, d_v=4; the head there has T < context_length = 6)."""
    plans = []
    for B, T, C, d_k, d_v in ((4, 4, 4, 4, 4), (2, 5, 6, 3, 4)):
        x = randn(rng, B, T, C, dtype=F64)
        w = (weight(rng, C, d_k, F64), weight(rng, C, d_k, F64), weight(rng, C, d_v, F64))
        if name == "AttentionHead.forward":
            state = {f"{n}.weight": weight(rng, C, d_k, F64).T.contiguous() for n in ("query", "key", "value")}
            plans.append(((x,), ([C, d_k, T if T == 4 else T + 1], state)))
            continue
        scores = randn(rng, B, T, T, dtype=F64, scale=2.0)
        args = {
            "project_qkv": (x, *w),
            "attention_scores": (randn(rng, B, T, d_k, dtype=F64), randn(rng, B, T, d_k, dtype=F64)),
            "scale_scores": (scores, d_k),
            "weighted_values": (torch.softmax(scores, -1), randn(rng, B, T, d_v, dtype=F64)),
            "causal_uniform_mean": (x,),
            "single_head_attention": (x, *w),
        }[name]
        plans.append((args, None))
    return plans


def _layout(value, dtype, strided: bool):
    if not isinstance(value, torch.Tensor):
        return value
    value = value.to(dtype) if value.is_floating_point() else value
    return noncontiguous(value) if strided else value.contiguous()


def _run(sub, name: str, args: tuple, head) -> tuple[list, tuple]:
    """(the results, the inputs as they are after the call)."""
    if head is not None:
        init, state = head
        r = sub.qkv.run(head_forward_and_input, init, {k: v.to(args[0].dtype) for k, v in state.items()}, args[0])
        return [r["value"]], (r["x"],)
    r = sub.qkv.call(name, *args, return_args=True)
    return list(r.value) if isinstance(r.value, (tuple, list)) else [r.value], tuple(r.args or ())


def test_functions_keep_float32_and_float64_take_non_contiguous_inputs_and_leave_them_unchanged(sub, rng, credit):
    """A property test (grading.toml ``properties``): for each function, float32 inputs give
    float32 results and float64 inputs float64 results, a non-contiguous input gives what its
    contiguous copy gives, and no input is modified in place — whatever the values (the value
    tests check those). Each runs on a square input and a regular one (inputs where the usual
    value mistakes still run); the property is checked on every call that returns, and at
    least one must."""
    for part in credit.parts(PROPERTY_FUNCTIONS):
        with part:
            name, ran, raised = part.label, 0, None
            for args, head in _property_inputs(rng, name):
                shapes = ", ".join(_shape(a) if isinstance(a, torch.Tensor) else repr(a) for a in args)
                call = (
                    f"{name}({shapes})" if head is None else f"AttentionHead({', '.join(map(str, head[0]))}).forward(x {shapes})"
                )
                contiguous = None
                for label, dtype, strided in LAYOUTS:
                    inputs = tuple(_layout(a, dtype, strided) for a in args)
                    if strided and contiguous is None:
                        continue  # the contiguous float64 call raised: what it computes is the value tests' business
                    try:
                        outs, after = _run(sub, name, inputs, head)
                    except SubmissionRaised as exc:
                        if strided:
                            raise  # the same values ran in a contiguous layout
                        raised = raised or exc
                        continue
                    ran += 1
                    for before, now in zip(inputs, after):
                        expect.unchanged(before, now, what=f"{call} on {label} inputs leaves its inputs unchanged")
                    outs = [expect.tensor(o, what=f"{call} on {label} inputs: result") for o in outs]
                    for out in outs:
                        expect.true(
                            out.dtype == dtype,
                            what=f"{call} on {label} inputs keeps {str(dtype)[6:]}",
                            detail=f"{str(dtype)[6:]} inputs gave a {str(out.dtype)[6:]} result",
                            hints=["general/dtype-changed"],
                        )
                    if strided:
                        for out, want in zip(outs, contiguous):
                            expect.close(
                                out,
                                want,
                                what=f"{call} on non-contiguous float64 inputs = on their contiguous copies",
                                tol=tol(f"qkv.{name.split('.')[0]}", F64),
                            )
                    elif dtype == F64:
                        contiguous = outs
            if not ran and raised is not None:
                raise raised
