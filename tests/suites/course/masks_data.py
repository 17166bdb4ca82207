"""Course numbers for the mask skills (ids from expected-numbers.md).

Week 7's masks and masked weights live in ``week07.STATED``; this file adds the Day 1
left-padded batch (§3.4, group 7 of w1day1_checks.py), Lesson 2's row counts and the
Day 1 §A.1/§A.3/§A.4 API examples.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

# D1-17: 2 left pads, T = 5, causal ∪ padding → unmasked keys per query row
LEFT_PADDED_T = 5
LEFT_PADDED_LENGTH = 3  # tokens: pad pad A B C
D1_17_UNMASKED_KEYS = [0, 0, 1, 2, 3]
D1_18_NAN_ROWS_WITH_NEG_INF = [0, 1]  # the rows the −∞ fill turns into NaN
# L2-03: causal mask, row i sees i + 1 positions
L2_03_ROW_COUNTS = [1, 2, 3, 4, 5]
# W7 §11 table: t = 0 scaled row [0.2, 0.9], the second column is the future
W7_TABLE_ROW = [0.2, 0.9]


def left_padded_tokens() -> list[str]:
    return ["pad", "pad", "A", "B", "C"]


def mask_equal(got, want: torch.Tensor, *, what: str, mistakes=None, hints=(), grid=None) -> torch.Tensor:
    """``expect.equal`` for bool masks whose grid shows 1/0, as the lessons print masks
    (M_T=4 = [[1,0,0,0], …]); a bool grid would print True/False, truncated to "Fal…" in
    a terminal. Type, shape and dtype (bool) are checked first, exactly as expect.equal does."""
    from autograder.testing import expect

    if type(got) is not torch.Tensor or got.dtype != torch.bool or tuple(got.shape) != tuple(want.shape):
        return expect.equal(got, want, what=what, mistakes=mistakes, hints=hints, grid=grid)

    def as01() -> dict:  # evaluated only when the check fails, as expect's own ``mistakes``
        table = mistakes() if callable(mistakes) else mistakes
        return {k: v.to(torch.uint8) for k, v in (table or {}).items() if type(v) is torch.Tensor}

    expect.equal(got.to(torch.uint8), want.to(torch.uint8), what=what, mistakes=as01, hints=hints, grid=grid)
    return got


@contextmanager
def one_sequence_hint(sub, ids: torch.Tensor, want: torch.Tensor) -> Iterator[None]:
    """Around the check of ``document_mask(ids)`` with leading dims: a document mask written
    for one sequence [T] (``ids[:, None] == ids[None, :]``: blind tester R-B) raises on
    doc_ids [...,T], or returns a mask of another shape. When the check fails, each sequence
    is asked for alone; exact answers for every one of them (``want``'s [T,T] masks: the
    check's own expected masks, never computed here) name the mistake from behaviour
    (``expect.observed``), on every input that has leading dims. (The first sequence alone
    is not enough: with sorted ids, ``<=`` for ``==`` is right there and wrong elsewhere —
    blind tester R-G.) The failure itself, and its points, stay as they were."""
    from autograder.testing import CheckFailed, SubmissionRaised, expect

    try:
        yield
    except (CheckFailed, SubmissionRaised) as exc:
        if ids.dim() > 1 and ids.shape[-1] > 0:
            T = ids.shape[-1]
            if all(_alone_right(sub, row.clone(), right) for row, right in zip(ids.reshape(-1, T), want.reshape(-1, T, T))):
                hints = exc.feedback.hints if isinstance(exc, CheckFailed) else exc.hints
                hints.extend(h for h in expect.observed("masks/document-one-sequence") if h not in hints)
        raise


def _alone_right(sub, row: torch.Tensor, right: torch.Tensor) -> bool:
    """Whether ``document_mask(row)`` of one sequence gives exactly ``right``."""
    from autograder.testing import SubmissionError

    try:
        got = sub.masks.document_mask(row)
    except SubmissionError:
        return False
    return type(got) is torch.Tensor and got.dtype == torch.bool and got.shape == right.shape and torch.equal(got, right)
