"""Tolerance cases for skill custom_backward: the shapes the hidden suite draws (leading dims
(), [B] and [B,h], L ≠ S up to 64, d_k ≠ d_v, masks with at least one allowed key per row)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import randn


def _pick(g: torch.Generator, options):
    return options[int(torch.randint(0, len(options), (1,), generator=g))]


def _int(g: torch.Generator, low: int, high: int) -> int:
    return int(torch.randint(low, high + 1, (1,), generator=g))


def problem(g: torch.Generator):
    """(lead, L, S, d_k, d_v, allowed or None) as the hidden tests draw them."""
    lead = _pick(g, ((), (2,), (2, 3)))
    L, S = _pick(g, (1, _int(g, 2, 64))), _pick(g, (1, _int(g, 2, 64), 64))
    d_k, d_v = _int(g, 1, 16), _int(g, 1, 16)
    allowed = None
    if bool(torch.randint(0, 2, (1,), generator=g)):
        allowed = torch.rand(L, S, generator=g) < 0.6
        allowed[torch.arange(L), torch.randint(0, S, (L,), generator=g)] = True  # one allowed key per row
    return lead, L, S, d_k, d_v, allowed


def weights_for(scores: torch.Tensor, allowed) -> torch.Tensor:
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1)


def cases(load) -> dict:
    """op name → seeded input maker for the custom_backward reference."""
    cb = load("custom_backward")

    def softmax_backward(g):
        lead, L, S, *_, allowed = problem(g)
        a = weights_for(randn(g, *lead, L, S, scale=2.0), allowed)
        return cb.softmax_backward, (randn(g, *lead, L, S), a)

    def attention_backward(g):
        lead, L, S, d_k, d_v, allowed = problem(g)
        q, k, v = randn(g, *lead, L, d_k), randn(g, *lead, S, d_k), randn(g, *lead, S, d_v)
        scale = 1.0 / math.sqrt(d_k)
        a = weights_for((q @ k.transpose(-2, -1)) * scale, allowed)

        def fn(d_out, q, k, v, a):
            return torch.cat([t.reshape(-1) for t in cb.attention_backward(d_out, q, k, v, a, scale)])

        return fn, (randn(g, *lead, L, d_v), q, k, v, a)

    def attention(g):
        lead, L, S, d_k, d_v, allowed = problem(g)

        def fn(q, k, v, d_out):
            with torch.enable_grad():
                q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
                out = cb.attention(q, k, v, allowed)
                grads = torch.autograd.grad(out, (q, k, v), d_out)
            return torch.cat([out.detach().reshape(-1)] + [t.reshape(-1) for t in grads])

        return fn, (randn(g, *lead, L, d_k), randn(g, *lead, S, d_k), randn(g, *lead, S, d_v), randn(g, *lead, L, d_v))

    return {
        "custom_backward.softmax_backward": softmax_backward,
        "custom_backward.attention_backward": attention_backward,
        "custom_backward.attention": attention,
    }
