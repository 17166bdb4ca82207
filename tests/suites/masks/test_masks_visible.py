"""Skill masks, visible tests: the course's worked examples of masks.

Shipped to students. Week 7 §10–§11 (M_T=2, M_T=4, Ŝ_A, Ŝ_B, P_A, P_B and the 0-vs-−∞
table) and Day 1 §3 (padding, the left-padded batch of §3.4, prefix-LM and document
masks). Expected masks the lessons describe but do not print, and every test's *control
inputs* (a required part: failing it scores the test 0, so recognising the example and
printing its numbers earns nothing), come from the reference solution, run at release time
(snapshots/masks.json). The hidden suite checks the same functions much more widely.
"""

from __future__ import annotations

import torch
from course import masks_data as md
from course import week07 as w7
from course.tolerances import tol

from autograder.testing import Snapshots, expect, noncontiguous

QK = ("query", "key")
FRESH = "control inputs"
F32 = torch.float32
F64 = torch.float64
WIDE = "float64, non-contiguous"  # a control input in float64 and a strided layout: the dtype is kept, nothing assumes contiguity
NEG_INF = float("-inf")
SNAP = Snapshots(__file__)  # control inputs, the reference's outputs and the named mistakes' outputs on them
SIGNATURES = "examples"  # SNAP["examples"]["mistakes"][...]: the mistakes' outputs on the lessons' examples


def _mistakes(name: str) -> dict:
    return SNAP[SIGNATURES]["mistakes"][name]


def _bool(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bool)


def test_causal_mask_reproduces_week7_m2_and_m4(sub, rng, credit):
    for part in credit.parts(["T=2", "T=4", "T=5 row counts", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["causal_mask"]
                T = c["T"]
                md.mask_equal(
                    sub.masks.causal_mask(T),
                    c["want"],
                    what=f"causal_mask({T}) on a control length: key j <= query i (Week 7 §10)",
                    mistakes=c["mistakes"],
                )
            elif part.label == "T=2":
                md.mask_equal(
                    sub.masks.causal_mask(2),
                    _bool(w7.STATED["mask_T2"]),
                    what="causal_mask(2) = M_T=2 (Week 7 §10, 1 = visible)",
                    mistakes=lambda: _mistakes("causal_2"),
                    grid=QK,
                )
            elif part.label == "T=4":
                md.mask_equal(
                    sub.masks.causal_mask(4),
                    _bool(w7.STATED["mask_T4"]),
                    what="causal_mask(4) = M_T=4 (Week 7 §10: t=3 reads 0, 1, 2, 3)",
                    mistakes=lambda: _mistakes("causal_4"),
                    grid=QK,
                )
            else:
                got = expect.tensor(sub.masks.causal_mask(5), what="causal_mask(5)")
                counts = got.sum(-1).tolist() if tuple(got.shape) == (5, 5) else None
                expect.true(
                    counts == md.L2_03_ROW_COUNTS,
                    what="causal_mask(5): row i sees i + 1 positions (Lesson 2 §4)",
                    detail=f"expected row counts {md.L2_03_ROW_COUNTS}, got {counts if counts is not None else list(got.shape)}",
                    hints=expect.diagnose(got, _mistakes("causal_5"), w7.NEAR_EXACT, SNAP["examples"]["causal_5"]),
                )


def test_apply_mask_puts_minus_inf_on_week7_future_scores(sub, rng, credit):
    for part in credit.parts(["Ŝ_A, Ŝ_B", WIDE, FRESH], required=[FRESH]):
        with part:
            if part.label == WIDE:
                c = SNAP["apply_mask"]
                scores, allowed = c["scores64"], c["allowed64"]
                expect.close(
                    sub.masks.apply_mask(noncontiguous(scores), noncontiguous(allowed)),
                    c["want64"],
                    what=f"apply_mask(control scores {list(scores.shape)} float64 non-contiguous, mask): float64 in, float64 out",
                    tol=tol("masks.apply_mask", F64),
                    mistakes=c["mistakes64"],
                )
            elif part.label == FRESH:
                c = SNAP["apply_mask"]
                scores, allowed, fill = c["scores"], c["allowed"], c["fill"]
                expect.close(
                    sub.masks.apply_mask(scores, allowed, fill),
                    c["want"],
                    what=f"apply_mask on control scores {list(scores.shape)} and mask, fill={fill:g}",
                    tol=tol("masks.apply_mask", F32),
                    mistakes=c["mistakes"],
                )
            else:
                scaled = SNAP["examples"]["scaled"]
                allowed = _bool(w7.STATED["mask_T2"])
                expect.close(
                    sub.masks.apply_mask(scaled, allowed),
                    w7.t(w7.STATED["masked_scaled"]),
                    what="apply_mask(S̃, causal) = Ŝ_A, Ŝ_B (Week 7 §11: future column −∞)",
                    tol=w7.NEAR_EXACT,
                    mistakes=lambda: _mistakes("apply_scaled"),
                    grid=QK,
                )


def _wide_masked_softmax(sub) -> None:
    c = SNAP["masked_softmax"]
    scores, allowed = c["scores64"], c["allowed64"]
    expect.close(
        sub.masks.masked_softmax(noncontiguous(scores), noncontiguous(allowed)),
        c["want64"],
        what=(
            f"masked_softmax(control scores {list(scores.shape)} float64 non-contiguous, mask; last query rows: "
            "nothing allowed): float64 in, float64 out"
        ),
        tol=tol("masks.masked_softmax", F64),
        mistakes=c["mistakes64"],
    )


def _fresh_masked_softmax(sub, rng) -> None:
    c = SNAP["masked_softmax"]
    scores, allowed = c["scores"], c["allowed"]
    expect.close(
        sub.masks.masked_softmax(scores, allowed),
        c["want"],
        what=(
            f"masked_softmax on control scores {list(scores.shape)} (example 0 at ~200) and mask (last query rows: "
            "nothing allowed)"
        ),
        tol=tol("masks.masked_softmax", F32),
        mistakes=c["mistakes"],
    )


def test_masked_softmax_reproduces_week7_weights_and_the_minus_inf_table(sub, rng, credit):
    for part in credit.parts(["§11 table", "P_A, P_B", WIDE, FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                _fresh_masked_softmax(sub, rng)
            elif part.label == WIDE:
                _wide_masked_softmax(sub)
            elif part.label == "§11 table":
                # one query row, [L=1, S=2]: the docstring's [...,L,S] (a 1-D row refused an
                # unpacking ``*batch, L, S = scores.shape`` the contract allows: blind tester R-BS)
                row, allowed = w7.t([md.W7_TABLE_ROW]), _bool([[True, False]])
                expect.close(
                    sub.masks.masked_softmax(row, allowed),
                    w7.t([w7.STATED["right_neg_inf"]]),
                    what="masked_softmax([[0.2, 0.9]], future blocked) = softmax([0.2, −∞]) = [1, 0] (Week 7 §11 table)",
                    tol=w7.PRINTED_3DP,
                    mistakes=lambda: _mistakes("softmax_table_row"),
                )
            else:
                scaled = SNAP["examples"]["scaled"]
                allowed = _bool(w7.STATED["mask_T2"])
                expect.close(
                    sub.masks.masked_softmax(scaled, allowed),
                    w7.t(w7.STATED["weights"]),
                    what="masked_softmax(S̃, causal) = P_A, P_B (Week 7 §11)",
                    tol=w7.PRINTED_3DP,
                    mistakes=lambda: _mistakes("softmax_scaled"),
                    grid=QK,
                )


def test_padding_allowed_marks_real_tokens_left_and_right(sub, rng, credit):
    lengths = [3, 5, 1]
    for part in credit.parts(["right padding", "left padding", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["padding_allowed"]
                fresh, T = c["lengths"], c["T"]
                for left in (False, True):
                    md.mask_equal(
                        sub.masks.padding_allowed(torch.tensor(fresh), T, left_padded=left),
                        c["left" if left else "right"],
                        what=f"padding_allowed(lengths={fresh}, T={T}, left_padded={left}) on control lengths",
                        mistakes=c["mistakes_left" if left else "mistakes_right"],
                    )
                continue
            left = part.label == "left padding"
            want = SNAP["examples"]["padding_left" if left else "padding_right"]
            md.mask_equal(
                sub.masks.padding_allowed(torch.tensor(lengths), 5, left_padded=left),
                want,
                what=f"padding_allowed(lengths={lengths}, T=5, left_padded={left}) (Day 1 §3.2, §3.4)",
                mistakes=lambda: _mistakes("padding_left" if left else "padding_right"),
                grid=("example", "token"),
            )


def test_combine_masks_left_padded_batch_leaves_0_0_1_2_3_keys(sub, rng, credit):
    T, n = md.LEFT_PADDED_T, md.LEFT_PADDED_LENGTH
    causal = SNAP["examples"]["causal_5"]  # Week 7 §10
    key_allowed = torch.arange(T).unsqueeze(0) >= T - n  # pad pad A B C
    for part in credit.parts(["mask", "unmasked keys per row", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["combine_masks"]
                fresh_causal, keys = c["causal"], c["key_allowed"]
                md.mask_equal(
                    sub.masks.combine_masks(fresh_causal, keys),
                    c["want"],
                    what=(
                        f"combine_masks(causal {list(fresh_causal.shape)}, key_allowed {list(keys.shape)}) on "
                        "control padding: allowed where both allow (Day 1 §3.2)"
                    ),
                    mistakes=c["mistakes"],
                )
                continue
            got = sub.masks.combine_masks(causal, key_allowed)
            mistakes = _mistakes("combine_left_padded")
            if part.label == "mask":
                md.mask_equal(
                    got,
                    SNAP["examples"]["combine_left_padded"],
                    what="combine_masks(causal(5), [pad, pad, A, B, C]) (Day 1 §3.4)",
                    mistakes=mistakes,
                    grid=QK,
                )
            else:
                got = expect.tensor(got, what="combine_masks(causal(5), [pad, pad, A, B, C])")
                counts = got.sum(-1).reshape(-1).tolist() if tuple(got.shape) == (1, 1, T, T) else None
                expect.true(
                    counts == md.D1_17_UNMASKED_KEYS,
                    what="unmasked keys per query row (Day 1 §3.4: [0, 0, 1, 2, 3])",
                    detail=(
                        f"expected {md.D1_17_UNMASKED_KEYS}, got "
                        f"{counts if counts is not None else 'shape ' + str(list(got.shape))}"
                    ),
                    hints=expect.diagnose(got, mistakes, w7.NEAR_EXACT, SNAP["examples"]["combine_left_padded"]),
                )


def test_masked_softmax_left_padded_pad_rows_are_zero_not_nan(sub, rng, credit):
    for part in credit.parts(["pad pad A B C", "finite gradient", FRESH], required=[FRESH]):
        with part:
            if part.label == "finite gradient":
                c = SNAP["left_padded_softmax"]
                scores, allowed, lengths, T = c["scores"], c["allowed"], c["lengths"], c["T"]
                r = sub.masks.call_with_grad("masked_softmax", scores, allowed, wrt=[0], grad_output=c["grad_out"])
                what = (
                    f"masked_softmax on the control left-padded causal batch (lengths {lengths}, T={T}; example 1's "
                    "last row: allowed scores all −∞)"
                )
                expect.close(r.get("value"), c["want"], what=what, tol=tol("masks.masked_softmax", F32), mistakes=c["mistakes"])
                expect.true(
                    r.get("grads") is not None,
                    what=f"{what} is differentiable",
                    detail="the output does not require grad: keep the computation in torch operations on the scores",
                )
                g = expect.tensor(r["grads"][0], what=f"{what}: ∂L/∂scores")
                finite = bool(torch.isfinite(g).all())
                expect.true(
                    finite,
                    what=f"{what}: ∂L/∂scores is finite, also through the pad rows with nothing allowed (Day 1 §3.4)",
                    detail=f"{int((~torch.isfinite(g)).sum())} non-finite gradient entries",
                    hints=[] if finite else expect.observed("masks/nan-gradient"),
                )  # the weights are right (checked above): NaN patched after the softmax
                expect.close(
                    g,
                    c["grad_want"],
                    what=f"{what}: ∂L/∂scores equals the reference gradient",
                    tol=tol("masks.masked_softmax_grad", F32),
                )
                continue
            if part.label == FRESH:
                c = SNAP[
                    "left_padded_softmax"
                ]  # two or more pad queries that read nothing, two or more real keys, a row of −∞ scores
                scores, allowed, lengths, T = c["scores"], c["allowed"], c["lengths"], c["T"]
                expect.close(
                    sub.masks.masked_softmax(scores, allowed),
                    c["want"],
                    what=f"masked_softmax on a control left-padded causal batch (lengths {lengths}, T={T}): pad rows all zeros",
                    tol=tol("masks.masked_softmax", F32),
                    mistakes=c["mistakes"],
                )
                continue
            T = md.LEFT_PADDED_T
            allowed = SNAP["examples"]["combine_left_padded"][0, 0]  # [T,T]: causal and the 2 pad keys blocked
            scores = torch.tensor([[0.3, -1.2, 0.5, 0.0, 2.0]] * T) + torch.arange(T).unsqueeze(1) * 0.1
            want = torch.zeros(T, T)
            for i in range(2, T):  # rows 0 and 1 (the pad queries) read nothing
                keys = slice(2, i + 1)
                want[i, keys] = torch.softmax(scores[i, keys].double(), -1).float()
            expect.close(
                sub.masks.masked_softmax(scores, allowed),
                want,
                what="masked_softmax on the left-padded causal batch: pad rows 0, 1 are all zeros, never NaN (Day 1 §3.4)",
                tol=w7.NEAR_EXACT,
                mistakes=lambda: _mistakes("softmax_left_padded"),
                grid=QK,
            )


def test_prefix_lm_and_document_masks_small_examples(sub, rng, credit):
    for part in credit.parts(["prefix-LM", "document", FRESH], required=[FRESH]):
        with part:
            if part.label == FRESH:
                c = SNAP["prefix_and_document"]
                T, p, ids = c["T"], c["prefix_len"], c["doc_ids"]
                md.mask_equal(
                    sub.masks.prefix_lm_mask(T, p),
                    c["prefix_want"],
                    what=f"prefix_lm_mask({T}, prefix_len={p}) on control sizes (Day 1 §3.5)",
                    mistakes=c["prefix_mistakes"],
                )
                with md.one_sequence_hint(sub, ids, c["doc_want"]):
                    md.mask_equal(
                        sub.masks.document_mask(ids),
                        c["doc_want"],
                        what=f"document_mask(control doc_ids [2,{T}]) (Day 1 §3.5)",
                        mistakes=c["doc_mistakes"],
                    )
            elif part.label == "prefix-LM":
                T, p = 5, 2
                md.mask_equal(
                    sub.masks.prefix_lm_mask(T, p),
                    SNAP["examples"]["prefix_lm_5_2"],
                    what="prefix_lm_mask(5, prefix_len=2): prefix bidirectional, the rest causal (Day 1 §3.5)",
                    mistakes=lambda: _mistakes("prefix_lm_5_2"),
                    grid=QK,
                )
            else:
                ids = torch.tensor([0, 0, 1, 1, 1, 2])
                md.mask_equal(
                    sub.masks.document_mask(ids),
                    SNAP["examples"]["document_001112"],
                    what="document_mask([0, 0, 1, 1, 1, 2]): block-diagonal × causal (Day 1 §3.5)",
                    mistakes=lambda: _mistakes("document_001112"),
                    grid=QK,
                )


def test_masks_functions_keep_dtype_and_leave_control_inputs_unchanged(sub, rng, credit):
    # a property test (grading.toml `properties`): the result's dtype is the input's (float32 and float64: no
    # up- or downcast; masks are bool) and no input tensor is modified in place, whatever the values (those are
    # the value tests' business); one part per function and dtype, so a mistake costs only its own function's share
    a, m = SNAP["apply_mask"], SNAP["masked_softmax"]
    calls = {
        "apply_mask float32": ("apply_mask", (a["scores"], a["allowed"], a["fill"]), F32),
        "apply_mask float64": ("apply_mask", (a["scores64"], a["allowed64"]), F64),
        "masked_softmax float32": ("masked_softmax", (m["scores"], m["allowed"]), F32),
        "masked_softmax float64": ("masked_softmax", (m["scores64"], m["allowed64"]), F64),
        "padding_allowed": (
            "padding_allowed",
            (torch.tensor(SNAP["padding_allowed"]["lengths"]), SNAP["padding_allowed"]["T"]),
            torch.bool,
        ),
        "combine_masks": ("combine_masks", (SNAP["combine_masks"]["causal"], SNAP["combine_masks"]["key_allowed"]), torch.bool),
        "document_mask": ("document_mask", (SNAP["prefix_and_document"]["doc_ids"],), torch.bool),
    }
    for part in credit.parts(list(calls)):
        with part:
            name, args, dtype = calls[part.label]
            r = sub.masks.call(name, *args, return_args=True)
            expect.kept_inputs_and_dtype(
                name, args, r, dtype, case=part.label, dtype_case=f"{part.label} input", in_place="masked_fill_, +=, x[...] ="
            )
