"""The visible qkv and mha_reshape suites can name the catalogue's common mistakes locally
(issue 19 §1): their control inputs (snapshots) hold the structure each mistake needs to show
— C ≠ head width (√C is not √d_k), d_v ≠ d_k, T < context_length, a square head where
x @ linear.weight still runs, causal=False — and each mistake's prediction differs from the
right answer and from every other prediction there, so the hint rule can name it
(autograder/testing/README.md, *The hint rule*). The hint_precision benchmark (--local)
measures the result on the variants; this checks the snapshot data directly, in milliseconds."""

from __future__ import annotations

import pytest
import torch
from conftest import ROOT

from autograder.testing.expect import Tol
from autograder.testing.signatures import distinct
from autograder.testing.snapshots import Snapshots

LOOSE = Tol(rtol=1e-4, atol=1e-4)  # wider than any visible check's tolerance


def _snap(skill: str) -> Snapshots:
    return Snapshots(ROOT / "tests" / "suites" / skill / f"test_{skill}_visible.py")


def _nameable(table: dict, want: torch.Tensor, *hints: str) -> None:
    """Each hint is in the table and its prediction differs from the right answer and from
    every other prediction (else the rule names nothing there)."""
    missing = [h for h in hints if h not in table]
    assert not missing, f"no prediction for {missing} (has {sorted(table)})"
    kept = distinct({h: t for h, t in table.items() if type(t) is torch.Tensor}, LOOSE, want)
    blind = [h for h in hints if h not in kept]
    assert not blind, f"{blind}: the prediction equals the right answer or another mistake's on this control input"


@pytest.fixture(scope="module")
def qkv():
    return _snap("qkv")


@pytest.fixture(scope="module")
def mha():
    return _snap("mha_reshape")


def test_attention_head_controls_tell_the_head_width_from_the_model_width(qkv):
    c = qkv["attention_head"]
    C, d, ctx = c["args"]
    assert C != d and C**0.5 != d and c["x"].size(1) < ctx == c["x_full"].size(1)
    _nameable(c["mistakes"], c["want"], "qkv/scale-by-model-width", "qkv/softmax-wrong-axis", "qkv/mask-polarity-inverted")
    square = c["square"]
    Cs, ds, ctx_s = square["args"]
    assert Cs == ds and square["x"].size(1) < ctx_s == square["x_full"].size(1)
    _nameable(square["mistakes"], square["want"], "qkv/linear-weight-not-transposed")


def test_single_head_attention_control_has_three_widths_and_an_unmasked_part(qkv):
    c = qkv["single_head_attention"]
    C, d_k, d_v = c["x"].size(-1), c["w_q"].size(-1), c["w_v"].size(-1)
    assert len({C, d_k, d_v}) == 3 and c["x"].size(1) >= 3
    _nameable(
        c["mistakes_out"],
        c["want_out"],
        "qkv/scale-by-model-width",
        "qkv/scale-by-value-width",
        "qkv/divide-by-dk",
        "qkv/no-scaling",
    )
    _nameable(c["mistakes_out_unmasked"], c["want_out_unmasked"], "qkv/causal-flag-ignored")


def test_scores_and_scale_controls_hold_every_named_mistake(qkv):
    c = qkv["scale_scores"]
    _nameable(
        c["mistakes"],
        c["want"],
        "qkv/divide-by-dk",
        "qkv/no-scaling",
        "qkv/scale-multiplied",
        "qkv/scale-by-score-width",
        "qkv/sqrt-precedence",
    )
    first, flat, second = qkv["attention_scores"]["inputs"]
    _nameable(first["mistakes_dot_t"], first["want"], "qkv/missing-transpose")  # q @ k.T runs on this batched k
    # no leading dim: k.transpose(1, 2) raises its own error there (blind tester R-AW)
    assert flat["k"].dim() == 2 and "qkv/transpose-fixed-axes" in flat["mistakes_raised"], flat["mistakes_raised"]
    for c in (first, second):
        _nameable(c["mistakes"], c["want"], "qkv/keys-times-queries", "qkv/scores-prescaled")
    week7 = qkv["week7"]
    _nameable(week7["scale_mistakes"], week7["scaled"], "qkv/divide-by-dk", "qkv/scale-multiplied")


def test_multi_head_attention_control_names_the_module_mistakes(mha):
    c = mha["multi_head_attention"]
    C, h, _ = c["args"]
    assert 1 < h < C
    _nameable(
        c["mistakes"],
        c["want"],
        "mha_reshape/scale-by-model-width",
        "mha_reshape/missing-output-projection",
        "mha_reshape/no-causal-mask",
        "mha_reshape/softmax-wrong-axis",
    )
    # x @ linear.weight leaves W_O right in the lessons' listing: the weights name it
    _nameable(c["mistakes_weights"], c["want_weights"], "mha_reshape/linear-weight-not-transposed")
