"""Skill row_softmax, hidden tests: the Week 7 §5/§16 numbers at their stated precision, the
reference on fresh random inputs (scores of magnitude 1e4, −∞ entries, any axis, float32 and
float64, non-contiguous), properties of a softmax, dtype/in-place rules, and the docs/EXERCISES.md §3
rule — a gate (weight 0): a submission that calls torch's softmax / log_softmax /
cross_entropy scores 0 in the skill, and no weighted test re-checks it.
Not shipped to students; on Gradescope students see each test's name and hint only."""

from __future__ import annotations

import torch
from course import oracles
from course import row_softmax_data as data
from course import week07 as w7
from course.tolerances import tol

from autograder.testing import (
    SubmissionError,
    SubmissionRaised,
    dtype_name,
    expect,
    in_float64,
    noncontiguous,
    randint,
    randn,
    sibling,
)

signatures = sibling(__file__, "mistakes")  # the named mistakes' outputs (beside this suite; never shipped to students)

QK = ("query", "key")
#: the rule's operators cannot run in any call of this skill, watched or not (testing/README.md)
WORKER_BANS = data.REPLACED
WORKER_SCANNED = ("row_softmax",)  # its workers run only the files its rule scan reads (sandbox/codegate.py)
F32, F64 = torch.float32, torch.float64
DTYPES = (F32, F64)
NEG_INF = float("-inf")


def _size(rng, n: int | None, *avoid: int) -> int:
    """A fixed size ``n``, or (None) a random one in [2, 64] that is none of ``avoid``."""
    if n is not None:
        return n
    size = randint(rng, 2, 64)
    while size in avoid:
        size = randint(rng, 2, 64)
    return size


def _scores(
    rng, dtype, *, lead: tuple, L: int | None, S: int | None, blocked: bool, spread: float, offset: float
) -> torch.Tensor:
    """Scores [*lead, L, S] of a fixed structure with random values: N(offset, spread²); L, S as
    given (None: random in [2, 64], L ≠ S); ``blocked``: every row has −∞ on at least one key
    and at least one allowed key (when S ≥ 2), the other keys blocked at random."""
    L = _size(rng, L)
    S = _size(rng, S, L)
    s = randn(rng, *lead, L, S, dtype=torch.float64, scale=spread) + offset
    if blocked and S > 1:
        block = torch.rand(*lead, L, S, generator=rng, dtype=torch.float64) < 0.4
        allowed = torch.randint(0, S, (*lead, L, 1), generator=rng)
        blocked_key = (allowed + torch.randint(1, S, (*lead, L, 1), generator=rng)) % S  # another key of the row
        block.scatter_(-1, blocked_key, True)
        block.scatter_(-1, allowed, False)
        s = s.masked_fill(block, NEG_INF)
    return s.to(dtype)


PLAIN, TRANSPOSED, POSITIVE_DIM, STRIDED = "dim=-1", "transposed, dim=-2", "transposed, positive dim", "non-contiguous, dim=-1"


def _layout(s: torch.Tensor, how: str) -> tuple[torch.Tensor, int]:
    """The scores as the test passes them: normalised along dim=-1, or transposed and along
    dim=-2 / a positive dim, or non-contiguous."""
    if how == PLAIN:
        return s, -1
    if how == TRANSPOSED:
        return s.transpose(-1, -2), -2
    if how == POSITIVE_DIM:
        return s.transpose(-1, -2), s.dim() - 2
    return noncontiguous(s), -1


class _Gate:
    """One typical input per function (float32, [2, L, S], moderate scores, dim=-1), checked
    against the reference *before* a test's partial-credit loop: a function that is wrong
    on the plain case — or answers the lesson's numbers from a table — scores 0 in the test,
    not the share of edge cases (T=1, S=1) where any constant happens to be right."""

    def __init__(self, rng, calls: data.Calls, *names: str) -> None:
        L, S, C = randint(rng, 3, 12), randint(rng, 3, 12), randint(rng, 2, 8)
        s = randn(rng, 2, L, S, scale=3.0)
        targets = torch.randint(0, S, (L,), generator=rng)
        h, w_vocab = randn(rng, 2, L, C), randn(rng, C, S, scale=C**-0.5)
        args = {"softmax_rows": (s,), "log_softmax_rows": (s,), "cross_entropy": (s[0], targets), "vocab_probs": (h, w_vocab)}
        self.items = [(name, args[name], calls.add(name, *args[name])) for name in names]
        self.calls = calls

    def check(self, ref, only: str | None = None) -> None:
        """Check the gate of every function, or only of ``only`` (the function a part uses)."""
        for name, args, i in self.items:
            if only is not None and name != only:
                continue
            want = in_float64(getattr(ref.row_softmax, name), *args, dtype=torch.float32)
            mistakes = getattr(signatures, name.replace("_rows", ""))(*args)
            if name == "vocab_probs":  # charged to softmax_rows where that is what is wrong
                mistakes = data.vocab_mistakes(self.calls.sub, *args, mistakes, signatures.vocab_via_softmax(*args))
            expect.close(
                self.calls.value(i),
                want,
                what=f"{name} on plain float32 inputs of shapes {[list(a.shape) for a in args]} (checked before the cases)",
                tol=tol(f"row_softmax.{name}", torch.float32),
                mistakes=mistakes,
            )


# --------------------------------------------------------------------------- course numbers
def test_week7_softmax_numbers_at_stated_precision_in_float32_and_float64(sub, ref, rng, credit):
    calls = data.Calls(sub, rng)
    gate = _Gate(rng, calls, "softmax_rows", "log_softmax_rows", "cross_entropy", "vocab_probs")
    idx: dict[tuple[str, torch.dtype], int] = {}
    inputs = {}
    for dtype in DTYPES:
        logits = oracles.week7_h(dtype) @ data.week7_w_vocab(dtype)
        targets = data.week7_targets()
        inputs[dtype] = logits
        idx["rows", dtype] = calls.add("softmax_rows", w7.t(w7.STATED["scaled_final_rows"], dtype))
        idx["shift", dtype] = calls.add("softmax_rows", w7.t(w7.STATED["scaled_final_rows"], dtype) + 1000.0)
        idx["masked", dtype] = calls.add("softmax_rows", w7.t(w7.STATED["masked_scaled"], dtype))
        idx["probs", dtype] = calls.add("vocab_probs", oracles.week7_h(dtype), data.week7_w_vocab(dtype))
        idx["logp", dtype] = calls.add("log_softmax_rows", logits)
        idx["mean", dtype] = calls.add("cross_entropy", logits, targets)
        idx["L_A", dtype] = calls.add("cross_entropy", logits[:1], targets[:1])
        idx["L_B", dtype] = calls.add("cross_entropy", logits[1:], targets[1:])
        idx["uniform", dtype] = calls.add("softmax_rows", torch.zeros(1, 128, dtype=dtype))
    calls.run()
    uses = {
        "weights": "softmax_rows",
        "shift invariance": "softmax_rows",
        "P_A, P_B": "softmax_rows",
        "probabilities": "vocab_probs",
        "log-probabilities": "log_softmax_rows",
        "mean loss": "cross_entropy",
        "single losses": "cross_entropy",
        "uniform weight": "softmax_rows",
    }
    for part in credit.parts(
        [
            "weights (W7-20, W7-26a)",
            "shift invariance (W7-55)",
            "P_A, P_B (W7-24, W7-25)",
            "probabilities (W7-39, W7-41)",
            "log-probabilities (W7-40, W7-42)",
            "mean loss (W7-43)",
            "single losses (W7-40, W7-42)",
            "uniform weight (D1-35)",
        ]
    ):
        with part:
            gate.check(ref, only=uses[part.label.split(" (")[0]])  # a wrong cross_entropy costs its own parts only
            for dtype in DTYPES:
                six = w7.PRINTED_6DP if dtype == torch.float32 else w7.Tol(0.0, 1e-6)
                label = part.label.split(" (")[0]
                if label == "weights":
                    got = calls.value(idx["rows", dtype])
                    expect.close(
                        got,
                        w7.t(w7.STATED["final_weights_4dp"], dtype),
                        what=f"softmax_rows([0.8, 0.4] | [0.1, 0.4]) ({dtype_name(dtype)}, W7-26a)",
                        tol=w7.PRINTED_4DP_F32,
                        mistakes=lambda: signatures.softmax(w7.t(w7.STATED["scaled_final_rows"], dtype)),
                    )
                elif label == "shift invariance":
                    base = torch.softmax(w7.t(w7.STATED["scaled_final_rows"], torch.float64), -1).to(dtype)
                    expect.close(
                        calls.value(idx["shift", dtype]),
                        base,
                        what=f"softmax_rows(rows + 1000) = softmax_rows(rows) ({dtype_name(dtype)}, W7-55)",
                        tol=w7.Tol(0.0, 1e-12) if dtype == torch.float64 else tol("row_softmax.softmax_rows", dtype),
                        mistakes=lambda: signatures.softmax(w7.t(w7.STATED["scaled_final_rows"], dtype) + 1000.0),
                    )
                elif label == "P_A, P_B":
                    got = expect.close(
                        calls.value(idx["masked", dtype]),
                        w7.t(w7.STATED["weights"], dtype),
                        what=f"softmax_rows(Ŝ_A, Ŝ_B) ({dtype_name(dtype)}, W7-24/25)",
                        tol=w7.PRINTED_3DP,
                        mistakes=lambda: signatures.softmax(w7.t(w7.STATED["masked_scaled"], dtype)),
                        grid=QK,
                    )
                    expect.true(
                        bool((got[:, 0, 1] == 0).all()),
                        what="the weight on the masked future key is exactly 0 (Week 7 §11)",
                        detail=f"got {got[:, 0, 1].tolist()}",
                        hints=["row_softmax/blocked-weight-not-zero"],
                    )
                elif label == "probabilities":
                    got = expect.tensor(calls.value(idx["probs", dtype]), what="vocab_probs(h, W_vocab)")
                    expect.close(
                        got,
                        torch.softmax(inputs[dtype].double(), -1).to(dtype),
                        what=f"vocab_probs(h_A | h_B, W_vocab) ({dtype_name(dtype)})",
                        tol=tol("row_softmax.vocab_probs", dtype),
                        mistakes=data.vocab_mistakes(
                            sub,
                            oracles.week7_h(dtype),
                            data.week7_w_vocab(dtype),
                            signatures.vocab_probs(oracles.week7_h(dtype), data.week7_w_vocab(dtype)),
                            signatures.vocab_via_softmax(oracles.week7_h(dtype), data.week7_w_vocab(dtype)),
                        ),
                    )
                    expect.close(
                        torch.stack([got[0, 2], got[1, 0]]),
                        w7.t(w7.STATED["p_target"], dtype),
                        what="p(AI | 我喜欢), p(我 | 猫喜欢) (W7-39, W7-41)",
                        tol=six,
                    )
                elif label == "log-probabilities":
                    got = expect.close(
                        calls.value(idx["logp", dtype]),
                        torch.log_softmax(inputs[dtype].double(), -1).to(dtype),
                        what=f"log_softmax_rows(Week 7 logits) ({dtype_name(dtype)})",
                        tol=tol("row_softmax.log_softmax_rows", dtype),
                        mistakes=lambda: signatures.log_softmax(inputs[dtype]),
                    )
                    expect.close(
                        -torch.stack([got[0, 2], got[1, 0]]),
                        w7.t(w7.STATED["loss_each"], dtype),
                        what=f"−log p(target) ({dtype_name(dtype)}, W7-40, W7-42)",
                        tol=six,
                        mistakes={h: -torch.stack([m[0, 2], m[1, 0]]) for h, m in signatures.log_softmax(inputs[dtype]).items()},
                    )
                elif label == "mean loss":
                    expect.close(
                        calls.value(idx["mean", dtype]),
                        torch.tensor(w7.STATED["loss_mean"], dtype=dtype),
                        what=f"cross_entropy(logits, [2, 0]) ({dtype_name(dtype)}, W7-43)",
                        tol=six,
                        mistakes=lambda: signatures.cross_entropy(inputs[dtype], data.week7_targets()),
                    )
                elif label == "uniform weight":  # "exact 1/128": only float rounding of exp/log paths allowed
                    expect.close(
                        calls.value(idx["uniform", dtype]),
                        torch.full((1, 128), 1 / 128, dtype=dtype),
                        what=f"softmax_rows(zeros [1,128]) = 1/T ({dtype_name(dtype)}, D1-35)",
                        tol=w7.Tol(1e-12 if dtype == torch.float64 else 1e-6, 0.0),
                        mistakes=lambda: signatures.softmax(torch.zeros(1, 128, dtype=dtype)),
                    )
                else:
                    for key, i in (("L_A", 0), ("L_B", 1)):
                        expect.close(
                            calls.value(idx[key, dtype]),
                            torch.tensor(w7.STATED["loss_each"][i], dtype=dtype),
                            what=f"cross_entropy on one example: {key} ({dtype_name(dtype)})",
                            tol=six,
                            mistakes=lambda: signatures.cross_entropy(inputs[dtype][i : i + 1], data.week7_targets()[i : i + 1]),
                        )


# --------------------------------------------------------------------------- vs the reference
def _cases_against_reference(sub, ref, rng, credit, name: str, count: int, draw) -> None:
    """The shape of every "matches the reference" test: the plain-input gate first, then one
    credited case per draw. ``draw(i)`` returns (args, kwargs, what, mistakes) for case i."""
    calls = data.Calls(sub, rng)
    gate = _Gate(rng, calls, name)
    cases = []
    for i in range(count):
        args, kwargs, what, mistakes = draw(i)
        cases.append((args, kwargs, what, mistakes, calls.add(name, *args, **kwargs)))
    calls.run()
    gate.check(ref)
    fn = getattr(ref.row_softmax, name)
    for case, (args, kwargs, what, mistakes, i) in zip(credit.cases(len(cases)), cases):
        with case:
            dtype = args[0].dtype
            want = in_float64(lambda *a: fn(*a, **kwargs), *args, dtype=dtype)
            expect.close(calls.value(i), want, what=what, tol=tol(f"row_softmax.{name}", dtype), mistakes=mistakes)


# The draws of the "matches the reference" tests: a fixed structure each (dtype, leading dims, L, S —
# None: random in [2, 64] —, spread, offset, −∞ entries, layout), random values; one kind, so a
# mistake fails the test whenever one of these structures exposes it, on every seed.
SOFTMAX_DRAWS = (  # dtype, lead, L, S, spread, offset, blocked, layout
    (F32, (2,), None, None, 1e4, 0.0, False, PLAIN),  # |scores| ~ 1e4, rows far apart: overflow, a global max
    (F64, (), None, None, 30.0, 1e4, True, TRANSPOSED),
    (F32, (2, 3), None, None, 1.0, -1e4, True, POSITIVE_DIM),
    (F64, (1,), None, None, 1e4, 0.0, True, STRIDED),
    (F32, (), 1, None, 30.0, 0.0, False, PLAIN),  # L = 1
    (F64, (2,), None, 1, 1.0, 0.0, False, TRANSPOSED),  # S = 1
    (F32, (2,), 64, 64, 30.0, 1e4, True, PLAIN),  # L = S
    (F64, (), None, 2, 1e4, 0.0, True, POSITIVE_DIM),
)
LOG_SOFTMAX_DRAWS = (
    (F32, (), None, None, 1.0, 0.0, False, PLAIN),
    (F64, (2,), None, None, 1e4, 0.0, False, TRANSPOSED),  # log(softmax) underflows to −∞ here
    (F32, (2,), None, None, 30.0, 1e4, False, STRIDED),
    (F64, (), None, None, 1.0, -1e4, False, POSITIVE_DIM),
    (F32, (2,), None, 1, 1e4, 0.0, False, PLAIN),  # S = 1
    (F64, (), 1, None, 30.0, 0.0, True, PLAIN),  # L = 1, −∞ entries
)


def test_softmax_rows_matches_reference_at_large_magnitudes_with_blocked_keys_and_any_dim(sub, ref, rng, credit):
    def draw(i):
        dtype, lead, L, S, spread, offset, blocked, how = SOFTMAX_DRAWS[i]
        s, dim = _layout(_scores(rng, dtype, lead=lead, L=L, S=S, blocked=blocked, spread=spread, offset=offset), how)
        what = (
            f"softmax_rows(scores {list(s.shape)}, dim={dim}), {dtype_name(dtype)}, |scores| up to "
            f"{s[torch.isfinite(s)].abs().max().item():.3g}"
        )
        return (s,), {"dim": dim}, what, signatures.softmax(s, dim)

    _cases_against_reference(sub, ref, rng, credit, "softmax_rows", len(SOFTMAX_DRAWS), draw)


def test_log_softmax_rows_matches_reference_at_large_magnitudes(sub, ref, rng, credit):
    def draw(i):
        dtype, lead, L, S, spread, offset, blocked, how = LOG_SOFTMAX_DRAWS[i]
        s, dim = _layout(_scores(rng, dtype, lead=lead, L=L, S=S, blocked=blocked, spread=spread, offset=offset), how)
        return (
            (s,),
            {"dim": dim},
            f"log_softmax_rows(scores {list(s.shape)}, dim={dim}), {dtype_name(dtype)}",
            signatures.log_softmax(s, dim),
        )

    _cases_against_reference(sub, ref, rng, credit, "log_softmax_rows", len(LOG_SOFTMAX_DRAWS), draw)


def test_cross_entropy_matches_reference_on_random_logits(sub, ref, rng, credit):
    def draw(i):  # fixed per draw: dtype, N (draw 1: a single example), spread, offset, layout
        dtype = DTYPES[i % 2]
        N = (randint(rng, 2, 8), 1, None, None, None, None)[i]  # None: random in [2, 64]
        logits = _scores(
            rng,
            dtype,
            lead=(),
            L=N,
            S=None,
            blocked=False,
            spread=(3.0, 1e4, 30.0)[i % 3],
            offset=(0.0, 0.0, 1e4, -1e4, 0.0, 1e4)[i],
        )
        N, V = logits.shape
        if i % 2:
            logits = noncontiguous(logits)
        targets = torch.randint(0, V, (N,), generator=rng)
        what = f"cross_entropy(logits {list(logits.shape)}, targets), {dtype_name(dtype)}: the mean loss, 0-dim"
        own, via = (lambda: signatures.cross_entropy(logits, targets)), (lambda: signatures.log_softmax(logits, -1))
        return (logits, targets), {}, what, data.cross_entropy_mistakes(sub, logits, targets, own, via)

    _cases_against_reference(sub, ref, rng, credit, "cross_entropy", 6, draw)


def test_vocab_probs_matches_reference_with_leading_dims(sub, ref, rng, credit):
    def draw(i):  # fixed per draw: dtype, leading dims, scale, layout
        dtype = DTYPES[i % 2]
        lead = ((1,), (3,), (2, 5), (1, randint(rng, 2, 64)), (3,))[i]
        C, V = randint(rng, 1, 24), randint(rng, 2, 64)
        h = randn(rng, *lead, C, dtype=dtype, scale=(1.0, 3.0)[i % 2])
        w_vocab = randn(rng, C, V, dtype=dtype, scale=C**-0.5)
        if i in (1, 3):
            h = noncontiguous(h)
        return (
            (h, w_vocab),
            {},
            f"vocab_probs(h {list(h.shape)}, W_vocab {list(w_vocab.shape)}), {dtype_name(dtype)}",
            data.vocab_mistakes(sub, h, w_vocab, signatures.vocab_probs(h, w_vocab), signatures.vocab_via_softmax(h, w_vocab)),
        )

    _cases_against_reference(sub, ref, rng, credit, "vocab_probs", 5, draw)


# --------------------------------------------------------------------------- properties
def test_softmax_rows_sum_to_one_and_blocked_keys_get_exactly_zero(sub, ref, rng, credit):
    cases = []
    calls = data.Calls(sub, rng)
    gate = _Gate(rng, calls, "softmax_rows")
    structures = (
        ((2,), None, 1e4, 0.0),
        ((), None, 1.0, 1e4),
        ((2,), 1, 1.0, 0.0),
        ((), 64, 1e4, -1e4),
        ((2,), None, 1.0, 0.0),
    )  # lead, L, spread, offset
    for i, (lead, L, spread, offset) in enumerate(structures):
        dtype = DTYPES[i % 2]
        s = _scores(rng, dtype, lead=lead, L=L, S=None, blocked=True, spread=spread, offset=offset)
        cases.append((s, dtype, calls.add("softmax_rows", s)))
    calls.run()
    gate.check(ref)
    for case in credit.cases(len(cases)):
        with case:
            s, dtype, i = cases[int(case.label.split()[-1]) - 1]
            got = expect.tensor(calls.value(i), what="softmax_rows(scores)")
            expect.true(
                tuple(got.shape) == tuple(s.shape),
                what="softmax_rows keeps the shape",
                detail=f"scores {list(s.shape)} gave {list(got.shape)}",
            )
            # a result in another dtype: that is the mistake, whatever signature its rounding is
            # nearest (float32 sums read as an ε in the denominator: blind tester R-BO)
            diagnosed = (
                ["general/dtype-changed"]
                if got.dtype != dtype
                else expect.diagnose(got, signatures.softmax(s), tol("row_softmax.softmax_rows", dtype))
            )
            sums = got.double().sum(-1)
            expect.true(
                bool(torch.isfinite(got).all()),
                what="softmax_rows is finite at |scores| up to 1e4 with −∞ entries",
                detail=f"{int((~torch.isfinite(got)).sum())} NaN/inf weights",
                hints=diagnosed,
            )
            expect.true(
                bool((got >= 0).all()),
                what="every weight is ≥ 0",
                detail=f"smallest weight {got.min().item():.3g}",
                hints=diagnosed,
            )
            # a sum of S weights each within the measured tolerance: float32 exp(s − logsumexp(s)) at
            # |s| ≈ 1e4 is a correct, stable softmax whose sums are off by ~1e-4
            t = tol("row_softmax.softmax_rows", dtype)
            expect.true(
                bool(((sums - 1).abs() <= t.atol + t.rtol).all()),
                what=f"every row sums to 1 (Week 7 §5), within {t.atol + t.rtol:.2g} ({dtype_name(dtype)})",
                detail=expect.sums_detail(sums),
                hints=diagnosed,
            )
            blocked = torch.isinf(s)
            expect.true(
                bool((got[blocked] == 0).all()),
                what="weights on −∞ scores are exactly 0 (the docstring's promise: e^{−∞} = 0, Week 7 §11)",
                detail=f"largest weight on a −∞ score: {got[blocked].abs().max().item() if bool(blocked.any()) else 0:.3g}",
                hints=diagnosed,
            )


def _dtype_inputs(rng, lead: tuple, L: int, S: int, N: int, C: int) -> dict[str, tuple]:
    s = _scores(rng, F64, lead=lead, L=L, S=S, blocked=True, spread=3.0, offset=0.0)
    logits, targets = randn(rng, N, S, dtype=F64), torch.randint(0, S, (N,), generator=rng)
    targets[0] = S - 1  # the last class drawn on every seed: a property test, not a test of one_hot's width (R-AA)
    h, w_vocab = randn(rng, *lead, L, C, dtype=F64), randn(rng, C, S, dtype=F64)
    return {"softmax_rows": (s,), "log_softmax_rows": (s,), "cross_entropy": (logits, targets), "vocab_probs": (h, w_vocab)}


def test_row_softmax_functions_keep_dtype_and_leave_inputs_unchanged(sub, rng, credit):
    """A property test (grading.toml): float64 in, float64 out, inputs untouched — whatever the
    values and shapes (the value tests check those). Each function runs on an all-square input
    (every size 4, where a wrong axis or a missing keepdim still runs) and on a regular one;
    the property is checked on every call that returns, and at least one must."""
    inputs = [_dtype_inputs(rng, (4,), 4, 4, 4, 4), _dtype_inputs(rng, (2,), 5, 6, 4, 3)]
    calls = data.Calls(sub, rng)
    idx = [{name: calls.add(name, *[a.clone() for a in a_], return_args=True) for name, a_ in args.items()} for args in inputs]
    calls.run()
    for part in credit.parts(list(inputs[0])):
        with part:
            name, ran, raised = part.label, 0, None
            for args, index in zip(inputs, idx):
                try:
                    r = calls.result(index[name])
                except SubmissionRaised as exc:
                    raised = raised or exc
                    continue
                ran += 1
                for before, after in zip(args[name], r.args or []):
                    expect.unchanged(before, after, what=f"{name} leaves its inputs unchanged")
                out = expect.tensor(r.value, what=f"{name} result")
                expect.true(
                    out.dtype == F64,
                    what=f"{name} keeps float64",
                    detail=f"float64 inputs gave a {dtype_name(out.dtype)} result",
                    hints=["general/dtype-changed"],
                )
            if not ran and raised is not None:
                raise raised


# --------------------------------------------------------------------------- constraint
def test_rule_no_torch_softmax_log_softmax_or_cross_entropy(sub, rng):
    """The rule test (a gate in grading.toml, weight 0): fails only when row_softmax.py uses a
    softmax, log_softmax or cross_entropy of torch — then the whole skill scores 0. The source
    check gives the fast first message; the verdict is the operators the dispatcher ran
    (recorded up to an error, if the code raises)."""
    data.check_source(sub)
    s = _scores(rng, torch.float32, lead=(2,), L=4, S=5, blocked=True, spread=3.0, offset=0.0)
    logits = _scores(rng, torch.float32, lead=(), L=3, S=5, blocked=False, spread=3.0, offset=0.0)
    calls = [
        ("softmax_rows", (s,)),
        ("log_softmax_rows", (s,)),
        ("cross_entropy", (logits, torch.tensor([0, 4, 2]))),
        ("vocab_probs", (randn(rng, 2, 3), randn(rng, 3, 5))),
    ]
    used: set[str] = set()
    for name, args in calls:
        try:
            used.update(sub.row_softmax.call(name, *args, record_ops=True, record_dispatch=True, replace_ops=data.REPLACED).ops)
        except SubmissionError:
            continue  # what ran before the error was recorded all the same (sub.dispatched)
    banned = data.banned_ops(used)
    expect.true(
        not banned,
        what="row_softmax.py at run time: no torch softmax, log_softmax or cross_entropy (docs/EXERCISES.md §3)",
        detail=f"it ran {', '.join(banned)}",
        problem="constraint",
        hints=data.HINTS,
    )
    data.check_dispatch(sub)  # the verdict: the operators the dispatcher ran, any spelling


def test_vocab_probs_uses_the_head_as_given_on_square_heads(sub, ref, rng, credit):
    """W_vocab is [C,V]: logits = h @ W_vocab. On square heads (C = V) a transposed head runs
    without a shape error and gives other probabilities (hint row_softmax/vocab-head-transposed)."""

    def draw(i):  # fixed per draw: dtype, leading dims, C = V
        dtype = DTYPES[i % 2]
        lead, C = (((2,), 4), ((3, 2), 8), ((1,), 16), ((), 5))[i]
        h = randn(rng, *lead, C, dtype=dtype)
        w_vocab = randn(rng, C, C, dtype=dtype, scale=C**-0.5)
        what = f"vocab_probs(h {list(h.shape)}, W_vocab {list(w_vocab.shape)}) with C = V = {C}, {dtype_name(dtype)}"
        own, via = signatures.vocab_probs(h, w_vocab), signatures.vocab_via_softmax(h, w_vocab)
        return (h, w_vocab), what, data.vocab_mistakes(sub, h, w_vocab, own, via)

    # No plain-input gate here (unlike _cases_against_reference): its C ≠ V input is exactly
    # where the transposed head raises, and this test is about the square heads where it does not.
    calls = data.Calls(sub, rng)
    cases = [(args, what, mistakes, calls.add("vocab_probs", *args)) for args, what, mistakes in map(draw, range(4))]
    calls.run()
    for case, (args, what, mistakes, i) in zip(credit.cases(len(cases)), cases):
        with case:
            want = in_float64(ref.row_softmax.vocab_probs, *args, dtype=args[0].dtype)
            expect.close(calls.value(i), want, what=what, tol=tol("row_softmax.vocab_probs", args[0].dtype), mistakes=mistakes)
