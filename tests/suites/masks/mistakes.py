"""What the named mistakes of skill `masks` would return (Week 7 §10–§11, Day 1 §3).

A test computes these for the same inputs it sends to the submission, and
``expect.close/equal(..., mistakes=...)`` names the one the submission's answer matches.
They reproduce *wrong* code, so they hold nothing a student could use as an answer.
Every mask here is allowed-style (True = may attend) unless a name says otherwise.
"""

from __future__ import annotations

import torch

from autograder.testing import distinct  # (re-exported for the suites)

NEG_INF = float("-inf")


def _tri(L: int, S: int, diagonal: int) -> torch.Tensor:
    return torch.ones(L, S, dtype=torch.bool).tril(diagonal=diagonal)


def causal(T: int) -> dict[str, torch.Tensor]:
    """causal_mask(T) with a mistake."""
    right = _tri(T, T, 0)
    out = {
        "masks/polarity-inverted": ~right,  # triu(diagonal=1): the masked_fill convention
        "masks/causal-transposed": torch.ones(T, T, dtype=torch.bool).triu(0),  # keys j >= i: the future
    }
    if T > 0:
        out["masks/diagonal-masked"] = _tri(T, T, -1)  # j < i: nobody reads itself, row 0 empty
    if T > 1:
        out["masks/causal-one-ahead"] = _tri(T, T, 1)  # j <= i + 1: every query also reads the next token
    return out


def apply(scores: torch.Tensor, allowed: torch.Tensor, fill: float = NEG_INF) -> dict[str, torch.Tensor]:
    """apply_mask(scores, allowed, fill) with a mistake."""
    out = {"masks/polarity-inverted": scores.masked_fill(allowed, fill)}
    if fill != 0.0:
        out["masks/zero-fill"] = scores.masked_fill(~allowed, 0.0)
    if fill != NEG_INF:
        out["masks/fill-ignored"] = scores.masked_fill(~allowed, NEG_INF)  # always −∞, whatever `fill` says
    if fill in (NEG_INF, float("inf")):  # scores + (~allowed) * fill: 0 · ∞ = NaN on every allowed entry
        out["masks/zero-times-inf"] = scores + (~allowed).to(scores.dtype) * fill
    return out


def padding(lengths, T: int, left_padded: bool) -> dict[str, torch.Tensor]:
    """padding_allowed(lengths, T, left_padded) with a mistake."""
    n = torch.as_tensor(lengths, dtype=torch.long).reshape(-1, 1)
    pos = torch.arange(T).unsqueeze(0)
    right, left = pos < n, pos >= T - n
    correct, swapped = (left, right) if left_padded else (right, left)
    shifted = pos >= T - n - 1 if left_padded else pos <= n  # one real token too many
    short = pos > T - n if left_padded else pos < n - 1  # one real token too few
    out = {
        "masks/padding-side-swapped": swapped,
        "masks/polarity-inverted": ~correct,
        "masks/padding-off-by-one": shifted,
        "masks/padding-one-short": short,
    }
    if not torch.equal(correct.T, correct):  # [T, B]: the lengths along the columns (blind tester R-BH)
        out["masks/padding-transposed"] = correct.T
    if left_padded:
        out["masks/padding-left-start"] = pos >= n  # the length used as the first real position
        # out[b, -n:] = True: with n = 0 the slice -0: is the whole row (blind tester R-AA)
        out["masks/padding-negative-slice"] = left | (n == 0)
    longest = int(n.max()) if n.numel() else T
    if 0 < longest < T:  # positions up to the longest length, not T (blind tester R-BS, m38): [B, max(lengths)]
        out["masks/padding-up-to-longest"] = padding(lengths, longest, left_padded)["masks/polarity-inverted"].logical_not()
    return out


def combine(causal_allowed: torch.Tensor, key_allowed: torch.Tensor) -> dict[str, torch.Tensor]:
    """combine_masks(causal, key_allowed) with a mistake."""
    c = causal_allowed[None, None]
    out = {
        "masks/combine-with-or": c | key_allowed[:, None, None, :],
        "masks/polarity-inverted": ~(c & key_allowed[:, None, None, :]),
    }
    L, S = causal_allowed.shape
    if L == S:
        out["masks/padding-masks-queries"] = c & key_allowed[:, None, :, None]  # rows blanked instead of columns
    out["masks/combine-head-axis"] = causal_allowed[None] & key_allowed[:, None, :]  # [B,L,S]: no head axis
    if key_allowed.size(0) != 1:  # [1,B,L,S]: the head axis put first (blind tester R-BH)
        out["masks/combine-head-axis#first"] = (causal_allowed[None] & key_allowed[:, None, :])[None]
    return out


def _over_keys(e: torch.Tensor) -> torch.Tensor:
    """``e`` divided by its sum over the keys, a row whose sum is 0 left all zeros: the last
    step every ``masked_softmax`` below shares (each mistake is in what ``e`` is)."""
    denom = e.sum(-1, keepdim=True)
    return e / torch.where(denom > 0, denom, torch.ones_like(denom))


def softmax(scores: torch.Tensor, allowed: torch.Tensor) -> dict[str, torch.Tensor]:
    """masked_softmax(scores, allowed) with a mistake (computed in float64, cast back)."""
    s = scores.to(torch.float64)
    a = allowed.to(torch.bool)
    s, a = torch.broadcast_tensors(s, a)  # (torch.broadcast_shapes costs ~0.3 s on its first call)
    fill = lambda value, mask=a: torch.where(mask, s, torch.tensor(value, dtype=torch.float64))
    out = {
        "masks/zero-fill": torch.softmax(fill(0.0), -1),
        "masks/mask-after-softmax": torch.softmax(s, -1) * a,
        # 0 in the scores and the weights zeroed again after: e^0 stays in every row's denominator
        "masks/zero-fill-zeroed-after": torch.softmax(fill(0.0), -1) * a,
        "masks/nan-fully-masked": torch.softmax(fill(NEG_INF), -1),  # NaN on rows with nothing allowed
        # those rows zeroed by a guard on `allowed.any(-1)`, which misses rows whose allowed scores are
        # all −∞: NaN there (blind tester R-CW: no hint)
        "masks/guard-on-allowed-only": torch.where(a.any(-1, keepdim=True), torch.softmax(fill(NEG_INF), -1), 0.0),
        "masks/finite-fill-uniform": torch.softmax(fill(-1e9), -1),  # rows with nothing allowed: uniform 1/S
        # the same finite fill, rows with nothing allowed zeroed: where every allowed score is −∞ the
        # fill is the row's largest score, so the blocked keys share the weights (blind tester F's M15)
        "masks/finite-fill-beats-minus-inf": torch.where(a.any(-1, keepdim=True), torch.softmax(fill(-1e9), -1), 0.0),
        "masks/polarity-inverted": torch.softmax(fill(NEG_INF, ~a), -1),
        # no mask at all (blind tester R-L: its blocked keys with the largest scores read as the
        # inverted polarity, which it is not)
        "masks/mask-ignored": torch.softmax(s, -1),
    }
    if s.dim() >= 2:
        # Day 1 §3.4's fix (2): the diagonal unmasked, so a row with nothing allowed reads its own
        # key — on every row, or only on those (blind tester R-BS's m33: no hint for −7)
        eye = torch.eye(s.size(-2), s.size(-1), dtype=torch.bool)
        out["masks/unmask-diagonal"] = torch.softmax(fill(NEG_INF, a | eye), -1)
        out["masks/unmask-diagonal#empty-rows"] = torch.softmax(fill(NEG_INF, a | (eye & ~a.any(-1, keepdim=True))), -1)
    # normalised over the query axis: each key column sums to 1. Listed for one query too, where it
    # is all ones on the allowed keys, as a sum over the query axis is: there neither is named
    # (blind tester R-BV: a softmax over dim=-2 was also told its sum alone ran over the queries)
    if s.dim() >= 2:
        e = torch.exp(fill(NEG_INF) - torch.nan_to_num(fill(NEG_INF).amax(-2, keepdim=True), neginf=0.0))
        denom = e.sum(-2, keepdim=True)
        out["masks/softmax-wrong-axis"] = e / torch.where(denom > 0, denom, torch.ones_like(denom))
    # no max shift: exp of the raw scores overflows (inf / inf = NaN) at scores of ~1e3 in float64, ~90 in float32
    raw = scores.broadcast_to(a.shape)  # in the submission's own dtype: that decides where it overflows
    e = torch.exp(torch.where(a, raw, torch.tensor(NEG_INF, dtype=raw.dtype)))
    out["masks/no-max-shift"] = _over_keys(e).to(torch.float64)
    # the same, guarding only the rows with nothing allowed and zeroing blocked keys after: a row whose
    # every allowed exp underflowed is 0/0 = NaN on its allowed keys
    some, denom = a.any(-1, keepdim=True), e.sum(-1, keepdim=True)
    guarded = e / torch.where(some, denom, torch.ones_like(denom))
    out["masks/no-max-shift#underflow-nan"] = torch.where(a, guarded, torch.zeros_like(guarded)).to(torch.float64)
    # one shift for the whole tensor (amax() without dim): rows far below the global maximum underflow to all zeros
    masked = torch.where(a, raw, torch.tensor(NEG_INF, dtype=raw.dtype))
    top = masked.amax()
    e = torch.exp(masked - (top if bool(torch.isfinite(top)) else torch.zeros_like(top)))
    out["masks/global-max"] = _over_keys(e).to(torch.float64)
    # each row shifted by the maximum of its raw scores, blocked keys included: where a blocked score
    # is far above the allowed ones every allowed exp underflows and the row is all zeros (blind tester R-AA)
    shift = raw.amax(-1, keepdim=True)
    shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
    e = torch.exp(masked - shift)
    out["masks/max-over-blocked-keys"] = _over_keys(e).to(torch.float64)
    # the shift taken over the query axis (amax(dim=-2)): each key column shifted by its own maximum,
    # which no longer cancels in a row's softmax (blind tester R-BH)
    if masked.dim() >= 2 and masked.size(-2) > 1:
        col_max = masked.amax(-2, keepdim=True)
        col_max = torch.where(torch.isfinite(col_max), col_max, torch.zeros_like(col_max))
        e = torch.exp(masked - col_max)
        out["masks/max-wrong-axis"] = _over_keys(e).to(torch.float64)
    # each row's maximum with its axis dropped (amax(dim=-1) without keepdim): [..., L] broadcasts along the
    # keys, so column j is shifted by row j's maximum (blind tester F; a non-square [L,S] raises instead)
    if masked.dim() >= 2 and masked.size(-1) == masked.size(-2):
        row_max = masked.amax(-1)
        row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max)).unsqueeze(-2)
        e = torch.exp(masked - row_max)
        out["masks/max-without-keepdim"] = _over_keys(e).to(torch.float64)
    # the row max shift right, the normalising sum wrong (blind tester R-G; row_softmax names the same
    # two): over the query axis (sum(dim=-2)), or without keepdim ([..., L] broadcast along the keys:
    # column j divided by row j's sum, which runs only when L = S)
    shift = masked.amax(-1, keepdim=True)
    e = torch.exp(masked - torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))).to(torch.float64)
    # the [..., L] sums broadcast as torch broadcasts them (a [B,L] against [B,L,S] lines up with its
    # last two axes), where they do: runs only when the shapes happen to allow it
    sums = {"masks/sum-wrong-axis": e.sum(-2, keepdim=True) if e.dim() >= 2 else None, "masks/sum-without-keepdim": e.sum(-1)}
    for key, denom in sums.items():
        if denom is None:
            continue
        safe = torch.where(denom > 0, denom, torch.ones_like(denom))
        try:
            plain, zeroed = e / safe, torch.where(denom > 0, e / safe, torch.zeros_like(e))
        except RuntimeError:
            continue
        if plain.shape == e.shape:
            out[key] = plain  # e / where(z > 0, z, 1)
            out[f"{key}#zeroed"] = zeroed  # where(z > 0, e / z, 0)
    return {k: v.to(scores.dtype) for k, v in out.items()}


def prefix(T: int, prefix_len: int) -> dict[str, torch.Tensor]:
    """prefix_lm_mask(T, prefix_len) with a mistake."""
    i, j = torch.arange(T).unsqueeze(1), torch.arange(T).unsqueeze(0)
    right = (j <= i) | (j < prefix_len)
    out = {
        "masks/prefix-off-by-one": (j <= i) | (j <= prefix_len),
        "masks/prefix-off-by-one#too-short": (j <= i) | (j < prefix_len - 1),  # blind tester R-BB: no hint
        "masks/diagonal-masked": (j < i) | (j < prefix_len),
        "masks/polarity-inverted": ~right,
        "masks/causal-transposed": (j >= i) | (j < prefix_len),  # the causal part upper-triangular (blind tester R-N)
    }
    if prefix_len > 0:
        out["masks/prefix-rows"] = (j <= i) | (i < prefix_len)  # prefix *queries* read everything instead
        out["masks/prefix-and"] = (j <= i) & (j < prefix_len)  # both conditions instead of either
    return out


def document(doc_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """document_mask(doc_ids) with a mistake."""
    T = doc_ids.size(-1)
    same = doc_ids.unsqueeze(-1) == doc_ids.unsqueeze(-2)
    tril = _tri(T, T, 0)
    return {
        "masks/document-not-causal": same,
        "masks/document-ignored": tril.expand(same.shape).clone(),
        "masks/diagonal-masked": same & _tri(T, T, -1),
        "masks/polarity-inverted": ~(same & tril),
        "masks/causal-transposed": same & tril.transpose(-2, -1),
        # ids compared by order, not equality (blind tester R-G): right for sorted ids only (its
        # >= twin is the plain causal mask on sorted ids, so it would hide document-ignored there)
        "masks/document-ids-ordered": (doc_ids.unsqueeze(-1) <= doc_ids.unsqueeze(-2)) & tril,
        # a new document wherever the id changes: right for contiguous documents only (blind
        # tester R-BS, m39: an id that comes back is the same document)
        "masks/document-by-segments": (_segments(doc_ids).unsqueeze(-1) == _segments(doc_ids).unsqueeze(-2)) & tril,
    }


def _segments(doc_ids: torch.Tensor) -> torch.Tensor:
    """Each token's run of equal ids, counted from 0: [0, 0, 1, 1, 0] → [0, 0, 1, 1, 2]."""
    changed = (doc_ids[..., 1:] != doc_ids[..., :-1]).long()
    return torch.cat([torch.zeros_like(changed[..., :1]), changed], dim=-1).cumsum(-1)
