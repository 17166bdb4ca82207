"""What the dispatcher ran inside a rule-bound call, judged on the trusted side.

The worker records, with the dispatcher's own profiling (``sandbox/probes.DispatchRecorder``),
the name of every operator that ran — ``aten::mm``, ``aten::_make_dual``, a backward node
``MmBackward0``, the engine's ``autograd::engine::evaluate_function: …``, a custom
``mylib::op`` — with the submission's innermost frame at that moment. Whatever Python
spelling reached an operator (``torch.softmax``, ``Tensor.softmax``, ``torch.ops.aten._softmax``,
TorchScript, a ``torch.library`` op, forward AD, ``torch.func``), it is the operator that is
named here, so a new spelling cannot matter. The rules:

* "no autograd" (e.g. a hand-written backward and everything it calls): an **allow-list
  read from torch's own operator registry** — every ATen operator torch registers
  (``aten_registry``) that is not one of its derivative formulas (``*backward*``, ``*jvp*``,
  ``*_grad``) or autograd's machinery (forward AD's dual tensors, ``requires_grad_``…); every
  other name — a backward node, the engine, a custom operator, an operator a submission
  added to ATen's namespace — is denied (``is_autograd_machinery``). No family of "ops a
  backward needs" is hand-picked, so honest tensor arithmetic of any spelling passes
  (``linalg.matmul``, ``linalg.vecdot``, ``special.expit``, ``softmax`` to recompute A), and
  the rule is exactly "no autograd": gradients computed in forward and merely returned by
  backward count too.
* a rule that bans specific library functions (no softmax of torch, no library attention):
  every spelling of them ends in the same few ATen operators, so a **deny-list of operators**
  (``denies_parts``, with the parts a course keeps beside its suites:
  tests/suites/course/<skill>_data.py ``DENIED_PARTS``) is exactly the rule; any other tensor
  op stays allowed (an allow-list there would fail honest code that uses an op nobody listed).

``sub.dispatched`` (the whole test) and ``CallResult.dispatched`` (one call with
``record_dispatch=True``) hold what was recorded, also for calls that raised.
"""

from __future__ import annotations

import functools
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


# --------------------------------------------------------------------------- no autograd
#: ATen operators that are autograd's own machinery rather than arithmetic: forward AD (dual
#: tensors, tangents, the zero tangents and the layout check it dispatches; ``is_same_size``,
#: which it runs too, is also ``torch.equal``'s, so it stays allowed), the graph's state
#: (``requires_grad_``, ``retain_grad``), distributed autograd's gradients, autograd's test
#: operators — besides every derivative formula (``DERIVATIVE_PARTS``, ``*_grad``)
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
        "_is_zerotensor",
        "requires_grad_",
        "retain_grad",
        "retains_grad",
        "set_data",
        "get_gradients",
    }
)
#: a name holding one of these is one of torch's derivative formulas (``_softmax_backward_data``,
#: ``mm_backward``, ``glu_jvp``), or autograd's own test operators
DERIVATIVE_PARTS = ("backward", "jvp", "vjp", "autograd")
#: ATen operators whose name ends in ``_grad`` are derivative formulas too
#: (``_dirichlet_grad``, ``_standard_gamma_grad``); ``gradient`` (finite differences of
#: sampled values) and the optimizers (``_fused_adagrad``) are not
DERIVATIVE_SUFFIX = "_grad"
#: operators outside ATen that only mark a ``torch.profiler.record_function`` block
PROFILER_MARKS = frozenset(
    {"profiler::_record_function_enter", "profiler::_record_function_enter_new", "profiler::_record_function_exit"}
)
#: autograd-level names that only cut a tensor off its history (``torch.tensor(…)`` makes one)
HISTORY_CUTS = frozenset({"detach", "detach_"})


@functools.cache
def aten_registry() -> frozenset[str]:
    """Every ATen operator torch registers (names without the overload: ``aten::mm``,
    ``aten::relu_``), read from the dispatcher of this — trusted — process, where no
    submission code ever ran, so an operator a submission defines in ATen's namespace
    (``torch.library.Library("aten", "FRAGMENT")``) is not among them. About 2 000 names,
    read once per process in a few milliseconds; the worker runs the same torch."""
    import torch

    return frozenset(name.split(".")[0] for name in torch._C._dispatch_get_all_op_names() if name.startswith("aten::"))


def _custom(op: str) -> str:
    """``onnx::Attention.opset23`` → ``attention.opset23``: an operator of a namespace other than
    ATen's and autograd's (``autograd::engine::…`` is the engine at work, judged on its own)."""
    namespace, _, name = op.partition("::")
    return name.lower() if name and namespace not in ("aten", "autograd", "python") and " " not in namespace else ""


def _aten(op: str) -> str | None:
    """``aten::add_`` → ``add``; None for a name that is not an ATen operator."""
    if not op.startswith("aten::"):
        return None
    name = op[len("aten::") :]
    return name[:-1] if name.endswith("_") and not name.endswith("__") and len(name) > 1 else name


def is_derivative(op: str) -> bool:
    """One of torch's derivative formulas or autograd's own ATen operators (the name only)."""
    raw = op.removeprefix("aten::")
    name = _aten(op) or raw
    return (
        raw in AUTOGRAD_OPS
        or name in AUTOGRAD_OPS
        or any(part in name.lower() for part in DERIVATIVE_PARTS)
        or name.endswith(DERIVATIVE_SUFFIX)
    )


def is_autograd_machinery(op: str) -> bool:
    """Autograd at work, or what the rule cannot vouch for: a backward node or the engine
    (``MmBackward0``, ``autograd::engine::evaluate_function: …``), an operator outside torch's
    ATen registry (a custom ``mylib::op``, an op a submission added to ATen's namespace — what
    runs inside it is recorded too, but the operator itself is no tensor arithmetic of this
    exercise), forward AD's operators, one of torch's derivative formulas."""
    if op in HISTORY_CUTS or op in PROFILER_MARKS:
        return False
    if not op.startswith("aten::") or op not in aten_registry():
        return True
    return is_derivative(op)


def backward_allows(op: str) -> bool:
    """A hand-written backward under the "no autograd" rule: every operator of torch's ATen registry that is not a
    derivative formula or autograd's machinery (``is_autograd_machinery``) — an allow-list
    read from torch itself, so that any tensor arithmetic a hand-written backward may use
    (``linalg.matmul``, ``linalg.vecdot``, ``special.logsumexp``, ``relu``, ``diff``,
    ``trace``, ``where``, ``fill_diagonal_``, ``matrix_power``, ``special.expit``,
    ``softmax`` to recompute the weights…) is allowed, and nothing else."""
    return not is_autograd_machinery(op)


def forward_allows(op: str) -> bool:
    """The forward under the "no autograd" rule: the same operators as its backward (gradients computed by
    autograd in forward and merely returned by backward would break the rule)."""
    return not is_autograd_machinery(op)


# --------------------------------------------------------------------------- replaced kernels
#: During a rule-checked call the worker can *replace* the kernels of operators
#: (``replace_ops``: ``fnmatch`` patterns of ATen names; sandbox/probes.KernelBan), so that no
#: path past the recording — ``OpOverload.redispatch`` skips ``RecordFunction`` — can run
#: them: a use raises and is recorded. A course keeps each rule's list beside its suites
#: (tests/suites/course/<skill>_data.py), a subset of what its rule denies, so that correct
#: code never meets a replaced kernel. For the "no autograd" rule: torch's derivative
#: formulas and forward AD (what ``is_derivative`` denies by name).
NO_AUTOGRAD_REPLACED = ("*backward*", "*jvp*", "_make_dual", "_make_dual_copy", "_unpack_dual", "_fw_primal", "_fw_primal_copy")


def kernel_patterns(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The ``replace_ops`` patterns of a deny-list rule (``denies_parts``): every ATen operator
    whose name holds one of ``parts``."""
    return tuple(f"*{part}*" for part in parts)


def denies_parts(parts: tuple[str, ...]) -> Callable[[str], bool]:
    """A deny-list rule: the op is allowed unless its ATen name holds one of ``parts``."""

    def allows(op: str) -> bool:
        # a replaced Python function of torch's (probes.STANDING_BAN): ``python::torch._refs.softmax``;
        # a custom operator of another namespace (``torch_nn::_linear_cross_entropy_batch_chunked``,
        # ``onnx::Attention.opset23``: blind red-team tester R-CU), by its name in any case
        name = _aten(op) or (op.rsplit(".", 1)[-1] if op.startswith("python::") else _custom(op))
        return not any(part in name for part in parts)

    return allows


def violations(
    dispatched: dict[str, dict[str, Dispatched]], phase: str | None, allows: Callable[[str], bool]
) -> list[tuple[str, Dispatched]]:
    """The recorded operators of ``phase`` (every phase when None) the rule does not allow,
    those with a line of the submission first; on one line, the engine's run of a backward
    node (``autograd::engine::evaluate_function: MmBackward0``) before the node itself, which
    says less."""
    found = [(op, d) for ph, ops in dispatched.items() if phase is None or ph == phase for op, d in ops.items() if not allows(op)]
    return sorted(
        found,
        key=lambda item: (
            not _telling(item[0]),
            not item[1].file,
            item[1].file,
            item[1].line,
            item[0].endswith(" (autograd node)"),
            item[0],
        ),
    )


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
