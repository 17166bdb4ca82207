"""Snapshot cases of the visible masks suite: seeded inputs, the reference's outputs and the
named mistakes' outputs on them (`make snapshots` → snapshots/masks.json). Instructors only:
students get the data file, never the code that replays a mistake."""

from __future__ import annotations

import torch
from course import masks_data as md
from course import oracles
from course import week07 as w7

from autograder.testing import in_float64, randint, randn, sibling

signatures = sibling(__file__, "mistakes")

NEG_INF = float("-inf")


def _allowed(rng, *shape: int) -> torch.Tensor:
    """A random allowed mask [..., L, S] (S >= 3) whose first row holds two allowed keys and
    a blocked one: never all allowed, never one key per row."""
    allowed = torch.rand(*shape, generator=rng) < 0.6
    first = allowed.view(-1, shape[-1])[0]
    j = randint(rng, 0, shape[-1] - 1)
    first[j], first[(j + 1) % shape[-1]], first[(j + 2) % shape[-1]] = True, True, False
    return allowed


def _lengths(rng, B: int, T: int) -> list[int]:
    """Random lengths in [0, T] with at least one example really padded (0 < length < T)."""
    lengths = [randint(rng, 0, T) for _ in range(B)]
    lengths[randint(rng, 0, B - 1)] = randint(rng, 1, T - 1)
    return lengths


def causal_mask(rng, ref):
    T = randint(rng, 3, 24)
    return {"T": T, "want": ref.masks.causal_mask(T), "mistakes": signatures.causal(T)}


def apply_mask(rng, ref):
    B, L, S = randint(rng, 2, 3), randint(rng, 2, 8), randint(rng, 3, 10)
    scores, allowed = randn(rng, B, L, S), _allowed(rng, B, L, S)
    fill = -1e9  # a finite fill other than −∞: ignoring `fill` shows (the float64 control uses the default −∞)
    scores64, allowed64 = (
        randn(rng, 2, 3, 5, dtype=torch.float64),
        _allowed(rng, 2, 3, 5),
    )  # the float64 control (sent non-contiguous)
    return {
        "scores": scores,
        "allowed": allowed,
        "fill": fill,
        "want": in_float64(ref.masks.apply_mask, scores, allowed, fill),
        "mistakes": signatures.apply(scores, allowed, fill),
        "scores64": scores64,
        "allowed64": allowed64,
        "want64": in_float64(ref.masks.apply_mask, scores64, allowed64, dtype=torch.float64),
        "mistakes64": signatures.apply(scores64, allowed64),
    }


def masked_softmax(rng, ref):
    B, L, S = 2, randint(rng, 2, 8), randint(rng, 3, 10)
    scores, allowed = randn(rng, B, L, S, scale=2.0), _allowed(rng, B, L, S)
    scores[0] += 200.0  # example 0 at scores of ~200: exp overflows float32 without a per-row max shift, and example 1
    # lies far below the global maximum (one shift for the whole tensor underflows its rows to zeros)
    allowed[:, -1] = False  # a row with nothing allowed: all zeros (Day 1 §3.4)
    scores64, allowed64 = (
        randn(rng, 2, 4, 5, scale=2.0, dtype=torch.float64),
        _allowed(rng, 2, 4, 5),
    )  # the float64 control (sent non-contiguous)
    allowed64[:, -1] = False
    return {
        "scores": scores,
        "allowed": allowed,
        "want": in_float64(ref.masks.masked_softmax, scores, allowed),
        "mistakes": signatures.softmax(scores, allowed),
        "scores64": scores64,
        "allowed64": allowed64,
        "want64": in_float64(ref.masks.masked_softmax, scores64, allowed64, dtype=torch.float64),
        "mistakes64": signatures.softmax(scores64, allowed64),
    }


def padding_allowed(rng, ref):
    B, T = randint(rng, 2, 4), randint(rng, 3, 12)
    lengths = _lengths(rng, B, T)
    return {
        "lengths": lengths,
        "T": T,
        "right": ref.masks.padding_allowed(torch.tensor(lengths), T, left_padded=False),
        "left": ref.masks.padding_allowed(torch.tensor(lengths), T, left_padded=True),
        "mistakes_right": signatures.padding(lengths, T, False),
        "mistakes_left": signatures.padding(lengths, T, True),
    }


def combine_masks(rng, ref):
    B, S = randint(rng, 2, 4), randint(rng, 3, 10)
    L = randint(rng, 2, S)
    causal = torch.ones(L, S, dtype=torch.bool).tril(S - L)  # bottom-right aligned when L < S
    lengths = [S] + [randint(rng, 1, S - 1) for _ in range(B - 1)]  # example 0 unpadded, the others padded
    keys = ref.masks.padding_allowed(torch.tensor(lengths), S, left_padded=bool(randint(rng, 0, 1)))
    return {
        "causal": causal,
        "key_allowed": keys,
        "want": ref.masks.combine_masks(causal, keys),
        "mistakes": signatures.combine(causal, keys),
    }


def left_padded_softmax(rng, ref):
    B, T = randint(rng, 2, 3), randint(rng, 4, 10)
    lengths = [randint(rng, 2, T - 2) for _ in range(B)]  # two or more pad queries that read nothing, two or more real keys
    keys = ref.masks.padding_allowed(torch.tensor(lengths), T, left_padded=True)
    allowed = ref.masks.combine_masks(ref.masks.causal_mask(T), keys)[:, 0]  # [B,T,T]
    scores = randn(rng, B, T, T, scale=2.0)
    # the docstring's other empty row: the last (real) query of example 1 has its allowed scores all at −∞ (and still
    # blocks its pad keys): all zeros with a finite gradient, also where a NaN is patched after the softmax
    scores[1, -1] = scores[1, -1].masked_fill(allowed[1, -1], NEG_INF)
    grad_out = randn(rng, B, T, T)
    return {
        "lengths": lengths,
        "T": T,
        "scores": scores,
        "allowed": allowed,
        "want": in_float64(ref.masks.masked_softmax, scores, allowed),
        "grad_out": grad_out,
        # the gradient's values, not only that it is finite: a backward of the file's own that
        # returns zeros is finite too (blind red-team tester R-CL)
        "grad_want": _reference_grad(ref, scores, allowed, grad_out),
        "mistakes": signatures.softmax(scores, allowed),
    }


def _reference_grad(ref, scores, allowed, grad_out):
    """∂(Σ weights · grad_out)/∂scores of the reference, in float64, rounded to the scores' dtype."""
    with torch.enable_grad():
        s = scores.double().requires_grad_(True)
        weights = ref.masks.masked_softmax(s, allowed)
        return torch.autograd.grad((weights * grad_out.double()).sum(), s)[0].to(scores.dtype)


def prefix_and_document(rng, ref):
    T = randint(rng, 4, 12)
    p = randint(rng, 2, T - 1)  # prefix_len 0 or 1 would be plain causal, T all True
    starts = torch.rand(2, T, generator=rng) < 0.3  # True = a new document starts here
    starts[:, 1] = False  # the first document has two tokens or more
    ids = torch.cumsum(starts, dim=-1)
    ids[:, randint(rng, 2, T - 1) :] += 1  # and another document follows
    return {
        "T": T,
        "prefix_len": p,
        "prefix_want": ref.masks.prefix_lm_mask(T, p),
        "doc_ids": ids,
        "doc_want": ref.masks.document_mask(ids),
        "prefix_mistakes": signatures.prefix(T, p),
        "doc_mistakes": signatures.document(ids),
    }


def examples(rng, ref):
    """The lessons' small examples whose answer the lessons describe but do not print."""
    m = ref.masks
    T, n = 5, 3  # Day 1 §3.4: pad pad A B C
    key_allowed = torch.arange(T).unsqueeze(0) >= T - n
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    scaled, causal2 = oracles.scaled_scores(), torch.tril(torch.ones(2, 2, dtype=torch.bool))
    row, row_allowed = w7.t([md.W7_TABLE_ROW]), torch.tensor([[True, False]])  # one query row: [L=1, S=2]
    padded_allowed = causal & (torch.arange(T) >= T - n)
    padded_scores = torch.tensor([[0.3, -1.2, 0.5, 0.0, 2.0]] * T) + torch.arange(T).unsqueeze(1) * 0.1
    return {
        "scaled": scaled,
        "causal_5": m.causal_mask(5),  # S̃ = Q Kᵀ / √d_k of Week 7 §8, an input of apply_mask and masked_softmax
        "mistakes": {
            "causal_2": signatures.causal(2),
            "causal_4": signatures.causal(4),
            "causal_5": signatures.causal(5),
            "apply_scaled": signatures.apply(scaled, causal2),
            "softmax_scaled": signatures.softmax(scaled, causal2),
            "softmax_table_row": signatures.softmax(row, row_allowed),
            "padding_right": signatures.padding([3, 5, 1], 5, False),
            "padding_left": signatures.padding([3, 5, 1], 5, True),
            "combine_left_padded": signatures.combine(causal, key_allowed),
            "softmax_left_padded": signatures.softmax(padded_scores, padded_allowed),
            "prefix_lm_5_2": signatures.prefix(5, 2),
            "document_001112": signatures.document(torch.tensor([0, 0, 1, 1, 1, 2])),
        },
        "padding_right": m.padding_allowed(torch.tensor([3, 5, 1]), 5, left_padded=False),
        "padding_left": m.padding_allowed(torch.tensor([3, 5, 1]), 5, left_padded=True),
        "combine_left_padded": m.combine_masks(torch.tril(torch.ones(T, T, dtype=torch.bool)), key_allowed),
        "prefix_lm_5_2": m.prefix_lm_mask(5, 2),
        "document_001112": m.document_mask(torch.tensor([0, 0, 1, 1, 1, 2])),
    }


CASES = [
    causal_mask,
    apply_mask,
    masked_softmax,
    padding_allowed,
    combine_masks,
    left_padded_softmax,
    prefix_and_document,
    examples,
]
