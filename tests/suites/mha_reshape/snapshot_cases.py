"""Snapshot cases of the visible mha_reshape suite: seeded inputs, the reference's outputs and
the named mistakes' outputs (`make snapshots` → snapshots/mha_reshape.json). Instructors only:
students get the data file, never the code that replays a mistake."""

from __future__ import annotations

import math

import torch
from course import mha_reshape_data as data
from course import week07 as w7

from autograder.testing import in_float64, randint, randn, sibling

signatures = sibling(__file__, "mistakes")


def multi_head_attention(rng, ref):
    # C = 6, h = 2: d = 3 is neither √C nor C, so ÷√C, ÷d and ÷√d all differ here (blind tester R-BJ:
    # with C = 4, d = √C and ÷d read as ÷√C)
    B, T, C, h = randint(rng, 1, 2), randint(rng, 3, 6), 6, 2
    x = randn(rng, B, T, C)
    state = {f"{n}.weight": randn(rng, C, C, scale=0.5) for n in ("w_q", "w_k", "w_v", "w_o")}
    module = ref.mha_reshape.MultiHeadAttention(C, h, T).double()
    module.load_state_dict({k: v.double() for k, v in state.items()})
    with torch.no_grad():
        out, weights = (t.float() for t in module(x.double(), return_weights=True))
    variants, one = signatures.Variants(x, state, h), _one_function(x, state, h, None)
    return {
        "x": x,
        "args": [C, h, T],
        "state": state,
        "want": out,
        "mistakes": {**variants.outputs(), **signatures.outputs(one)},
        "want_weights": weights,
        "mistakes_weights": {**variants.weights(), **signatures.weights(one)},
    }


def multi_head_attention_one_head(rng, ref):
    """The control of the module's structure and error tests: one head (h = 1), so it is blind
    to how heads are split and merged — a head-split bug costs split_heads' share only."""
    B, T, C = randint(rng, 1, 2), randint(rng, 3, 6), 4
    x = randn(rng, B, T, C)
    state = {f"{n}.weight": randn(rng, C, C, scale=0.5) for n in ("w_q", "w_k", "w_v", "w_o")}
    module = ref.mha_reshape.MultiHeadAttention(C, 1, T).double()
    module.load_state_dict({k: v.double() for k, v in state.items()})
    with torch.no_grad():
        out, weights = (t.float() for t in module(x.double(), return_weights=True))
    variants = signatures.Variants(x, state, 1)
    return {
        "x": x,
        "args": [C, 1, T],
        "state": state,
        "want": out,
        "mistakes": variants.outputs(),
        "want_weights": weights,
        "mistakes_weights": variants.weights(),
    }


def split_heads(rng, ref):
    h = randint(rng, 2, 4)
    x = randn(rng, randint(rng, 1, 3), randint(rng, 2, 6), h * randint(rng, 2, 4))
    return {
        "x": x,
        "num_heads": h,
        "want": in_float64(ref.mha_reshape.split_heads, x, h),
        "mistakes": signatures.split_heads(x, h),
    }


def merge_heads(rng, ref):
    y = randn(rng, randint(rng, 1, 3), randint(rng, 2, 4), randint(rng, 2, 6), randint(rng, 2, 4))
    return {"y": y, "want": in_float64(ref.mha_reshape.merge_heads, y), "mistakes": signatures.merge_heads(y)}


def split_heads_examples(rng, ref):
    """The lessons' shapes (W7-29, L2-04) and one with three heads, on arange inputs."""
    out, mistakes = {}, {}
    for label, shape, h in (("W7-29", [1, 3, 4], 2), ("L2-04", [2, 5, 8], 2), ("h=3", [2, 3, 6], 3)):
        x = torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape)
        out[label] = in_float64(ref.mha_reshape.split_heads, x, h)
        mistakes[label] = signatures.split_heads(x, h)
    return {**out, "mistakes": mistakes}


def merge_heads_examples(rng, ref):
    w7_29, l2_04 = (
        torch.arange(12, dtype=torch.float32).reshape(1, 2, 3, 2),
        torch.arange(80, dtype=torch.float64).reshape(2, 2, 5, 4),
    )
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    split = in_float64(ref.mha_reshape.split_heads, x, 2)  # the round trip composes with the right split
    return {
        "W7-29": in_float64(ref.mha_reshape.merge_heads, w7_29),
        "L2-04": in_float64(ref.mha_reshape.merge_heads, l2_04, dtype=torch.float64),
        "mistakes": {"W7-29": signatures.merge_heads(w7_29), "L2-04": signatures.merge_heads(l2_04)},
        "round_trip": {"x": x, "split": split, "mistakes": signatures.merge_heads(split)},
    }


def cost_functions(rng, ref):
    m = ref.mha_reshape
    B, h, T, d = randint(rng, 2, 16), randint(rng, 2, 16), randint(rng, 3, 5000), randint(rng, 2, 4000)
    return {
        "B": B,
        "h": h,
        "T": T,
        "d": d,
        "score_elements": m.score_elements(B, h, T),
        "mha_param_count": m.mha_param_count(d),
        "mha_flops": m.mha_flops(T, d),
        "attention_flop_fraction": m.attention_flop_fraction(T, d),
        "attention_matrix_gib": m.attention_matrix_gib(B, h, T, 4, 3),
        "candidates": {  # (hint, the number that mistake gives)
            "score_elements": signatures.score_elements(B, h, T),
            "mha_param_count": signatures.mha_param_count(d, True),
            "mha_flops": signatures.mha_flops(T, d),
            "attention_flop_fraction": signatures.attention_flop_fraction(T, d),
            "attention_matrix_gib": signatures.attention_matrix_gib(B, h, T, 4, 3),
        },
    }


def cost_tables(rng, ref):
    """The mistakes' numbers for every row of the lessons' cost tables (in the order of
    course.mha_reshape_data's tables), and the reference's exact fraction for D1-27."""
    m = ref.mha_reshape
    return {
        "score_elements": [signatures.score_elements(B, h, T) for (B, h, T) in data.SCORE_ELEMENTS],
        "mha_param_count": [signatures.mha_param_count(d, True) for d in data.PARAM_COUNT],
        "mha_flops": [signatures.mha_flops(T, d) for (T, d) in data.MHA_FLOPS],
        "attention_flop_fraction": [signatures.attention_flop_fraction(T, d) for (d, T) in data.FLOP_SHARE],
        "attention_flop_fraction_exact": [m.attention_flop_fraction(T, d) for (d, T) in data.FLOP_SHARE],
        "attention_matrix_gib": [signatures.attention_matrix_gib(B, h, T, 2, layers) for (B, h, T, layers) in data.MEMORY_GIB],
    }


def week7_two_heads(rng, ref):
    """The named mistakes' (out, weights) on the two-head Week 7 example, unpadded and with
    prompt B's second key padded."""
    ex = w7.example()
    state = data.two_head_state()
    key_allowed = torch.tensor([[True, True], [True, False]])
    plain, padded = signatures.Variants(ex.x, state, 2), signatures.Variants(ex.x, state, 2, key_allowed)
    plain_one, padded_one = _one_function(ex.x, state, 2, None), _one_function(ex.x, state, 2, key_allowed)
    return {
        "mistakes_out": {**plain.outputs(), **signatures.outputs(plain_one)},
        "mistakes_weights": {**plain.weights(), **signatures.weights(plain_one)},
        "padded_mistakes_out": {**padded.outputs(), **signatures.outputs(padded_one)},
        "padded_mistakes_weights": {**padded.weights(), **signatures.weights(padded_one)},
    }


def _one_function(x, state, h: int, key_allowed) -> dict:
    """A reshape mistake in ONE of split_heads and merge_heads, as the module shows it (the
    hidden suite's second table, test_mha_reshape_hidden._output_table): variants of the
    paired mistakes' hints. A merge-only mistake leaves the weights right: never named by them."""
    one = {
        "mha_reshape/view-without-transpose#split": {"split": "view-without-transpose"},
        "mha_reshape/view-without-transpose#merge": {"merge": "view-without-transpose"},
        "mha_reshape/interleaved-heads#split": {"split": "interleaved-heads"},
        "mha_reshape/interleaved-heads#merge": {"merge": "interleaved-heads"},
    }
    return {
        hint: signatures._mha(x.double(), {k: v.double() for k, v in state.items()}, 2, key_allowed, **how)
        for hint, how in one.items()
    }


def unsliced_probe(rng, ref):
    """Fixed data of course.mha_reshape_data.unsliced_mask (names a mistake from a size error)."""
    return signatures.unsliced_probe()


def key_mask_probe(rng, ref):
    """Fixed data of course.mha_reshape_data.key_mask_three_axes (names a mistake from a size error)."""
    return signatures.key_mask_probe()


CASES = [
    multi_head_attention,
    multi_head_attention_one_head,
    split_heads,
    merge_heads,
    split_heads_examples,
    merge_heads_examples,
    cost_functions,
    cost_tables,
    week7_two_heads,
    unsliced_probe,
    key_mask_probe,
]
