"""Snapshot cases of the visible qkv suite: seeded inputs, the reference's outputs and the
named mistakes' outputs on them (`make snapshots` → snapshots/qkv.json). Instructors only:
students get the data file, never the code that replays a mistake."""

from __future__ import annotations

import torch

from autograder.testing import in_float64, randint, randn, sibling, weight
from course import week07 as w7

signatures = sibling(__file__, "mistakes")


def _random_case(rng):
    B, T, C, d_k, d_v = randint(rng, 1, 3), randint(rng, 2, 9), randint(rng, 3, 8), randint(rng, 2, 5), randint(rng, 1, 5)
    return randn(rng, B, T, C), weight(rng, C, d_k), weight(rng, C, d_k), weight(rng, C, d_v)


def project_qkv(rng, ref):
    x, w_q, w_k, w_v = _random_case(rng)
    return {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "want": in_float64(ref.qkv.project_qkv, x, w_q, w_k, w_v)}


def attention_scores(rng, ref):
    q, k = randn(rng, 2, randint(rng, 2, 7), 3), randn(rng, 2, randint(rng, 2, 7), 3)
    mistakes = {"qkv/keys-times-queries": k @ q.transpose(-2, -1)} if q.shape == k.shape else {}
    return {"q": q, "k": k, "want": in_float64(ref.qkv.attention_scores, q, k), "mistakes": mistakes}


def scale_scores(rng, ref):
    s, d_k = randn(rng, 2, 4, 5, scale=3.0), randint(rng, 3, 64)
    return {"scores": s, "d_k": d_k, "want": in_float64(ref.qkv.scale_scores, s, d_k), "mistakes": {"qkv/divide-by-dk": s / d_k, "qkv/no-scaling": s, **signatures.sqrt_precedence(s, d_k)}}


def weighted_values(rng, ref):
    p, v = torch.softmax(randn(rng, 2, 4, 6), -1), randn(rng, 2, 6, 3)
    return {"weights": p, "v": v, "want": in_float64(ref.qkv.weighted_values, p, v)}


def causal_uniform_mean(rng, ref):
    x = randn(rng, 2, randint(rng, 2, 8), 3)
    return {"x": x, "want": in_float64(ref.qkv.causal_uniform_mean, x), "mistakes": signatures.uniform_mean(x)}


def single_head_attention(rng, ref):
    x, w_q, w_k, w_v = _random_case(rng)
    out, weights = in_float64(ref.qkv.single_head_attention, x, w_q, w_k, w_v)
    variants = signatures.attention_chain(x.double(), *[m.double() for m in (w_q, w_k, w_v)])
    return {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "want_out": out, "want_weights": weights,
            "mistakes_out": signatures.outputs(variants), "mistakes_weights": signatures.weights(variants)}


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


def context_check(rng, ref):
    """Inputs only (nothing is compared with the reference): AttentionHead(C, C, ctx) — square
    projections, so a head that multiplies by nn.Linear's weight without transposing still
    runs — on T = ctx tokens (fits) and on T = ctx + 1 (must raise ValueError)."""
    C, ctx = randint(rng, 3, 6), randint(rng, 3, 6)
    state = {f"{n}.weight": weight(rng, C, C).T.contiguous() for n in ("query", "key", "value")}
    x = randn(rng, 2, ctx + 1, C)
    return {"args": [C, C, ctx], "state": state, "fits": x[:, :ctx].contiguous(), "longer": x}


def week7(rng, ref):
    """Week 7's worked example: the intermediate inputs a test feeds one function, the
    reference's outputs where the lessons print too few digits, and the mistakes' outputs."""
    ex = w7.example()
    products = {"Q": ex.x @ ex.w_q, "K": ex.x @ ex.w_k, "V": ex.x @ ex.w_v}
    q, k, v = products["Q"], products["K"], products["V"]
    raw = q @ k.transpose(-2, -1)
    weights = w7.t(w7.STATED["weights"]).clone()
    weights[:, 1] = w7.t(w7.STATED["final_weights_4dp"])
    variants = signatures.attention_chain(ex.x, ex.w_q, ex.w_k, ex.w_v)
    return {
        "project_qkv": {name: {"qkv/swapped-projections": products[o] for o in products if o != name} for name in products},
        "q": q, "k": k, "v": v, "causal_mask_8": ref.masks.causal_mask(8),  # AttentionHead(4, 2, 8)'s buffer
        "scores_mistakes": {"qkv/missing-transpose": q @ k, "qkv/keys-times-queries": k @ q.transpose(-2, -1)},
        "raw": raw, "scaled": in_float64(ref.qkv.scale_scores, raw, 2), "scale_mistakes": {"qkv/divide-by-dk": raw / 2, "qkv/no-scaling": raw, **signatures.sqrt_precedence(raw, 2)},  # at d_k = 2, d_k ** 1/2 is 1: no scaling and the precedence slip predict the same, so neither is named here
        "weights": weights, "mixed": in_float64(ref.qkv.weighted_values, weights, v), "mixed_mistakes": {"qkv/transposed-weights": weights.transpose(-2, -1) @ v},
        "uniform_mean": in_float64(ref.qkv.causal_uniform_mean, ex.x), "uniform_mean_mistakes": signatures.uniform_mean(ex.x),
        "mistakes_out": signatures.outputs(variants), "mistakes_weights": signatures.weights(variants),
    }


CASES = [week7, project_qkv, attention_scores, scale_scores, weighted_values, causal_uniform_mean, single_head_attention, attention_head, context_check]
