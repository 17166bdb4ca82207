"""Tolerance cases for skill qkv: the shapes and magnitudes the hidden suite draws."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _common import dims, randn, weight


def cases(load) -> dict:
    """op name → seeded input maker for the qkv reference."""
    qkv = load("qkv")

    def project(g):
        B, T, C, d = dims(g)
        return (
            lambda *a: torch.cat([t.reshape(-1) for t in qkv.project_qkv(*a)]),
            (randn(g, B, T, C), weight(g, C, d), weight(g, C, d), weight(g, C, d + 1)),
        )

    def scores(g):
        B, T, C, d = dims(g)
        S = int(torch.randint(1, 65, (1,), generator=g))
        return qkv.attention_scores, (randn(g, B, 2, T, d), randn(g, B, 2, S, d))

    def scale(g):
        B, T, C, d = dims(g)
        return (lambda s: qkv.scale_scores(s, d)), (randn(g, B, T, T, scale=10.0),)

    def weighted(g):
        B, T, C, d = dims(g)
        S = int(torch.randint(1, 65, (1,), generator=g))
        return qkv.weighted_values, (torch.softmax(randn(g, B, T, S), -1), randn(g, B, S, d))

    def uniform(g):
        B, T, C, d = dims(g)
        return qkv.causal_uniform_mean, (randn(g, B, T, C),)

    def single(g):
        B, T, C, d = dims(g)
        causal = bool(torch.randint(0, 2, (1,), generator=g))
        fn = lambda *a: torch.cat([t.reshape(-1) for t in qkv.single_head_attention(*a, causal=causal)])
        return fn, (randn(g, B, T, C), weight(g, C, d), weight(g, C, d), weight(g, C, d))

    def head(g):
        B, T, C, d = dims(g)
        state = {n: weight(g, C, d).T.contiguous() for n in ("query.weight", "key.weight", "value.weight")}

        def run(x):
            module = qkv.AttentionHead(C, d, 64).to(x.dtype)
            module.load_state_dict({k: v.to(x.dtype) for k, v in state.items()})
            with torch.no_grad():
                return module(x)

        return run, (randn(g, B, T, C),)

    return {
        "qkv.project_qkv": project,
        "qkv.attention_scores": scores,
        "qkv.scale_scores": scale,
        "qkv.weighted_values": weighted,
        "qkv.causal_uniform_mean": uniform,
        "qkv.single_head_attention": single,
        "qkv.AttentionHead": head,
    }
