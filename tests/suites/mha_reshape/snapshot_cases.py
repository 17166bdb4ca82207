"""Snapshot cases of the visible mha_reshape suite: seeded inputs and the reference's outputs
(`make snapshots` → snapshots/mha_reshape.json). Instructors only: students get the data file."""

from __future__ import annotations

import math

import torch

from autograder.release.snapshots import in_float64
from autograder.testing.inputs import randint, randn


def multi_head_attention(rng, ref):
    B, T, C, h = randint(rng, 1, 2), randint(rng, 3, 6), 4, 2
    x = randn(rng, B, T, C)
    state = {f"{n}.weight": randn(rng, C, C, scale=0.5) for n in ("w_q", "w_k", "w_v", "w_o")}
    module = ref.mha_reshape.MultiHeadAttention(C, h, T).double()
    module.load_state_dict({k: v.double() for k, v in state.items()})
    with torch.no_grad():
        out = module(x.double()).float()
    return {"x": x, "args": [C, h, T], "state": state, "want": out}


def multi_head_attention_one_head(rng, ref):
    """The control of the module's structure and error tests: one head (h = 1), so it is blind
    to how heads are split and merged — a head-split bug costs split_heads' share only."""
    B, T, C = randint(rng, 1, 2), randint(rng, 3, 6), 4
    x = randn(rng, B, T, C)
    state = {f"{n}.weight": randn(rng, C, C, scale=0.5) for n in ("w_q", "w_k", "w_v", "w_o")}
    module = ref.mha_reshape.MultiHeadAttention(C, 1, T).double()
    module.load_state_dict({k: v.double() for k, v in state.items()})
    with torch.no_grad():
        out = module(x.double()).float()
    return {"x": x, "args": [C, 1, T], "state": state, "want": out}


def split_heads(rng, ref):
    h = randint(rng, 2, 4)
    x = randn(rng, randint(rng, 1, 3), randint(rng, 2, 6), h * randint(rng, 2, 4))
    return {"x": x, "num_heads": h, "want": in_float64(ref.mha_reshape.split_heads, x, h)}


def merge_heads(rng, ref):
    y = randn(rng, randint(rng, 1, 3), randint(rng, 2, 4), randint(rng, 2, 6), randint(rng, 2, 4))
    return {"y": y, "want": in_float64(ref.mha_reshape.merge_heads, y)}


def split_heads_examples(rng, ref):
    """The lessons' shapes (W7-29, L2-04) and one with three heads, on arange inputs."""
    out = {}
    for label, shape, h in (("W7-29", [1, 3, 4], 2), ("L2-04", [2, 5, 8], 2), ("h=3", [2, 3, 6], 3)):
        x = torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape)
        out[label] = in_float64(ref.mha_reshape.split_heads, x, h)
    return out


def merge_heads_examples(rng, ref):
    return {
        "W7-29": in_float64(ref.mha_reshape.merge_heads, torch.arange(12, dtype=torch.float32).reshape(1, 2, 3, 2)),
        "L2-04": in_float64(ref.mha_reshape.merge_heads, torch.arange(80, dtype=torch.float64).reshape(2, 2, 5, 4), dtype=torch.float64),
    }


def cost_functions(rng, ref):
    m = ref.mha_reshape
    B, h, T, d = randint(rng, 2, 16), randint(rng, 2, 16), randint(rng, 3, 5000), randint(rng, 2, 4000)
    return {
        "B": B, "h": h, "T": T, "d": d,
        "score_elements": m.score_elements(B, h, T),
        "mha_param_count": m.mha_param_count(d),
        "mha_flops": m.mha_flops(T, d),
        "attention_flop_fraction": m.attention_flop_fraction(T, d),
        "attention_matrix_gib": m.attention_matrix_gib(B, h, T, 4, 3),
    }


CASES = [multi_head_attention, multi_head_attention_one_head, split_heads, merge_heads, split_heads_examples, merge_heads_examples, cost_functions]
