"""The worker's cheap tensor formatting (autograder/sandbox/tensor_text.py) prints exactly
what torch prints: every case below is compared with torch's own ``_str``. A torch upgrade
that changes the format fails here, not in a student's debugging output."""

from __future__ import annotations

import math

import pytest
import torch

from autograder.sandbox import tensor_text

OPTIONS = [
    {},
    {"precision": 2},
    {"precision": 7, "linewidth": 120},
    {"linewidth": 40},
    {"sci_mode": True},
    {"sci_mode": False},
    {"threshold": 10, "edgeitems": 2},
    {"profile": "short"},
    {"profile": "full"},
]


def _cases() -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(20261205)
    cases: list[tuple[str, torch.Tensor]] = []
    shapes = [(), (1,), (5,), (3, 4), (2, 3, 8, 8), (1, 1, 7), (40, 30), (2000,), (3, 500), (7, 6, 5, 4)]
    for shape in shapes:
        base = torch.randn(shape, generator=g, dtype=torch.float64)
        cases += [
            (f"float32 {shape}", base.float()),
            (f"float64 {shape}", base),
            (f"float16 {shape}", base.half()),
            (f"bfloat16 {shape}", base.bfloat16()),
            (f"large {shape}", (base * 1e9).float()),
            (f"small {shape}", (base * 1e-6).float()),
            (f"integers as floats {shape}", (base * 100).round().float()),
            (f"int64 {shape}", (base * 1000).long()),
            (f"int32 {shape}", (base * 10).int()),
            (f"uint8 {shape}", (base.abs() * 50).to(torch.uint8)),
            (f"bool {shape}", base > 0),
            (f"zeros {shape}", torch.zeros(shape)),
        ]
    special = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1.5, -2.25])
    cases += [
        ("non-finite", special),
        ("only non-finite", torch.tensor([math.nan, math.inf, -math.inf])),
        ("non-finite integers", torch.tensor([math.nan, 3.0, -4.0, math.inf])),
        ("non-contiguous", torch.randn(6, 5, generator=g).t()),
        ("strided", torch.randn(9, 8, generator=g)[::2, 1::3]),
        ("requires grad", torch.randn(3, 4, generator=g, requires_grad=True)),
        ("grad_fn", torch.randn(3, 4, generator=g, requires_grad=True) * 2),
        ("grad_fn sum", torch.randn(3, generator=g, requires_grad=True).sum()),
        ("parameter", torch.nn.Parameter(torch.randn(2, 3, generator=g))),
        ("empty", torch.empty(0)),
        ("empty 2-d", torch.empty(3, 0)),
        ("empty int", torch.empty(0, 4, dtype=torch.int32)),
        ("mask -inf", torch.randn(4, 4, generator=g).masked_fill(torch.ones(4, 4).triu(1).bool(), -math.inf)),
        ("weights", torch.randn(2, 3, 5, 5, generator=g).softmax(-1)),
        ("-1e9 fill", torch.randn(3, 3, generator=g).masked_fill(torch.eye(3).bool(), -1e9)),
        ("wide", torch.randn(3, 33, generator=g) * 1000),
    ]
    return cases


CASES = _cases()


@pytest.fixture
def print_options():
    saved = torch._tensor_str.get_printoptions()
    yield torch.set_printoptions
    torch.set_printoptions(**saved)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_fast_tensor_text_is_torchs_own_for_every_case(options, print_options):
    print_options(**options)
    differ = []
    for name, t in CASES:
        want = torch._tensor_str._str(t)
        got = tensor_text.fast_str(t)
        assert got is not None, f"{name}: took torch's own path"
        if got != want:
            differ.append(f"{name}:\n{want}\n---\n{got}")
    assert not differ, "\n\n".join(differ[:3])


@pytest.mark.parametrize(
    "tensor",
    [
        torch.randn(3, dtype=torch.complex64),
        torch.randn(4, 4).to_sparse(),
        torch.empty(3, device="meta"),
        torch.randn(3)._neg_view(),
    ],
    ids=["complex", "sparse", "meta", "neg-view"],
)
def test_tensors_outside_the_common_case_go_to_torchs_own_formatting(tensor):
    assert tensor_text.fast_str(tensor) is None


def test_a_subclass_and_forward_ad_go_to_torchs_own_formatting():
    class Sub(torch.Tensor):
        pass

    assert tensor_text.fast_str(torch.randn(2).as_subclass(Sub)) is None
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        dual = fwAD.make_dual(torch.randn(3), torch.randn(3))
        assert tensor_text.fast_str(dual) is None


def test_printing_a_tensor_runs_a_handful_of_operators_instead_of_thousands():
    """What the module is for: a [2,3,8,8] tensor took ~4 500 operators to format (each
    recorded with its stack where a rule is judged); now it takes a few."""
    from torch.profiler import ProfilerActivity, profile

    t = torch.randn(2, 3, 8, 8)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        tensor_text.fast_str(t)
    fast = len(prof.events())
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch._tensor_str._str(t)
    slow = len(prof.events())
    assert fast <= 10 and slow > 100 * fast, (fast, slow)
