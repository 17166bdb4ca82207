"""Tolerance cases for skill mha_reshape: the shapes and magnitudes the hidden suite draws."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import randn


def _int(g: torch.Generator, low: int, high: int) -> int:
    return int(torch.randint(low, high + 1, (1,), generator=g))


def _dims(g: torch.Generator) -> tuple[int, int, int, int]:
    """B, T, C, h with h | C, h = 1 and h = C included."""
    B, T, C = _int(g, 1, 3), _int(g, 1, 64), _int(g, 1, 16)
    divisors = [h for h in range(1, C + 1) if C % h == 0]
    return B, T, C, divisors[_int(g, 0, len(divisors) - 1)]


def cases(load) -> dict:
    """op name → seeded input maker for the mha_reshape reference."""
    mha = load("mha_reshape")

    def split(g):
        B, T, C, h = _dims(g)
        return (lambda x: mha.split_heads(x, h)), (randn(g, B, T, C),)

    def merge(g):
        B, T, C, h = _dims(g)
        return mha.merge_heads, (randn(g, B, h, T, C // h),)

    def module(g, part):
        B, T, C, h = _dims(g)
        bias = bool(_int(g, 0, 1))
        state = {}
        for name in ("w_q", "w_k", "w_v", "w_o"):
            state[f"{name}.weight"] = randn(g, C, C, scale=C**-0.5)
            if bias:
                state[f"{name}.bias"] = randn(g, C, scale=0.1)
        allowed = torch.rand(B, T, generator=g) > 0.4
        allowed[:, 0] = True
        key_allowed = allowed if _int(g, 0, 1) else None

        def run(x):
            m = mha.MultiHeadAttention(C, h, T, bias=bias).to(x.dtype)
            m.load_state_dict({k: v.to(x.dtype) for k, v in state.items()})
            with torch.no_grad():
                return m(x, key_allowed=key_allowed, return_weights=True)[part]

        return run, (randn(g, B, T, C),)

    def fraction(g):
        # attention_flop_fraction T/(T + 2d) computed in the input's dtype from its closed form
        # 4T²d / (8Td² + 4T²d): what a correct float32 implementation can do (issue 9 §4)
        T, d = _int(g, 1, 1 << 16), _int(g, 1, 8192)
        return (lambda td: 4 * td[0] ** 2 * td[1] / (8 * td[0] * td[1] ** 2 + 4 * td[0] ** 2 * td[1])), (
            torch.tensor([T, d], dtype=torch.float64),
        )

    def gib(g):
        # attention_matrix_gib B·h·T²·bytes·layers / 2³⁰ computed in the input's dtype
        sizes = [_int(g, 1, 64), _int(g, 1, 64), _int(g, 1, 1 << 16), 2 ** _int(g, 0, 2), _int(g, 1, 96)]
        return (lambda t: t[0] * t[1] * t[2] ** 2 * t[3] * t[4] / 2**30), (torch.tensor(sizes, dtype=torch.float64),)

    return {
        "mha_reshape.attention_flop_fraction": fraction,
        "mha_reshape.attention_matrix_gib": gib,
        "mha_reshape.split_heads": split,
        "mha_reshape.merge_heads": merge,
        "mha_reshape.MultiHeadAttention": lambda g: module(g, 0),  # the output [B,T,C]
        "mha_reshape.MultiHeadAttention.weights": lambda g: module(g, 1),  # the weights [B,h,T,T]
    }
