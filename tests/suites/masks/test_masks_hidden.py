"""Skill masks, hidden tests: the course numbers at their stated precision, the reference
on fresh random inputs (B=1, T=1, T up to 64, L≠S, scores of magnitude 1e4, fully blocked
rows), properties every correct mask has (blocked weight exactly 0, rows sum to 1 or are
empty, finite gradients that never reach blocked scores) and dtype/in-place rules.
No free points: a degenerate draw (T = 1, nothing padded or blocked, prefix_len of 0, 1 or
T, one allowed key per row) is only checked inside a case next to a regular input; the dtype
test checks dtypes and inputs only and counts once the skill's other tests earn points
(grading.toml `properties`).
One mistake, one price: every random draw has a fixed structure (shapes, mask layout, fully
blocked rows, scale, dtype) and only the values are random, so a deterministic mistake fails
the same kinds on every seed.
Not shipped to students; on Gradescope students see each test's name and hint only."""

from __future__ import annotations

import torch
from course import masks_data as md
from course import oracles
from course import week07 as w7
from course.tolerances import EXACT, tol

from autograder.testing import (
    SubmissionError,
    SubmissionRaised,
    bernoulli,
    beside_regular,
    choice,
    dtype_name,
    expect,
    in_float64,
    long_length,
    mixed,
    noncontiguous,
    randint,
    randn,
    sibling,
)

signatures = sibling(__file__, "mistakes")  # the named mistakes' outputs (beside this suite; never shipped to students)

QK = ("query", "key")
DTYPES = (torch.float32, torch.float64)
NEG_INF = float("-inf")


WIDER = 4  # a mask with more axes than the scores it masks (the result takes the broadcast shape)


def _allowed_like(rng, lead: tuple, L: int, S: int, *, p: float, shape: int) -> torch.Tensor:
    """A random allowed mask that broadcasts against scores [*lead, L, S], of a fixed `shape`:
    0 [L,S] shared by every batch element, 1 [*lead[:-1],1,L,S] shared by the heads,
    2 [*lead[:-1],1,1,S] key padding, 3 [*lead,L,S] one per batch element and head."""
    if shape == 0 or not lead:
        return bernoulli(rng, L, S, p=p)
    if shape == 1:
        return bernoulli(rng, *lead[:-1], 1, L, S, p=p) if len(lead) > 1 else bernoulli(rng, 1, L, S, p=p)
    if shape == 2:
        return bernoulli(rng, *lead[:-1], 1, 1, S, p=p) if len(lead) > 1 else bernoulli(rng, 1, 1, S, p=p)
    return bernoulli(rng, *lead, L, S, p=p)


def _softmax_allowed(rng, allowed: torch.Tensor, *, empty: bool | None = None) -> tuple[torch.Tensor, tuple[int, int]]:
    """Make one row of `allowed` (last axis S >= 3) hold two allowed keys and a blocked one,
    in place: with one allowed key per row (one-hot weights) or nothing blocked (plain or
    uniform weights) a trivial answer could be right. Returns the two allowed key columns.
    `empty`: True — exactly one other row allows nothing, one whose query has a key of its own
    index (`allowed` needs two rows or more);
    False — no row is empty (a random key is allowed in each empty row); None — as drawn.
    Fully blocked rows are a fixed part of a case's structure, never a chance of the draw:
    mistakes on them (NaN, uniform weights) fail the same kinds on every seed."""
    rows = allowed.view(-1, allowed.size(-1))
    n, S = rows.shape
    r = randint(rng, 0, n - 1)
    j1 = randint(rng, 0, S - 1)
    j2 = (j1 + randint(rng, 1, S - 1)) % S
    j3 = next(j for j in ((j2 + o) % S for o in range(1, S)) if j != j1)
    rows[r, j1], rows[r, j2], rows[r, j3] = True, True, False
    if empty is not None:
        for i in (~rows.any(-1)).nonzero().flatten().tolist():
            rows[i, randint(rng, 0, S - 1)] = True
    if empty:
        # a row with a diagonal entry (query index < S): Day 1 §3.4's unmasked diagonal reads it
        # on every seed (blind tester R-BS's fix, which lost 7.04 or 5.75 by seed)
        L = allowed.size(-2) if allowed.dim() >= 2 else 1
        e = (r + randint(rng, 1, n - 1)) % n
        while e == r or e % L >= S:
            e = (e + 1) % n
        rows[e] = False
    return allowed, (j1, j2)


def _doc_ids(rng, lead: tuple, T: int, *, packed: bool) -> torch.Tensor:
    """Document ids [*lead, T] (T >= 3) whose first sequence has two documents, one of them
    with two tokens or more: with one document the mask is plain causal, with one token per
    document it is the identity."""
    if packed:  # packed documents: contiguous blocks
        ids = torch.cumsum(bernoulli(rng, *lead, T, p=0.2).long(), dim=-1)
    else:  # ids need not be sorted
        ids = torch.randint(0, 3, (*lead, T), generator=rng)
    first = ids.view(-1, T)[0]
    if bool((first == first[0]).all()) or int(torch.unique(first, return_counts=True)[1].max()) < 2:
        k = randint(rng, 2, T - 1)
        doc = int(first[0])
        first[:k], first[k:] = doc, doc + 1
    if not packed and bool((first[1:] >= first[:-1]).all()):
        # unsorted ids are unsorted in the first sequence at least: a mask that compares ids
        # with <= (right for sorted ids) then fails these cases on every seed (blind tester R-G)
        first.copy_(first.flip(0))
    return ids


def _shifts_told_apart(
    scores: torch.Tensor, allowed: torch.Tensor, far: tuple[int, ...], near: tuple[int, ...]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores of 1e4 with two rows (full-shape masks, ``far`` ≠ ``near``) that tell apart where a
    row's shift comes from, both allowing key 0 and blocking key 1: in ``far`` the allowed key
    holds the tensor's largest score and the blocked key is 1e4 above it — a shift by the row's
    maximum over every key, blocked ones included, underflows every allowed exp there (the row
    comes out all 0), where one shift for the whole tensor keeps it; in ``near`` every blocked
    key is 1 above the row's allowed maximum — weights zeroed after a softmax over every key
    keep a fraction there, where that shift is right. Both rows' weight is on key 0, so a sum
    over the queries splits it on every seed too. So the first mistake fails on every seed and its
    signature is its own (blind tester R-BL: it passed on draws where no blocked key happened
    to win, and its hint came and went)."""
    scores, allowed = scores.clone(), allowed.clone()
    for row in (far, near):
        allowed[row][:2] = torch.tensor([True, False])
    top = float(scores[torch.isfinite(scores)].abs().max())
    scores[far + (0,)] = top + 1e4
    scores[far + (1,)] = top + 2e4
    own = float(scores[near].masked_fill(~allowed[near] | ~torch.isfinite(scores[near]), NEG_INF).max())
    scores[near + (0,)] = own + 1.0  # key 0 holds the row's allowed maximum, as in ``far``
    scores[near][~allowed[near]] = own + 2.0  # every blocked key of the row, none far above
    return scores, allowed


def _blocked_key_wins(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Scores where, in some row, a blocked key has the highest score: ignoring the mask
    (a plain softmax) then moves the weight, even at scores of 1e4. The row is one with an
    allowed finite score and a blocked key (`_softmax_allowed` makes one). And a row of that
    kind whose scores are all negative: a blocked score replaced by 0 then takes weight, even at
    scores of 1e4 (where a row with a positive allowed score leaves exp(0 − max) = 0)."""
    s, a = torch.broadcast_tensors(scores, allowed)
    finite = torch.isfinite(s)
    row = tuple(((~a).any(-1) & (a & finite).any(-1)).nonzero()[0].tolist())
    at = row[len(row) - (scores.dim() - 1) :]  # scores may have fewer leading dims than the mask
    at = tuple(i if scores.size(d) > 1 else 0 for d, i in enumerate(at))
    scores = scores.clone()
    scores[at] = -scores[at].abs() - 1.0
    s, a = torch.broadcast_tensors(scores, allowed)
    finite = torch.isfinite(s)
    best_blocked = s.masked_fill(a | ~finite, NEG_INF).amax(-1)
    best_allowed = s.masked_fill(~a | ~finite, NEG_INF).amax(-1)
    if bool((best_blocked > best_allowed).any()):
        return scores
    row = tuple(((~a).any(-1) & (a & finite).any(-1)).nonzero()[0].tolist())
    j = int((~a[row]).nonzero()[0])
    at = row[len(row) - (scores.dim() - 1) :]  # scores may have fewer leading dims than the mask
    at = tuple(i if scores.size(d) > 1 else 0 for d, i in enumerate(at))
    top = float(best_allowed[row])
    scores = scores.clone()
    scores[at + (j,)] = top + abs(top) + 1.0
    return scores


# --------------------------------------------------------------------------- course numbers
def _course_control(sub, ref, rng) -> None:
    """Fresh random inputs for every function the course numbers use, checked *before* the
    parts: recognising the course's inputs and printing their numbers earns nothing."""
    f64 = torch.float64
    T = randint(rng, 3, 12)
    want = ref.masks.causal_mask(T)
    expect.equal(
        sub.masks.causal_mask(T),
        want,
        what=f"causal_mask({T}) on a fresh length",
        mistakes=lambda: signatures.distinct(signatures.causal(T), EXACT, want),
    )
    B, L, S = randint(rng, 1, 3), randint(rng, 2, 8), randint(rng, 3, 10)
    scores = randn(rng, B, L, S, dtype=f64)
    allowed, _ = _softmax_allowed(rng, bernoulli(rng, B, L, S, p=0.6), empty=True)  # and one fully blocked row
    t = tol("masks.apply_mask", f64)
    want = ref.masks.apply_mask(scores, allowed)
    expect.close(
        sub.masks.apply_mask(scores, allowed),
        want,
        what="apply_mask on fresh random scores and mask",
        tol=t,
        mistakes=lambda: signatures.distinct(signatures.apply(scores, allowed), t, want),
    )
    t = tol("masks.masked_softmax", f64)
    want = ref.masks.masked_softmax(scores, allowed)
    expect.close(
        sub.masks.masked_softmax(scores, allowed),
        want,
        what="masked_softmax on fresh random scores and mask",
        tol=t,
        mistakes=lambda: signatures.distinct(signatures.softmax(scores, allowed), t, want),
    )
    lengths = [randint(rng, 1, S - 1) for _ in range(B)]
    lengths[0] = 1  # S >= 3: a length that is not S / 2 (there, positions >= length is the left-padded mask)
    for left in (False, True):  # both sides, on every seed
        keys = ref.masks.padding_allowed(lengths, S, left_padded=left)
        expect.equal(
            _padding(sub, lengths, S, left),
            keys,
            what=f"padding_allowed(lengths={lengths}, T={S}, left_padded={left})",
            mistakes=lambda: signatures.distinct(signatures.padding(lengths, S, left), EXACT, keys),
        )
    causal = torch.ones(L, S, dtype=torch.bool).tril(S - L)
    want = ref.masks.combine_masks(causal, keys)
    try:
        got = sub.masks.combine_masks(causal, keys)
    except SubmissionRaised as exc:
        _combine_raised(sub, exc, keys)
        raise
    expect.equal(
        got,
        want,
        what=f"combine_masks(causal [{L},{S}], padding [{B},{S}]) on fresh lengths",
        mistakes=lambda: signatures.distinct(signatures.combine(causal, keys), EXACT, want),
    )


def _combine_raised(sub, exc: SubmissionRaised, keys: torch.Tensor) -> None:
    """combine_masks raised a shape error where L ≠ S: on a square causal mask (L = S, where
    blanking query rows instead of key columns still broadcasts) its result shows whether the
    padding went on the queries; if so, fail with that name (Day 1 §3.2: padding blocks keys)."""
    S = keys.size(-1)
    square = torch.ones(S, S, dtype=torch.bool).tril()
    try:
        probe = sub.masks.combine_masks(square, keys)
    except SubmissionRaised:
        return
    hints = expect.diagnose(
        probe if type(probe) is torch.Tensor else None,
        signatures.distinct(signatures.combine(square, keys), EXACT, square[None, None] & keys[:, None, None, :]),
        EXACT,
        square[None, None] & keys[:, None, None, :],
    )
    if hints:
        expect.true(
            False,
            what=f"combine_masks(causal [L,{S}] with L ≠ {S}, padding {list(keys.shape)})",
            detail=exc.message,
            hints=hints,
        )


def _padding(sub, lengths: list[int], T: int, left: bool):
    """``padding_allowed(lengths, T, left_padded=left)`` with ``lengths`` a list; where it raises
    and the same lengths as a tensor run, the list was used as a tensor: named, on every test
    that passes a list (blind testers I, R-BL)."""
    try:
        return sub.masks.padding_allowed(lengths, T, left_padded=left)
    except SubmissionRaised as exc:
        try:
            sub.masks.padding_allowed(torch.tensor(lengths), T, left_padded=left)
        except SubmissionError:
            pass
        else:
            exc.hints.extend(h for h in expect.observed("masks/lengths-list") if h not in exc.hints)
        raise


def test_course_mask_numbers_at_stated_precision_in_float64(sub, ref, rng, credit):
    _course_control(sub, ref, rng)
    f64 = torch.float64
    labels = ["M_T=2, M_T=4", "row counts", "masked scores", "weights", "§11 table", "left-padded keys", "left-padded pad rows"]
    for part in credit.parts(labels):
        with part:
            if part.label == "M_T=2, M_T=4":
                for T, key in ((2, "mask_T2"), (4, "mask_T4")):
                    expect.equal(
                        sub.masks.causal_mask(T),
                        torch.tensor(w7.STATED[key]),
                        what=f"causal_mask({T}) (W7-30, W7-31)",
                        mistakes=lambda: signatures.causal(T),
                    )
            elif part.label == "row counts":
                got = expect.tensor(sub.masks.causal_mask(5), what="causal_mask(5)")
                counts = got.sum(-1).tolist() if tuple(got.shape) == (5, 5) else list(got.shape)
                expect.true(
                    counts == md.L2_03_ROW_COUNTS,
                    what="row i sees i + 1 positions (L2-03)",
                    detail=f"got {counts}",
                    hints=expect.diagnose(got, signatures.causal(5), EXACT, torch.tril(torch.ones(5, 5, dtype=torch.bool))),
                )
            elif part.label == "masked scores":
                scaled = oracles.scaled_scores(f64)
                allowed = torch.tril(torch.ones(2, 2, dtype=torch.bool))
                expect.close(
                    sub.masks.apply_mask(scaled, allowed),
                    w7.t(w7.STATED["masked_scaled"], f64),
                    what="Ŝ_A, Ŝ_B (W7-22, W7-23)",
                    tol=w7.NEAR_EXACT,
                    mistakes=lambda: signatures.apply(scaled, allowed),
                )
            elif part.label == "weights":
                scaled = oracles.scaled_scores(f64)
                allowed = torch.tril(torch.ones(2, 2, dtype=torch.bool))
                expect.close(
                    sub.masks.masked_softmax(scaled, allowed),
                    w7.t(w7.STATED["weights"], f64),
                    what="P_A, P_B (W7-24, W7-25)",
                    tol=w7.PRINTED_3DP,
                    mistakes=lambda: signatures.softmax(scaled, allowed),
                )
            elif part.label == "§11 table":
                row, allowed = w7.t([md.W7_TABLE_ROW], f64), torch.tensor([[True, False]])  # [L=1, S=2]
                expect.close(
                    sub.masks.masked_softmax(row, allowed),
                    w7.t([w7.STATED["right_neg_inf"]], f64),
                    what="softmax([0.2, −∞]) = [1, 0] (W7-33)",
                    tol=w7.Tol(0.0, 1e-12),
                    mistakes=lambda: signatures.softmax(row, allowed),
                )
                zero_filled = expect.close(
                    sub.masks.apply_mask(row, allowed, fill=0.0),
                    w7.t([[0.2, 0.0]], f64),
                    what="apply_mask(row, allowed, fill=0.0) uses the given fill",
                    tol=w7.NEAR_EXACT,
                    # the fill argument ignored: −∞ written whatever was asked
                    mistakes=lambda: {"masks/fill-ignored": row.masked_fill(~allowed, float("-inf"))},
                )
                expect.close(
                    torch.softmax(zero_filled, -1),
                    w7.t([w7.STATED["wrong_zero_fill"]], f64),
                    what="softmax([0.2, 0]) = [0.550, 0.450] (W7-32)",
                    tol=w7.PRINTED_3DP,
                )
            elif part.label == "left-padded keys":
                T, n = md.LEFT_PADDED_T, md.LEFT_PADDED_LENGTH
                keys = expect.equal(
                    _padding(sub, [n], T, True),
                    torch.arange(T).unsqueeze(0) >= T - n,
                    what="padding_allowed([3], 5, left_padded=True): pad pad A B C",
                    mistakes=lambda: signatures.padding([n], T, True),
                )
                tri = torch.tril(torch.ones(T, T, dtype=torch.bool))
                got = expect.tensor(sub.masks.combine_masks(tri, keys), what="combine_masks(causal(5), padding)")
                counts = got.sum(-1).reshape(-1).tolist() if tuple(got.shape) == (1, 1, T, T) else list(got.shape)
                expect.true(
                    counts == md.D1_17_UNMASKED_KEYS,
                    what="unmasked keys per row [0, 0, 1, 2, 3] (D1-17)",
                    detail=f"got {counts}",
                    hints=expect.diagnose(got, signatures.combine(tri, keys), EXACT, (tri & keys[:, None, :])[:, None]),
                )
            else:
                T, n = md.LEFT_PADDED_T, md.LEFT_PADDED_LENGTH
                allowed = (torch.tril(torch.ones(T, T, dtype=torch.bool)) & (torch.arange(T) >= T - n))[None, None]
                scores = torch.linspace(-1.0, 2.0, T * T, dtype=f64).reshape(1, 1, T, T)
                got = expect.tensor(sub.masks.masked_softmax(scores, allowed), what="masked_softmax on the left-padded batch")
                mistakes = signatures.softmax(scores, allowed)
                hints = expect.diagnose(got, mistakes, w7.NEAR_EXACT, ref.masks.masked_softmax(scores, allowed))
                nan_rows = sorted({int(i) for i in torch.nonzero(torch.isnan(got))[:, -2].tolist()}) if got.dim() >= 2 else []
                expect.true(
                    not nan_rows,
                    what="no NaN on the pad rows (D1-18: −∞ alone gives NaN on rows 0, 1)",
                    detail=f"NaN on rows {nan_rows}",
                    hints=hints,
                )
                expect.true(
                    tuple(got.shape) == (1, 1, T, T) and bool((got[..., :2, :] == 0).all()),
                    what="pad rows 0, 1 are all zeros (D1-19: −1e9 would give uniform 0.2)",
                    detail=f"rows 0, 1: {got.reshape(-1, T)[:2].tolist() if got.numel() == T * T else list(got.shape)}",
                    hints=hints,
                )
                sums = got[..., 2:, :].sum(-1)
                expect.true(
                    bool(torch.allclose(sums, torch.ones_like(sums), atol=1e-12, rtol=0)),
                    what="real rows 2, 3, 4 sum to 1",
                    detail=f"row sums {sums.reshape(-1).tolist()}",
                    hints=hints,
                )


# --------------------------------------------------------------------------- vs the reference
def test_causal_mask_matches_reference_for_many_lengths(sub, ref, rng, credit):
    for case in credit.kinds({"short (T ≤ 8)": 3, "long (T > 8)": 3}):
        with case:
            lengths = [randint(rng, 2, 8) if case.kind.startswith("short") else choice(rng, (randint(rng, 9, 63), 64))]
            if case.kind.startswith("long") and case.draw == 2:
                lengths = [long_length(rng)]  # past a buffer of fixed length sliced to [:T, :T]
            if case.draw == 0 and case.kind.startswith("short"):
                lengths.append(1)  # T = 1: an all-True mask is right, so it is checked next to a regular length, never alone
            for T in lengths:
                kwargs = {"device": "cpu"} if randint(rng, 0, 1) else {}
                want = ref.masks.causal_mask(T)
                expect.equal(
                    sub.masks.causal_mask(T, **kwargs),
                    want,
                    what=f"causal_mask({T}{', device=cpu' if kwargs else ''})",
                    mistakes=lambda: signatures.distinct(signatures.causal(T), EXACT, want),
                )


def test_apply_mask_matches_reference_with_broadcasting_and_fills(sub, ref, rng, credit):
    # draw i of each kind has a fixed structure (dtype, leading dims, L = 1 or not, mask shape, score scale,
    # layout, finite fill); the values are random: a mistake fails the same kinds on every seed
    # (dtype, leading dims, L = 1, mask shape (_allowed_like; WIDER: more axes than the scores), scale, non-contiguous)
    structure = [
        (torch.float32, 0, False, 0, 1.0, False),
        (torch.float64, 1, True, 2, 1e4, True),
        (torch.float32, 2, False, 1, 1e4, False),
        (torch.float64, 2, False, 3, 1.0, True),
        (torch.float32, 0, False, WIDER, 1.0, False),  # shared scores [L,S], a mask [2,1,L,S]: the result is [2,1,L,S]
    ]
    for case in credit.kinds({"fill −∞": 5, "finite fill": 5}):
        with case:
            dtype, n_lead, one_query, shape, scale, strided = structure[case.draw]
            lead = ((), (2,), (randint(rng, 1, 3), randint(rng, 1, 4)))[n_lead]
            L, S = 1 if one_query else randint(rng, 2, 40), 2 if case.draw == 3 else randint(rng, 3, 64)
            # −1e4 is near the scores: scores + (~allowed) · fill is not fill there
            fill = NEG_INF if case.kind == "fill −∞" else (-1e9, torch.finfo(dtype).min, -1e4, -1e9, -1e9)[case.draw]
            scores = randn(rng, *lead, L, S, dtype=dtype, scale=scale)
            if strided:
                scores = noncontiguous(scores)
            wide = bernoulli(rng, 2, 1, L, S, p=0.6) if shape == WIDER else None
            allowed = wide if wide is not None else _allowed_like(rng, lead, L, S, p=0.6, shape=shape)
            allowed = mixed(rng, allowed)  # something kept and something blocked
            inputs = [(scores, allowed)]
            if case.draw == 0:  # 1×1 scores, one kept and one blocked, next to the regular input
                inputs += [
                    (randn(rng, 1, 1, dtype=dtype), torch.tensor([[True]])),
                    (randn(rng, 1, 1, dtype=dtype), torch.tensor([[False]])),
                ]
            for scores, allowed in inputs:
                want = in_float64(lambda s: ref.masks.apply_mask(s, allowed, fill), scores, dtype=dtype)
                t = tol("masks.apply_mask", dtype)
                expect.close(
                    sub.masks.apply_mask(scores, allowed, fill),
                    want,
                    what=(
                        f"apply_mask(scores {list(scores.shape)}, allowed {list(allowed.shape)}, fill={fill:g}) "
                        f"({dtype_name(dtype)})"
                    ),
                    tol=t,
                    mistakes=lambda: signatures.distinct(signatures.apply(scores, allowed, fill), t, want),
                )


def test_padding_allowed_matches_reference_for_lists_and_tensors(sub, ref, rng, credit):
    for case in credit.kinds({"right padding": 3, "left padding": 3}):
        with case:
            B, T = (
                1 if case.draw == 0 else randint(rng, 2, 5),
                randint(rng, 3, 64) if case.draw < 2 else long_length(rng),
            )  # draw 0: one example; T = 2 is checked beside; draw 2: past a buffer of fixed length
            lengths = [choice(rng, (0, T, randint(rng, 0, T))) for _ in range(B)]
            # one example really padded (with every length 0 or T a constant mask is right), and not half padded:
            # at length T / 2 the left-padded mask equals positions >= length
            n = randint(rng, 1, T - 1)
            padded = randint(rng, 0, B - 1)
            lengths[padded] = n - 1 if 2 * n == T else n
            if case.draw == 1:  # and one of length 0 on every seed (blind tester R-AA: mask[b, -n:] with n = 0)
                lengths[(padded + 1) % B] = 0
            left = case.kind == "left padding"
            arg = ("list", "int64", "int32")[case.draw]
            draws = [(lengths, T)]
            if case.draw == 0:  # T = 1 (lengths 0 or 1), next to the regular draw
                draws.append(([randint(rng, 0, 1) for _ in range(B)], 1))
            elif case.draw == 1:  # T = 2, next to the regular draw
                draws.append(([randint(rng, 0, 2) for _ in range(B)], 2))
            for lengths, T in draws:
                given = lengths if arg == "list" else torch.tensor(lengths, dtype=getattr(torch, arg))
                want = ref.masks.padding_allowed(lengths, T, left_padded=left)
                got = _padding(sub, lengths, T, left) if arg == "list" else sub.masks.padding_allowed(given, T, left_padded=left)
                expect.equal(
                    got,
                    want,
                    what=f"padding_allowed(lengths={lengths} as {arg}, T={T}, left_padded={left})",
                    mistakes=lambda: signatures.distinct(signatures.padding(lengths, T, left), EXACT, want),
                )


def test_combine_masks_matches_reference_with_l_ne_s(sub, ref, rng, credit):
    # L = S, L < S and L > S each a kind; draw 0 of each a bottom-right causal mask, draw 1 a random one
    for case in credit.kinds({"L = S": 2, "L < S": 2, "L > S": 2}):
        with case:
            B, n, m = randint(rng, 1, 4), randint(rng, 2, 24), randint(rng, 2, 24)
            L, S = {"L = S": (n, n), "L < S": (min(n, m), max(n, m) + 1), "L > S": (max(n, m) + 1, min(n, m))}[case.kind]
            causal = torch.ones(L, S, dtype=torch.bool).tril(S - L) if case.draw == 0 else bernoulli(rng, L, S, p=0.6)
            key_allowed = bernoulli(rng, B, S, p=0.7)
            # both masks matter (on the bottom-right causal mask the causal lines are no-ops): the last key is
            # real in example b, hidden from query 0 by the causal mask and read by the last query; key j is
            # padding in example b and read by the last query (there, blanking query rows instead keeps it)
            b, j = randint(rng, 0, B - 1), randint(rng, 0, S - 2)
            causal[0, S - 1], causal[L - 1, S - 1], causal[L - 1, j] = False, True, True
            key_allowed[b, S - 1], key_allowed[b, j] = True, False
            draws = [(causal, key_allowed)]
            if case.kind == "L < S" and case.draw == 0:  # L = 1 (one query row), next to the regular draw
                draws.append((bernoulli(rng, 1, S, p=0.6), bernoulli(rng, B, S, p=0.7)))
            for causal, key_allowed in draws:
                L = causal.size(0)
                want = ref.masks.combine_masks(causal, key_allowed)
                expect.equal(
                    sub.masks.combine_masks(causal, key_allowed),
                    want,
                    what=f"combine_masks(causal [{L},{S}], key_allowed [{B},{S}]) → [B,1,L,S]",
                    mistakes=lambda: signatures.distinct(signatures.combine(causal, key_allowed), EXACT, want),
                )


def test_masked_softmax_matches_reference_on_random_scores(sub, ref, rng, credit):
    # Every draw has a fixed structure: leading dims, L = 1 or not, mask shape, scale, layout, fully blocked
    # rows. Fully blocked rows (NaN or uniform weights) and scores of magnitude 1e4 (overflow without the
    # max shift, underflow with one shift for the whole tensor) are kinds of their own, absent elsewhere.
    kinds = {
        "float32": 2,
        "float64": 2,
        "allowed with more leading dims": 1,
        "some allowed scores −∞": 2,
        "a fully blocked row": 2,
        "scores of magnitude 1e4": 2,
        "one or two keys, beside a regular row": 2,
    }
    structure = {  # kind → per draw: (leading dims, L = 1, mask shape (_allowed_like), non-contiguous)
        "float32": ((0, False, 0, False), (2, True, 3, True)),
        "float64": ((1, False, 1, True), (2, False, 2, False)),
        "some allowed scores −∞": ((1, False, 1, False), (2, False, 2, True)),
        "a fully blocked row": ((0, False, 0, True), (2, False, 3, False)),
        "scores of magnitude 1e4": ((2, False, 3, False), (0, True, 0, True)),
        "one or two keys, beside a regular row": ((0, False, 0, False), (1, False, 2, True)),
    }
    for case in credit.kinds(kinds):
        with case:
            dtype = DTYPES[case.draw % 2] if case.kind not in ("float32", "float64") else getattr(torch, case.kind)
            n_lead, one_query, shape, strided = structure.get(case.kind, ((0, False, 0, False),))[case.draw]
            lead = ((), (1,), (randint(rng, 2, 3), randint(rng, 1, 4)))[n_lead]
            L, S = 1 if one_query else randint(rng, 2, 32), randint(rng, 3, 63)
            S += S >= L > 1  # never square: keepdim forgotten raises here on every seed, not runs on some (R-BH)
            scale = 1e4 if case.kind == "scores of magnitude 1e4" else (1.0, 3.0)[case.draw]
            scores = randn(rng, *lead, L, S, dtype=dtype, scale=scale)
            allowed = _allowed_like(rng, lead, L, S, p=(0.3, 0.7)[case.draw], shape=shape)
            if (
                case.kind == "allowed with more leading dims"
            ):  # allowed has more leading dims than scores: result has the broadcast shape
                scores = randn(rng, L, S, dtype=dtype, scale=scale)
                allowed = bernoulli(rng, 2, 1, L, S, p=0.6)
            # a row with two allowed keys and a blocked one; exactly one row with nothing allowed, or none
            allowed, keep = _softmax_allowed(rng, allowed, empty=case.kind == "a fully blocked row")
            if (
                case.kind == "some allowed scores −∞"
            ):  # some allowed scores are −∞ already; every row keeps a finite allowed score
                minus_inf = bernoulli(rng, *scores.shape, p=0.3)
                minus_inf[..., list(keep)] = False
                a = allowed.expand(scores.shape)
                minus_inf[~(a & ~minus_inf).any(-1)] = False
                scores = scores.masked_fill(minus_inf, NEG_INF)
            scores = _blocked_key_wins(scores, allowed)
            if strided:
                scores = noncontiguous(scores)
            inputs = [(scores, allowed)]
            if case.kind.startswith("one or two keys"):  # S = 1 or 2 (one key per row, often), next to the regular input
                L1, S1 = randint(rng, 1, 4), case.draw + 1
                small = bernoulli(rng, L1, S1, p=0.6)
                small[:, randint(rng, 0, S1 - 1)] = True  # no row with nothing allowed
                inputs.append((randn(rng, L1, S1, dtype=dtype, scale=scale), small))
            for scores, allowed in inputs:
                want = in_float64(lambda s: ref.masks.masked_softmax(s, allowed), scores, dtype=dtype)
                t = tol("masks.masked_softmax", dtype, magnitude=scale)  # logsumexp at 1e4 rounds to ~1e-3
                expect.close(
                    sub.masks.masked_softmax(scores, allowed),
                    want,
                    what=(
                        f"masked_softmax(scores {list(scores.shape)} ×{scale:g}, allowed {list(allowed.shape)}) "
                        f"({dtype_name(dtype)})"
                    ),
                    tol=t,
                    mistakes=lambda: signatures.distinct(signatures.softmax(scores, allowed), t, want),
                )


# --------------------------------------------------------------------------- properties
def test_masked_softmax_blocked_weight_is_exactly_zero_and_rows_sum_to_one_or_zero(sub, ref, rng, credit):
    # "exactly 0": the docstring promises it (exp(−∞) = 0 exactly), so a weight left on a blocked key is a leak
    for case in credit.kinds({"float32": 3, "float64": 3}):
        with case:
            dtype = getattr(torch, case.kind)
            # the shape's kind is fixed by the draw (L < S; one square example; L > S), so a mistake
            # that runs only where the shapes allow (keepdim forgotten: [B, L] lines up with the key
            # axis) raises or is named on the same cases on every seed (blind tester R-BH)
            if case.draw == 0:
                B, L = randint(rng, 1, 3), randint(rng, 2, 16)
                S = randint(rng, L + 1, 32)
            elif case.draw == 1:
                B, L = 1, randint(rng, 4, 16)  # rows 0 and 1 fixed below, L − 2 and L − 1 (_shifts_told_apart)
                S = L
            else:
                B, L = randint(rng, 2, 3), randint(rng, 4, 16)
                S = randint(rng, 3, L - 1)
            scale = (1.0, 1e4, 1.0)[case.draw]
            scores = randn(rng, B, L, S, dtype=dtype, scale=scale)
            allowed = bernoulli(rng, B, L, S, p=0.5)
            allowed[:, 1, :3] = torch.tensor([True, True, False])  # a row with two allowed keys (not one-hot) and a blocked one
            allowed[:, 0] = False  # one fully blocked query row per example
            if scale == 1e4:
                scores, allowed = _shifts_told_apart(scores, allowed, far=(0, L - 1), near=(0, L - 2))
                # the near row's weight split evenly over key 0 and key L − 2, its own index: at 1e4
                # every other row is one-hot, which hides a row sum without keepdim (it divides
                # column j by row j's sum) on this square draw, R-BH's kind for it
                scores[:, L - 2, L - 2] = scores[:, L - 2, 0]
                allowed[:, L - 2, L - 2] = True
            got = expect.tensor(sub.masks.masked_softmax(scores, allowed), what="masked_softmax weights", floating=True)
            expect.true(
                tuple(got.shape) == (B, L, S), what="weights shape", detail=f"expected [{B}, {L}, {S}], got {list(got.shape)}"
            )
            t = tol("masks.masked_softmax", dtype, magnitude=scale)
            want = in_float64(lambda s: ref.masks.masked_softmax(s, allowed), scores, dtype=dtype)
            hints = expect.diagnose(got, signatures.distinct(signatures.softmax(scores, allowed), t, want), t, want)
            expect.true(
                not bool(torch.isnan(got).any()),
                what="no NaN, even on rows with nothing allowed",
                detail=f"{int(torch.isnan(got).sum())} NaN values",
                hints=hints,
            )
            leak = got[~allowed]
            expect.true(
                bool((leak == 0).all()),
                what="weights on blocked keys are exactly 0",
                detail=f"largest weight on a blocked key: {leak.abs().max().item():.4g}",
                hints=hints,
            )
            sums = got.double().sum(-1)
            has_key = allowed.any(-1)
            expect.true(
                bool(torch.allclose(sums[has_key], torch.ones_like(sums[has_key]), atol=t.atol * S, rtol=0)),
                what="rows with an allowed key sum to 1",
                detail=expect.sums_detail(sums[has_key]),
                hints=hints,
            )
            # and they are the right weights (e.g. one-hot weights on an allowed key also have both properties)
            expect.close(got, want, what="masked_softmax weights", tol=t, hints=hints)


def test_masked_softmax_gradients_are_finite_and_zero_on_blocked_scores(sub, ref, rng, credit):
    for part in credit.parts(
        ["left-padded causal batch", "random mask", "random mask, scores ×1e4", "a row whose allowed scores are all −∞"]
    ):
        with part:
            dtype = torch.float64
            if part.label == "left-padded causal batch":
                B, T = 2, randint(rng, 5, 9)
                L = S = T
                lengths = [T - 2, randint(rng, 1, T)]
                keys = torch.arange(T).unsqueeze(0) >= T - torch.tensor(lengths).unsqueeze(1)  # [B,T]
                allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))[None] & keys[:, None, :]  # [B,T,T]
                scores = randn(rng, B, T, T, dtype=dtype)
            else:
                # the kinds of row are fixed, whatever the seed draws around them: a fully blocked row, a
                # row with two allowed keys and a blocked one, a fully allowed row — so a mistake that
                # only shows on one kind (a 0 fill zeroed after the softmax: partly blocked rows) fails
                # every part on every seed, and costs the same points on every seed
                B, L, S = 2, randint(rng, 3, 10), randint(rng, 3, 12)
                allowed = bernoulli(rng, B, L, S, p=0.5)
                allowed[0, 0] = False  # a fully blocked row
                # exactly two allowed keys, the rest blocked (normalised over the wrong axis, it would not sum to 1)
                allowed[0, 1] = False
                allowed[0, 1, :2] = True
                allowed[0, L - 1] = True  # a fully allowed row
                scores = randn(rng, B, L, S, dtype=dtype, scale=1e4 if "1e4" in part.label else 1.0)
                if "1e4" in part.label:
                    # the two-allowed-keys row with both allowed scores below 0: a blocked score filled with 0
                    # (not −∞) then outweighs them by e^(1e4), whatever else the seed drew
                    scores[0, 1, :2] = -scores[0, 1, :2].abs() - 1e3
                    # a blocked key above an allowed one: ignoring the mask moves the (one-hot) weight
                    # (and where the row's shift comes from: one row far above the rest, one just above)
                    i = randint(rng, 0, L - 1)
                    scores, allowed = _shifts_told_apart(scores, allowed, far=(1, i), near=(1, (i + 1) % L))
                if "all −∞" in part.label:  # allowed keys, all at −∞: the docstring's other empty row (zeros, finite gradient)
                    i = randint(rng, 0, L - 1)
                    allowed[1, i, 0] = True
                    allowed[1, i, -1] = (
                        False  # keep one blocked key: the lessons' finite fill is only promised for rows that block some key
                    )
                    scores[1, i] = scores[1, i].masked_fill(allowed[1, i], float("-inf"))
            grad_out = randn(rng, B, L, S, dtype=dtype)
            r = sub.masks.call_with_grad("masked_softmax", scores, allowed, wrt=[0], grad_output=grad_out)
            value = r.get("value")
            t = tol("masks.masked_softmax", dtype, magnitude=1e4 if "1e4" in part.label else 1.0)
            s = scores.clone().requires_grad_(True)
            weights = ref.masks.masked_softmax(s, allowed)
            want = torch.autograd.grad((weights * grad_out).sum(), s)[0]
            hints = expect.diagnose(
                value, signatures.distinct(signatures.softmax(scores, allowed), t, weights.detach()), t, weights.detach()
            )
            expect.true(
                r.get("grads") is not None,
                what="masked_softmax is differentiable",
                detail="the output does not require grad: keep the computation in torch operations on the scores",
            )
            g = expect.tensor(r["grads"][0], what="∂L/∂scores")
            if not hints and not bool(torch.isfinite(g).all()) and expect.distance(value, weights.detach(), t) <= 1.0:
                hints = expect.observed(
                    "masks/nan-gradient"
                )  # right weights, NaN gradient: the NaN was patched after the softmax
            expect.true(
                bool(torch.isfinite(g).all()),
                what="∂L/∂scores is finite, also through rows with nothing allowed (Day 1 §3.4)",
                detail=f"{int((~torch.isfinite(g)).sum())} non-finite gradient entries",
                hints=hints,
            )
            # ~0, not exactly 0: the docstring promises exact zeros for the weights only; a gradient is a sum of products
            blocked = g.expand(allowed.shape)[~allowed] if g.shape == scores.shape else g
            expect.true(
                bool((blocked.abs() <= t.atol).all()),
                what="∂L/∂scores is 0 on blocked scores (Day 1 §2.3)",
                detail=f"largest |gradient| on a blocked score: {blocked.abs().max().item():.3g} (tolerance {t.atol:g})",
                hints=hints,
            )
            expect.close(g, want, what="∂L/∂scores equals the reference gradient", tol=t, hints=hints)
            expect.close(value, weights.detach(), what="masked_softmax weights", tol=t, hints=hints)


# --------------------------------------------------------------------------- the other masks
def test_prefix_lm_mask_matches_reference(sub, ref, rng, credit):
    kinds = {"2 ≤ prefix_len < T": 2, "and prefix_len 0 or 1": 1, "and prefix_len = T": 1, "and T = 1": 1, "and T = 2": 1}
    for case in credit.kinds(kinds):
        with case:
            T = long_length(rng) if case.kind == "2 ≤ prefix_len < T" and case.draw == 1 else randint(rng, 5, 64)
            # 2 <= prefix_len <= T - 2 first: at T - 1, j <= prefix_len and "prefix queries read
            # everything" both allow everything, so a failure there could name neither mistake.
            # Both prefix_len 2 and one of 3..T-2 in every case, whatever the seed: a prefix whose
            # queries read one key ahead only (j <= i + 1) is right at 2 and wrong above it, and
            # drawing one or the other made its price depend on the seed (blind tester R-BB)
            regulars = [(T, 2), (T, randint(rng, 3, T - 2))]
            # next to it, never credited alone: prefix_len T - 1, 0 or 1 (plain causal), T (all True); T = 1, T = 2
            extra = {
                "2 ≤ prefix_len < T": (T, T - 1),
                "and prefix_len 0 or 1": (T, randint(rng, 0, 1)),
                "and prefix_len = T": (T, T),
                "and T = 1": (1, randint(rng, 0, 1)),
                "and T = 2": (2, randint(rng, 0, 2)),
            }
            draws = [*regulars[:1], *beside_regular(regulars[1], extra.get(case.kind))]
            for T, p in draws:
                want = ref.masks.prefix_lm_mask(T, p)
                expect.equal(
                    sub.masks.prefix_lm_mask(T, p),
                    want,
                    what=f"prefix_lm_mask({T}, prefix_len={p})",
                    mistakes=lambda: signatures.distinct(signatures.prefix(T, p), EXACT, want),
                )


#: doc_ids' leading dims per case of the document test (0: two or three rows, drawn)
LEADS = {"packed documents": [(), (0,), (2, 2)], "unsorted ids": [(2, 2), ()]}


def test_document_mask_matches_reference_with_leading_dims(sub, ref, rng, credit):
    for case in credit.kinds({"packed documents": 3, "unsorted ids": 2}):
        with case:
            # each case its own lead, the same on every seed: a mask written for one sequence [T]
            # fails the same cases whatever the seed (two or three rows, never one: a single row
            # broadcasts to the right shape with the documents ignored)
            lead = tuple(randint(rng, 2, 3) if n == 0 else n for n in LEADS[case.kind][case.draw])
            T = choice(rng, (3, randint(rng, 4, 40)))
            if case.kind == "packed documents" and case.draw == 0:  # one sequence (lead ()): past a fixed buffer
                T = long_length(rng)
            id_dtype = choice(rng, (torch.int64, torch.int32))
            regular = _doc_ids(rng, lead, T, packed=case.kind == "packed documents")  # ids need not be sorted
            short = case.kind == "packed documents" and case.draw < 2  # T = 1 (all True is right) or 2, next to the regular ids
            tiny = torch.randint(0, 3, (*lead, case.draw + 1), generator=rng).sort(-1).values if short else None  # packed: sorted
            all_ids = beside_regular(regular, tiny)
            for ids in all_ids:
                ids = ids.to(id_dtype)
                want = ref.masks.document_mask(ids)
                with md.one_sequence_hint(sub, ids, want):
                    expect.equal(
                        sub.masks.document_mask(ids),
                        want,
                        what=f"document_mask(doc_ids {list(ids.shape)})",
                        mistakes=lambda: signatures.distinct(signatures.document(ids), EXACT, want),
                    )


def test_masks_functions_keep_dtype_and_leave_inputs_unchanged(sub, rng, credit):
    # a property test (grading.toml `properties`): it checks the result's dtype and that the inputs are left
    # unchanged, whatever the values (those are the value tests' business); it counts once the skill's other
    # tests earn points, so plausible garbage with the right dtypes earns nothing here
    scores64 = randn(rng, 2, 5, 6, dtype=torch.float64)
    scores32 = randn(rng, 2, 5, 6, dtype=torch.float32)
    allowed, _ = _softmax_allowed(rng, bernoulli(rng, 2, 5, 6, p=0.6))
    calls = {
        "apply_mask float64": ("apply_mask", (scores64, allowed), torch.float64),
        "apply_mask float32": ("apply_mask", (scores32, allowed, -1e9), torch.float32),
        "masked_softmax float64": ("masked_softmax", (scores64, allowed), torch.float64),
        "masked_softmax float32": ("masked_softmax", (scores32, allowed), torch.float32),
        "combine_masks": ("combine_masks", (torch.tril(torch.ones(6, 6, dtype=torch.bool)), allowed[:, 0]), torch.bool),
        "padding_allowed": ("padding_allowed", (torch.tensor([3, 6]), 6), torch.bool),
        "document_mask": ("document_mask", (torch.tensor([0, 0, 1, 1, 2]),), torch.bool),
    }
    for part in credit.parts(list(calls)):
        with part:
            name, args, dtype = calls[part.label]
            r = sub.masks.call(name, *args, return_args=True)
            for before, after in zip(args, r.args or []):
                expect.unchanged(before, after, what=f"{name} leaves its inputs unchanged")
            out = expect.tensor(r.value, what=f"{name} result")
            expect.true(
                out.dtype == dtype,
                what=f"{part.label}: result dtype {dtype_name(dtype)}",
                detail=f"got {dtype_name(out.dtype)}",
                hints=["general/mask-dtype"] if dtype == torch.bool else ["general/dtype-changed"],
            )


def test_apply_mask_is_differentiable_in_the_allowed_scores(sub, rng, credit):
    # a property test (grading.toml `properties`): the contract's "every function stays differentiable"
    # (docs/EXERCISES.md). The masked scores feed the softmax, so ∂out/∂scores must be the upstream gradient
    # on every allowed score; the blocked entries are not judged (the lessons' additive mask, Day 1 §3.3,
    # passes 1 there, masked_fill 0: both are right). Values are the value tests' business.
    # Fixed structure: each kind has one draw with a shared [L,S] mask and one with a key-padding
    # [B,1,1,S] mask over [B,h,L,S] scores, so a broken graph fails every kind on every seed.
    fills = {"fill −∞ (default)": None, "finite fill": -1e9}
    for case in credit.kinds({"float32": 2, "float64": 2}):
        with case:
            dtype = getattr(torch, case.kind)
            for label, fill in fills.items():
                if case.draw == 0:
                    B, L, S = randint(rng, 1, 3), randint(rng, 2, 8), randint(rng, 2, 9)
                    scores = randn(rng, B, L, S, dtype=dtype)
                    allowed = mixed(rng, bernoulli(rng, L, S, p=0.6))
                else:
                    B, h, L, S = 2, randint(rng, 2, 3), randint(rng, 2, 6), randint(rng, 3, 8)
                    scores = randn(rng, B, h, L, S, dtype=dtype)
                    allowed = mixed(rng, bernoulli(rng, B, 1, 1, S, p=0.6))
                grad_out = randn(rng, *scores.shape, dtype=dtype)
                args = (scores, allowed) if fill is None else (scores, allowed, fill)
                shown_fill = "" if fill is None else f", fill={fill:g}"
                what = f"apply_mask(scores {list(scores.shape)}, allowed {list(allowed.shape)}{shown_fill})"
                r = sub.masks.call_with_grad("apply_mask", *args, wrt=[0], grad_output=grad_out)
                grads = r.get("grads")
                detached = grads is None or grads[0] is None  # behaviour, not values: the mistake's signature
                expect.true(
                    not detached,
                    what=f"{what} is differentiable in scores ({label})",
                    detail="the result does not require grad: it was cut off from the scores' autograd graph",
                    hints=expect.observed("masks/apply-mask-detached") if detached else [],
                )
                g = expect.tensor(grads[0], what="∂L/∂scores", shape=tuple(scores.shape), floating=True)
                keep = allowed.expand(scores.shape)
                expect.close(
                    g[keep],
                    grad_out[keep],
                    what=f"{what}: ∂L/∂scores equals the upstream gradient on every allowed score ({label})",
                    tol=tol("masks.apply_mask", dtype),
                )
