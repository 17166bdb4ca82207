"""Skill row_softmax, visible tests: the two softmaxes of Week 7 (§5 attention weights over key
positions, §16 next-token probabilities and cross-entropy over the vocabulary).

Shipped to students. Every expected number is printed in week07-attention.txt or computed
here with torch's own softmax; each test also runs one control input (snapshots/row_softmax.json,
which also holds Week 7's head outputs h and the named mistakes' outputs) against torch, and
every test first checks the rule of docs/EXERCISES.md §3 (no torch softmax / log_softmax /
cross_entropy in row_softmax.py, in the source or at run time).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from course import row_softmax_data as data
from course import week07 as w7
from course.tolerances import tol

from autograder.testing import Snapshots, dtype_name, expect, noncontiguous

QK = ("query", "key")
#: the rule's operators cannot run in any call of this skill, watched or not (testing/README.md)
WORKER_BANS = data.REPLACED
WORKER_SCANNED = ("row_softmax",)  # its workers run only the files its rule scan reads (sandbox/codegate.py)
NEG_INF = float("-inf")
F64 = torch.float64
SNAP = Snapshots(__file__)  # control inputs, Week 7's h and the named mistakes' outputs


def _mistakes(name: str) -> dict:
    return SNAP["week7"]["mistakes"][name]


def _blocked_leak(got, scores: torch.Tensor) -> list[str]:
    """The blocked-weight hint only where the answer does put weight on a −∞ score: a values
    failure alone does not prove that (a wrong denominator leaves blocked weights at 0)."""
    if type(got) is not torch.Tensor or got.shape != scores.shape:
        return []
    blocked = got[scores == NEG_INF]
    return ["row_softmax/blocked-weight-not-zero"] if bool(((blocked != 0) & ~torch.isnan(blocked)).any()) else []


def test_softmax_rows_reproduces_week7_attention_weights(sub, rng):
    masked = w7.t(w7.STATED["masked_scaled"])  # Ŝ_A, Ŝ_B (Week 7 §11)
    final = w7.t(w7.STATED["scaled_final_rows"])  # [0.8, 0.4] | [0.1, 0.4] (Week 7 §5)
    table = torch.tensor([[0.2, 0.0], [0.2, NEG_INF]])  # Week 7 §11 table: wrong (0) vs right (−∞) fill
    c = SNAP["softmax_rows"]
    rand = c["scores"]
    calls = data.Calls(sub, rng)
    i_masked, i_final, i_table, i_rand = (calls.add("softmax_rows", s) for s in (masked, final, table, rand))
    i_wide = calls.add("softmax_rows", noncontiguous(rand.double()))  # the control in float64, non-contiguous
    calls.run()
    expect.close(
        calls.value(i_masked),
        w7.t(w7.STATED["weights"]),
        what="softmax_rows(Ŝ) = P_A, P_B (Week 7 §11)",
        tol=w7.PRINTED_3DP,
        mistakes=lambda: _mistakes("masked"),
        hints=_blocked_leak(calls.value(i_masked), masked),
        grid=QK,
    )
    expect.close(
        calls.value(i_final),
        w7.t(w7.STATED["final_weights_4dp"]),
        what="softmax_rows([0.8, 0.4] | [0.1, 0.4]) (Week 7 §5, §12)",
        tol=w7.PRINTED_4DP_F32,
        mistakes=lambda: _mistakes("final"),
        grid=("prompt", "key"),
    )
    got = expect.close(
        calls.value(i_table),
        torch.tensor([w7.STATED["wrong_zero_fill"], w7.STATED["right_neg_inf"]]),
        what="softmax_rows([0.2, 0]) and softmax_rows([0.2, −∞]) (Week 7 §11 table)",
        tol=w7.PRINTED_3DP,
        grid=("row", "key"),
    )
    expect.true(
        bool(got[1, 1] == 0),
        what="softmax_rows([0.2, −∞])[1] is exactly 0 (e^{−∞} = 0, Week 7 §11)",
        detail=f"got {got[1, 1].item():.3g}",
        hints=["row_softmax/blocked-weight-not-zero"],
    )
    expect.close(
        calls.value(i_rand),
        torch.softmax(rand.double(), -1).float(),
        what=f"softmax_rows on random scores {list(rand.shape)}",
        tol=tol("row_softmax.softmax_rows", torch.float32),
        mistakes=c["mistakes"],
        grid=QK,
    )
    expect.close(
        calls.value(i_wide),
        torch.softmax(rand.double(), -1),
        what=f"softmax_rows on the same scores {list(rand.shape)} in float64, non-contiguous: float64 out",
        tol=tol("row_softmax.softmax_rows", F64),
        mistakes=c["mistakes64"],
        grid=QK,
    )


def test_softmax_rows_is_stable_at_scores_of_1e4_and_uses_dim(sub, rng):
    shifted = SNAP["week7"]["shifted"]  # Week 7's final rows, 1e4 higher (Week 7 §8)
    huge = torch.tensor([[1e4, 0.0, -1e4], [3e4, 3e4, NEG_INF]])
    c = SNAP["softmax_columns"]
    columns = c["scores"]  # normalise each column: dim=0
    calls = data.Calls(sub, rng)
    i_shift, i_huge, i_col, i_col_neg = (
        calls.add("softmax_rows", shifted),
        calls.add("softmax_rows", huge),
        calls.add("softmax_rows", columns, dim=0),
        calls.add("softmax_rows", columns, dim=-2),
    )
    calls.run()
    expect.close(
        calls.value(i_shift),
        w7.t(w7.STATED["final_weights_4dp"], torch.float64),
        what="softmax_rows(Week 7 final rows + 1e4) = the same weights (Week 7 §8)",
        tol=w7.PRINTED_4DP_F32,
        mistakes=lambda: _mistakes("shifted"),
        grid=("prompt", "key"),
    )
    expect.close(
        calls.value(i_huge),
        torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]),
        what="softmax_rows([1e4, 0, −1e4] | [3e4, 3e4, −∞])",
        tol=tol(
            "row_softmax.softmax_rows", torch.float32
        ),  # float32 at |s| = 3e4: exp(s − logsumexp(s)) is off by ~1e-4, and correct
        mistakes=lambda: _mistakes("huge"),
        grid=("row", "key"),
    )
    want = torch.softmax(columns.double(), dim=0).float()
    for i, dim in ((i_col, 0), (i_col_neg, -2)):
        expect.close(
            calls.value(i),
            want,
            what=f"softmax_rows(scores [{columns.shape[0]}, 4], dim={dim}): each column sums to 1",
            tol=tol("row_softmax.softmax_rows", torch.float32),
            mistakes=c["mistakes"][str(dim)],
            grid=("row", "column"),
        )


def test_log_softmax_rows_gives_week7_log_probabilities(sub, rng):
    logits = SNAP["week7"]["logits"]  # h W_vocab (W7-36/37)
    big = torch.tensor([[0.0, -1e4, 5.0], [2e4, 1e4, -3e4]])
    c = SNAP["log_softmax_rows"]
    rand = c["logits"]
    calls = data.Calls(sub, rng)
    i_w7, i_big, i_rand = (
        calls.add("log_softmax_rows", logits),
        calls.add("log_softmax_rows", big),
        calls.add("log_softmax_rows", rand),
    )
    i_wide = calls.add("log_softmax_rows", noncontiguous(rand.double()))  # the control in float64, non-contiguous
    calls.run()
    got = expect.close(
        calls.value(i_w7),
        torch.log_softmax(logits.double(), -1).float(),
        what="log_softmax_rows(Week 7 §16 logits)",
        tol=tol("row_softmax.log_softmax_rows", torch.float32),
        mistakes=lambda: _mistakes("log_softmax"),
        grid=("prompt", "vocab"),
    )
    expect.close(
        -torch.stack([got[0, 2], got[1, 0]]),
        w7.t(w7.STATED["loss_each"]),
        what="−log p(AI | 我喜欢), −log p(我 | 猫喜欢) = L_A, L_B (Week 7 §16)",
        tol=w7.PRINTED_6DP,
        hints=["row_softmax/ce-target-indexing"],
    )
    expect.close(
        calls.value(i_big),
        torch.log_softmax(big.double(), -1).float(),
        what="log_softmax_rows at scores of 1e4 stays finite",
        tol=tol("row_softmax.log_softmax_rows", torch.float32),
        mistakes=lambda: _mistakes("log_softmax_big"),
        grid=("row", "vocab"),
    )
    expect.close(
        calls.value(i_rand),
        torch.log_softmax(rand.double(), -1).float(),
        what=f"log_softmax_rows on random logits {list(rand.shape)}",
        tol=tol("row_softmax.log_softmax_rows", torch.float32),
        mistakes=c["mistakes"],
    )
    expect.close(
        calls.value(i_wide),
        torch.log_softmax(rand.double(), -1),
        what=f"log_softmax_rows on the same logits {list(rand.shape)} in float64, non-contiguous: float64 out",
        tol=tol("row_softmax.log_softmax_rows", F64),
        mistakes=c["mistakes64"],
    )


def test_cross_entropy_reproduces_week7_mean_loss(sub, rng):
    logits = SNAP["week7"]["logits"]  # [2, 5]
    targets = data.week7_targets()  # A → AI (2), B → 我 (0)
    c = SNAP["cross_entropy"]
    rand, rand_t = c["logits"], c["targets"]
    N, V = rand.shape
    calls = data.Calls(sub, rng)
    i_mean = calls.add("cross_entropy", logits, targets)
    i_a, i_b = calls.add("cross_entropy", logits[:1], targets[:1]), calls.add("cross_entropy", logits[1:], targets[1:])
    i_rand = calls.add("cross_entropy", rand, rand_t)
    i_wide = calls.add("cross_entropy", noncontiguous(rand.double()), rand_t)  # the control in float64, non-contiguous
    calls.run()
    expect.close(
        calls.value(i_mean),
        torch.tensor(w7.STATED["loss_mean"]),
        what="cross_entropy: the mean loss (a 0-dim tensor) over [我喜欢 → AI, 猫喜欢 → 我] (Week 7 §16: 1.316836)",
        tol=w7.PRINTED_6DP,
        mistakes=lambda: _mistakes("cross_entropy"),
    )
    for i, name, value in (
        (i_a, "L_A = −log p(AI | 我喜欢)", w7.STATED["loss_each"][0]),
        (i_b, "L_B = −log p(我 | 猫喜欢)", w7.STATED["loss_each"][1]),
    ):
        expect.close(
            calls.value(i),
            torch.tensor(value),
            what=f"cross_entropy on one example: {name} (Week 7 §16)",
            tol=w7.PRINTED_6DP,
            hints=["row_softmax/ce-missing-log"],
        )
    expect.close(
        calls.value(i_rand),
        F.cross_entropy(rand.double(), rand_t).float(),
        what=f"cross_entropy on random logits [{N}, {V}]",
        tol=tol("row_softmax.cross_entropy", torch.float32),
        mistakes=c["mistakes"],
    )
    expect.close(
        calls.value(i_wide),
        F.cross_entropy(rand.double(), rand_t),
        what=f"cross_entropy on the same logits [{N}, {V}] in float64, non-contiguous: a float64 0-dim tensor",
        tol=tol("row_softmax.cross_entropy", F64),
        mistakes=c["mistakes64"],
    )


def test_vocab_probs_reproduces_week7_next_token_probabilities(sub, rng):
    h, w_vocab = SNAP["week7"]["h"], data.week7_w_vocab(torch.float32)  # h [2, 2], W_vocab [2, 5]
    c = SNAP["vocab_probs"]
    h_rand, w_rand = c["h"], c["w_vocab"]
    (B, T, C), V = h_rand.shape, w_rand.shape[-1]
    calls = data.Calls(sub, rng)
    i_w7, i_rand = calls.add("vocab_probs", h, w_vocab), calls.add("vocab_probs", h_rand, w_rand)
    i_wide = calls.add(
        "vocab_probs", noncontiguous(h_rand.double()), noncontiguous(w_rand.double())
    )  # the control in float64, non-contiguous
    calls.run()
    got = expect.close(
        calls.value(i_w7),
        torch.softmax(h.double() @ w_vocab.double(), -1).float(),
        what="vocab_probs(h, W_vocab) (Week 7 §16)",
        tol=tol("row_softmax.vocab_probs", torch.float32),
        mistakes=data.vocab_mistakes(sub, h, w_vocab, _mistakes("vocab_probs"), _mistakes("vocab_via_softmax")),
        grid=("prompt", "vocab"),
    )
    expect.close(
        torch.stack([got[0, 2], got[1, 0]]),
        w7.t(w7.STATED["p_target"]),
        what="p(AI | 我喜欢) = 0.416424, p(我 | 猫喜欢) = 0.172455 (Week 7 §16)",
        tol=w7.PRINTED_6DP,
        hints=["row_softmax/vocab-wrong-axis"],
    )
    expect.close(
        calls.value(i_rand),
        torch.softmax(h_rand.double() @ w_rand.double(), -1).float(),
        what=f"vocab_probs(h [{B}, {T}, {C}], W_vocab [{C}, {V}]) → [B, T, V]",
        tol=tol("row_softmax.vocab_probs", torch.float32),
        mistakes=data.vocab_mistakes(sub, h_rand, w_rand, c["mistakes"], c["via"]),
        grid=("position", "vocab"),
    )
    expect.close(
        calls.value(i_wide),
        torch.softmax(h_rand.double() @ w_rand.double(), -1),
        what=f"vocab_probs(h [{B}, {T}, {C}], W_vocab [{C}, {V}]) in float64, non-contiguous: float64 out",
        tol=tol("row_softmax.vocab_probs", F64),
        mistakes=data.vocab_mistakes(sub, h_rand.double(), w_rand.double(), c["mistakes64"], c["via64"]),
    )


def test_row_softmax_functions_keep_dtype_and_leave_control_inputs_unchanged(sub, rng, credit):
    # a property test (grading.toml `properties`): the result's dtype is the input's (float32 and float64: no
    # up- or downcast) and no input tensor is modified in place, whatever the values (those are the value
    # tests' business); one part per function and dtype, so a mistake costs only its own function's share
    s, ls, ce, vp = SNAP["softmax_rows"], SNAP["log_softmax_rows"], SNAP["cross_entropy"], SNAP["vocab_probs"]
    calls = {}
    for dtype in (torch.float32, F64):
        name = dtype_name(dtype)
        calls[f"softmax_rows {name}"] = ("softmax_rows", (s["scores"].to(dtype),), dtype)
        calls[f"log_softmax_rows {name}"] = ("log_softmax_rows", (ls["logits"].to(dtype),), dtype)
        calls[f"cross_entropy {name}"] = ("cross_entropy", (ce["logits"].to(dtype), ce["targets"]), dtype)
        calls[f"vocab_probs {name}"] = ("vocab_probs", (vp["h"].to(dtype), vp["w_vocab"].to(dtype)), dtype)
    for part in credit.parts(sorted(calls, key=lambda k: k.split()[0])):
        with part:
            name, args, dtype = calls[part.label]
            r = data.call_explained(sub, name, *args, return_args=True)
            expect.kept_inputs_and_dtype(
                name, args, r, dtype, case=part.label, dtype_case=f"{part.label} input", in_place="-=, exp_, x[...] ="
            )
