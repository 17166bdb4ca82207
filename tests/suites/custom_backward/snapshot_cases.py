"""Snapshot cases of the visible custom_backward suite: inputs, the reference's outputs and
the named mistakes' outputs (`make snapshots` → snapshots/custom_backward.json). Instructors
only: students get the data file, never the code that replays a mistake or a backward."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from course import week07 as w7

from autograder.testing import in_float64, randint, randn, sibling

signatures = sibling(__file__, "mistakes")


def _week7_qkv():
    ex = w7.example(torch.float32)
    return ex.x @ ex.w_q, ex.x @ ex.w_k, ex.x @ ex.w_v


def _causal(L: int) -> torch.Tensor:
    return torch.tril(torch.ones(L, L, dtype=torch.bool))


def _weights(q, k, allowed=None) -> torch.Tensor:
    """softmax(q kᵀ/√d, blocked −∞) in float64: an *input* of attention_backward."""
    scores = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.size(-1))
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, -1)


def week7_attention_backward(rng, ref):
    q, k, v = _week7_qkv()
    d_out = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0], [0.5, 2.0]]])
    weights = _weights(q, k, _causal(2))
    grads = in_float64(ref.custom_backward.attention_backward, d_out, q, k, v, weights, 1 / math.sqrt(2))
    variants = signatures.attention_backward(d_out, q, k, v, weights.float(), 1 / math.sqrt(2))
    return {
        "q": q,
        "k": k,
        "v": v,
        "d_out": d_out,
        "weights": weights.float(),
        "want": grads,
        "mistakes": [signatures.component(variants, i) for i in range(3)],
    }


def attention_backward(rng, ref):
    lead, L, S, d_k, d_v = (2, 2), randint(rng, 2, 6), randint(rng, 2, 7), randint(rng, 2, 5), randint(rng, 1, 5)
    q, k, v, d_out = randn(rng, *lead, L, d_k), randn(rng, *lead, S, d_k), randn(rng, *lead, S, d_v), randn(rng, *lead, L, d_v)
    weights = _weights(q, k)
    grads = in_float64(ref.custom_backward.attention_backward, d_out, q, k, v, weights, 1 / math.sqrt(d_k))
    variants = signatures.attention_backward(d_out, q, k, v, weights.float(), 1 / math.sqrt(d_k))
    return {
        "q": q,
        "k": k,
        "v": v,
        "d_out": d_out,
        "weights": weights.float(),
        "scale": 1 / math.sqrt(d_k),
        "want": grads,
        "mistakes": [signatures.component(variants, i) for i in range(3)],
    }


def attention_forward(rng, ref):
    q, k, v = _week7_qkv()
    L, S, d = randint(rng, 2, 6), randint(rng, 2, 6), randint(rng, 2, 4)
    rq, rk, rv = randn(rng, 3, L, d), randn(rng, 3, S, d), randn(rng, 3, S, d + 1)  # d_v = d_k + 1: a scale by 1/√d_v shows
    # a mask that matters, broadcast over the batch: every query keeps key 0 and loses the last
    # (attention() that drops `allowed` scored full marks: blind tester R-Q)
    allowed = randn(rng, 1, L, S) > 0
    allowed[..., 0], allowed[..., -1] = True, False
    return {
        "week7": in_float64(ref.custom_backward.attention, q, k, v, _causal(2)),
        "week7_mistakes": signatures.attention_forward(q, k, v, _causal(2)),
        "q": rq,
        "k": rk,
        "v": rv,
        "want": in_float64(ref.custom_backward.attention, rq, rk, rv),
        "mistakes": signatures.attention_forward(rq, rk, rv),
        "allowed": allowed,
        "want_masked": in_float64(ref.custom_backward.attention, rq, rk, rv, allowed),
        "mistakes_masked": signatures.attention_forward(rq, rk, rv, allowed),
    }


def week7_chain(rng, ref):
    """dL/dW_Q of Week 7 §16 (mean cross-entropy of the last positions) through the reference attention."""
    ex = w7.example(torch.float64)
    wq = ex.w_q.clone().requires_grad_(True)
    out = ref.custom_backward.attention(ex.x @ wq, ex.x @ ex.w_k, ex.x @ ex.w_v, _causal(ex.x.size(1)))
    loss = F.cross_entropy(out[:, -1] @ ex.w_vocab, ex.targets)
    (grad,) = torch.autograd.grad(loss, [wq])
    return {
        "grad": grad.float(),
        "loss_mistakes": signatures.week7_loss_mistakes(torch.float32),
        "grad_mistakes": signatures.week7_grad_mistakes(torch.float32),
    }


def softmax_backward(rng, ref):
    """Week 7's P_A, P_B (and their scores Ŝ: autograd of torch's softmax gives the expected
    S̄ in the test) with an upstream Ā, and a control input."""
    q, k, _ = (t.double() for t in _week7_qkv())
    scores = ((q @ k.transpose(-2, -1)) / math.sqrt(2)).masked_fill(~_causal(2), float("-inf"))  # Ŝ_A, Ŝ_B (Week 7 §11)
    weights = torch.softmax(scores, -1)
    d_weights = torch.tensor([[[0.5, -1.0], [2.0, 1.0]], [[-0.3, 0.7], [1.0, -2.0]]], dtype=torch.float64)
    rand_scores = randn(rng, 2, randint(rng, 2, 5), randint(rng, 2, 6), dtype=torch.float64)
    rand_a, rand_da = torch.softmax(rand_scores, -1).float(), randn(rng, *rand_scores.shape)
    return {
        "scores": scores,
        "weights": weights,
        "d_weights": d_weights,
        "mistakes": signatures.softmax_backward(d_weights, weights),
        "rand_scores": rand_scores,
        "rand_a": rand_a,
        "rand_da": rand_da,
        "rand_mistakes": signatures.softmax_backward(rand_da, rand_a),
    }


def gradcheck(rng, ref):
    """Two float64 problems (causal [2,3,2]; unmasked L×3, S×3, S×2) with what gradcheck needs."""
    L, S = randint(rng, 2, 4), randint(rng, 2, 4)
    problems = [
        (
            randn(rng, 2, 3, 2, dtype=torch.float64),
            randn(rng, 2, 3, 2, dtype=torch.float64),
            randn(rng, 2, 3, 2, dtype=torch.float64),
            _causal(3),
        ),
        (
            randn(rng, L, 3, dtype=torch.float64),
            randn(rng, S, 3, dtype=torch.float64),
            randn(rng, S, 2, dtype=torch.float64),
            None,
        ),
    ]
    return {"problems": [signatures.gradcheck_problem(*p) for p in problems]}


def square_problem(rng, ref):
    """Fixed data of course.custom_backward_data.square_diagnosis (names a mistake from a shape error)."""
    return signatures.square_problem()


CASES = [
    week7_attention_backward,
    attention_backward,
    attention_forward,
    week7_chain,
    softmax_backward,
    gradcheck,
    square_problem,
]
