"""Skill custom_backward, hidden tests: the course numbers (Week 7 §16 in float64 and float32,
Day 1 §2.3's identities D_i = ȳ_i·y_i, S̄ = 0 at masked keys, Σ_l S̄_il = 0, agreement with
finite differences), the reference on fresh random inputs (batch dims, h = 1, L ≠ S, d_k ≠ d_v,
masks, float32/float64, non-contiguous), the no-autograd rule and dtype/in-place rules.
Not shipped to students; on Gradescope students see each test's name and hint only."""

from __future__ import annotations

import math

import pytest
import torch
from course import custom_backward_data as data
from course import oracles
from course import week07 as w7
from course.tolerances import tol

from autograder.testing import (
    SubmissionError,
    SubmissionTimeout,
    dtype_name,
    expect,
    in_float64,
    noncontiguous,
    randint,
    randn,
    sibling,
    whole,
)

signatures = sibling(__file__, "mistakes")  # the named mistakes' outputs (beside this suite; never shipped to students)

WORKER_SCANNED = ("custom_backward",)  # its workers run only the files its rule scan reads (sandbox/codegate.py)
DTYPES = (torch.float32, torch.float64)
GRADS = ("dq", "dk", "dv")

# Fixed case kinds (issue 16 §1): case n of a test always has the structure in row n — its
# leading dims, lengths, widths and mask —, and only the sizes within the kind and the values
# come from the seed, so a mistake that shows on a kind costs the same on every seed.
SOFTMAX_KINDS = (  # (leading dims, lengths, mask); float64 on even cases, float32 on odd ones
    ((), "L<S", "causal"),
    ((2,), "L>S", "random"),
    ((2, 3), "L=S", "padding"),
    ((1,), "L<S", "bottom-right"),
    ((2, 1), "L>S", "none"),
    ((2,), "L=S", "causal"),
)
BACKWARD_KINDS = (  # (leading dims, lengths, widths, mask)
    ((2, 1), "L<S", "d_k≠d_v", "causal"),  # h = 1
    ((2, 4), "L>S", 1, "none"),  # h = C: one feature per head
    ((), "L=S", "d_k≠d_v", "random"),
    ((2,), "L<S", "d_k=d_v", "padding"),
    ((1,), "L>S", "d_k≠d_v", "bottom-right"),
    ((2, 3), "L=S", "d_k=d_v", "none"),
    ((2,), "L>S", "d_k≠d_v", "causal"),
    ((), "L<S", "d_k≠d_v", "random"),
)
FUNCTION_KINDS = (  # (leading dims, lengths, widths, mask)
    ((2,), "L<S", "d_k≠d_v", "causal"),
    ((), "L>S", "d_k=d_v", "padding"),
    ((2, 3), "L<S", "d_k≠d_v", "bottom-right"),
    ((1,), "L=S", "d_k≠d_v", "random"),
    ((2, 1), "L>S", "d_k=d_v", "none"),
    ((2,), "L=S", "d_k≠d_v", "causal"),
)


def _lengths(rng, lengths: str, t_max: int) -> tuple[int, int]:
    """(L, S) of a fixed kind: "L<S", "L=S" or "L>S", with L ≥ 2 and S ≥ 3 on every draw — one
    query hides a D summed over the queries (or left without keepdim), one key makes every
    score gradient 0 (a backward returning zeros would "match"), and a padding or random mask
    needs a third key to block one while two stay real."""
    if lengths == "L<S":
        L = randint(rng, 2, t_max - 1)
        return L, randint(rng, max(3, L + 1), t_max)
    if lengths == "L>S":
        S = randint(rng, 3, t_max - 1)
        return randint(rng, S + 1, t_max), S
    if lengths == "L=S":
        L = randint(rng, 3, t_max)
        return L, L
    raise ValueError(f"unknown lengths kind {lengths!r}")


def _widths(rng, dims) -> tuple[int, int]:
    """(d_k, d_v) of a fixed kind: "d_k≠d_v" or "d_k=d_v", both in 2..16 — d_k = 1 makes the
    scale 1/√d_k = 1, which hides a missing, doubled or inverted scale —, or an int d for
    both (d = 1: the h = C split, one feature per head)."""
    if isinstance(dims, int):
        return dims, dims
    d_k = randint(rng, 2, 16)
    if dims == "d_k=d_v":
        return d_k, d_k
    if dims == "d_k≠d_v":
        d_v = randint(rng, 2, 15)
        return d_k, d_v + (d_v >= d_k)
    raise ValueError(f"unknown widths kind {dims!r}")


def _problem(rng, dtype, *, lead=(2,), lengths="L<S", mask="none", dims="d_k≠d_v", t_max: int = 64):
    """Random (q, k, v, allowed, d_out) of a fixed kind — the caller names the leading dims
    ((), [B], [B,1] for h = 1, [B,h]), the lengths (``_lengths``), the widths (``_widths``)
    and the mask; only the sizes within the kind and the values are drawn, so a mistake that
    shows on a kind shows on every seed (issue 16 §1). Masks: none, causal (top-left),
    bottom-right causal (top-left when L > S), key padding (right padding, at least two real
    keys and one padded) or random (at least one blocked key) — always at least one allowed
    key per query, and some query mixes two keys, so its gradient is not trivially 0."""
    L, S = _lengths(rng, lengths, t_max)
    d_k, d_v = _widths(rng, dims)
    allowed = None
    if mask == "causal":
        allowed = torch.tril(torch.ones(L, S, dtype=torch.bool))
    elif mask == "bottom-right":
        allowed = (
            torch.tril(torch.ones(L, S, dtype=torch.bool), diagonal=S - L)
            if S >= L
            else torch.tril(torch.ones(L, S, dtype=torch.bool))
        )
    elif mask == "padding":
        keep = torch.arange(S) < randint(
            rng, 2, S - 1
        )  # right padding: the first keys (at least two) are real, the last is padding
        allowed = keep.expand(L, S).clone()
    elif mask == "random":
        allowed = torch.rand(L, S, generator=rng) < 0.6
        allowed[torch.arange(L), torch.randint(0, S, (L,), generator=rng)] = True
        allowed[0, :2] = True  # some row mixes two keys, so its gradient is not trivially 0
        allowed[0, -1] = False  # and some key is blocked, so the mask matters
    elif mask != "none":
        raise ValueError(f"unknown mask kind {mask!r}")
    q, k = randn(rng, *lead, L, d_k, dtype=dtype), randn(rng, *lead, S, d_k, dtype=dtype)
    v, d_out = randn(rng, *lead, S, d_v, dtype=dtype), randn(rng, *lead, L, d_v, dtype=dtype)
    return q, k, v, allowed, d_out


def _weights(q, k, allowed, scale):
    """A = softmax(scale·q kᵀ, blocked −∞) in float64 (trusted)."""
    return signatures.plain_attention(q.double(), k.double(), k.double()[..., :1], allowed, scale=scale)[1]


def _reference_grads(q, k, v, allowed, d_out):
    """(out, (dq, dk, dv)) by torch autograd in float64 (trusted)."""
    q64, k64, v64 = (t.double().detach().requires_grad_(True) for t in (q, k, v))
    out, _ = signatures.plain_attention(q64, k64, v64, allowed)
    grads = torch.autograd.grad((out * d_out.double()).sum(), [q64, k64, v64])
    return out.detach(), grads


def _shapes(*ts) -> str:
    return ", ".join(str(list(t.shape)) for t in ts)


def _backward_table(sub, d_out, q, k, v, a, scale) -> dict:
    """The named mistakes of attention_backward, the third step judged from your own S̄: your
    softmax_backward runs on this Ā and A (only when a check failed), so a transposed or
    unscaled Q̄/K̄ is named even when your S̄ is wrong too (issue 30 §3)."""
    try:
        own = data.softmax_backward(sub, d_out @ v.transpose(-2, -1), a)
    except SubmissionError:
        own = None
    return signatures.attention_backward_from(own, d_out, q, k, v, a, scale)


def _third_step(sub, got, d_out, q, k, v, a, scale, tight) -> list[str]:
    """Two mistakes at once, softmax_backward wrong too: attention_backward's third step (Q̄,
    K̄, V̄ from S̄) judged from the submission's own S̄ = its softmax_backward(Ā, A) on the same
    square problem, so a transposed or swapped gradient is named beside the S̄ mistake (issue
    30 §3). Nothing is named when the third step is right on that S̄. Here, beside the hidden
    tests (its formulas are the reference's third step: never shipped); course.custom_backward_data's
    square_diagnosis calls it where no single mistake matched."""
    if got is None or got[0].shape != q.shape and got[0].shape != q[0].shape:
        return []
    batched = got[0].shape == q.shape
    if not batched:
        d_out, q, k, v, a = (t[0] for t in (d_out, q, k, v, a))
    try:
        ds = sub.custom_backward.softmax_backward(d_out @ v.transpose(-2, -1), a)
    except SubmissionError:
        return []
    if type(ds) is not torch.Tensor or ds.shape != a.shape or not ds.is_floating_point():
        return []
    ds = ds.double()
    dv = a.transpose(-2, -1) @ d_out
    dq, dk = scale * (ds @ k), scale * (ds.transpose(-2, -1) @ q)
    own = {
        "custom_backward/dq-transpose": (scale * (ds.transpose(-2, -1) @ k), dk, dv),
        "custom_backward/dk-transpose": (dq, scale * (ds @ q), dv),
        "custom_backward/dv-transpose": (dq, dk, a @ d_out),
        "custom_backward/dq-dk-swapped": (dk, dq, dv),
    }
    return data._named_by_whole(got, [dq, dk, dv], own, tight)


def _function_table(sub, q, k, v, allowed, d_out) -> dict:
    """``attention_grads``'s named mistakes of AttentionFunction, with the forward's own step
    isolated: the saved-scaled-q entry is what YOUR attention_backward gives on what such a
    forward saves (s·q), so a forward that scales q in place is named even when the backward
    is wrong too (issue 30 §3: two mistakes in one skill, each named by its own step). It is
    left as the reference's where your backward cannot run, or where s·q and q give it the same."""
    table = signatures.attention_grads(q, k, v, allowed, d_out)
    scale = 1.0 / math.sqrt(q.size(-1))
    a = _weights(q, k, allowed, scale).to(q.dtype)
    try:
        saved = sub.custom_backward.attention_backward(d_out, q * scale, k, v, a, scale)
        plain = sub.custom_backward.attention_backward(d_out, q, k, v, a, scale)
    except SubmissionError:
        return table
    ok = all(isinstance(g, (tuple, list)) and len(g) >= 3 and all(type(t) is torch.Tensor for t in g[:3]) for g in (saved, plain))
    if ok and {data.SAVED_SCALED_Q, data.SCALE_TWICE_DK} <= set(table):
        # the same gradients through AttentionFunction: your attention_backward on the plain q
        # says which (K̄ = s·s·S̄ᵀQ there is the backward's mistake; a right K̄ leaves the forward's)
        twice = table[data.SCALE_TWICE_DK][1]
        backward_twice = plain[1].shape == twice.shape and torch.allclose(plain[1].double(), twice.double(), rtol=1e-6, atol=1e-9)
        table.pop(data.SAVED_SCALED_Q if backward_twice else data.SCALE_TWICE_DK)
    differs = ok and any(x.shape != y.shape or not torch.equal(x, y) for x, y in zip(saved[:3], plain[:3]))
    if differs and data.SAVED_SCALED_Q in table:
        right_out = table[data.SAVED_SCALED_Q][3]
        table[data.SAVED_SCALED_Q] = (*(t.to(q.dtype) for t in saved[:3]), right_out)
    return table


def _gate_attention_backward(sub, ref, rng) -> None:
    """A plain float64 attention_backward call against the reference, before any partial credit:
    a backward that is wrong on the plain case (or answers from a table) scores 0 in the test."""
    q, k, v, _, d_out = _problem(rng, torch.float64, lead=(2,), lengths="L<S", mask="none", t_max=8)
    scale = 1.0 / math.sqrt(q.size(-1))
    a = _weights(q, k, None, scale)
    with data.explained(sub, _third_step):
        got = expect.sequence(sub.custom_backward.attention_backward(d_out, q, k, v, a, scale), 3, what="attention_backward")
    want = ref.custom_backward.attention_backward(d_out, q, k, v, a, scale)
    t = tol("custom_backward.attention_backward", torch.float64)
    for i, name in enumerate(GRADS):
        expect.close(
            got[i],
            want[i],
            what=f"attention_backward: {name} on a plain float64 input ({_shapes(q, k, v)}; checked before the cases)",
            tol=t,
            mistakes=lambda: signatures.component(whole(_backward_table(sub, d_out, q, k, v, a, scale), got, want, t), i),
        )


# --------------------------------------------------------------------------- course numbers
def test_course_backward_numbers_in_float64_and_float32(sub, ref, rng, credit):
    data.check_backward_source(sub)
    _gate_attention_backward(sub, ref, rng)
    chains = {
        dtype: data.week7_chain(sub, dtype) for dtype in DTYPES
    }  # your forward/backward called directly; the chain runs here
    # Day 1 §2.3 group 5 setting: one causal sequence, T = 6, float64
    T, d = 6, randint(rng, 2, 6)
    q, k, v = (randn(rng, T, d, dtype=torch.float64) for _ in range(3))
    d_out = randn(rng, T, d, dtype=torch.float64)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    scale = 1.0 / math.sqrt(d)
    a = _weights(q, k, causal, scale)
    y = a @ v
    d_weights = d_out @ v.T
    ds = expect.tensor(data.softmax_backward(sub, d_weights, a), what="softmax_backward(Ȳ Vᵀ, A)")
    with data.explained(sub, _third_step):
        grads = expect.sequence(sub.custom_backward.attention_backward(d_out, q, k, v, a, scale), 3, what="attention_backward")
    expect.true(
        tuple(ds.shape) == (T, T),
        what="softmax_backward(Ā, A) keeps the shape [L, S]",
        detail=f"A [{T}, {T}] gave {list(ds.shape)}",
    )
    for name, g, like in zip(GRADS, grads, (q, k, v)):
        expect.true(
            type(g) is torch.Tensor and tuple(g.shape) == tuple(like.shape),
            what=f"attention_backward: {name} has the shape of {name[1:]}",
            detail=f"expected {list(like.shape)}, got {expect.describe(g)}",
        )
    for part in credit.parts(
        [
            "W7-43/45/46/47 float64",
            "W7-48 float32",
            "dL/dW_Q",
            "D1-11 D = ȳ·y",
            "D1-12 masked S̄ = 0",
            "D1-13 row sums",
            "D1-10 finite differences",
        ]
    ):
        with part:
            label = part.label
            if label.startswith("W7-4"):
                dtype = torch.float64 if label.endswith("float64") else torch.float32
                got = chains[dtype]
                t = w7.Tol(0.0, 1e-6) if dtype == torch.float64 else w7.PRINTED_6DP
                grad = got["grad"]
                ex = data.week7_chain_inputs(dtype)
                wq, wk, wv = (ex["x"] @ ex[n] for n in ("w_q", "w_k", "w_v"))
                mask_t2 = torch.tensor(w7.STATED["mask_T2"])
                want_out = in_float64(ref.custom_backward.attention, wq, wk, wv, mask_t2)
                data.week7_forward_evidence(got, signatures.attention_forward(wq, wk, wv, mask_t2), want_out)
                expect.close(
                    got["loss"],
                    torch.tensor(w7.STATED["loss_mean"], dtype=dtype),
                    what=f"mean loss through your AttentionFunction ({dtype_name(dtype)}, W7-43)",
                    tol=t,
                    mistakes=lambda: signatures.week7_loss_mistakes(dtype),
                    hints=["custom_backward/forward-mask"],
                )
                expect.scalar(
                    grad[1, 0],
                    w7.STATED["grad_wq_10"],
                    what=f"d(mean loss)/dW_Q[1,0] ({dtype_name(dtype)}, W7-45/48)",
                    tol=t,
                    mistakes=lambda: {h: float(g[1, 0]) for h, g in signatures.week7_grad_mistakes(torch.float64).items()},
                )
                if dtype == torch.float64:
                    expect.scalar(1.0 - 0.01 * float(grad[1, 0]), w7.STATED["q_new"], what="q_new (W7-46)", tol=t)
                    expect.scalar(got["loss_after"], 1.316778184921, what="mean loss after the step (W7-47)", tol=t)
            elif label == "dL/dW_Q":
                want = oracles.week7_chain_reference(**data.week7_chain_inputs(torch.float64))["grad"]
                expect.close(
                    chains[torch.float64]["grad"],
                    want,
                    what="all of dL/dW_Q (W_Q[1,1]: +0.030682, rows 0, 2, 3: 0)",
                    tol=w7.Tol(0.0, 1e-9),
                    mistakes=(lambda: signatures.week7_grad_mistakes(torch.float64))
                    if data.forward_is_right(chains[torch.float64])
                    else None,
                )
            elif label.startswith("D1-11"):
                D = (d_out * y).sum(-1, keepdim=True)  # D_i = ȳ_i · y_i
                expect.close(
                    ds,
                    a * (d_weights - D),
                    what="S̄ = A ⊙ (Ā − D) with D_i = ȳ_i·y_i (D1-11, within 1e-12)",
                    tol=w7.Tol(0.0, 1e-12),
                    mistakes=lambda: signatures.softmax_backward(d_weights, a),
                )
            elif label.startswith("D1-12"):
                masked = ds[~causal]
                expect.true(
                    bool((masked == 0).all()),
                    what="S̄ at masked (future) positions is exactly 0 (D1-12)",
                    detail=f"largest |S̄| at a masked position: {masked.abs().max().item():.3g}",
                    hints=["custom_backward/backward-ignores-mask"],
                )
            elif label.startswith("D1-13"):
                sums = ds.sum(-1)
                expect.true(
                    bool(sums.abs().max() <= 1e-12),
                    what="Σ_l S̄_il = 0 for every row (D1-13, within 1e-12)",
                    detail=f"largest |row sum| {sums.abs().max().item():.3g}",
                    hints=["custom_backward/missing-d-term", "custom_backward/d-wrong-axis"],
                )
            else:
                numeric = _finite_differences(q, k, v, causal, d_out)
                for name, g, n in zip(GRADS, grads, numeric):
                    g = expect.tensor(g, what=name)
                    rel = ((g - n).abs().max() / n.abs().max().clamp_min(1e-12)).item()
                    expect.true(
                        rel < 1e-6,
                        what=f"{name} agrees with central finite differences (D1-10: relative error < 1e-6)",
                        detail=f"max relative error {rel:.3g}",
                        hints=["custom_backward/gradcheck-failed"],
                    )


def _finite_differences(q, k, v, allowed, d_out, eps: float = 1e-6):
    """Central differences of L = Σ out ⊙ Ȳ with respect to q, k, v (float64, trusted)."""

    def loss(q_, k_, v_):
        return (signatures.plain_attention(q_, k_, v_, allowed)[0] * d_out).sum()

    out = []
    args = [q.clone(), k.clone(), v.clone()]
    for t in args:
        g = torch.zeros_like(t)
        flat, gflat = t.view(-1), g.view(-1)
        for j in range(flat.numel()):
            old = flat[j].item()
            flat[j] = old + eps
            up = loss(*args)
            flat[j] = old - eps
            down = loss(*args)
            flat[j] = old
            gflat[j] = (up - down) / (2 * eps)
        out.append(g)
    return out


# --------------------------------------------------------------------------- vs the reference
def test_softmax_backward_matches_reference_with_batch_dims_and_masks(sub, ref, rng, credit):
    q, k, _, _, _ = _problem(rng, torch.float32, lead=(2,), lengths="L<S", mask="none", t_max=10)
    gate_a, gate_da = _weights(q, k, None, 1.0).float(), randn(rng, *q.shape[:-1], k.size(-2))
    expect.close(
        data.softmax_backward(sub, gate_da, gate_a),
        ref.custom_backward.softmax_backward(gate_da.double(), gate_a.double()).float(),
        what=f"softmax_backward on a plain float32 input of shape {list(gate_a.shape)} (checked before the cases)",
        tol=tol("custom_backward.softmax_backward", torch.float32),
        mistakes=lambda: signatures.softmax_backward(gate_da, gate_a),
    )
    for case in credit.cases(len(SOFTMAX_KINDS)):
        with case:
            n = int(case.label.split()[-1])
            dtype = DTYPES[n % 2]
            lead, lengths, mask = SOFTMAX_KINDS[n - 1]  # a fixed kind per case: the same mistakes show on every seed
            q, k, _, allowed, _ = _problem(rng, dtype, lead=lead, lengths=lengths, mask=mask)
            a = _weights(q, k, allowed, 1.0 / math.sqrt(q.size(-1))).to(dtype)
            da = randn(rng, *a.shape, dtype=dtype, scale=10.0 if n % 3 == 0 else 1.0)
            if n % 2:
                da = noncontiguous(da)
            want = ref.custom_backward.softmax_backward(da.double(), a.double()).to(dtype)
            expect.close(
                data.softmax_backward(sub, da, a),
                want,
                what=f"softmax_backward(Ā, A {list(a.shape)}), {dtype_name(dtype)}",
                tol=tol("custom_backward.softmax_backward", dtype),
                mistakes=lambda: signatures.softmax_backward(da, a),
            )


@pytest.fixture(autouse=True)
def _rule_on_every_call(sub):
    """Every call into custom_backward.py is judged by the exercise's rule (data.watch_rule)."""
    data.watch_rule(sub)


def test_attention_backward_matches_reference_on_random_inputs(sub, ref, rng, credit):
    _gate_attention_backward(sub, ref, rng)
    for case in credit.cases(len(BACKWARD_KINDS)):
        with case:
            n = int(case.label.split()[-1])
            dtype = DTYPES[n % 2]
            lead, lengths, dims, mask = BACKWARD_KINDS[n - 1]  # a fixed kind per case: case 1 h = 1, case 2 h = C
            q, k, v, allowed, d_out = _problem(rng, dtype, lead=lead, lengths=lengths, dims=dims, mask=mask)
            scale = (1.0 / math.sqrt(q.size(-1)), 0.5, 2.0)[n % 3]  # never 1 (d_k ≥ 2 where 1/√d_k): a scale mistake shows
            a = _weights(q, k, allowed, scale).to(dtype)
            if n % 2 == 0:
                q, v = noncontiguous(q), noncontiguous(v)
            with data.explained(sub, _third_step):
                got = expect.sequence(
                    sub.custom_backward.attention_backward(d_out, q, k, v, a, scale), 3, what="attention_backward"
                )
            want = [
                g.to(dtype) for g in ref.custom_backward.attention_backward(*(t.double() for t in (d_out, q, k, v, a)), scale)
            ]
            t = tol("custom_backward.attention_backward", dtype)
            for i, name in enumerate(GRADS):
                expect.close(
                    got[i],
                    want[i],
                    what=f"attention_backward: {name} (q, k, v = {_shapes(q, k, v)}, scale={scale:.3g}, {dtype_name(dtype)})",
                    tol=t,
                    mistakes=lambda: signatures.component(whole(_backward_table(sub, d_out, q, k, v, a, scale), got, want, t), i),
                )


def test_attention_function_backward_matches_reference_with_masks(sub, ref, rng, credit):
    """AttentionFunction.forward and .backward, called directly with a stand-in ctx, against
    torch's autograd here: a backward that is missing fails, whatever autograd could do."""
    data.check_backward_source(sub)
    _gate_attention_backward(sub, ref, rng)
    for case in credit.cases(len(FUNCTION_KINDS)):
        with case:
            n = int(case.label.split()[-1])
            dtype = DTYPES[n % 2]
            lead, lengths, dims, mask = FUNCTION_KINDS[n - 1]  # a fixed kind per case
            q, k, v, allowed, d_out = _problem(rng, dtype, lead=lead, lengths=lengths, dims=dims, mask=mask, t_max=32)
            if n % 3 == 0:
                q, k = noncontiguous(q), noncontiguous(k)
            label = (
                f"q, k, v = {_shapes(q, k, v)}, mask {'none' if allowed is None else list(allowed.shape)}, {dtype_name(dtype)}"
            )
            out, (grads,) = data.forward_backward(sub, q, k, v, allowed, [d_out], what=label)
            want_out, want = _reference_grads(q, k, v, allowed, d_out)
            t = tol("custom_backward.attention", dtype)
            expect.close(
                out,
                want_out.to(dtype),
                what=f"AttentionFunction.forward(ctx, q, k, v, allowed) ({label})",
                tol=t,
                mistakes=lambda: signatures.attention_forward(q, k, v, allowed),
            )
            for i, name in enumerate(GRADS):
                expect.close(
                    grads[i],
                    want[i].to(dtype),
                    what=f"{name} from your AttentionFunction.backward ({label})",
                    tol=t,
                    mistakes=lambda: signatures.component(
                        whole(_function_table(sub, q, k, v, allowed, d_out), (*grads, out), (*want, want_out), t), i
                    ),
                )


# --------------------------------------------------------------------------- constraint
def test_attention_function_is_applied_and_its_backward_returns_dq_dk_dv_none_via_the_helpers(sub, ref, rng, credit):
    """The structure of Day 1 §B's Function, each part credited when it holds: attention() is
    AttentionFunction.apply; backward returns (dq, dk, dv, None) shaped like q, k, v; backward
    calls attention_backward, which calls softmax_backward (read from the source). The control
    is the Function's own forward on fresh inputs (a stub or garbage earns nothing) — not its
    gradients: a wrong gradient costs the gradient tests, not this one — so the problem is one
    square [T,T] causal attention with d_k = d_v, on which a misplaced transpose or swapped
    gradients still run and have the right shapes. Autograd use is the rule gate's business
    (test_rule_backward_uses_no_autograd)."""
    q, k, v, allowed, d_out = _problem(rng, torch.float64, lead=(), lengths="L=S", dims="d_k=d_v", mask="causal", t_max=8)
    with data.explained(sub, _third_step):
        r = sub.custom_backward.run(
            data.direct_forward_backward, q, k, v, allowed, d_out, dispatch=sub.records_dispatch(data.MODULE)
        )  # a TODO stub stops here, with its message
    want_out, _ = _reference_grads(q, k, v, allowed, d_out)
    expect.close(
        r["out"],
        want_out,
        what="AttentionFunction.forward(ctx, q, k, v, causal) on fresh inputs (checked before this test's case)",
        tol=tol("custom_backward.attention", torch.float64),
        mistakes=lambda: signatures.attention_forward(q, k, v, allowed),
    )
    for part in credit.parts(
        [
            "attention() is AttentionFunction.apply",
            "backward returns (dq, dk, dv, None)",
            "backward → attention_backward → softmax_backward",
        ]
    ):
        with part:
            if part.label.startswith("attention()"):
                expect.true(
                    r["attention_node"] == "AttentionFunctionBackward",
                    what="attention(q, k, v, allowed) is AttentionFunction.apply(q, k, v, allowed) (docs/EXERCISES.md §4)",
                    detail=f"its output's grad_fn is {r['attention_node']}, not AttentionFunction's backward node",
                    hints=["custom_backward/not-through-attention-backward"],
                )
            elif part.label.startswith("backward returns"):
                grads = r["grads"]
                four = isinstance(grads, list) and len(grads) == 4 and grads[3] is None
                ok = four and all(
                    type(g) is torch.Tensor and tuple(g.shape) == tuple(t.shape) for g, t in zip(grads[:3], (q, k, v))
                )
                shapes = [list(g.shape) if type(g) is torch.Tensor else expect.describe(g) for g in grads[:3]] if four else None
                expect.true(
                    ok,
                    what="AttentionFunction.backward returns (dq, dk, dv, None), shaped like q, k, v",
                    detail=f"it returned {expect.describe(tuple(grads) if isinstance(grads, list) else grads)}"
                    + (f" shaped {shapes} for q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}" if four else ""),
                    hints=[] if four else ["custom_backward/backward-three-values"],
                )  # four values, misshapen: not this hint
            else:
                data.check_goes_through_helpers(sub, r.get("helper_calls"))


# --------------------------------------------------------------------------- properties
def test_masked_keys_get_exactly_zero_gradient_and_score_gradient_rows_sum_to_zero(sub, ref, rng, credit):
    kinds = {
        "causal mask": ((2,), "L<S", "causal"),
        "random mask": ((), "L>S", "random"),
        "key padding": ((2, 3), "L=S", "padding"),
    }  # fixed per part
    for part in credit.parts(
        [
            "softmax_backward, causal mask",
            "softmax_backward, random mask",
            "softmax_backward, key padding",
            "attention is causal by gradient",
        ]
    ):
        with part:
            dtype = torch.float64
            if part.label.startswith("softmax_backward"):
                lead, lengths, mask = kinds[part.label.split(", ")[1]]
                q, k, _, allowed, _ = _problem(rng, dtype, lead=lead, lengths=lengths, mask=mask)
                a = _weights(q, k, allowed, 1.0 / math.sqrt(q.size(-1)))
                da = randn(rng, *a.shape, dtype=dtype)
                ds = expect.tensor(data.softmax_backward(sub, da, a), what="softmax_backward(Ā, A)", floating=True)
                expect.true(
                    tuple(ds.shape) == tuple(a.shape),
                    what="softmax_backward keeps the shape [...,L,S]",
                    detail=f"A {list(a.shape)} gave {list(ds.shape)}",
                )
                hints = expect.diagnose(ds, signatures.softmax_backward(da, a), tol("custom_backward.softmax_backward", dtype))
                blocked = a == 0
                expect.true(
                    bool((ds[blocked] == 0).all()),
                    what="S̄ is exactly 0 wherever A is 0 (masked keys, Day 1 §2.3, D1-12)",
                    detail=f"largest |S̄| at a masked key: {ds[blocked].abs().max().item() if bool(blocked.any()) else 0:.3g}",
                    hints=hints or ["custom_backward/backward-ignores-mask"],
                )
                sums = ds.sum(-1)
                t_ = tol("custom_backward.softmax_backward", dtype)
                expect.true(
                    bool(sums.abs().max() <= (t_.atol + t_.rtol) * max(1.0, da.abs().max().item())),
                    what="every row of S̄ sums to 0 (Day 1 §2.3, D1-13; measured tolerance)",
                    detail=f"largest |row sum| {sums.abs().max().item():.3g}",
                    hints=hints or ["custom_backward/missing-d-term", "custom_backward/d-wrong-axis"],
                )
                # zeros have both properties: the values must be right too
                expect.close(
                    ds,
                    ref.custom_backward.softmax_backward(da, a),
                    what="softmax_backward(Ā, A)",
                    tol=tol("custom_backward.softmax_backward", dtype),
                    mistakes=lambda: signatures.softmax_backward(da, a),
                )
            else:
                # d ≥ 2 (1/√d ≠ 1: a scale mistake shows) and t ≥ 1 (output t mixes two keys: with t = 0
                # every score gradient the loss reaches is 0, whatever the backward does)
                B, T, d = 2, randint(rng, 4, 10), randint(rng, 2, 6)
                q, k, v = (randn(rng, B, T, d, dtype=dtype) for _ in range(3))
                t = randint(rng, 1, T - 2)
                d_out = torch.zeros(B, T, d, dtype=dtype)
                d_out[:, : t + 1] = randn(rng, B, t + 1, d, dtype=dtype)  # the loss reads outputs 0..t only
                allowed_causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
                out, (grads,) = data.forward_backward(sub, q, k, v, allowed_causal, [d_out], what="causal attention")
                scale = 1.0 / math.sqrt(d)
                want_out, _ = _reference_grads(q, k, v, allowed_causal, d_out)
                expect.close(  # a forward that ignores the mask is named here, not as a backward that ignores it
                    out,
                    want_out.to(dtype),
                    what="AttentionFunction.forward on the causal problem (checked before its gradients)",
                    tol=tol("custom_backward.attention", dtype),
                    mistakes=lambda: signatures.attention_forward(q, k, v, allowed_causal),
                )
                want = ref.custom_backward.attention_backward(d_out, q, k, v, _weights(q, k, allowed_causal, scale), scale)
                for name, g, w_ in zip(GRADS[1:], grads[1:], want[1:]):
                    g = expect.tensor(g, what=name)
                    future = g[:, t + 1 :]
                    expect.close(
                        g,
                        w_,
                        what=f"{name} from your AttentionFunction.backward",
                        tol=tol("custom_backward.attention_backward", dtype),
                        mistakes=lambda: signatures.component(
                            whole(
                                _function_table(sub, q, k, v, allowed_causal, d_out),
                                (*grads, out),
                                (*want, want_out),
                                tol("custom_backward.attention_backward", dtype),
                            ),
                            GRADS.index(name),
                        ),
                    )
                    # the docstring promises no exact 0 here (only softmax_backward's S̄ at A = 0 is exact): the table's atol
                    t_ = tol("custom_backward.attention_backward", dtype)
                    expect.true(
                        bool((future.abs() <= t_.atol).all()),
                        what=(
                            f"{name} of keys after position {t} is 0 (within {t_.atol:g}) when the loss reads "
                            f"outputs 0..{t} (causal, Day 1 §3.1)"
                        ),
                        detail=f"largest |{name}| at a future key: {future.abs().max().item():.3g}",
                    )


def test_custom_backward_keeps_dtype_and_leaves_inputs_unchanged(sub, ref, rng, credit):
    """A property test (grading.toml ``properties``): each part checks only that the results
    have the inputs' dtype and that the inputs are left unchanged — not their values, which
    are the value tests' business (issue 16 §2). The problem is one square [T,T] causal
    attention with d_k = d_v and no batch axis, on which a misplaced transpose, ``.T`` or a
    missing keepdim still runs: only a dtype or in-place mistake fails here."""
    q, k, v, allowed, d_out = _problem(rng, torch.float64, lead=(), lengths="L=S", dims="d_k=d_v", mask="causal", t_max=6)
    scale = 1.0 / math.sqrt(q.size(-1))
    a = _weights(q, k, allowed, scale)
    da = randn(rng, *a.shape, dtype=torch.float64)
    calls = {  # the inputs and how many tensors the call returns
        "softmax_backward": ((da, a), 1),
        "attention_backward": ((d_out, q, k, v, a, scale), 3),
        "AttentionFunction": ((q, k, v, allowed), 4),
        "AttentionFunction in float32": ((q.float(), k.float(), v.float(), allowed), 4),
    }
    for part in credit.parts(list(calls)):
        with part:
            args, count = calls[part.label]
            dtype = args[0].dtype
            if part.label.startswith("AttentionFunction"):
                # forward and backward called directly: out, dq, dk, dv in the inputs' dtype
                out, (grads,) = data.forward_backward(sub, *args, [d_out.to(dtype)], what=part.label)
                outs = (out, *grads)
                with data.explained(sub, _third_step):
                    r = sub.custom_backward.call(
                        "attention", *[t.clone() if isinstance(t, torch.Tensor) else t for t in args], return_args=True
                    )
            else:
                with data.explained(sub, _third_step):
                    r = sub.custom_backward.call(
                        part.label, *[t.clone() if isinstance(t, torch.Tensor) else t for t in args], return_args=True
                    )
                outs = r.value if isinstance(r.value, (tuple, list)) else (r.value,)
            for before, after in zip(args, r.args or []):
                if isinstance(before, torch.Tensor):
                    expect.unchanged(before, after, what=f"{part.label.split()[0]} leaves its inputs unchanged")
            expect.true(
                len(outs) == count, what=f"{part.label} result", detail=f"expected {count} tensor(s), got {expect.describe(outs)}"
            )
            for out in outs:
                out = expect.tensor(out, what=f"{part.label} result")
                expect.true(
                    out.dtype == dtype,
                    what=f"{part.label} keeps {dtype_name(dtype)}",
                    detail=f"{dtype_name(dtype)} inputs gave a {dtype_name(out.dtype)} result",
                    hints=["general/dtype-changed"],
                )


def test_rule_backward_uses_no_autograd(sub, rng):
    """The rule test (a gate in grading.toml, weight 0; the file's last, after every test that
    judges the rule on its own calls): fails as a violation only when
    backward, attention_backward or softmax_backward are shown to use autograd — here or in
    an earlier test of the run — then the whole skill scores 0 (a call that times out proves nothing: it fails as a timeout). The
    source check gives the fast first message; the verdict is what the dispatcher ran: only
    the operators of a hand-written backward in backward, none of autograd's in forward
    (recorded up to an error, if the code raises)."""
    data.check_backward_source(sub)
    q, k, v, allowed, d_out = _problem(rng, torch.float64, lead=(2,), mask="causal", t_max=6)
    try:
        sub.custom_backward.run(
            data.direct_forward_backward, q, k, v, allowed, d_out, dispatch=True, replace=list(data.AUTOGRAD_REPLACED)
        )
    except SubmissionTimeout:
        # a call that never returned shows nothing of what it ran: no violation is proven, and
        # the test fails as what it is (a timeout, which costs the skill nothing more); the
        # rule is judged on every other test's calls too (data.watch_rule), so code that
        # behaves only while this test watches gains nothing elsewhere
        raise
    except SubmissionError:
        pass  # what ran before the error was recorded all the same, and is judged below
    expect.true(
        not sub.autograd_uses,
        what="AttentionFunction.forward and .backward, called directly, use no autograd (docs/EXERCISES.md §4)",
        detail=f"autograd was used inside forward or backward: {', '.join(sorted(sub.autograd_uses))}",
        hints=["custom_backward/uses-autograd"],
        problem="constraint",
    )
    data.check_backward_dispatch(sub)  # the verdict: what the dispatcher ran, deny by default
    data.check_rule_kept_earlier(sub)  # and no earlier test's calls broke it: this test is the file's last
