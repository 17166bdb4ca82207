"""Skill mha_reshape, visible tests: the lessons' shapes, the Week 7 example run through two
heads, and the cost tables of Week 7 §17 and Day 1 §4.4–§5.

Shipped to students. Every expected number is printed in the lessons (or is an exact
rearrangement of its input); control inputs (checked first, so structure, errors and printed
numbers earn nothing alone) carry the reference's outputs, computed at release time
(snapshots/mha_reshape.json). The last test draws its inputs from the seed: it checks no
values, only that float32 and float64 inputs keep their dtype, non-contiguous inputs give what
the same values in another layout give, and no input is modified. The hidden suite checks the
same functions on fresh random inputs, for properties, and for the ban on library attention.
"""

from __future__ import annotations

import math

import torch
from course import mha_reshape_data as data
from course import week07 as w7
from course.tolerances import EXACT, tol

from autograder.testing import Snapshots, SubmissionError, SubmissionRaised, expect, noncontiguous, probe, randn

QK = ("query", "key")
#: the rule's operators cannot run in any call of this skill, watched or not (testing/README.md)
WORKER_BANS = data.REPLACED
WORKER_SCANNED = ("mha_reshape",)  # its workers run only the files its rule scan reads (sandbox/codegate.py)
F32, F64 = torch.float32, torch.float64
SNAP = Snapshots(__file__)  # control inputs, the reference's outputs and the named mistakes' outputs on them


def _check_control(sub, c: dict, note: str) -> None:
    """The module's output on control weights and x against the reference's. When it differs
    and no mistake's output matches, the weights (return_weights=True) may still name one:
    a slip in the query/key projections shows in them whatever W_O does. The rule's source
    check comes first: what the hidden gate zeroes fails here too."""
    data.check_rule_source(sub)
    with data.view_hint(sub):  # view() on a transposed tensor raises here first: say so (issue 30 §2)
        r = sub.mha_reshape.construct(
            "MultiHeadAttention", c["args"], state=c["state"], calls=[("forward", [c["x"]], {})], describe=False
        )
    got, t = r["outputs"][0], tol("mha_reshape.MultiHeadAttention", F32)
    by_weights = []
    if type(got) is torch.Tensor and expect.distance(got, c["want"], t) > 1:
        try:
            rw = sub.mha_reshape.construct(
                "MultiHeadAttention",
                c["args"],
                state=c["state"],
                calls=[("forward", [c["x"]], {"return_weights": True})],
                describe=False,
            )
            weights = rw["outputs"][0][1] if isinstance(rw["outputs"][0], (tuple, list)) and len(rw["outputs"][0]) == 2 else None
            by_weights = expect.diagnose(
                weights, c["mistakes_weights"], tol("mha_reshape.MultiHeadAttention.weights", F32), c["want_weights"]
            )
        except SubmissionError:
            pass
    expect.close(
        got, c["want"], what=f"{_module(c)} on control weights ({note})", tol=t, mistakes=c["mistakes"], hints=by_weights
    )


def _shape(t) -> str:
    return str(list(t.shape)).replace(" ", "")


def _module(c: dict) -> str:
    return f"MultiHeadAttention({', '.join(map(str, c['args']))}).forward(x {_shape(c['x'])})"


def _valid_input_runs(sub, what: str) -> None:
    """The valid counterpart of an error test's input, checked for not raising, not for its
    values (the value tests check those): split_heads on its control input; MultiHeadAttention(4,
    2, 8) built; MultiHeadAttention(4, 1, T) run on control weights and x (T = context_length,
    one head: blind to mask-slicing bugs). A raise there says it was the valid input: the part's
    own name is about the invalid one ("… raises on T=3"), which was never reached."""
    valid = {
        "split": "split_heads on a valid control input",
        "init": "MultiHeadAttention(4, 2, 8)",
        "forward": "MultiHeadAttention(4, 1, T).forward with T = context_length",
    }[what]
    try:
        _run_valid_input(sub, what)
    except SubmissionError as exc:
        message = f"the valid input, checked before invalid ones ({valid}), did not run: {exc.message}"
        raise type(exc)(exc.call, message, error=exc.error, hints=exc.hints) from None


def _run_valid_input(sub, what: str) -> None:
    if what == "split":
        c = SNAP["split_heads"]
        expect.tensor(
            sub.mha_reshape.split_heads(c["x"], c["num_heads"]),
            what=f"split_heads(x {_shape(c['x'])}, {c['num_heads']}) on a valid control input must not raise "
            "(checked before invalid ones)",
        )
        return
    if what == "init":
        sub.mha_reshape.construct("MultiHeadAttention", [4, 2, 8], describe=False)  # 4 % 2 == 0: must not raise
        return
    c = SNAP["multi_head_attention_one_head"]
    r = sub.mha_reshape.construct(
        "MultiHeadAttention", c["args"], state=c["state"], calls=[("forward", [c["x"]], {})], describe=False
    )
    expect.tensor(r["outputs"][0], what=f"{_module(c)} on a valid control input must not raise (checked before invalid ones)")


def _control(sub, rng) -> None:
    """Control weights and x, against the reference's output: checked first by every test
    whose own subject (structure, errors, printed numbers) wrong code could satisfy."""
    _check_control(sub, SNAP["multi_head_attention"], "Day 1 §4.3; checked before this test's case")


def test_split_heads_cuts_features_into_contiguous_heads(sub, rng, credit):
    c = SNAP["split_heads"]
    x, h = c["x"], c["num_heads"]
    expect.close(
        sub.mha_reshape.split_heads(x, h),
        c["want"],
        what=f"split_heads(control x {_shape(x)}, num_heads={h})",
        tol=EXACT,
        mistakes=c["mistakes"],
    )
    cases = {
        "W7-29: [1,3,4], h=2": (data.SHAPES_W7_29, 2),
        "L2-04: [2,5,8], h=2": (data.SHAPES_L2_04, 2),
        "[2,3,6], h=3": ({"input": [2, 3, 6], "heads": [2, 3, 3, 2]}, 3),
    }
    examples = SNAP["split_heads_examples"]
    for part in credit.parts(list(cases)):
        with part, data.view_hint(sub):
            shapes, h = cases[part.label]
            x = torch.arange(math.prod(shapes["input"]), dtype=torch.float32).reshape(shapes["input"])
            label = part.label.split(":")[0] if ":" in part.label else "h=3"
            want = examples[label]
            assert list(want.shape) == shapes["heads"], f"snapshot split_heads_examples[{label!r}] is stale: run `make snapshots`"
            expect.close(
                sub.mha_reshape.split_heads(x, h),
                want,
                what=f"split_heads(x {shapes['input']}, num_heads={h}) → {shapes['heads']} (Week 7 §9, Day 1 §4.3)",
                tol=EXACT,
                mistakes=examples["mistakes"][label],
                grid=("token", "head feature"),
            )


def test_merge_heads_undoes_split_heads(sub, rng, credit):
    c = SNAP["merge_heads"]
    with data.view_hint(sub):
        expect.close(
            sub.mha_reshape.merge_heads(c["y"]),
            c["want"],
            what=f"merge_heads(control y {_shape(c['y'])})",
            tol=EXACT,
            mistakes=c["mistakes"],
        )
    examples = SNAP["merge_heads_examples"]
    for part in credit.parts(
        ["W7-29: merge [1,2,3,2] → [1,3,4]", "L2-04: merge [2,2,5,4] → [2,5,8]", "merge_heads(the right split of x) == x"]
    ):
        with part, data.view_hint(sub):
            if part.label.startswith("W7-29"):
                y = torch.arange(12, dtype=torch.float32).reshape(data.SHAPES_W7_29["heads"])
            elif part.label.startswith("L2-04"):
                y = torch.arange(80, dtype=torch.float64).reshape(data.SHAPES_L2_04["heads"])
            else:
                # the lessons' split of x (the snapshot), not your split_heads: a wrong split_heads
                # costs split_heads' tests, never this one of merge_heads (issue 30 §3)
                x, y = examples["round_trip"]["x"], examples["round_trip"]["split"]
                expect.close(
                    sub.mha_reshape.merge_heads(y),
                    x,
                    what="merge_heads(the right split_heads(x [2,3,4], 2)) is x again (Day 1 §A.5)",
                    tol=EXACT,
                    grid=("token", "feature"),
                    mistakes=examples["round_trip"]["mistakes"],
                )
                continue
            want = examples[part.label.split(":")[0]]  # Concat(head_1, …, head_h) on the feature axis
            expect.close(
                sub.mha_reshape.merge_heads(y),
                want,
                what=f"merge_heads(y {_shape(y)}) → {_shape(want)} (Week 7 §15: concatenate on the feature axis)",
                tol=EXACT,
                mistakes=examples["mistakes"][part.label.split(":")[0]],
                grid=("token", "feature"),
            )


def test_week7_example_through_two_heads_gives_the_printed_weights_and_outputs(sub, rng, credit):
    _control(sub, rng)
    ex = w7.example()
    state = data.two_head_state()
    with data.view_hint(sub):
        result = sub.mha_reshape.construct(
            "MultiHeadAttention", [4, 2, 8], state=state, calls=[("forward", [ex.x], {"return_weights": True})]
        )
    out, weights = expect.sequence(
        result["outputs"][0], 2, what="MultiHeadAttention(4, 2, 8).forward(Week 7 x [2,2,4], return_weights=True)"
    )
    want_out, want_weights = data.two_head_expected()
    variants = SNAP["week7_two_heads"]
    for part in credit.parts(["weights [B,h,T,T]", "outputs [B,T,C]"]):
        with part, data.view_hint(sub):
            if part.label.startswith("weights"):
                expect.close(
                    weights,
                    want_weights,
                    what=(
                        "MultiHeadAttention(4, 2, 8).forward(Week 7 x): weights of head 1 "
                        "(Week 7's head: P_A, P_B) and head 2 (W_Q⁽²⁾ = 0: the §1 uniform mean)"
                    ),
                    tol=w7.PRINTED_4DP_F32,
                    mistakes=variants["mistakes_weights"],
                    grid=QK,
                )
            else:
                expect.close(
                    out,
                    want_out,
                    what=(
                        "MultiHeadAttention(4, 2, 8).forward(Week 7 x): Concat(O⁽¹⁾, O⁽²⁾) W_O with W_O "
                        "swapping the heads: [uniform mean of features 0, 2 | Week 7 head output] (Week 7 §15)"
                    ),
                    tol=w7.PRINTED_4DP_F32,
                    mistakes=variants["mistakes_out"],
                    grid=("token", "feature"),
                )


def test_padded_key_gets_no_weight_in_week7_example(sub, rng, credit):
    _control(sub, rng)
    ex = w7.example()
    state = data.two_head_state()
    key_allowed = torch.tensor([[True, True], [True, False]])  # prompt B: its second token is padding
    with data.view_hint(sub):
        result = sub.mha_reshape.construct(
            "MultiHeadAttention",
            [4, 2, 8],
            state=state,
            calls=[("forward", [ex.x], {"key_allowed": key_allowed, "return_weights": True})],
        )
    out, weights = expect.sequence(
        result["outputs"][0],
        2,
        what="MultiHeadAttention(4, 2, 8).forward(Week 7 x [2,2,4], key_allowed [2,2], return_weights=True)",
    )
    want_out, want_weights = data.two_head_expected(padded=True)
    variants = SNAP["week7_two_heads"]
    for part in credit.parts(["weights", "outputs"]):
        with part, data.view_hint(sub):
            if part.label == "weights":
                expect.close(
                    weights,
                    want_weights,
                    what=(
                        "MultiHeadAttention(4, 2, 8).forward(Week 7 x, key_allowed): weights "
                        "with prompt B's key 喜欢 padded: B's queries read only 猫 (Day 1 §3.2)"
                    ),
                    tol=w7.PRINTED_4DP_F32,
                    mistakes=variants["padded_mistakes_weights"],
                    grid=QK,
                )
            else:
                expect.close(
                    out,
                    want_out,
                    what=(
                        "MultiHeadAttention(4, 2, 8).forward(Week 7 x, key_allowed): "
                        "outputs with prompt B's key 喜欢 padded (prompt A unchanged)"
                    ),
                    tol=w7.PRINTED_4DP_F32,
                    mistakes=variants["padded_mistakes_out"],
                    grid=("token", "feature"),
                )


def test_multi_head_attention_has_four_projections_and_a_causal_mask_buffer(sub, rng, credit):
    """The module's structure, whatever its forward computes: a property test (grading.toml
    ``properties``), so it counts once the skill's value tests earn points, and a forward
    mistake costs the value tests' share, not this one's (blind tester R-CE: a missing scale
    failed it through a control of forward's values)."""
    labels = [
        "bias=False: w_q, w_k, w_v, w_o = nn.Linear(4, 4)",
        "bias=True: 4d² + 4d parameters (D1-24)",
        "mask buffer [8, 8]; state_dict: the projections (+ at most the mask)",
        "W7-54: output [2,2,4]",
    ]
    results: dict[bool, dict] = {}  # the module as __init__ made it: a forward that raises costs its part alone
    for part in credit.parts(labels):
        with part, data.view_hint(sub):
            if not part.label.startswith("W7-54"):
                for bias in (False, True):
                    if bias not in results:
                        results[bias] = sub.mha_reshape.construct("MultiHeadAttention", [4, 2, 8], {"bias": bias})
            if part.label.startswith("bias=False"):
                info = results[False]["describe"]
                linears = {m["name"]: m for m in info["modules"] if m.get("linear")}  # nn.Linear or a class derived from it
                for name in ("w_q", "w_k", "w_v", "w_o"):
                    m = linears.get(name)
                    expect.true(
                        m is not None,
                        what=f"MultiHeadAttention(4, 2, 8).{name}",
                        detail=(
                            f"expected a submodule {name} = nn.Linear(4, 4, "
                            f"bias=False); found {sorted(linears) or 'no nn.Linear'}"
                        ),
                        hints=["mha_reshape/linear-layout", "mha_reshape/missing-output-projection"],
                    )
                    expect.true(
                        (m["in_features"], m["out_features"], m["bias"]) == (4, 4, False),
                        what=f"MultiHeadAttention(4, 2, 8).{name}",
                        detail=(
                            "expected nn.Linear(4, 4, bias=False), got "
                            f"in={m['in_features']} out={m['out_features']} bias={m['bias']}"
                        ),
                        # only the bias differs: the bias argument ignored, not the layout (blind tester R-DF)
                        hints=data.linear_hints(m, (4, 4, False)),
                    )
            elif part.label.startswith("bias=True"):
                info = results[True]["describe"]
                params = sum(math.prod(p["shape"]) for p in info["parameters"])
                names = {p["name"] for p in info["parameters"]}
                expected = {f"{n}.{p}" for n in ("w_q", "w_k", "w_v", "w_o") for p in ("weight", "bias")}
                expect.true(
                    params == 4 * 4 * 4 + 4 * 4,
                    what="MultiHeadAttention(4, 2, 8, bias=True) parameter count",
                    detail=f"expected 4·4² + 4·4 = 80 parameters (4 weights and 4 biases), found {params}",
                    hints=data.layout_hints(sorted(names - expected), sorted(expected - names)),
                )
            elif part.label.startswith("mask"):
                info = results[False]["describe"]
                expected_keys = sorted(f"{n}.weight" for n in ("w_q", "w_k", "w_v", "w_o"))
                buffers = {b["name"] for b in info["buffers"]}
                params = sorted(
                    k for k in info["state_dict"] if k not in buffers
                )  # Week 7 §13's persistent mask buffer is accepted too
                expect.true(
                    params == expected_keys,
                    what="MultiHeadAttention(4, 2, 8).state_dict() parameter keys",
                    detail=f"expected exactly {expected_keys} (plus, at most, the mask buffer), got {sorted(info['state_dict'])}",
                    hints=data.layout_hints(sorted(set(params) - set(expected_keys)), sorted(set(expected_keys) - set(params))),
                )
                expect.true(
                    any(b["shape"][-2:] == [8, 8] for b in info["buffers"]),
                    what="MultiHeadAttention(4, 2, context_length=8)'s causal mask buffer [8, 8]",
                    detail=(
                        f"buffers found: {[(b['name'], b['shape']) for b in info['buffers']] or 'none'}: build the causal "
                        "mask once in __init__ with register_buffer (persistent=False keeps it out of state_dict)"
                    ),
                    hints=["mha_reshape/persistent-mask-buffer"],
                )
            else:
                forward = [("forward", [torch.zeros(2, 2, 4)], {})]
                ran = sub.mha_reshape.construct("MultiHeadAttention", [4, 2, 8], {"bias": False}, calls=forward, describe=False)
                out = expect.tensor(ran["outputs"][0], what="MultiHeadAttention(4, 2, 8).forward(x [2,2,4])")
                expect.true(
                    list(out.shape) == [2, 2, 4],
                    what="MultiHeadAttention(4, 2, 8).forward(x [2,2,4]) output shape (W7-54)",
                    detail=f"expected [2, 2, 4], got {list(out.shape)}",
                    hints=["mha_reshape/concat-wrong-axis", "mha_reshape/missing-output-projection"],
                )


def test_value_errors_for_indivisible_width_and_too_long_input(sub, rng, credit):
    """Each part checks that its function raises ValueError on the lesson's invalid input and
    does not raise on a valid one (raising ValueError everywhere earns nothing) — not the
    valid input's values, which the value tests check."""
    split, init, forward = (
        "split_heads raises for C=4, h=3",
        "MultiHeadAttention(4, 3, 8) raises",
        "MultiHeadAttention(4, 2, context_length=2) raises on T=3",
    )
    for part in credit.parts([split, init, forward]):
        with part, data.view_hint(sub):
            _valid_input_runs(sub, {split: "split", init: "init", forward: "forward"}[part.label])
            if part.label == split:
                expect.raises(
                    "ValueError",
                    sub.mha_reshape.split_heads,
                    torch.zeros(1, 2, 4),
                    3,
                    what="split_heads(x [1,2,4], num_heads=3) must raise ValueError: 4 % 3 != 0 (W7-54)",
                    hints=["mha_reshape/divisibility-check"],
                )
            elif part.label == init:
                expect.raises(
                    "ValueError",
                    sub.mha_reshape.construct,
                    "MultiHeadAttention",
                    [4, 3, 8],
                    what="MultiHeadAttention(embed_dim=4, num_heads=3, 8) must raise ValueError: 4 % 3 != 0 (W7-54)",
                    hints=["mha_reshape/divisibility-check"],
                )
            else:
                expect.raises(
                    "ValueError",
                    sub.mha_reshape.construct,
                    "MultiHeadAttention",
                    [4, 2, 2],
                    calls=[("forward", [torch.zeros(1, 3, 4)], {})],
                    what=(
                        "MultiHeadAttention(4, 2, context_length=2).forward(x "
                        "[1,3,4]) must raise ValueError: T=3 > context_length"
                    ),
                    hints=["mha_reshape/context-check"],
                )


def test_cost_functions_reproduce_the_course_tables(sub, rng, credit):
    for part in credit.parts(
        [
            "score_elements (W7-49, W7-50)",
            "mha_param_count (D1-24)",
            "mha_flops (D1-25)",
            "attention_flop_fraction (D1-27)",
            "attention_matrix_gib (D1-29)",
        ]
    ):
        with part, data.view_hint(sub):
            name = part.label.split()[0]
            c, tables = (
                SNAP["cost_functions"],
                SNAP["cost_tables"],
            )  # control sizes too: a table of the printed numbers earns nothing
            B, h, T, d = c["B"], c["h"], c["T"], c["d"]
            fresh = {
                "score_elements": (lambda: sub.mha_reshape.score_elements(B, h, T), f"score_elements({B}, {h}, {T}) = B·h·T²"),
                "mha_param_count": (lambda: sub.mha_reshape.mha_param_count(d), f"mha_param_count({d}) = 4d² + 4d"),
                "mha_flops": (lambda: sub.mha_reshape.mha_flops(T, d), f"mha_flops({T}, {d}) = 8Td² + 4T²d"),
                "attention_flop_fraction": (
                    lambda: sub.mha_reshape.attention_flop_fraction(T, d),
                    f"attention_flop_fraction({T}, {d})",
                ),
                "attention_matrix_gib": (
                    lambda: sub.mha_reshape.attention_matrix_gib(B, h, T, 4, 3),
                    f"attention_matrix_gib({B}, {h}, {T}, 4, 3)",
                ),
            }[name]
            got = fresh[0]()
            expect.scalar(
                got,
                c[name],
                what=f"{fresh[1]} on control sizes",
                tol=data.FRACTION_TABLE
                if name == "attention_flop_fraction"
                else (data.GIB_TABLE if name == "attention_matrix_gib" else EXACT),
                integer=name not in ("attention_flop_fraction", "attention_matrix_gib"),
                hints=data.numbers(got, c["candidates"][name], c[name]),
            )
            if name == "score_elements":
                for ((B, h, T), want), candidates in zip(data.SCORE_ELEMENTS.items(), tables[name]):
                    got = sub.mha_reshape.score_elements(B, h, T)
                    expect.scalar(
                        got,
                        want,
                        what=f"score_elements(B={B}, h={h}, T={T}) (Week 7 §17)",
                        tol=EXACT,
                        integer=True,
                        hints=data.numbers(got, candidates, want) or ["mha_reshape/score-elements-formula"],
                    )
            elif name == "mha_param_count":
                for (d, want), candidates in zip(data.PARAM_COUNT.items(), tables[name]):
                    got = sub.mha_reshape.mha_param_count(d)
                    expect.scalar(
                        got,
                        want,
                        what=f"mha_param_count(d={d}) = 4d² + 4d (Day 1 §4.4)",
                        tol=EXACT,
                        integer=True,
                        hints=data.numbers(got, candidates, want) or ["mha_reshape/param-count-bias"],
                    )
            elif name == "mha_flops":
                for ((T, d), want), candidates in zip(data.MHA_FLOPS.items(), tables[name]):
                    got = sub.mha_reshape.mha_flops(T, d)
                    expect.scalar(
                        got,
                        want,
                        what=f"mha_flops(T={T}, d={d}) = 8Td² + 4T²d (Day 1 §5.1)",
                        tol=EXACT,
                        integer=True,
                        hints=data.numbers(got, candidates, want)
                        or ["mha_reshape/flops-attention-term", "mha_reshape/flops-output-projection"],
                    )
            elif name == "attention_flop_fraction":
                for ((d, T), percent), candidates, exact in zip(data.FLOP_SHARE.items(), tables[name], tables[name + "_exact"]):
                    got = sub.mha_reshape.attention_flop_fraction(T, d)
                    expect.scalar(
                        got,
                        percent / 100,
                        what=f"attention_flop_fraction(T={T}, d={d}): {percent}% as a fraction (Day 1 §5.1 table)",
                        tol=data.FRACTION_TABLE,
                        hints=data.numbers(got, candidates, exact) or ["mha_reshape/fraction-wrong-share"],
                    )
            else:
                for ((B, h, T, layers), want), candidates in zip(data.MEMORY_GIB.items(), tables[name]):
                    got = sub.mha_reshape.attention_matrix_gib(B, h, T, 2, layers)
                    expect.scalar(
                        got,
                        want,
                        what=(
                            f"attention_matrix_gib(B={B}, h={h}, T={T}, bytes_per_element=2, layers={layers}) (Day 1 §5.2 table)"
                        ),
                        tol=data.GIB_TABLE,
                        hints=data.numbers(got, candidates, want) or ["mha_reshape/memory-layers", "mha_reshape/memory-units"],
                    )


# --------------------------------------------------------------------------- dtype, layout, no in-place change
@probe
def module_forward_and_inputs(ctx, init, init_kwargs, state, x, key_allowed):
    """MultiHeadAttention(*init, **init_kwargs) in x's dtype with `state` loaded, run on x with
    key_allowed and return_weights=True; hands back the results and the inputs as they are
    afterwards (the in-place check)."""
    import torch

    torch.manual_seed(0)  # parameters the state does not set start the same in every call
    module = ctx.module("mha_reshape").MultiHeadAttention(*init, **init_kwargs).to(x.dtype)
    module.load_state_dict(state, strict=False)
    module.eval()
    out = module(x, key_allowed=key_allowed, return_weights=True)
    return {"value": out, "x": x, "key_allowed": key_allowed}


PROPERTY_FUNCTIONS = ["split_heads", "merge_heads", "MultiHeadAttention.forward"]
LAYOUTS = [("float32", F32, False), ("float64", F64, False), ("float64, non-contiguous", F64, True)]


def _property_inputs(rng, name: str) -> list[tuple]:
    """(args, module init or None) of ``name`` for two fixed shape plans, values random:
    split_heads on x [2,5,6] with 3 heads and on x [2,4,4] with 2; merge_heads on y [2,3,5,2]
    and on y laid out as attention leaves it (a transposed [2,5,3,2], where a view after the
    permute works); the module with 3 heads at T = context_length = 5 and with one head at
    T = 5 < context_length = 6, bias=True, example 1's last two keys padded."""
    if name == "split_heads":
        return [((randn(rng, 2, 5, 6, dtype=F64), 3), None), ((randn(rng, 2, 4, 4, dtype=F64), 2), None)]
    if name == "merge_heads":
        return [((randn(rng, 2, 3, 5, 2, dtype=F64),), None), ((randn(rng, 2, 5, 3, 2, dtype=F64).transpose(1, 2),), None)]
    plans = []
    for C, h, ctx in ((6, 3, 5), (4, 1, 6)):
        state = {}
        for n in ("w_q", "w_k", "w_v", "w_o"):
            state[f"{n}.weight"] = randn(rng, C, C, dtype=F64, scale=C**-0.5)
            state[f"{n}.bias"] = randn(rng, C, dtype=F64, scale=0.1)
        key_allowed = torch.ones(2, 5, dtype=torch.bool)
        key_allowed[1, -2:] = False
        plans.append(((randn(rng, 2, 5, C, dtype=F64), key_allowed), ([C, h, ctx], state)))
    return plans


def _layout(value, dtype, strided: bool):
    if not isinstance(value, torch.Tensor):
        return value
    value = value.to(dtype) if value.is_floating_point() else value
    return noncontiguous(value) if strided else value


def _run(sub, name: str, args: tuple, module) -> tuple[list, tuple]:
    """(the results, the inputs as they are after the call)."""
    if module is not None:
        init, state = module
        r = sub.mha_reshape.run(
            module_forward_and_inputs, init, {"bias": True}, {k: v.to(args[0].dtype) for k, v in state.items()}, *args
        )
        outs = r["value"] if isinstance(r["value"], (tuple, list)) else [r["value"]]
        return list(outs), (r["x"], r["key_allowed"])
    r = sub.mha_reshape.call(name, *args, return_args=True)
    return [r.value], tuple(r.args or ())


def test_reshapes_and_module_keep_float32_and_float64_take_non_contiguous_inputs_and_leave_them_unchanged(sub, rng, credit):
    """A property test (grading.toml ``properties``): for each function, float32 inputs give
    float32 results and float64 inputs float64 results, a non-contiguous input gives what its
    contiguous copy gives, and no input is modified in place — whatever the values (the value
    tests check those). Each runs on two inputs where the usual value mistakes still run; the
    property is checked on every call that returns, and at least one must."""
    for part in credit.parts(PROPERTY_FUNCTIONS):
        with part, data.view_hint(sub):
            name, ran, raised = part.label, 0, None
            for args, module in _property_inputs(rng, name):
                shapes = ", ".join(_shape(a) if isinstance(a, torch.Tensor) else repr(a) for a in args)
                call = (
                    f"{name}({shapes})"
                    if module is None
                    else f"MultiHeadAttention({', '.join(map(str, module[0]))}, bias=True).forward(x, key_allowed: {shapes})"
                )
                contiguous = None
                for label, dtype, strided in LAYOUTS:
                    inputs = tuple(_layout(a, dtype, strided) for a in args)
                    if strided and contiguous is None:
                        continue  # the float64 call raised: what it computes is the value tests' business
                    try:
                        outs, after = _run(sub, name, inputs, module)
                    except SubmissionRaised as exc:
                        if strided:
                            raise  # the same values ran in the other layout
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
                                what=f"{call} on non-contiguous float64 inputs = on the same values in the other layout",
                                tol=tol("mha_reshape.MultiHeadAttention", F64) if module is not None else EXACT,
                            )
                    elif dtype == F64:
                        contiguous = outs
            if not ran and raised is not None:
                raise raised
