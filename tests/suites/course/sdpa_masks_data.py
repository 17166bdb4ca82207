"""Shared glue for skill sdpa_masks: probes that run in the worker, and the trusted-side
twin of the nn.MultiheadAttention they build.

The probes are sent to the worker and can be read by the submission: they hold glue only
(build a module from a state_dict we send, record how PyTorch's attention APIs are
called), never expected values. Expected values are computed on the trusted side.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from autograder.testing import SubmissionError, check_no_banned, expect, probe, randn

BOTH_REFUSED = "attn_mask should not be set when is_causal"  # torch's own error for attn_mask with is_causal=True

#: expect.close's dtype check for to_additive_mask, whose dtype is an argument's, not its (bool) input's
ADDITIVE_DTYPE = {"dtype_from": "the `dtype` argument", "dtype_hints": ("sdpa_masks/additive-dtype",)}


def recorded_calls(sub, result: dict, q=None, k=None) -> list[dict]:
    """The calls ``sdpa_recorded`` or ``mha_recorded`` recorded (``result["calls"]``), once the
    file is shown to leave them alone. The records are Python objects in the worker, beside
    the submission: code that reaches the interpreter's machinery (``exec`` of a string,
    frames, gc) could edit them, as blind red-team tester H did to score calls it never
    made. A test that judges the calls first requires that sdpa_masks.py (and what it
    imports) uses none of the deny-by-default constructs of the rule scan; it bans no name.
    With ``q`` and ``k``: only the calls on their sizes (L = q's, S = k's second-to-last axis) —
    a throwaway call on a 1×1 input beside a hand-written attention showed the flags a test
    wanted while no output came from SDPA (blind red-team tester R-AP)."""
    check_no_banned(
        sub.source("sdpa_masks"),
        "sdpa_masks.py",
        (),
        what="sdpa_masks.py uses no dynamic code or introspection (the calls to PyTorch it is judged by are recorded beside it)",
        imports=sub.importable_sources(),
    )
    calls = result["calls"]
    if q is not None and k is not None:
        calls = [c for c in calls if (c["L"], c["S"]) == (int(q.shape[-2]), int(k.shape[-2]))]
    return calls


def dtype_hints(name: str, dtype: torch.dtype) -> list[str]:
    """What a wrong result dtype of sdpa_masks' function ``name`` shows."""
    if name == "to_additive_mask":
        return list(ADDITIVE_DTYPE["dtype_hints"])
    return ["general/mask-dtype"] if dtype == torch.bool else ["general/dtype-changed"]


@contextmanager
def mask_and_is_causal_named() -> Iterator[None]:
    """Name torch's own refusal when the submission raised it: F.scaled_dot_product_attention
    was given an attn_mask together with is_causal=True (Day 1 §A.1). The error message proves
    the call, whatever the test was checking."""
    try:
        yield
    except SubmissionError as exc:
        message = str((exc.error or {}).get("message", "")) + " " + str(exc.message)
        if BOTH_REFUSED in message and "sdpa_masks/mask-and-is-causal" not in exc.hints:
            exc.hints.extend(expect.observed("sdpa_masks/mask-and-is-causal"))
        raise


@probe(target="sdpa", shows="sdpa(…), its SDPA calls recorded")
def sdpa_recorded(ctx, args, kwargs, keep_calls_on_error=False):
    """Call sdpa_masks.sdpa(*args, **kwargs) and record every call it makes to
    F.scaled_dot_product_attention (any spelling): mask given?, is_causal, dropout_p, L, S.
    With ``keep_calls_on_error``, an exception of sdpa raised after one call or more is returned
    as text ("raised") next to the calls recorded up to it, so a test about the calls can judge them (SDPA itself raises
    on an attn_mask together with is_causal=True for some mask shapes)."""
    import torch
    from torch.overrides import TorchFunctionMode

    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
    calls = []

    class Recorder(TorchFunctionMode):
        def __torch_function__(self, func, types, a=(), kw=None):
            kw = kw or {}
            if getattr(func, "__name__", "") == "scaled_dot_product_attention":
                bound = dict(zip(names, a))
                bound.update(kw)
                q, k = bound.get("query"), bound.get("key")
                calls.append(
                    {
                        "mask": bound.get("attn_mask") is not None,
                        "is_causal": bool(bound.get("is_causal", False)),
                        "dropout_p": float(bound.get("dropout_p", 0.0) or 0.0),
                        "L": int(q.shape[-2]) if isinstance(q, torch.Tensor) and q.dim() >= 2 else -1,
                        "S": int(k.shape[-2]) if isinstance(k, torch.Tensor) and k.dim() >= 2 else -1,
                    }
                )
            return func(*a, **kw)

    fn = ctx.module("sdpa_masks").sdpa
    try:
        with Recorder():
            value = fn(*args, **kwargs)
    except Exception as exc:
        if (
            not keep_calls_on_error or not calls
        ):  # nothing to judge: the error is the answer (a TODO stub reads "not implemented yet")
            raise
        return {"value": None, "calls": calls, "raised": f"{type(exc).__name__}: {exc}"[:300]}
    return {"value": value, "calls": calls, "raised": None}


@probe(target="mha_self_attention", shows="mha_self_attention(nn.MultiheadAttention, …)")
def mha_recorded(ctx, config, state, x, allowed, key_allowed):
    """Build nn.MultiheadAttention from `config` and `state` (dropout 0, eval mode), run
    sdpa_masks.mha_self_attention on it under no_grad and record how it was called."""
    import torch
    import torch.nn.functional as F

    def _check_key_padding_mask(key_padding_mask, src_len, bsz):
        # torch's own check, minus torch._check_with, whose first call imports sympy (~0.6 s
        # in every fresh worker; the zygote's warm-up does not cover key_padding_mask)
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got {key_padding_mask.shape[1]}")

    F._check_key_padding_mask = _check_key_padding_mask
    mha = torch.nn.MultiheadAttention(
        config["embed_dim"], config["num_heads"], bias=config["bias"], batch_first=config["batch_first"], dtype=x.dtype
    )
    mha.load_state_dict(state)
    mha.eval()
    calls = []
    order = ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask", "average_attn_weights", "is_causal")

    class Recorded(type(mha)):  # the class, not a hook: mha(…) and mha.forward(…) both run this forward
        def forward(self, *a, **kw):  # and it survives copy.deepcopy(mha) and .to(dtype), which keep the class
            bound = dict(zip(order, a))
            bound.update(kw)
            calls.append(
                {"need_weights": bool(bound.get("need_weights", True)), "is_causal": bool(bound.get("is_causal", False))}
            )
            return super().forward(*a, **kw)

    # what the module computed, whichever way its forward was reached: a forward called through
    # the class (``nn.MultiheadAttention.forward(mha, …, need_weights=True)``) runs no
    # ``Recorded.forward``, and a decoy call beside it made the record read need_weights=False
    # (blind red-team tester R-AK); torch's own functions see every call
    import inspect

    from torch.overrides import TorchFunctionMode

    asked = []

    class Kernels(TorchFunctionMode):
        def __torch_function__(self, func, types, a=(), kw=None):
            kw = kw or {}
            name = getattr(func, "__name__", "")
            if name == "multi_head_attention_forward":
                asked.append(bool(inspect.signature(func).bind(*a, **kw).arguments.get("need_weights", True)))
            elif name == "_native_multi_head_attention":
                asked.append(bool(kw.get("need_weights", a[10] if len(a) > 10 else True)))
            return func(*a, **kw)

    mha.__class__ = Recorded
    with torch.no_grad(), Kernels():
        value = ctx.module("sdpa_masks").mha_self_attention(mha, x, allowed, key_allowed)
    if any(asked) and not any(c["need_weights"] for c in calls):
        calls.append({"need_weights": True, "is_causal": False})  # the weights were computed: a call asked for them
    return {"value": value, "calls": calls}


def run_mha(sub, config, state, x, allowed, key_allowed, *, checking: str = "", want=None) -> dict:
    """``mha_recorded`` run in the worker. When it raises on a ``batch_first=False`` module, the
    known cause is checked by behaviour: the same call on a ``batch_first=True`` module (same
    weights, same x) gives the right output — the function passed x [B,T,C] as is, and the
    module read it as [T,B,C] (its shape checks then fail on masks sized for B and T). Right,
    not merely without an error: code that returns the module's (output, weights) pair
    raises only where it transposes the output back. ``want``: the right [B,T,C] output for
    these inputs (the same in both layouts; a tensor or a callable giving one, from the
    snapshot or the hidden tests' oracle); without it, right means a plain tensor of x's shape.
    ``checking`` names what the test wanted to see in the calls, so the message says it could
    not be checked."""
    try:
        return sub.sdpa_masks.run(mha_recorded, config, state, x, allowed, key_allowed)
    except SubmissionError as exc:
        if checking:
            exc.message = f"{exc.message} (it raised, so {checking} could not be checked)"
        if not config.get("batch_first") and "sdpa_masks/batch-first-ignored" not in exc.hints:
            first = dict(config, batch_first=True)
            try:
                r = sub.sdpa_masks.run(mha_recorded, first, state, x, allowed, key_allowed)
            except SubmissionError:
                raise exc from None
            value = r.get("value") if isinstance(r, dict) else None
            is_output = _module_output(x, want() if callable(want) else want)
            if is_output(value):
                exc.hints += expect.observed("sdpa_masks/batch-first-ignored")
                exc.message += (
                    f"; the same call on a batch_first=True module runs: a batch_first=False module reads x "
                    f"{list(x.shape)} as [T,B,C] = {list(x.shape)}, so transpose x to [T,B,C] first (and the output back)"
                )
            elif isinstance(value, (tuple, list)) and value and is_output(value[0]):
                exc.hints.append("general/returns-tuple")  # the pair, returned as it is where nothing is transposed back
        raise


def _module_output(x: torch.Tensor, want: torch.Tensor | None):
    """A test of a value: is it mha_self_attention's right output for x — ``want`` within the
    measured tolerance, or (no ``want``) a plain tensor of x's shape [B,T,C]?"""
    if want is None:
        return lambda value: type(value) is torch.Tensor and tuple(value.shape) == tuple(x.shape)
    from .tolerances import tol

    t = tol("sdpa_masks.mha_self_attention", x.dtype)
    return lambda value: expect.distance(value, want, t) <= 1.0


def mha_state(rng, embed_dim: int, bias: bool, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """A state_dict for nn.MultiheadAttention(embed_dim, h, bias=bias): weights with std 1/√C."""
    C = embed_dim
    state = {
        "in_proj_weight": randn(rng, 3 * C, C, dtype=dtype, scale=C**-0.5),
        "out_proj.weight": randn(rng, C, C, dtype=dtype, scale=C**-0.5),
    }
    if bias:
        state["in_proj_bias"] = randn(rng, 3 * C, dtype=dtype, scale=0.1)
        state["out_proj.bias"] = randn(rng, C, dtype=dtype, scale=0.1)
    return state


def mha_module(config: dict, state: dict[str, torch.Tensor]) -> torch.nn.MultiheadAttention:
    """The trusted twin of the module the probe builds, in float64 and eval mode."""
    mha = torch.nn.MultiheadAttention(
        config["embed_dim"], config["num_heads"], bias=config["bias"], batch_first=config["batch_first"], dtype=torch.float64
    )
    mha.load_state_dict({k: v.to(torch.float64) for k, v in state.items()})
    return mha.eval()


def blame_kv_cache(sub, mistakes: dict[str, torch.Tensor], top_left: torch.Tensor) -> dict[str, torch.Tensor]:
    """An sdpa that builds its causal mask with the submission's own kv_cache_mask inherits
    that function's mistake: when the submission's kv_cache_mask(L, S) is the top-left
    aligned mask ``top_left`` [L, S] (that mistake's output, from the snapshot or the skill's
    mistakes.py), sdpa's top-left signature is that mistake, named after kv_cache_mask.
    Called only when a check has failed (pass it as a callable)."""
    if "sdpa_masks/top-left-causal" not in mistakes:
        return mistakes
    from autograder.testing import SubmissionError

    L, S = top_left.shape
    try:
        theirs = sub.sdpa_masks.kv_cache_mask(L, S)
    except SubmissionError:
        return mistakes
    if type(theirs) is torch.Tensor and theirs.shape == (L, S) and bool((theirs.to(torch.bool) == top_left).all()):
        mistakes = dict(mistakes)
        mistakes["sdpa_masks/kv-cache-top-left"] = mistakes.pop("sdpa_masks/top-left-causal")
    return mistakes
