"""Fixed case kinds of the mha_reshape and custom_backward hidden suites (issue 16 §1): the
structure a mistake needs to show — L ≥ 2 and S ≥ 3, d_k ≥ 2, a blocked key in every
masked problem, a padded key in every padding, 1 < h < C for the "some" head kind — holds on
every seed, so a deterministic mistake costs the same points whatever the seed. The
hint_precision benchmark measures the result on the variants; this checks the input makers
directly, on many seeds, in milliseconds."""

from __future__ import annotations

import sys

import pytest
import torch
from conftest import ROOT

from autograder.testing.siblings import sibling

SEEDS = range(60)


@pytest.fixture(scope="module")
def suites():
    path = str(ROOT / "tests" / "suites")  # the suites import `course` from here
    added = path not in sys.path
    if added:
        sys.path.insert(0, path)
    try:
        yield {
            skill: sibling(ROOT / "tests" / "suites" / skill / "x.py", f"test_{skill}_hidden")
            for skill in ("custom_backward", "mha_reshape")
        }
    finally:
        if added:
            sys.path.remove(path)


def _rng(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _check_problem(cb, kind: dict, seed: int) -> None:
    q, k, v, allowed, d_out = cb._problem(_rng(seed), torch.float64, **kind)
    lead, lengths, dims = kind.get("lead", (2,)), kind.get("lengths", "L<S"), kind.get("dims", "d_k≠d_v")
    L, S, d_k, d_v = q.size(-2), k.size(-2), q.size(-1), v.size(-1)
    assert tuple(q.shape[:-2]) == tuple(lead) and L >= 2 and S >= 3, (kind, seed, q.shape, k.shape)
    assert {"L<S": L < S, "L=S": L == S, "L>S": L > S}[lengths], (kind, seed, L, S)
    if isinstance(dims, int):
        assert d_k == d_v == dims
    else:
        assert d_k >= 2 and (d_k == d_v) == (dims == "d_k=d_v"), (kind, seed, d_k, d_v)
    assert tuple(d_out.shape) == (*lead, L, d_v)
    if kind.get("mask", "none") == "none":
        assert allowed is None
        return
    assert allowed.shape == (L, S) and bool(allowed.any(-1).all()), (kind, seed)  # every query reads a key
    assert int(allowed.sum(-1).max()) >= 2 and not bool(allowed.all()), (
        kind,
        seed,
        allowed,
    )  # some query mixes two keys; some key is blocked


@pytest.mark.parametrize("seed", SEEDS)
def test_custom_backward_cases_have_their_kind_on_every_seed(suites, seed):
    cb = suites["custom_backward"]
    for lead, lengths, mask in cb.SOFTMAX_KINDS:
        _check_problem(cb, {"lead": lead, "lengths": lengths, "mask": mask}, seed)
    for table in (cb.BACKWARD_KINDS, cb.FUNCTION_KINDS):
        for lead, lengths, dims, mask in table:
            _check_problem(cb, {"lead": lead, "lengths": lengths, "dims": dims, "mask": mask, "t_max": 32}, seed)
    for kind in (
        {"lead": (), "lengths": "L=S", "dims": "d_k=d_v", "mask": "causal", "t_max": 6},  # dtype test, Function structure test
        {"lead": (2,), "lengths": "L<S", "mask": "none", "t_max": 8},  # the gate
        {"lead": (2,), "mask": "causal", "t_max": 6},
    ):  # the rule test's call
        _check_problem(cb, kind, seed)


def test_custom_backward_scale_is_never_one(suites):
    """attention_backward's case n uses (1/√d_k, 0.5, 2.0)[n % 3]: 1/√d_k only where d_k ≥ 2."""
    cb = suites["custom_backward"]
    for n, (_, _, dims, _) in enumerate(cb.BACKWARD_KINDS, start=1):
        assert not (n % 3 == 0 and dims == 1), f"case {n}: scale 1/√1 = 1 hides every scale mistake"


@pytest.mark.parametrize("seed", SEEDS)
def test_mha_reshape_kinds_hold_on_every_seed(suites, seed):
    m = suites["mha_reshape"]
    g = _rng(seed)
    for c_max in (8, 12, 16, 24):
        C = m._width(g, "some", c_max)
        h = m._heads(g, C, "some")
        assert 1 < h < C and C % h == 0 and C <= c_max, (C, h)
    for B in (1, 2, 3):
        for T in (2, 3, 9, 24):
            for right in (True, False):
                allowed = m._key_allowed(g, B, T, right=right)
                assert bool(allowed[:, 0].all()) and not bool(allowed.all()), (B, T, right, allowed)
                assert T < 3 or bool(allowed[0, :2].all()), (
                    B,
                    T,
                    right,
                    allowed,
                )  # query 0 would read key 1 without the causal mask
    for heads, length, *_ in m.MHA_KINDS:
        B, T, C, h = m._sizes(g, heads, length)
        assert C % h == 0 and B * h * T * T <= 1 << 15
        assert {"one": h == 1, "all": h == C, "some": 1 < h < C}[heads], (heads, C, h)
        assert T == {"1": 1, "2": 2}.get(length, T) and (length == "1" or T >= 2)


def test_mha_reshape_every_head_mistake_has_a_regular_kind(suites):
    """Heads that a transpose, interleaving or reversal changes (1 < h < C, T ≥ 2) are in
    every all-or-nothing test of a reshape or the module, whatever the seed."""
    m = suites["mha_reshape"]
    assert any(heads == "some" and length != "1" for heads, length in m.SPLIT_KINDS)
    assert any(h != 1 and T != 1 and d != 1 for h, T, d in m.MERGE_KINDS)
    assert any(heads == "some" and length != "1" for heads, length, *_ in m.MHA_KINDS)
    assert any(longer for _, _, longer, _, _ in m.MHA_KINDS) and any(
        not longer for _, _, longer, _, _ in m.MHA_KINDS
    )  # ctx > T and ctx = T
    assert any(bias for *_, bias, _ in m.MHA_KINDS) and any(padding for *_, padding in m.MHA_KINDS)
    assert any(heads == "some" for heads, _, _ in m.WEIGHTS_KINDS)
