"""What the dispatcher ran inside a rule-bound call, judged on the trusted side.

The worker records, with the dispatcher's own profiling (``sandbox/probes.DispatchRecorder``),
the name of every operator that ran — ``aten::mm``, ``aten::_make_dual``, a backward node
``MmBackward0``, the engine's ``autograd::engine::evaluate_function: …``, a custom
``mylib::op`` — with the submission's innermost frame at that moment. Whatever Python
spelling reached an operator (``torch.softmax``, ``Tensor.softmax``, ``torch.ops.aten._softmax``,
TorchScript, a ``torch.library`` op, forward AD, ``torch.func``), it is the operator that is
named here, so a new spelling cannot matter. The rules:

* ``custom_backward``'s backward (and everything it calls): **deny by default** — only the
  operator families of a hand-written backward (``BACKWARD_FAMILIES``) may run; anything
  else (autograd's machinery, torch's own derivative formulas, custom operators, any op not
  listed) fails the rule, named with the student's line. Its forward may use any tensor
  operation (the rule there is only "no autograd": gradients computed in forward and
  merely returned by backward count), so there the machinery is denied
  (``is_autograd_machinery``: every non-ATen name — backward nodes, the engine, custom
  operators — forward AD's operators and torch's derivative formulas).
* ``row_softmax`` and ``mha_reshape``: the rule bans specific library functions, and every
  spelling of them ends in the same few ATen operators, so a **deny-list of operators**
  (``ROW_SOFTMAX_DENIED``, ``MHA_DENIED``) is exactly the rule; any other tensor op stays
  allowed (an allow-list there would fail honest code that uses an op nobody listed).

``sub.dispatched`` (the whole test) and ``CallResult.dispatched`` (one call with
``record_dispatch=True``) hold what was recorded, also for calls that raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .failures import CheckFailed, Feedback


@dataclass(frozen=True)
class Dispatched:
    """One operator as recorded in the worker: how often it ran in the phase, and the
    submission's innermost frame the first time (file "" when none was on the stack)."""

    count: int
    file: str
    line: int
    function: str


def parse(lines: Iterable[str]) -> dict[str, dict[str, Dispatched]]:
    """The worker's tab-separated lines as {phase: {operator: Dispatched}}; a malformed line
    is kept as an operator named by its text (it then fails every rule: deny by default)."""
    out: dict[str, dict[str, Dispatched]] = {}
    for text in lines:
        parts = text.split("\t")
        if len(parts) == 6 and parts[2].isdigit() and parts[4].isdigit():
            phase, op, count, file, line, function = parts
            out.setdefault(phase, {})[op] = Dispatched(int(count), file, int(line), function)
        else:
            out.setdefault("call", {})[text[:200]] = Dispatched(1, "", 0, "")
    return out


def merge(into: dict[str, dict[str, Dispatched]], more: dict[str, dict[str, Dispatched]]) -> None:
    for phase, ops in more.items():
        mine = into.setdefault(phase, {})
        for op, d in ops.items():
            old = mine.get(op)
            mine[op] = (
                d
                if old is None
                else Dispatched(old.count + d.count, old.file or d.file, old.line or d.line, old.function or d.function)
            )


# --------------------------------------------------------------------------- families
#: The operator families a hand-written backward may run (ATen names, without the overload;
#: an in-place ``op_`` counts as ``op``). Derived from what the six correct styles and the
#: reference dispatch (tests/grader/test_dispatch_rules.py re-records them), then completed
#: to whole families, so that an honest variant (``torch.bmm`` for ``@``, ``clamp`` for a
#: mask, printing a tensor while debugging) never fails.
BACKWARD_FAMILIES: dict[str, frozenset[str]] = {
    # the products of the chain rule: Ȳ Vᵀ, S̄ K, …, in every spelling (matmul, @, einsum,
    # bmm in loops); _unsafe_view and the like are what matmul/einsum decompose into
    "matmul": frozenset(
        {
            "mm",
            "bmm",
            "matmul",
            "dot",
            "vdot",
            "mv",
            "addmm",
            "addbmm",
            "baddbmm",
            "addmv",
            "addr",
            "einsum",
            "tensordot",
            "outer",
            "ger",
            "inner",
            "linear",
            "kron",
            "chain_matmul",
            "linalg_multi_dot",
            "multi_dot",
            "_unsafe_view",
        }
    ),
    # elementwise arithmetic and math: the Hadamard products, the scale, D = rowsum(Ȳ∘Y)
    "elementwise": frozenset(
        {
            "add",
            "sub",
            "subtract",
            "rsub",
            "mul",
            "multiply",
            "div",
            "divide",
            "true_divide",
            "floor_divide",
            "neg",
            "negative",
            "reciprocal",
            "pow",
            "float_power",
            "square",
            "sqrt",
            "rsqrt",
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "abs",
            "absolute",
            "sign",
            "sgn",
            "clamp",
            "clamp_min",
            "clamp_max",
            "clip",
            "maximum",
            "minimum",
            "fmax",
            "fmin",
            "addcmul",
            "addcdiv",
            "remainder",
            "fmod",
            "floor",
            "ceil",
            "round",
            "trunc",
            "frac",
            "lerp",
            "xlogy",
            "hypot",
            "copysign",
            "nan_to_num",
            "tanh",
            "sigmoid",
            "__and__",
            "__or__",
            "__xor__",
            "__invert__",
            "__iand__",
            "__ior__",
            "__ixor__",
        }
    ),
    # reductions: sums over keys/batch, maxima for stability, norms when checking
    "reductions": frozenset(
        {
            "sum",
            "mean",
            "nansum",
            "prod",
            "amax",
            "amin",
            "max",
            "min",
            "aminmax",
            "argmax",
            "argmin",
            "logsumexp",
            "cumsum",
            "cumprod",
            "norm",
            "linalg_norm",
            "linalg_vector_norm",
            "linalg_matrix_norm",
            "frobenius_norm",
            "std",
            "var",
            "all",
            "any",
            "count_nonzero",
            "sum_to_size",
        }
    ),
    # views, reshapes, indexing, joining: moving axes around costs nothing and computes nothing
    "views": frozenset(
        {
            "view",
            "view_as",
            "reshape",
            "reshape_as",
            "_reshape_alias",
            "expand",
            "expand_as",
            "broadcast_to",
            "broadcast_tensors",
            "permute",
            "transpose",
            "swapaxes",
            "swapdims",
            "t",
            "mT",
            "mH",
            "adjoint",
            "numpy_T",
            "unsqueeze",
            "squeeze",
            "flatten",
            "unflatten",
            "movedim",
            "moveaxis",
            "narrow",
            "select",
            "slice",
            "index",
            "index_select",
            "gather",
            "take_along_dim",
            "masked_select",
            "split",
            "split_with_sizes",
            "unsafe_split",
            "chunk",
            "unbind",
            "tensor_split",
            "as_strided",
            "alias",
            "contiguous",
            "clone",
            "diagonal",
            "diag",
            "diag_embed",
            "tril",
            "triu",
            "flip",
            "roll",
            "repeat",
            "repeat_interleave",
            "tile",
            "cat",
            "concat",
            "concatenate",
            "stack",
            "hstack",
            "vstack",
            "dstack",
            "constant_pad_nd",
            "pad",
            "index_put",
            "_index_put_impl",
            "index_add",
            "index_copy",
            "index_fill",
            "scatter",
            "scatter_add",
            "select_scatter",
            "slice_scatter",
            "nonzero",
            "nonzero_static",
            "argwhere",
            "masked_scatter",
            "detach",
            "lift_fresh",
            "lift_fresh_copy",
            "real",
            "resolve_conj",
            "resolve_neg",
            "conj",
        }
    ),
    # comparisons, masks and selection: the causal/padding mask, where(mask, x, 0)
    "comparisons": frozenset(
        {
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "greater",
            "less",
            "greater_equal",
            "less_equal",
            "not_equal",
            "equal",
            "isclose",
            "allclose",
            "is_same_size",
            "isfinite",
            "isinf",
            "isnan",
            "isneginf",
            "isposinf",
            "logical_and",
            "logical_or",
            "logical_not",
            "logical_xor",
            "bitwise_and",
            "bitwise_or",
            "bitwise_not",
            "bitwise_xor",
            "where",
            "masked_fill",
        }
    ),
    # creation, copies and dtype/device conversions: zeros for accumulators, .to(dtype), .item()
    "creation": frozenset(
        {
            "empty",
            "empty_like",
            "empty_strided",
            "zeros",
            "zeros_like",
            "ones",
            "ones_like",
            "full",
            "full_like",
            "new_zeros",
            "new_ones",
            "new_full",
            "new_empty",
            "new_empty_strided",
            "arange",
            "linspace",
            "eye",
            "scalar_tensor",
            "fill",
            "zero",
            "copy",
            "to",
            "_to_copy",
            "type_as",
            "_local_scalar_dense",
            "item",
            "is_nonzero",
            "result_type",
            "resize",
            "is_floating_point",
            "is_complex",
            "is_signed",
            "unfold",
        }
    ),
    # torch's forward functions of this lesson: recomputing the weights A from saved scores
    # computes values, not gradients (their derivative formulas, *_backward_data, are not here)
    "forward functions": frozenset(
        {"softmax", "_softmax", "log_softmax", "_log_softmax", "_safe_softmax", "_masked_softmax", "special_softmax"}
    ),
}
BACKWARD_ALLOWED = frozenset().union(*BACKWARD_FAMILIES.values())
#: autograd-level names that only cut a tensor off its history (``torch.tensor(…)`` makes one)
HISTORY_CUTS = frozenset({"detach", "detach_"})

#: autograd's own machinery among ATen operators: forward AD (dual tensors, tangents, the
#: zero tangents and the layout check it dispatches; ``is_same_size``, which it runs too, is
#: also ``torch.equal``'s, so it stays allowed) — besides every op whose name holds
#: "backward" or "jvp" (torch's derivative formulas) and every non-ATen name (backward
#: nodes, the engine, custom operators)
AUTOGRAD_OPS = frozenset(
    {
        "_make_dual",
        "_make_dual_copy",
        "_unpack_dual",
        "_fw_primal",
        "_fw_primal_copy",
        "_has_same_storage_numel",
        "_efficientzerotensor",
        "_new_zeros_with_same_feature_meta",
        "requires_grad",
        "retain_grad",
        "_is_zerotensor",
    }
)

#: row_softmax.py: every ATen operator that computes a softmax (any spelling of softmax,
#: log_softmax, cross_entropy, a fused attention ends in one of these)
ROW_SOFTMAX_DENIED_PARTS = ("softmax", "softmin", "cross_entropy", "attention", "_transformer_encoder_layer")
#: mha_reshape.py: library attention (SDPA and its kernels, nn.MultiheadAttention's fused path)
MHA_DENIED_PARTS = ("scaled_dot_product", "multi_head_attention", "attention", "_transformer_encoder_layer")


# --------------------------------------------------------------------------- replaced kernels
#: During a rule-checked call the worker *replaces* the kernels of these operators
#: (``fnmatch`` patterns of ATen names; sandbox/probes.KernelBan), so that no path past the
#: recording — ``OpOverload.redispatch`` skips ``RecordFunction`` — can run them: a use
#: raises and is recorded. Each list is a subset of what its rule denies, so correct code
#: never meets a replaced kernel.
ROW_SOFTMAX_REPLACED = tuple(f"*{part}*" for part in ROW_SOFTMAX_DENIED_PARTS)
MHA_REPLACED = tuple(f"*{part}*" for part in MHA_DENIED_PARTS)
#: custom_backward's forward and backward: torch's derivative formulas and forward AD
AUTOGRAD_REPLACED = ("*backward*", "*jvp*", "_make_dual", "_make_dual_copy", "_unpack_dual", "_fw_primal", "_fw_primal_copy")


def _aten(op: str) -> str | None:
    """``aten::add_`` → ``add``; None for a name that is not an ATen operator."""
    if not op.startswith("aten::"):
        return None
    name = op[len("aten::") :]
    return name[:-1] if name.endswith("_") and not name.endswith("__") and len(name) > 1 else name


def is_autograd_machinery(op: str) -> bool:
    """Autograd at work: a backward node or the engine, a custom operator (what runs inside
    it is recorded too, but the operator itself is no tensor arithmetic of this exercise),
    forward AD's operators, or one of torch's derivative formulas (``*_backward*``, ``*jvp*``)."""
    if op in HISTORY_CUTS:
        return False
    name = _aten(op)
    if name is None:
        return True
    return name in AUTOGRAD_OPS or "backward" in name or "jvp" in name


def backward_allows(op: str) -> bool:
    """Deny by default: only the families of a hand-written backward."""
    if op in HISTORY_CUTS:
        return True
    name = _aten(op)
    return name is not None and name in BACKWARD_ALLOWED


def forward_allows(op: str) -> bool:
    return not is_autograd_machinery(op)


def denies_parts(parts: tuple[str, ...]) -> Callable[[str], bool]:
    """A deny-list rule: the op is allowed unless its ATen name holds one of ``parts``."""

    def allows(op: str) -> bool:
        name = _aten(op) or ""
        return not any(part in name for part in parts)

    return allows


def violations(
    dispatched: dict[str, dict[str, Dispatched]], phase: str | None, allows: Callable[[str], bool]
) -> list[tuple[str, Dispatched]]:
    """The recorded operators of ``phase`` (every phase when None) the rule does not allow,
    those with a line of the submission first."""
    found = [(op, d) for ph, ops in dispatched.items() if phase is None or ph == phase for op, d in ops.items() if not allows(op)]
    return sorted(found, key=lambda item: (not _telling(item[0]), not item[1].file, item[1].file, item[1].line, item[0]))


def _telling(op: str) -> bool:
    """Named first: what shows the construct itself (a dual tensor, a derivative formula, a
    backward node, a custom operator) rather than a side effect of it."""
    name = _aten(op)
    return (
        name is None or name in ("_make_dual", "_unpack_dual") or "backward" in name or "softmax" in name or "attention" in name
    )


def where(d: Dispatched) -> str:
    return (
        f"{d.file}:{d.line} ({d.function})"
        if d.file
        else "no line of your files on the stack (a library call or a name bound to one)"
    )


def check(
    dispatched: dict[str, dict[str, Dispatched]],
    phase: str | None,
    allows: Callable[[str], bool],
    *,
    what: str,
    hints: Iterable[str] = (),
    family: str = "operators this rule does not allow",
) -> None:
    """Fail the rule with each offending operator (up to 6) and the student's line."""
    found = violations(dispatched, phase, allows)
    if not found:
        return
    listing = "; ".join(f"{op} at {where(d)}" for op, d in found[:6])
    raise CheckFailed(
        Feedback(
            check=what,
            problem="constraint",
            detail=f"your code ran {listing}{' …' if len(found) > 6 else ''} — {family}",
            hints=list(hints) or ["general/forbidden-api"],
            frames=[{"file": d.file, "line": d.line, "function": d.function} for _, d in found[:6] if d.file],
        )
    )
