"""Snapshot cases of the visible row_softmax suite: control inputs, Week 7's head outputs and
the named mistakes' outputs on them (`make snapshots` → snapshots/row_softmax.json).
Instructors only: students get the data file, never the code that replays a mistake or the
attention head. Expected values of this suite are torch's own softmax on these inputs."""

from __future__ import annotations

import torch
from course import oracles
from course import week07 as w7

from autograder.testing import randint, randn, sibling

signatures = sibling(__file__, "mistakes")
NEG_INF = float("-inf")


def week7(rng, ref):
    """h_A, h_B (Week 7 §6/§16: the final-position head outputs), the logits h W_vocab, and
    the mistakes' outputs on the lessons' inputs."""
    h, w_vocab = oracles.week7_h(torch.float32), w7.example(torch.float32).w_vocab
    logits = h @ w_vocab
    targets = torch.tensor(w7.TARGETS)
    shifted = w7.t(w7.STATED["scaled_final_rows"], torch.float64) + 1e4
    return {
        "h": h,
        "logits": logits,
        "shifted": shifted,
        "mistakes": {
            "masked": signatures.softmax(w7.t(w7.STATED["masked_scaled"])),
            "final": signatures.softmax(w7.t(w7.STATED["scaled_final_rows"])),
            "shifted": signatures.softmax(shifted),
            "huge": signatures.softmax(torch.tensor([[1e4, 0.0, -1e4], [3e4, 3e4, NEG_INF]])),
            "log_softmax": signatures.log_softmax(logits),
            "log_softmax_big": signatures.log_softmax(torch.tensor([[0.0, -1e4, 5.0], [2e4, 1e4, -3e4]])),
            "cross_entropy": signatures.cross_entropy(logits, targets),
            "vocab_probs": signatures.vocab_probs(h, w_vocab),
            "vocab_via_softmax": signatures.vocab_via_softmax(h, w_vocab),
        },
    }


def softmax_rows(rng, ref):
    scores = randn(rng, 2, randint(rng, 2, 6), randint(rng, 2, 7), scale=3.0)
    return {"scores": scores, "mistakes": signatures.softmax(scores), "mistakes64": signatures.softmax(scores.double())}


def softmax_columns(rng, ref):
    columns = randn(rng, randint(rng, 3, 6), 4, scale=2.0)  # normalise each column: dim=0
    return {"scores": columns, "mistakes": {"0": signatures.softmax(columns, 0), "-2": signatures.softmax(columns, -2)}}


def log_softmax_rows(rng, ref):
    logits = randn(rng, randint(rng, 2, 5), randint(rng, 3, 9), scale=4.0)
    return {"logits": logits, "mistakes": signatures.log_softmax(logits), "mistakes64": signatures.log_softmax(logits.double())}


def cross_entropy(rng, ref):
    N, V = randint(rng, 2, 8), randint(rng, 2, 10)
    logits, targets = randn(rng, N, V, scale=3.0), torch.randint(0, V, (N,), generator=rng)
    return {
        "logits": logits,
        "targets": targets,
        "mistakes": signatures.cross_entropy(logits, targets),
        "mistakes64": signatures.cross_entropy(logits.double(), targets),
    }


def vocab_probs(rng, ref):
    B, T, C, V = 2, randint(rng, 2, 5), randint(rng, 2, 6), randint(rng, 3, 9)
    h, w_vocab = randn(rng, B, T, C), randn(rng, C, V, scale=C**-0.5)
    return {
        "h": h,
        "w_vocab": w_vocab,
        "mistakes": signatures.vocab_probs(h, w_vocab),
        "mistakes64": signatures.vocab_probs(h.double(), w_vocab.double()),
        "via": signatures.vocab_via_softmax(h, w_vocab),
        "via64": signatures.vocab_via_softmax(h.double(), w_vocab.double()),
    }


def square_probe(rng, ref):
    """One square float64 input per function (N = V = 4, C = V): where a keepdim or a transposed
    head raises on the tests' shapes, it runs here and its answer names the mistake
    (course.row_softmax_data.square_diagnosis)."""
    s = randn(rng, 4, 4, dtype=torch.float64, scale=2.0)
    targets = torch.randint(0, 4, (4,), generator=rng)
    h, w_vocab = randn(rng, 4, 4, dtype=torch.float64), randn(rng, 4, 4, dtype=torch.float64, scale=0.5)
    m = ref.row_softmax
    return {
        "softmax_rows": {"args": [s], "want": m.softmax_rows(s), "mistakes": signatures.softmax(s)},
        "log_softmax_rows": {"args": [s], "want": m.log_softmax_rows(s), "mistakes": signatures.log_softmax(s)},
        "cross_entropy": {
            "args": [s, targets],
            "want": m.cross_entropy(s, targets),
            "mistakes": signatures.cross_entropy(s, targets),
        },
        "vocab_probs": {
            "args": [h, w_vocab],
            "want": m.vocab_probs(h, w_vocab),
            "mistakes": {**signatures.vocab_via_softmax(h, w_vocab), **signatures.vocab_probs(h, w_vocab)},
        },
    }


CASES = [week7, softmax_rows, softmax_columns, log_softmax_rows, cross_entropy, vocab_probs, square_probe]
