"""Snapshot cases of the visible qkv suite: seeded inputs and the reference's outputs
(`make snapshots` → snapshots/qkv.json). Instructors only: students get the data file."""

from __future__ import annotations

import torch

from autograder.release.snapshots import in_float64
from autograder.testing.inputs import randint, randn, weight


def _random_case(rng):
    B, T, C, d_k, d_v = randint(rng, 1, 3), randint(rng, 2, 9), randint(rng, 3, 8), randint(rng, 2, 5), randint(rng, 1, 5)
    return randn(rng, B, T, C), weight(rng, C, d_k), weight(rng, C, d_k), weight(rng, C, d_v)


def project_qkv(rng, ref):
    x, w_q, w_k, w_v = _random_case(rng)
    return {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "want": in_float64(ref.qkv.project_qkv, x, w_q, w_k, w_v)}


def attention_scores(rng, ref):
    q, k = randn(rng, 2, randint(rng, 2, 7), 3), randn(rng, 2, randint(rng, 2, 7), 3)
    return {"q": q, "k": k, "want": in_float64(ref.qkv.attention_scores, q, k)}


def scale_scores(rng, ref):
    s, d_k = randn(rng, 2, 4, 5, scale=3.0), randint(rng, 3, 64)
    return {"scores": s, "d_k": d_k, "want": in_float64(ref.qkv.scale_scores, s, d_k)}


def weighted_values(rng, ref):
    p, v = torch.softmax(randn(rng, 2, 4, 6), -1), randn(rng, 2, 6, 3)
    return {"weights": p, "v": v, "want": in_float64(ref.qkv.weighted_values, p, v)}


def causal_uniform_mean(rng, ref):
    x = randn(rng, 2, randint(rng, 2, 8), 3)
    return {"x": x, "want": in_float64(ref.qkv.causal_uniform_mean, x)}


def single_head_attention(rng, ref):
    x, w_q, w_k, w_v = _random_case(rng)
    out, weights = in_float64(ref.qkv.single_head_attention, x, w_q, w_k, w_v)
    return {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "want_out": out, "want_weights": weights}


def attention_head(rng, ref):
    x, w_q, w_k, _ = _random_case(rng)
    C, d = x.size(-1), w_q.size(1)
    w_v = weight(rng, C, d)
    ctx = x.size(1) + randint(rng, 0, 3)
    state = {"query.weight": w_q.T.contiguous(), "key.weight": w_k.T.contiguous(), "value.weight": w_v.T.contiguous()}
    head = ref.qkv.AttentionHead(C, d, ctx).double()
    head.load_state_dict({k: v.double() for k, v in state.items()})
    with torch.no_grad():
        out = head(x.double()).float()
    return {"x": x, "args": [C, d, ctx], "state": state, "want": out}


CASES = [project_qkv, attention_scores, scale_scores, weighted_values, causal_uniform_mean, single_head_attention, attention_head]
