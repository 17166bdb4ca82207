"""The builtin probes (``call``, ``call_with_grad``, ``construct``) and their helpers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


# --------------------------------------------------------------------------- helpers
class PlainFunctionCtx:
    """Stands in for autograd's ``ctx`` when a probe calls ``Function.forward``/``backward``
    directly, outside the autograd engine."""

    def __init__(self, needs_input_grad: tuple[bool, ...] = (True, True, True, False)) -> None:
        self.needs_input_grad = needs_input_grad
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *args: Any) -> None:
        pass

    def mark_dirty(self, *args: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


def copied_result(value: Any) -> Any:
    """What ``Function.backward`` returned, read for a probe: a tuple or list becomes a plain
    list, read by the base class's own methods, its tensors copied; anything else as it is.
    Call it inside the call's recorded window: a tuple subclass's ``__iter__``, or a finalizer
    that runs once the stand-in ctx is freed after the window, computed with autograd
    unrecorded or filled the returned tensors in place (blind red-team tester R-AO)."""
    if isinstance(value, tuple):
        items = [tuple.__getitem__(value, i) for i in range(tuple.__len__(value))]
    elif isinstance(value, list):
        items = [list.__getitem__(value, i) for i in range(list.__len__(value))]
    else:
        return value
    return [_plain_copy(t) if isinstance(t, torch.Tensor) else t for t in items]


def _plain_copy(t: torch.Tensor) -> torch.Tensor:
    """A plain tensor holding ``t``'s values now: a ``Parameter`` or another subclass too (it
    passed uncopied, and was filled in place after the window: blind red-team tester R-BN),
    with no ``__torch_function__`` of the exercise's in the way."""
    with torch._C.DisableTorchFunction():
        return torch.Tensor.clone(t)


def resolve(module: Any, target: str) -> Any:
    """``module.a.b``, its first name read from the module's own namespace: a module
    ``__getattr__`` (or a property on a swapped module class, refused by
    ``mainguard.plain_module``) could hand out a fresh object per lookup whose finalizer runs
    once the recorded window has closed (blind red-team tester R-AR)."""
    first, *rest = target.split(".")
    namespace = vars(module) if isinstance(module, type(torch)) else None
    if namespace is not None and first not in namespace:
        raise AttributeError(f"module {getattr(module, '__name__', '?')!r} has no attribute {first!r}")
    obj = namespace[first] if namespace is not None else getattr(module, first)
    for part in rest:
        obj = getattr(obj, part)
    return obj


#: torch's own, taken when the worker imports its probes (before any exercise code)
_LINEAR = torch.nn.Linear


def _own(module: torch.nn.Module, field: str) -> dict:
    """One of the dicts ``nn.Module`` keeps its structure in, read past the module's class: a
    subclass may override ``named_buffers``, ``named_modules``, ``state_dict`` or
    ``__getattr__``, and blind red-team tester R-CL reported a mask buffer its module did not
    hold that way (mha_reshape 15 against 14.06)."""
    try:
        found = object.__getattribute__(module, field)
    except AttributeError:
        return {}
    return found if type(found) is dict else {}


def _walk(module: torch.nn.Module, prefix: str = "", seen: set | None = None):
    """(name, module) for ``module`` and every submodule, as ``named_modules`` gives them, from
    the modules' own ``_modules`` dicts (a module met twice is walked once)."""
    seen = set() if seen is None else seen
    if id(module) in seen:
        return
    seen.add(id(module))
    yield prefix, module
    for name, sub in _own(module, "_modules").items():
        if isinstance(sub, torch.nn.Module) and type(name) is str:
            yield from _walk(sub, f"{prefix}.{name}" if prefix else name, seen)


def _submodule(name: str, sub: torch.nn.Module) -> dict:
    """One submodule of ``describe_module``: its class, and a linear layer's sizes, from the
    shape of the weight it holds (not from attributes a subclass could answer for)."""
    linear = issubclass(type(sub), _LINEAR)
    params = _own(sub, "_parameters")
    weight = params.get("weight")
    shape = list(weight.shape) if type(weight) in (torch.Tensor, torch.nn.Parameter) and torch.Tensor.dim(weight) == 2 else None
    return {
        "name": name,
        "type": f"{type(sub).__module__}.{type(sub).__qualname__}",
        "linear": linear,
        "in_features": shape[1] if linear and shape else None,
        "out_features": shape[0] if linear and shape else None,
        "bias": (params.get("bias") is not None) if linear else None,
    }


def describe_module(module: torch.nn.Module) -> dict:
    """Structure of an nn.Module as data: submodules, parameters, buffers, state_dict keys. A
    submodule of a class derived from ``nn.Linear`` is a linear layer too (``linear``, with its
    sizes): a subclass that adds nothing is what the contract asks for (blind tester R-BW). Read
    from the dicts ``nn.Module`` keeps (``_modules``, ``_parameters``, ``_buffers``,
    ``_non_persistent_buffers_set``), never through methods a subclass could override."""
    modules = list(_walk(module))
    params: list[tuple[str, torch.Tensor]] = []
    buffers: list[tuple[str, torch.Tensor, bool]] = []
    keys: list[str] = []
    seen_params: set[int] = set()
    seen_buffers: set[int] = set()
    for prefix, sub in modules:
        dotted = (prefix + ".") if prefix else ""
        non_persistent = object.__getattribute__(sub, "__dict__").get("_non_persistent_buffers_set", set())
        for name, p in _own(sub, "_parameters").items():
            if isinstance(p, torch.Tensor):
                keys.append(dotted + name)
                if id(p) not in seen_params:
                    seen_params.add(id(p))
                    params.append((dotted + name, p))
        for name, b in _own(sub, "_buffers").items():
            if isinstance(b, torch.Tensor):
                persistent = name not in non_persistent
                if persistent:
                    keys.append(dotted + name)
                if id(b) not in seen_buffers:
                    seen_buffers.add(id(b))
                    buffers.append((dotted + name, b, persistent))
    return {
        "type": type(module).__name__,
        "modules": [_submodule(name, sub) for name, sub in modules if name],
        "parameters": [
            {"name": n, "shape": list(p.shape), "dtype": str(p.dtype).replace("torch.", ""), "requires_grad": p.requires_grad}
            for n, p in params
        ],
        "buffers": [
            {
                "name": n,
                "shape": list(b.shape),
                "dtype": str(b.dtype).replace("torch.", ""),
                "persistent": persistent,
                "value": torch.Tensor.clone(torch.Tensor.detach(b)) if torch.Tensor.numel(b) <= 1 << 16 else None,
            }
            for n, b, persistent in buffers
        ],
        "state_dict": keys,
        "training": object.__getattribute__(module, "__dict__").get("training", True) is True,
    }


def _vjp_loss(out: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """⟨out, grad_output⟩: its gradient is the vector-Jacobian product autograd.grad(out,
    x, grad_output) would give, without the grad_outputs path whose first use imports sympy."""
    if type(grad_output) is not torch.Tensor or grad_output.shape != out.shape:
        raise ValueError(f"output has shape {list(out.shape)}, expected {list(getattr(grad_output, 'shape', []))}")
    return (out * grad_output.to(out.dtype)).sum()


def _requires_grad(values: list, wrt: list[int]) -> list:
    out = list(values)
    for i in wrt:
        out[i] = out[i].detach().clone().requires_grad_(True)
    return out


# --------------------------------------------------------------------------- builtin probes
# Keyword-only: the trusted side (testing/remote.py) names every field it sends.
def call(
    ctx,
    *,
    module: str,
    target: str,
    args: list,
    kwargs: dict,
    record_ops: bool = False,
    return_args: bool = False,
    record_dispatch: bool = False,
    replace_ops: list | None = None,
) -> dict:
    """Call ``module.target(*args, **kwargs)``; optionally record ops (torch functions, and
    with ``record_dispatch`` the dispatcher's operators, the kernels of those matching
    ``replace_ops`` replaced: see KernelBan) and return the arguments as they are
    afterwards (to detect in-place modification)."""
    fn = resolve(ctx.module(module), target)
    with ctx.watch_ops(record_ops), ctx.watch_dispatch("call", record_dispatch, replace_ops or ()):
        value = fn(*args, **kwargs)
    result = {"value": value}
    if return_args:
        result["args"] = list(args)
        result["kwargs"] = dict(kwargs)
    return result


def call_with_grad(
    ctx,
    *,
    module: str,
    target: str,
    args: list,
    kwargs: dict,
    wrt: list[int],
    grad_output: Any,
    output_index: int | None = None,
    record_ops: bool = False,
) -> dict:
    """Forward through the submission, then autograd back to the arguments listed in
    ``wrt`` with the given upstream gradient. Unused inputs get ``None``."""
    fn = resolve(ctx.module(module), target)
    args = _requires_grad(list(args), wrt)
    with ctx.watch_ops(record_ops):
        value = fn(*args, **kwargs)
    out = value[output_index] if output_index is not None else value
    if type(out) is not torch.Tensor or not out.requires_grad:
        return {"value": value, "grads": None, "why": "output does not require grad"}
    grads = torch.autograd.grad(_vjp_loss(out, grad_output), [args[i] for i in wrt], allow_unused=True)
    return {"value": value, "grads": list(grads)}


def construct(
    ctx,
    *,
    module: str,
    cls: str,
    init_args: list,
    init_kwargs: dict,
    state: dict | None = None,
    calls: list | None = None,
    mode: str = "eval",
    grad: dict | None = None,
    record_ops: bool = False,
    describe: bool = True,
    dtype: torch.dtype | None = None,
    record_dispatch: bool = False,
    replace_ops: list | None = None,
) -> dict:
    """Build ``module.cls(*init_args, **init_kwargs)``, optionally load a state_dict
    (non-strict; missing/unexpected keys are returned under ``load``), run
    ``calls`` (a list of ``[method, args, kwargs]``) and optionally backprop ``grad``
    (``{"call": i, "output_index": j|None, "grad_output": t, "wrt": [arg indices]}``)."""
    obj = resolve(ctx.module(module), cls)(*init_args, **init_kwargs)
    result: dict[str, Any] = {}
    is_module = isinstance(obj, torch.nn.Module)
    if is_module and dtype is not None:
        obj = obj.to(dtype)  # before loading the state, so float64 weights keep their precision
    if is_module and describe:
        result["describe"] = describe_module(obj)
    if state is not None:
        incompatible = obj.load_state_dict(state, strict=False)
        result["load"] = {"missing": list(incompatible.missing_keys), "unexpected": list(incompatible.unexpected_keys)}
    if is_module:
        obj.train(mode == "train")
    outputs = []
    inputs_with_grad: list = []
    for i, (method, args, kwargs) in enumerate(calls or []):
        args = list(args)
        if grad is not None and grad.get("call") == i:
            args = _requires_grad(args, grad.get("wrt", []))
            inputs_with_grad = [args[j] for j in grad.get("wrt", [])]
        with ctx.watch_ops(record_ops), ctx.watch_dispatch("call", record_dispatch, replace_ops or ()):
            outputs.append(getattr(obj, method)(*args, **kwargs))
    result["outputs"] = outputs
    if grad is not None:
        out = outputs[grad["call"]]
        if grad.get("output_index") is not None:
            out = out[grad["output_index"]]
        # the parameters autograd can differentiate: a Parameter made with requires_grad=False
        # (a mask kept as one) made autograd refuse the whole call (blind tester R-BO); its
        # gradient is None, as an unused one's
        named = [(n, p) for n, p in obj.named_parameters() if p.requires_grad] if is_module else []
        if type(out) is torch.Tensor and out.requires_grad:
            wrt = inputs_with_grad + [p for _, p in named]
            grads = torch.autograd.grad(_vjp_loss(out, grad["grad_output"]), wrt, allow_unused=True)
            result["input_grads"] = list(grads[: len(inputs_with_grad)])
            found = dict(zip((n for n, _ in named), grads[len(inputs_with_grad) :]))
            result["param_grads"] = {n: found.get(n) for n, _ in obj.named_parameters()} if is_module else {}
        else:
            result["input_grads"] = None
            result["param_grads"] = None
    return result


BUILTIN: dict[str, Callable[..., Any]] = {
    "call": call,
    "call_with_grad": call_with_grad,
    "construct": construct,
}
