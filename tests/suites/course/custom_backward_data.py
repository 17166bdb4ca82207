"""Skill custom_backward: the Week 7 §16 training step as a chain through the student's
``attention``, the probes that run inside the worker, and the "no autograd in backward" rule.

Probes hold glue only (the submission can read them); every expected value is computed on
the trusted side, with plain torch autograd or from the lessons' printed numbers.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from autograder.testing import expect, probe
from autograder.testing.failures import SubmissionRaised
from autograder.testing.source import calls as called_names
from autograder.testing.source import check_no_banned

from . import week07 as w7

MODULE = "custom_backward"
FILE = "custom_backward.py"
BACKWARD_SCOPE = ("AttentionFunction.backward", "attention_backward", "softmax_backward")
BANNED_IN_BACKWARD = (
    "backward", "grad", "enable_grad", "set_grad_enabled", "vjp", "jacobian", "jvp", "hessian", "vhp", "hvp",
    "jacrev", "jacfwd", "functional",
)


def check_backward_source(sub) -> None:
    """EXERCISES.md §4: backward, attention_backward and softmax_backward use no autograd."""
    check_no_banned(
        sub.source(MODULE), FILE, BANNED_IN_BACKWARD, scope=BACKWARD_SCOPE,
        what="AttentionFunction.backward, attention_backward and softmax_backward use no autograd (EXERCISES.md §4)",
        hints=["custom_backward/uses-autograd", "general/forbidden-api"],
    )


def check_goes_through_helpers(sub) -> None:
    """backward calls attention_backward, which calls softmax_backward (read from the source)."""
    source = sub.source(MODULE)
    if source is None:
        return
    for function, helper in (("AttentionFunction.backward", "attention_backward"), ("attention_backward", "softmax_backward")):
        names = called_names(source, function)
        expect.true(helper in names, what=f"{function} goes through {helper} (EXERCISES.md §4)",
                    detail=f"{function} calls {sorted(names) or 'nothing'}, not {helper}", hints=["custom_backward/not-through-attention-backward"],
                    problem="constraint")


def week7_loss_mistakes(dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """hint id → the Week 7 mean loss a wrong forward pass gives (0-dim, ``dtype``)."""
    wrong = week7_chain_reference(**week7_chain_inputs(torch.float64), scale=1.0)["loss"]
    return {"custom_backward/forward-scale": wrong.to(dtype)}


SHAPE_ERRORS = ("size", "shape", "mat1 and mat2", "broadcast", "dimension")


def explain(exc: SubmissionRaised) -> SubmissionRaised:
    """Add course hints to errors whose cause is a known mistake: autograd's complaint about
    the number of values backward returned, and shape errors inside the backward (with L ≠ S
    a missing transpose — S̄ Q instead of S̄ᵀ Q, A Ȳ instead of Aᵀ Ȳ — cannot even multiply)."""
    error = exc.error or {}
    message = error.get("message", "")
    added: list[str] = []
    if "incorrect number of gradient" in message or "returned an incorrect number" in message:
        added = ["custom_backward/backward-three-values"]
    elif error.get("type") == "RuntimeError" and any(word in message for word in SHAPE_ERRORS):
        functions = {frame.get("function") for frame in error.get("frames", [])}
        if functions & {"backward", "attention_backward", "softmax_backward"}:
            added = ["custom_backward/dk-transpose", "custom_backward/dv-transpose"]
    exc.hints = added + [h for h in exc.hints if h not in added]
    return exc


@contextmanager
def explained():
    """``with explained(): sub.custom_backward...`` — re-raise the submission's error with ``explain``'s hints."""
    try:
        yield
    except SubmissionRaised as exc:
        raise explain(exc) from None


# --------------------------------------------------------------------------- Week 7 §16
def week7_chain_inputs(dtype: torch.dtype) -> dict:
    """x, W_K, W_V, W_vocab, targets of Week 7 §16 and W_Q (whose gradient is asked for)."""
    ex = w7.example(dtype)
    return {"x": ex.x, "w_q": ex.w_q, "w_k": ex.w_k, "w_v": ex.w_v, "w_vocab": ex.w_vocab, "targets": ex.targets}


def week7_chain_reference(x, w_q, w_k, w_v, w_vocab, targets, lr: float = 0.01, scale: float | None = None) -> dict:
    """The same chain with torch's own softmax and autograd, in float64 (trusted side);
    ``scale`` replaces 1/√d_k (to replay a forward pass with the wrong scale)."""
    import torch.nn.functional as F

    def loss_of(wq):
        q, k, v = x @ wq, x @ w_k, x @ w_v
        T = x.size(1)
        scores = (q @ k.transpose(-2, -1)) * (q.size(-1) ** -0.5 if scale is None else scale)
        scores = scores.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
        out = torch.softmax(scores, -1) @ v
        return F.cross_entropy(out[:, -1] @ w_vocab, targets)

    wq = w_q.double().clone().requires_grad_(True)
    x, w_k, w_v, w_vocab = x.double(), w_k.double(), w_v.double(), w_vocab.double()
    loss = loss_of(wq)
    (grad,) = torch.autograd.grad(loss, [wq])
    with torch.no_grad():
        new = wq.detach().clone()
        new[1, 0] -= lr * grad[1, 0]
        after = loss_of(new)
    return {"loss": loss.detach(), "grad": grad, "loss_after": after}


@probe
def week7_training_step(ctx, x, w_q, w_k, w_v, w_vocab, targets, lr):
    """Week 7 §16: q = x W_Q, k, v → attention(q, k, v, causal) → out[:, -1] @ W_vocab → mean CE;
    d(loss)/dW_Q by autograd (through the student's AttentionFunction.backward), then one SGD
    step on W_Q[1, 0] and the loss after it."""
    import torch
    import torch.nn.functional as F

    attention = ctx.module("custom_backward").attention
    T = x.size(1)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def loss_of(wq):
        q, k, v = x @ wq, x @ w_k, x @ w_v
        out = attention(q, k, v, allowed)
        return F.cross_entropy(out[:, -1] @ w_vocab, targets)

    wq = w_q.detach().clone().requires_grad_(True)
    loss = loss_of(wq)
    if not loss.requires_grad:
        return {"loss": loss.detach(), "grad": None, "loss_after": None}
    (grad,) = torch.autograd.grad(loss, [wq])
    with torch.no_grad():
        new = wq.detach().clone()
        new[1, 0] -= lr * grad[1, 0]
        after = loss_of(new)
    return {"loss": loss.detach(), "grad": grad, "loss_after": after.detach()}


@probe
def gradcheck_attention(ctx, problems):
    """torch.autograd.gradcheck(AttentionFunction.apply) in float64 on each (q, k, v, allowed);
    returns, per problem, None when it passed, else gradcheck's message."""
    import torch
    from torch.autograd.gradcheck import GradcheckError

    fn = ctx.module("custom_backward").AttentionFunction
    out = []
    for q, k, v, allowed in problems:
        inputs = tuple(t.detach().clone().requires_grad_(True) for t in (q, k, v))
        try:
            torch.autograd.gradcheck(lambda a, b, c: fn.apply(a, b, c, allowed), inputs, eps=1e-6, atol=1e-5, rtol=1e-3)
            out.append(None)
        except GradcheckError as exc:
            out.append(str(exc)[:800])
    return out


@probe
def direct_forward_backward(ctx, q, k, v, allowed, d_out):
    """AttentionFunction.forward and .backward called directly, outside the autograd engine,
    with a stand-in ctx; autograd use inside backward is recorded (sub.autograd_uses)."""
    import torch
    from autograder.sandbox.probes import PlainFunctionCtx

    fn = ctx.module("custom_backward").AttentionFunction
    fctx = PlainFunctionCtx()
    with torch.no_grad():
        out = fn.forward(fctx, q, k, v, allowed)
    with torch.no_grad(), ctx.watch_autograd():  # grad mode off, as inside the autograd engine
        grads = fn.backward(fctx, d_out)
    # attention() must be AttentionFunction.apply: its output's grad_fn is the Function's node
    applied = ctx.module("custom_backward").attention(q.detach().requires_grad_(True), k, v, allowed)
    node = type(getattr(applied, "grad_fn", None)).__name__
    return {"out": out, "grads": list(grads) if isinstance(grads, (tuple, list)) else grads, "attention_node": node}
