"""Skill custom_backward: the Week 7 §16 training step as a chain through the student's
``attention``, the probes that run inside the worker, and the "no autograd in backward" rule.

Probes hold glue only (the submission can read them); every expected value is computed on
the trusted side, with plain torch autograd or from the lessons' printed numbers.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path

import torch

from autograder.testing import (
    Snapshots,
    SubmissionError,
    SubmissionRaised,
    check_no_banned,
    dispatch,
    expect,
    probe,
    reaches,
)
from autograder.testing import (
    calls as called_names,
)

from . import week07 as w7
from .tolerances import Tol, tol

#: the kernels the worker replaces in AttentionFunction's forward and backward: torch's
#: derivative formulas and forward AD (the framework's "no autograd" list)
AUTOGRAD_REPLACED = dispatch.NO_AUTOGRAD_REPLACED

MODULE = "custom_backward"
SKILL_DIR = Path(__file__).resolve().parent.parent / "custom_backward"  # its snapshot holds square_problem
FILE = "custom_backward.py"
#: the names the grader reads from the file (docs/EXERCISES.md): an import bound to one counts as read
API = ("softmax_backward", "attention_backward", "AttentionFunction", "attention")
BACKWARD_SCOPE = ("AttentionFunction.backward", "attention_backward", "softmax_backward")
BANNED_IN_BACKWARD = (
    "backward",
    "grad",
    "enable_grad",
    # not set_grad_enabled: switching grad mode *off* is correct code (fairness tester R-BM), and
    # on is refused where it runs (autograd is off in a rule-checked call, and its switch raises)
    "vjp",
    "jacobian",
    "jvp",
    "hessian",
    "vhp",
    "hvp",
    "jacrev",
    "jacfwd",
    # torch.autograd.functional only (from torch.autograd import functional, ….autograd.functional):
    # torch.nn.functional.softmax recomputes forward values, which backward may do
    "autograd.functional",
)


def check_backward_source(sub) -> None:
    """docs/EXERCISES.md §4: backward, attention_backward and softmax_backward use no autograd
    (read from the source; the run-time watch in ``direct_forward_backward`` also covers
    forward, so gradients computed there by autograd and returned by backward count too)."""
    check_no_banned(
        sub.source(MODULE),
        FILE,
        BANNED_IN_BACKWARD,
        scope=BACKWARD_SCOPE,
        what="AttentionFunction.backward, attention_backward and softmax_backward use no autograd (docs/EXERCISES.md §4)",
        hints=["custom_backward/uses-autograd"],
        imports=sub.importable_sources(),
        api=API,
    )


def check_backward_dispatch(sub) -> None:
    """The run-time verdict of the rule, from the operators the dispatcher ran (recorded by
    ``direct_forward_backward(..., dispatch=True)``, also before an exception): forward,
    backward and all they call run only operators of torch's ATen registry that are neither
    derivative formulas nor autograd's machinery (autograder/testing/dispatch.py)."""
    for phase, allows, what, family in (
        (
            "backward",
            dispatch.backward_allows,
            "AttentionFunction.backward (and all it calls) runs only tensor operations, none of autograd's "
            "(docs/EXERCISES.md §4)",
            "autograd's machinery or one of torch's derivative formulas (any other operator of torch is allowed)",
        ),
        (
            "forward",
            dispatch.forward_allows,
            "AttentionFunction.forward uses no autograd (docs/EXERCISES.md §4: gradients computed there and "
            "returned by backward count)",
            "autograd's machinery",
        ),
    ):
        # a helper Function of the file's own is applied under its class's name: its backward is
        # hand-written too (fairness tester R-AQ; a node of torch's is recorded as "… (autograd
        # node)", a name no class has, so the class names let nothing of autograd's pass)
        allows = _or_own_functions(allows, _function_classes(sub.source(MODULE)))
        found = dispatch.violations(sub.dispatched, phase, allows)
        machinery = any(dispatch.is_autograd_machinery(op) for op, _ in found)
        dispatch.check(
            sub.dispatched,
            phase,
            allows,
            what=what,
            family=family,
            hints=["custom_backward/uses-autograd"] if machinery else ["general/forbidden-api"],
        )


def _or_own_functions(rule, applied: frozenset[str]):
    """``rule``, and the apply of a Function class the file defines (``applied``)."""
    return lambda op: op in applied or rule(op)


RULE_WHAT = "your forward and backward (and all they call) use no autograd (docs/EXERCISES.md §4)"
RULE_FAMILY = "autograd's machinery or one of torch's derivative formulas (any other operator of torch is allowed)"


def check_rule_kept_earlier(sub) -> None:
    """The rule test's last check, and why it runs last: no earlier test of the run showed the
    rule broken. Each test judges the rule on its own calls (``watch_rule``) and fails where it
    is broken; code that broke it only in a test it failed anyway — autograd in its own
    exception's ``__str__``, read after a call that raised — and kept what it computed for
    later tests gained there (blind red-team tester R-BU: 9.31 against 8). A broken rule is
    the rule test's to report, which zeroes the skill."""
    broken = sub.rule_broken_earlier(MODULE)
    expect.true(
        broken is None,
        what=RULE_WHAT,
        detail=f"an earlier test's call broke it: {broken}",
        hints=["custom_backward/uses-autograd"],
        problem="constraint",
    )


def watch_rule(sub) -> None:
    """The rule judged on every call of every custom_backward test (``Submission.watch_rule``):
    a test passes only on calls shown to use no autograd, so code that keeps the rule only
    while the rule test watches — or never returns there — gains nothing elsewhere."""
    applied = _function_classes(sub.source(MODULE))

    def allows(op: str) -> bool:
        # ``attention`` is ``AttentionFunction.apply``: the apply itself is recorded under the
        # Function's class name (its forward's operators are judged one by one)
        return op in applied or dispatch.backward_allows(op)

    sub.watch_rule(MODULE, allows, what=RULE_WHAT, family=RULE_FAMILY, hints=["custom_backward/uses-autograd"], autograd=True)


@functools.lru_cache(maxsize=8)  # every custom_backward test asks again of the same file
def _function_classes(source: str | None) -> frozenset[str]:
    """Names of the file's classes deriving from an ``…Function`` (torch.autograd.Function)."""
    import ast

    try:
        tree = ast.parse(source or "")
    except SyntaxError:
        return frozenset()
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    found: set[str] = set()
    grew = True
    while grew:  # a class of the file deriving from one found: the backward it inherits is hand-written too
        before = len(found)
        found |= {
            node.name
            for node in classes
            if any(ast.unparse(base).split(".")[-1] == "Function" or ast.unparse(base) in found for base in node.bases)
        }
        grew = len(found) > before
    return frozenset(found)


def check_goes_through_helpers(sub, helper_calls=None) -> None:
    """backward calls attention_backward, which calls softmax_backward: seen while the code
    ran (``helper_calls``: direct_forward_backward's [outer, function] pairs, however the
    code reached its helpers: a dict, a default argument, a partial), or read from the
    source, directly or through the file's own helpers (a method or function that calls it).
    Either is proof enough; the part fails only where neither shows the call."""
    source = sub.source(MODULE)
    if source is None:
        return
    ran = {tuple(p) for p in helper_calls or () if isinstance(p, list | tuple) and len(p) == 2}
    seen = {
        "attention_backward": any(p[1] == "attention_backward" for p in ran),  # inside backward's window
        "softmax_backward": ("attention_backward", "softmax_backward") in ran,
    }
    for function, helper in (("AttentionFunction.backward", "attention_backward"), ("attention_backward", "softmax_backward")):
        if seen[helper]:
            continue
        names = called_names(source, function)
        expect.true(
            reaches(source, function, helper),
            what=f"{function} goes through {helper} (docs/EXERCISES.md §4)",
            detail=f"{helper} did not run inside {function} on the test's input, and {function}'s source "
            f"calls {helper} nowhere (directly or through a helper of the file: it calls "
            f"{', '.join(sorted(names)) or 'nothing by name'})",
            hints=["custom_backward/not-through-attention-backward"],
            problem="constraint",
        )


SHAPE_ERRORS = ("size", "shape", "mat1 and mat2", "broadcast", "dimension")


def explain(exc: SubmissionRaised, sub=None, third_step=None) -> SubmissionRaised:
    """Add course hints to errors whose cause is a known mistake: autograd's complaint about
    the number of values backward returned, and shape errors inside the backward. With L ≠ S
    a missing transpose (S̄ Q instead of S̄ᵀ Q, A Ȳ instead of Aᵀ Ȳ, ``.T`` on a batch) cannot
    even multiply; which one it is shows on a square input (L = S), where it runs: with
    ``sub`` given, attention_backward is called on one and the mistakes its result matches
    are named — none when nothing matches. ``third_step`` (the hidden tests pass one): a second
    look where no single mistake matched, ``(sub, got, d_out, q, k, v, a, scale, tight) → hint ids``
    (two mistakes at once: the third step judged on the submission's own S̄)."""
    error = exc.error or {}
    message = error.get("message", "")
    added: list[str] = []
    if "incorrect number of gradient" in message or "returned an incorrect number" in message:
        added = ["custom_backward/backward-three-values"]
    elif error.get("type") in ("RuntimeError", "IndexError") and any(word in message.lower() for word in SHAPE_ERRORS):
        functions = {frame.get("function") for frame in error.get("frames", [])}
        if functions & {"backward", "attention_backward", "softmax_backward"} and sub is not None:
            added = square_diagnosis(sub, third_step)
    exc.hints = added + [h for h in exc.hints if h not in added]
    return exc


def _fixed_axes_diagnosis(sub, triple, c: dict, tight: Tol) -> list[str]:
    """attention_backward is right on the square problem [B, L, S] but raises or is wrong on the
    same problem without its batch axis ([L, S]) or with a head axis ([B, 1, L, S]): its code
    counts an axis from the front (``transpose(1, 2)``, ``dim=2``), the last two only where
    there are three (blind tester R-BH). Named only where softmax_backward gives the same S̄
    on every rank (else the fixed axis may be softmax_backward's, whose own tests say so); a
    correct attention_backward is right on every rank, so it is never named there."""
    q, k, v, d_out, a, scale, right = c["q"], c["k"], c["v"], c["d_out"], c["a"], c["scale"], c["right"]
    ranks = (
        ((d_out[0], q[0], k[0], v[0], a[0]), [r[0] for r in right]),
        ((d_out[:, None], q[:, None], k[:, None], v[:, None], a[:, None]), [r[:, None] for r in right]),
    )
    if all(
        (got := triple(*args, scale)) is not None and all(expect.distance(g_, r, tight) <= 1 for g_, r in zip(got, want))
        for args, want in ranks
    ):
        return []
    d_weights = torch.matmul(d_out, v.mT)  # the Ā softmax_backward gets (Day 1 §2.3)

    def s_bar(d_w, w):
        try:
            got = sub.custom_backward.softmax_backward(d_w, w)
        except SubmissionError:
            return None
        return got if type(got) is torch.Tensor else None

    batched = s_bar(d_weights, a)
    if batched is None:
        return []
    for d_w, w, want in ((d_weights[0], a[0], batched[0]), (d_weights[:, None], a[:, None], batched[:, None])):
        got = s_bar(d_w, w)
        if got is None or got.shape != want.shape or expect.distance(got, want, tight) > 1:
            return []
    return expect.observed("custom_backward/fixed-axes")


def square_diagnosis(sub, third_step=None) -> list[str]:
    """Hint ids of the mistakes that attention_backward's result matches on a square float64
    problem (B = 2, L = S = 4, d_k = d_v = 3: every transposed product has the right shape).
    If the batched call still fails while the same problem without the batch axis is right,
    the code used `.T`, which reverses every axis of a batched tensor (Day 1 §2.3's listing
    is written for one [T,T] matrix). The problem, the right gradients and the mistakes'
    gradients come from the skill's snapshot (``square_problem``): fixed data, this only
    names a mistake, it earns nothing."""
    c = Snapshots(SKILL_DIR)["square_problem"]
    q, k, v, d_out, a, scale, right = c["q"], c["k"], c["v"], c["d_out"], c["a"], c["scale"], c["right"]

    def triple(*args):
        try:
            got = sub.custom_backward.attention_backward(*args)
        except SubmissionError:
            return None
        ok = isinstance(got, (tuple, list)) and len(got) >= 3 and all(type(t) is torch.Tensor for t in got[:3])
        return list(got[:3]) if ok else None

    tight = Tol(1e-9, 1e-12)
    got = triple(d_out, q, k, v, a, scale)
    if got is not None and all(expect.distance(g_, r, tight) <= 1 for g_, r in zip(got, right)):
        return _fixed_axes_diagnosis(sub, triple, c, tight)
    if got is None or any(expect.distance(g_, r, tight) > 1 for g_, r in zip(got, right)):
        plain = triple(d_out[0], q[0], k[0], v[0], a[0], scale)
        if plain is not None and all(expect.distance(g_, r[0], tight) <= 1 for g_, r in zip(plain, right)):
            expect.diagnose(plain[0], {"custom_backward/dot-t-on-batch": plain[0]}, tight)  # records the match
            return ["custom_backward/dot-t-on-batch"]
    if got is None:  # raised on the batch: name what the same problem without its batch axis shows
        got = triple(d_out[0], q[0], k[0], v[0], a[0], scale)
        if got is None or "mistakes_plain" not in c:
            return []
        right = [r[0] for r in right]
        variants = c["mistakes_plain"]
    else:
        variants = c["mistakes"]
    named = _named_by_whole(got, right, variants, tight)
    if not named and third_step is not None and got is not None:  # the hidden tests' second look (see ``explain``)
        named = third_step(sub, got, d_out, q, k, v, a, scale, tight)
    return named


def _named_by_whole(got, right, variants, tight) -> list[str]:
    """The mistakes whose every changed gradient is what ``got`` holds."""
    named = set()
    for i in range(3):
        named.update(
            expect.diagnose(
                got[i], {h: g[i] for h, g in variants.items() if expect.distance(g[i], right[i], tight) > 1}, tight, want=right[i]
            )
        )
    whole = [
        expect.hint_of(h)  # a key may be a variant, ``hint#variant``: the hint is what is named
        for h in variants
        if expect.hint_of(h) in named and all(expect.distance(t, w, tight) <= 1 for t, w in zip(got, variants[h]))
    ]
    return list(dict.fromkeys(whole))


@contextmanager
def explained(sub=None, third_step=None):
    """``with explained(sub): sub.custom_backward...`` — re-raise the submission's error with ``explain``'s hints."""
    try:
        yield
    except SubmissionRaised as exc:
        raise explain(exc, sub, third_step) from None


def softmax_backward(sub, d_weights: torch.Tensor, weights: torch.Tensor):
    """sub.custom_backward.softmax_backward(Ā, A), its shape errors explained (``explain``): a D
    without keepdim raises on a batch and is named from the problem without its batch axis."""
    with explained(sub):
        return sub.custom_backward.softmax_backward(d_weights, weights)


# --------------------------------------------------------------------------- Week 7 §16
def week7_chain_inputs(dtype: torch.dtype) -> dict:
    """x, W_K, W_V, W_vocab, targets of Week 7 §16 and W_Q (whose gradient is asked for)."""
    ex = w7.example(dtype)
    return {"x": ex.x, "w_q": ex.w_q, "w_k": ex.w_k, "w_v": ex.w_v, "w_vocab": ex.w_vocab, "targets": ex.targets}


# --------------------------------------------------------------------------- direct calls
@probe(target="AttentionFunction", shows="AttentionFunction.forward(…) and .backward(…)")
def function_forward_backward(ctx, q, k, v, allowed, d_outs, watch=False, dispatch=False):
    """AttentionFunction.forward, then .backward once per upstream gradient in ``d_outs``,
    called directly (outside autograd's engine) with a stand-in ctx and a fresh forward per
    backward, as autograd would run them. Returns {"out": forward's output, "grads":
    [backward's result per d_out]}: data only — every verdict is reached on the trusted side.
    With ``watch``, autograd use inside forward and backward is recorded (sub.autograd_uses);
    with ``dispatch``, every operator each of them runs (sub.dispatched["forward"/"backward"]).
    A ``forward`` without ctx plus ``setup_context`` (torch's newer style) works too."""
    import contextlib

    import torch

    from autograder.sandbox.probes import PlainFunctionCtx, copied_result

    fn = ctx.module("custom_backward").AttentionFunction
    plain_setup = torch.autograd.Function.setup_context  # read below, inside the window: see forward()

    def forward(keep: bool = True):
        # fresh copies per forward: a forward that changes its input in place (q.mul_(s)) then
        # shows the same wrong gradient on every row, not one scaled again on each call
        q_, k_, v_ = q.clone(), k.clone(), v.clone()
        allowed_ = allowed.clone() if isinstance(allowed, torch.Tensor) else allowed  # None: no mask
        fctx = PlainFunctionCtx()
        with ctx.watch_dispatch("forward", dispatch):
            # a lookup on the exercise's class runs its metaclass's code: inside the window only
            # (blind red-team tester R-BR: a metaclass property built a Jacobian before it opened)
            if getattr(fn, "setup_context", None) is not plain_setup:
                out = fn.forward(q_, k_, v_, allowed_)
                fn.setup_context(fctx, (q_, k_, v_, allowed_), out)
            else:
                out = fn.forward(fctx, q_, k_, v_, allowed_)
            # the copies and forward's own output are let go inside the window: a generator hung
            # on one of them ran forward-mode AD, unrecorded, when forward() returned (blind
            # red-team tester R-AP; the mask too: R-BQ); what the ctx keeps is let go in
            # backward's window
            kept = (out.clone() if type(out) is torch.Tensor else out) if keep else None
            del q_, k_, v_, allowed_, out
        return fctx, kept

    grads = []
    with torch.no_grad(), ctx.watch_autograd() if watch else contextlib.nullcontext():
        fctx, out = forward()
        for i, d_out in enumerate(d_outs):
            if i:
                fctx, _ = forward(keep=False)
            with ctx.watch_dispatch("backward", dispatch):
                g = copied_result(fn.backward(fctx, d_out))
                del fctx  # freed inside the window: what a finalizer of it runs is recorded
            grads.append(g)
    return {"out": out, "grads": grads}


def forward_backward(sub, q, k, v, allowed, d_outs=(), *, what: str = "AttentionFunction") -> tuple:
    """(out, [(dq, dk, dv) per d_out]) from the submission's own forward and backward, called
    directly: a backward that is missing (e.g. ``attention`` built on plain autograd instead
    of AttentionFunction.apply) fails here, whatever autograd could have computed."""
    with explained(sub):
        watched = sub.records_dispatch(MODULE)
        r = sub.custom_backward.run(function_forward_backward, q, k, v, allowed, list(d_outs), watch=watched, dispatch=watched)
    out = expect.tensor(
        r.get("out") if isinstance(r, dict) else r, what=f"{what}: AttentionFunction.forward(ctx, q, k, v, allowed)"
    )
    grads = []
    for g in r.get("grads") or []:
        if isinstance(g, list) and len(g) >= 3:
            g = g[:3]  # the 4th value (None for the mask) has its own test
        grads.append(tuple(expect.sequence(g, 3, what=f"{what}: AttentionFunction.backward(ctx, d_out) → (dq, dk, dv, None)")))
    return out, grads


# --------------------------------------------------------------------------- Week 7 §16, decided here
def week7_chain(sub, dtype: torch.dtype, lr: float = 0.01) -> dict:
    """Week 7 §16 through the submission's AttentionFunction, decided on the trusted side:
    q, k, v = x W_Q, x W_K, x W_V (here); out = your forward(q, k, v, causal); mean CE of
    out[:, -1] @ W_vocab and Ȳ = ∂loss/∂out by torch here; dq = your backward(Ȳ); then
    dL/dW_Q = Σ_b x_bᵀ dq_b, one SGD step on W_Q[1, 0] and the loss after it (your forward)."""
    import torch.nn.functional as F

    inputs = week7_chain_inputs(dtype)
    x, w_q, w_k, w_v, w_vocab, targets = (inputs[n] for n in ("x", "w_q", "w_k", "w_v", "w_vocab", "targets"))
    T = x.size(1)
    causal = torch.tensor(w7.STATED["mask_T2"])  # M_T=2 (Week 7 §10)
    k, v = x @ w_k, x @ w_v

    def loss_and_grad(out):
        out = out.detach().to(dtype).requires_grad_(True)
        loss = F.cross_entropy(out[:, -1] @ w_vocab, targets)
        (d_out,) = torch.autograd.grad(loss, [out])
        return loss.detach(), d_out

    out, _ = forward_backward(sub, x @ w_q, k, v, causal, what="Week 7 §16")
    expect.true(
        tuple(out.shape) == (x.size(0), T, v.size(-1)),
        what="AttentionFunction.forward on Week 7's q, k, v keeps the shape [B,T,d_v]",
        detail=f"expected {[x.size(0), T, v.size(-1)]}, got {list(out.shape)}",
    )
    loss, d_out = loss_and_grad(out)
    _, (grads,) = forward_backward(sub, x @ w_q, k, v, causal, [d_out], what="Week 7 §16")
    dq = expect.tensor(grads[0], what="dq from AttentionFunction.backward")
    expect.true(
        tuple(dq.shape) == tuple(d_out.shape[:-1]) + (w_q.size(1),), what="dq has the shape of q", detail=f"got {list(dq.shape)}"
    )
    grad = torch.einsum("btc,btd->cd", x, dq.to(dtype))  # dL/dW_Q = Σ_b x_bᵀ dq_b
    new = w_q.clone()
    new[1, 0] -= lr * grad[1, 0]
    after, _ = forward_backward(sub, x @ new, k, v, causal, what="Week 7 §16 after the step")
    return {"loss": loss, "grad": grad, "loss_after": loss_and_grad(after)[0], "out": out}


def week7_forward_evidence(chain: dict, mistakes: dict, want: torch.Tensor) -> None:
    """Match the chain's forward output against the forward mistakes' outputs on Week 7's q, k,
    v (``mistakes``, ``want``: the right one), before its loss is checked: a NaN loss agrees with
    every forward that makes a NaN, so its hint counts only where the output's own pattern
    matched too (``expect.diagnose``; blind tester R-BS's c38, a boolean index that did not
    broadcast, was told its mask was inverted)."""
    out = chain["out"]
    if type(out) is torch.Tensor and tuple(out.shape) == tuple(want.shape):
        expect.diagnose(out.to(want.dtype), mistakes, tol("custom_backward.attention", out.dtype), want)


def forward_is_right(chain: dict) -> bool:
    """The chain's loss is Week 7 §16's (1.316836, to its printed digits): only then can its
    gradient name a mistake of the backward pass, whose signatures assume the forward is
    right. A wrong forward (a mask of the other polarity gives a NaN loss) makes the gradient
    wrong too, in ways no backward mistake predicts — matching one would point the wrong way."""
    loss = chain["loss"]
    return bool(torch.isfinite(loss).all()) and abs(float(loss) - w7.STATED["loss_mean"]) <= w7.PRINTED_6DP.atol


# --------------------------------------------------------------------------- gradcheck
GRADCHECK = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3}  # torch.autograd.gradcheck's criterion, as Day 1 §B runs it


def gradcheck(sub, problem: dict) -> tuple[str | None, list[str]]:
    """gradcheck decided here: your backward, called once per output entry (Ȳ = a one-hot),
    gives the analytical Jacobian row by row; the numerical Jacobian (finite differences of
    the reference attention) and the Jacobians of the named mistakes come with ``problem``
    (a snapshot case, or ``mistakes.gradcheck_problem`` in a hidden test). Returns (None, [])
    when every entry is within gradcheck's atol + rtol·|numerical|, else (a summary: which
    input, the worst entry, expected vs got; the hint ids of the named mistakes whose
    Jacobian yours matches)."""
    q, k, v, allowed, want_out = problem["q"], problem["k"], problem["v"], problem["allowed"], problem["out"]
    basis = [
        torch.zeros(want_out.numel(), dtype=q.dtype).index_fill_(0, torch.tensor([m]), 1.0).view(want_out.shape)
        for m in range(want_out.numel())
    ]
    out, rows = forward_backward(sub, q, k, v, allowed, basis, what="gradcheck")
    expect.close(
        out,
        want_out.to(q.dtype),
        what="AttentionFunction.forward (gradcheck compares your backward with finite differences of it)",
        tol=tol("custom_backward.attention", q.dtype),
        mistakes=problem.get("forward_mistakes"),
    )
    analytical_all = []
    for name, i, like in zip(("q", "k", "v"), range(3), (q, k, v)):
        got = [expect.tensor(r[i], what=f"d{name} from AttentionFunction.backward") for r in rows]
        for g in got:
            # the shape of exactly one other input: that input's gradient, returned in this one's place
            # (dq and dk: their own hint; one with dv: blind tester R-AZ's (dq, dv, dk) had none)
            others = [o for o, t in zip("qkv", (q, k, v)) if o != name and tuple(t.shape) == tuple(g.shape)]
            other = others[0] if len(others) == 1 and tuple(g.shape) != tuple(like.shape) else None
            hint = "custom_backward/dq-dk-swapped" if {name, other} == {"q", "k"} else "custom_backward/grads-out-of-order"
            expect.true(
                tuple(g.shape) == tuple(like.shape),
                what=f"d{name} has the shape of {name}",
                detail=f"expected {list(like.shape)}, got {list(g.shape)}" + (f" — the shape of {other}" if other else ""),
                hints=expect.observed(hint) if other else [],
            )
        analytical_all.append(torch.stack([g.double().reshape(-1) for g in got]))
    for name, i, like, num in zip(("q", "k", "v"), range(3), (q, k, v), problem["numerical"]):
        analytical = analytical_all[i]
        excess = (analytical - num).abs() - (GRADCHECK["atol"] + GRADCHECK["rtol"] * num.abs())
        if bool((excess > 0).any()) or not bool(torch.isfinite(analytical).all()):
            # which named mistake gives exactly these Jacobian rows (same one-hot Ȳ) — and, for
            # the other inputs, whatever it changes there too (its whole signature: a forward that
            # saved a scaled q changes ∂/∂k only, which is not a backward applying s twice)
            stacked = {
                h: jac[i]
                for h, jac in problem["mistakes"].items()
                if jac[i] is not None
                and jac[i].shape == analytical.shape
                and torch.allclose(analytical, jac[i].double(), rtol=1e-6, atol=1e-9)
                and _whole_jacobian(jac, analytical_all, problem["numerical"])
            }
            if {SAVED_SCALED_Q, SCALE_TWICE_DK} <= set(stacked):  # the same Jacobians: ask attention_backward
                right = _backward_dk_right(sub, problem)
                if right is not None:  # else both stay, and the tie names neither
                    stacked.pop(SCALE_TWICE_DK if right else SAVED_SCALED_Q)
            hints = (
                expect.diagnose(analytical, stacked, Tol(1e-6, 1e-9), want=num) if stacked else []
            )  # records the match on the Jacobian
            m, j = divmod(int(torch.nan_to_num(excess, nan=float("inf")).argmax()), num.size(1))
            out_idx = list(torch.unravel_index(torch.tensor(m), want_out.shape))
            in_idx = list(torch.unravel_index(torch.tensor(j), like.shape))
            bad = int((torch.nan_to_num(excess, nan=1.0) > 0).sum())
            return (
                f"∂out/∂{name}: {bad} of {excess.numel()} entries differ; worst: "
                f"∂out{[int(t) for t in out_idx]}/∂{name}{[int(t) for t in in_idx]} "
                f"is {num[m, j].item():.6g} by finite differences, your backward gives {analytical[m, j].item():.6g} "
                f"(allowed |difference| ≤ {GRADCHECK['atol']:g} + {GRADCHECK['rtol']:g}·|expected|)"
            ), hints
    return None, []


SAVED_SCALED_Q = "custom_backward/saved-scaled-q"
SCALE_TWICE_DK = "custom_backward/scale-twice#dk"


def _backward_dk_right(sub, problem: dict) -> bool | None:
    """Whether attention_backward, called on its own with the right weights and scale (the
    problem's ``backward_probe``), returns the right K̄: then a K̄ off by s through
    AttentionFunction comes from what forward saved (s·Q), not from the backward's formula
    (blind tester R-L's K̄ = s·s·S̄ᵀQ was named as the forward's mistake). None when it cannot tell."""
    probe = problem.get("backward_probe")
    if probe is None:
        return None
    try:
        got = sub.custom_backward.call(
            "attention_backward", probe["d_out"], problem["q"], problem["k"], problem["v"], probe["weights"], probe["scale"]
        ).value
    except SubmissionError:
        return None
    if not isinstance(got, tuple | list) or len(got) < 2 or type(got[1]) is not torch.Tensor:
        return None
    return expect.distance(got[1], probe["dk"], Tol(1e-9, 1e-12)) <= 1


def _whole_jacobian(mistake: list, analytical: list, numerical: list) -> bool:
    """Every Jacobian a named mistake changes (it differs from the finite differences) is the
    one your backward gave: the mistake's whole signature, not one input's part of it."""
    for jac, got, num in zip(mistake, analytical, numerical):
        if jac is None or jac.shape != num.shape:
            continue
        changes = not torch.allclose(jac.double(), num, rtol=GRADCHECK["rtol"], atol=GRADCHECK["atol"])
        if changes and not (got.shape == jac.shape and torch.allclose(got, jac.double(), rtol=1e-6, atol=1e-9)):
            return False
    return True


@probe(target="AttentionFunction", shows="AttentionFunction.forward(…) and .backward(…), operators recorded")
def direct_forward_backward(ctx, q, k, v, allowed, d_out, dispatch=False, replace=()):
    """AttentionFunction.forward and .backward called directly, outside the autograd engine,
    with a stand-in ctx; autograd use inside either is recorded (sub.autograd_uses), and with
    ``dispatch`` every operator each of them runs (sub.dispatched["forward"/"backward"]),
    the kernels matching ``replace`` (torch's derivative formulas, forward AD) replaced by
    ones that raise, and in backward grad mode off and locked: no graph can be built there."""
    import torch

    from autograder.sandbox.probes import CallWatch, PlainFunctionCtx, copied_result

    fn = ctx.module("custom_backward").AttentionFunction
    names = vars(ctx.module("custom_backward"))
    helpers = CallWatch({name: names.get(name) for name in ("attention_backward", "softmax_backward")})
    fctx = PlainFunctionCtx()
    q_, k_, v_ = q.clone(), k.clone(), v.clone()  # what the code sees, let go inside the windows (below)
    allowed_ = allowed.clone() if isinstance(allowed, torch.Tensor) else allowed  # None: no mask
    # grad mode off, as inside the autograd engine; forward is watched too, so gradients
    # computed by autograd in forward and merely returned by backward count as autograd use
    with torch.no_grad(), ctx.watch_autograd():
        with ctx.watch_dispatch("forward", dispatch, replace):
            if getattr(fn, "setup_context", None) is not getattr(torch.autograd.Function, "setup_context", None):
                out = fn.forward(q_, k_, v_, allowed_)
                fn.setup_context(fctx, (q_, k_, v_, allowed_), out)
            else:
                out = fn.forward(fctx, q_, k_, v_, allowed_)
            kept = out.clone() if type(out) is torch.Tensor else out
            del q_, k_, v_, allowed_, out  # function_forward_backward: nothing of the code's runs between the windows
        out = kept
        with helpers, ctx.watch_dispatch("backward", dispatch, replace, autograd_off=dispatch):
            grads = fn.backward(fctx, d_out)
            grads = copied_result(grads)  # read and copied inside the window, the stand-in ctx freed there
            del fctx
    # attention() must be AttentionFunction.apply: its output's grad_fn is the Function's node
    # (the code's forward runs again here: autograd used in it is recorded too)
    # recorded as forward's: no exercise code runs outside a window (blind red-team tester R-BR)
    with ctx.watch_autograd(), ctx.watch_dispatch("forward", dispatch, replace):
        applied = ctx.module("custom_backward").attention(q.detach().requires_grad_(True), k, v, allowed)
        node = type(getattr(applied, "grad_fn", None)).__name__
        del applied
    return {"out": out, "grads": grads, "attention_node": node, "helper_calls": helpers.facts()}
