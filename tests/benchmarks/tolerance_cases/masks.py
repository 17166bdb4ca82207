"""Tolerance cases for skills masks and sdpa_masks: the shapes and magnitudes their hidden
suites draw (scores up to 1e4, fully blocked rows, L <= S, h=1 and h=C, bias on/off).

Inputs are rounded through float32 first: the suites draw float32 inputs directly and
compare with the reference run on those same values in float64, so the error to measure
is the computation's, not the rounding of 1e4-sized inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import randn


def _f32(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32).to(torch.float64)


def _int(g: torch.Generator, low: int, high: int) -> int:
    return int(torch.randint(low, high + 1, (1,), generator=g))


def cases(load) -> dict:
    """op name → seeded input maker for the masks and sdpa_masks references."""
    masks = load("masks")
    sdpa_masks = load("sdpa_masks")

    def apply(g):
        B, L, S = _int(g, 1, 3), _int(g, 1, 40), _int(g, 1, 64)
        scale = [1.0, 1e4][_int(g, 0, 1)]
        allowed = torch.rand(B, 1, L, S, generator=g) < 0.6
        fill = [float("-inf"), -1e9, -1e4][_int(g, 0, 2)]
        return (lambda s: masks.apply_mask(s, allowed, fill)), (_f32(randn(g, B, 2, L, S, scale=scale)),)

    def softmax(g):
        B, L, S = _int(g, 1, 3), _int(g, 1, 32), _int(g, 1, 64)
        # Scores of magnitude 1e4 are tested too, but not measured here: their weights are
        # one-hot up to values that underflow float32 (relative error 1 on e.g. 1e-40),
        # which measures underflow, not precision. Differences of float32 scores are exact
        # (Sterbenz), so the 1e4 case has the same computational error as these.
        scale = [1.0, 3.0, 5.0][_int(g, 0, 2)]
        allowed = torch.rand(B, 1, L, S, generator=g) < [0.3, 0.7][_int(g, 0, 1)]
        return (lambda s: masks.masked_softmax(s, allowed)), (_f32(randn(g, B, 2, L, S, scale=scale)),)

    def softmax_grad(g):
        # ∂L/∂scores of masked_softmax for L = Σ weights · grad_out, as the visible suite's
        # finite-gradient check compares it (float32 control inputs, scores ×2, some rows with
        # nothing allowed)
        B, L, S = _int(g, 1, 3), _int(g, 1, 10), _int(g, 1, 10)
        allowed = torch.rand(B, L, S, generator=g) < [0.3, 0.7][_int(g, 0, 1)]

        def fn(s, grad_out):
            with torch.enable_grad():
                s = s.detach().clone().requires_grad_(True)
                return torch.autograd.grad((masks.masked_softmax(s, allowed) * grad_out).sum(), s)[0]

        return fn, (_f32(randn(g, B, L, S, scale=2.0)), _f32(randn(g, B, L, S)))

    def sdpa(g):
        B, h = _int(g, 1, 3), _int(g, 1, 4)
        S = _int(g, 1, 64)
        L = _int(g, 1, S)
        d, d_v = _int(g, 1, 16), _int(g, 1, 16)
        allowed = torch.rand(B, 1, L, S, generator=g) < 0.6
        allowed[..., 0] = True
        causal = bool(_int(g, 0, 1))
        fn = lambda q, k, v: sdpa_masks.sdpa(q, k, v, allowed=allowed, causal=causal)
        return fn, (_f32(randn(g, B, h, L, d)), _f32(randn(g, B, h, S, d)), _f32(randn(g, B, h, S, d_v)))

    def mha(g):
        C = [4, 6, 8, 12][_int(g, 0, 3)]
        divisors = [h for h in range(1, C + 1) if C % h == 0]
        h = divisors[_int(g, 0, len(divisors) - 1)]
        bias = bool(_int(g, 0, 1))
        batch_first = bool(_int(g, 0, 1))
        B, T = _int(g, 1, 3), _int(g, 1, 10)
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
        key_allowed = torch.arange(T).unsqueeze(0) < torch.randint(1, T + 1, (B, 1), generator=g)
        state = {
            "in_proj_weight": _f32(randn(g, 3 * C, C, scale=C**-0.5)),
            "out_proj.weight": _f32(randn(g, C, C, scale=C**-0.5)),
        }
        if bias:
            state["in_proj_bias"] = _f32(randn(g, 3 * C, scale=0.1))
            state["out_proj.bias"] = _f32(randn(g, C, scale=0.1))

        def run(x):
            module = torch.nn.MultiheadAttention(C, h, bias=bias, batch_first=batch_first, dtype=x.dtype)
            module.load_state_dict({k: v.to(x.dtype) for k, v in state.items()})
            module.eval()
            with torch.no_grad():
                return sdpa_masks.mha_self_attention(module, x, allowed, key_allowed)

        return run, (_f32(randn(g, B, T, C)),)

    return {
        "masks.apply_mask": apply,
        "masks.masked_softmax": softmax,
        "masks.masked_softmax_grad": softmax_grad,
        "sdpa_masks.sdpa": sdpa,
        "sdpa_masks.mha_self_attention": mha,
    }
