"""Snapshot cases of the visible qkv suite: seeded inputs, the reference's outputs and the
named mistakes' outputs on them (`make snapshots` → snapshots/qkv.json). Instructors only:
students get the data file, never the code that replays a mistake."""

from __future__ import annotations

import torch
from course import week07 as w7

from autograder.testing import in_float64, randint, randn, sibling, weight

signatures = sibling(__file__, "mistakes")


def _random_case(rng):
    B, T, C, d_k, d_v = randint(rng, 1, 3), randint(rng, 2, 9), randint(rng, 3, 8), randint(rng, 2, 5), randint(rng, 1, 5)
    return randn(rng, B, T, C), weight(rng, C, d_k), weight(rng, C, d_k), weight(rng, C, d_v)


def _projection_mistakes(x, w_q, w_k, w_v) -> dict:
    """Q, K, V name → what project_qkv returns there when the projections are mixed up (or a
    square matrix is used transposed)."""
    return {name: signatures.projections(x, w_q, w_k, w_v, name) for name in "QKV"}


def project_qkv(rng, ref):
    x, w_q, w_k, w_v = _random_case(rng)
    return {
        "x": x,
        "w_q": w_q,
        "w_k": w_k,
        "w_v": w_v,
        "want": in_float64(ref.qkv.project_qkv, x, w_q, w_k, w_v),
        "mistakes": _projection_mistakes(*(t.double() for t in (x, w_q, w_k, w_v))),
    }


def _dot_t(q, k) -> dict:
    """`q @ k.T` on a batched k (.T reverses every axis) where the shapes happen to let it run:
    a second signature of the missing transpose, beside `q @ k` (one hint id holds one
    prediction per table, so the suites diagnose this table after the first)."""
    try:
        return {"qkv/missing-transpose": q.double() @ k.double().permute(*reversed(range(k.dim())))}
    except RuntimeError:
        return {}


def attention_scores(rng, ref):
    """Three fixed shapes, random values: batched L ≠ S with B = d = S = 2 (where `q @ k.T`, which
    reverses every axis of a batched k, still runs), no leading dim (where `k.transpose(1, 2)`
    raises its own error: with two leading dims it raises the same words as `q @ k.T`, and so
    named neither — blind tester R-AW got no hint) and two leading dims with L ≠ S."""
    inputs = []
    for lead, L, S, d in (((2,), 3, 2, 2), ((), 3, 4, 2), ((2, 3), 4, 5, 3)):
        q, k = randn(rng, *lead, L, d), randn(rng, *lead, S, d)
        inputs.append(
            {
                "q": q,
                "k": k,
                "want": in_float64(ref.qkv.attention_scores, q, k),
                "mistakes": signatures.scores(q.double(), k.double()),
                "mistakes_dot_t": _dot_t(q, k),
                "mistakes_raised": signatures.scores_raised(q, k),
            }
        )
    return {"inputs": inputs}


def scale_scores(rng, ref):
    s, d_k = randn(rng, 2, 4, 5, scale=3.0), randint(rng, 3, 64)
    return {
        "scores": s,
        "d_k": d_k,
        "want": in_float64(ref.qkv.scale_scores, s, d_k),
        "mistakes": {**signatures.scale(s.double(), d_k), **signatures.sqrt_precedence(s.double(), d_k)},
    }


def weighted_values(rng, ref):
    p, v = torch.softmax(randn(rng, 2, 4, 6), -1), randn(rng, 2, 6, 3)
    return {"weights": p, "v": v, "want": in_float64(ref.qkv.weighted_values, p, v)}


def causal_uniform_mean(rng, ref):
    """Two controls: x [2, T, 3], and x [T', 3] with no leading axis and T' ≠ 3, where code
    written for [B, T, C] alone (``x.shape[1]``, ``cumsum(dim=1)``) raises or runs along C: the
    docstring's [..., T, C] checked before the hidden tests (blind tester R-BF scored full
    local marks with it)."""
    x = randn(rng, 2, randint(rng, 2, 8), 3)
    flat = randn(rng, randint(rng, 4, 8), 3)
    return {
        "x": x,
        "want": in_float64(ref.qkv.causal_uniform_mean, x),
        "mistakes": signatures.uniform_mean(x),
        "mistakes_raised": signatures.uniform_mean_raised(x),
        "flat": {
            "x": flat,
            "want": in_float64(ref.qkv.causal_uniform_mean, flat),
            "mistakes": signatures.uniform_mean(flat),
            "mistakes_raised": signatures.uniform_mean_raised(flat),
        },
    }


def single_head_attention(rng, ref):
    """Fixed shape B=2, T=5, C=6, d_k=3, d_v=4 (C ≠ d_k ≠ d_v, so scaling by √C or √d_v is not
    √d_k; T ≥ 3), random values; causal (the default) and causal=False on the same inputs."""
    x, w_q, w_k, w_v = randn(rng, 2, 5, 6), weight(rng, 6, 3), weight(rng, 6, 3), weight(rng, 6, 4)
    args64 = (x.double(), w_q.double(), w_k.double(), w_v.double())
    case = {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v}
    for causal, key in ((True, ""), (False, "_unmasked")):
        out, weights = in_float64(ref.qkv.single_head_attention, x, w_q, w_k, w_v, causal=causal)
        variants = signatures.attention_chain(*args64, causal=causal)
        case |= {
            f"want_out{key}": out,
            f"want_weights{key}": weights,
            f"mistakes_out{key}": signatures.outputs(variants),
            f"mistakes_weights{key}": signatures.weights(variants),
        }
    return case


def _head(ref, args, state, x):
    head = ref.qkv.AttentionHead(*args).double()
    head.load_state_dict({k: v.double() for k, v in state.items()})
    with torch.no_grad():
        return head(x.double()).float()


def attention_head(rng, ref):
    """AttentionHead on two control heads, both with T < context_length (an unsliced mask
    breaks there, and `x_full`, T = context_length, tells why; a `T >= context_length` check
    does not): C ≠ head_size (√C is not √d_k) and a square one, C = head_size (where
    x @ linear.weight still runs)."""
    x, w_q, w_k, _ = _random_case(rng)
    C, d = x.size(-1), w_q.size(1)
    w_v = weight(rng, C, d)
    ctx = x.size(1) + randint(rng, 0, 3)
    state = {"query.weight": w_q.T.contiguous(), "key.weight": w_k.T.contiguous(), "value.weight": w_v.T.contiguous()}
    x_full = torch.cat([x, randn(rng, x.size(0), ctx - x.size(1), C)], dim=1)
    Cs, Ts = 5, 4  # context_length 5
    square_state = {f"{n}.weight": weight(rng, Cs, Cs).T.contiguous() for n in ("query", "key", "value")}
    xs_full = randn(rng, 2, Ts + 1, Cs)
    xs = xs_full[:, :Ts].contiguous()
    return {
        "x": x,
        "args": [C, d, ctx],
        "state": state,
        "want": _head(ref, [C, d, ctx], state, x),
        "x_full": x_full,
        "mistakes": signatures.head_chain(x, state, ctx),
        "square": {
            "x": xs,
            "args": [Cs, Cs, Ts + 1],
            "state": square_state,
            "want": _head(ref, [Cs, Cs, Ts + 1], square_state, xs),
            "x_full": xs_full,
            "mistakes": signatures.head_chain(xs, square_state, Ts + 1),
        },
    }


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
        "project_qkv": {name: signatures.swapped_projections(products, name) for name in products},
        "q": q,
        "k": k,
        "v": v,
        "causal_mask_8": ref.masks.causal_mask(8),  # AttentionHead(4, 2, 8)'s buffer
        "scores_mistakes": signatures.scores(q, k),
        "scores_mistakes_dot_t": _dot_t(q, k),  # [2,2,2] q and k: q @ k and q @ k.T both run
        "raw": raw,
        "scaled": in_float64(ref.qkv.scale_scores, raw, 2),
        "scale_mistakes": {
            **signatures.scale(raw, 2),
            **signatures.sqrt_precedence(raw, 2),
        },  # at d_k = 2, d_k ** 1/2 is 1: no scaling and the precedence slip predict the same, so neither is named here
        "weights": weights,
        "mixed": in_float64(ref.qkv.weighted_values, weights, v),
        "mixed_mistakes": {"qkv/transposed-weights": weights.transpose(-2, -1) @ v},
        "uniform_mean": in_float64(ref.qkv.causal_uniform_mean, ex.x),
        "uniform_mean_mistakes": signatures.uniform_mean(ex.x),
        "mistakes_out": signatures.outputs(variants),
        "mistakes_weights": signatures.weights(variants),
        # AttentionHead(4, 2, 8) with these weights: at C = 4, d_k = 2, √C = d_k, so scaling by √C and by d_k predict the same
        "head_mistakes": signatures.head_chain(
            ex.x, {f"{n}.weight": w.T.contiguous() for n, w in (("query", ex.w_q), ("key", ex.w_k), ("value", ex.w_v))}, 8
        ),
    }


def square_probe(rng, ref):
    """project_qkv on a square float64 input (C = d_k = d_v = 4): where X·Wᵀ raises on the
    tests' shapes, it runs here and its answer names the mistake
    (course.qkv_data.square_diagnosis)."""
    x = randn(rng, 2, 3, 4, dtype=torch.float64)
    w = [weight(rng, 4, 4, dtype=torch.float64) for _ in range(3)]
    return {"project_qkv": {"args": [x, *w], "want": ref.qkv.project_qkv(x, *w), "mistakes": _projection_mistakes(x, *w)}}


CASES = [
    week7,
    project_qkv,
    attention_scores,
    scale_scores,
    weighted_values,
    causal_uniform_mean,
    single_head_attention,
    attention_head,
    context_check,
    square_probe,
]
