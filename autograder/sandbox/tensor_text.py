"""``str(tensor)`` in the worker, from one ``tolist()`` instead of thousands of operators.

Why this exists: torch formats a tensor with tensor operations, one or more per element
(``torch._tensor_str._Formatter`` iterates the tensor: a [2,3,8,8] tensor takes ~4 500
operators). Where a skill's rule is judged, the worker records every operator
(``probes.DispatchRecorder``), which made each one ~16 µs dearer while it captured each
one's Python stack (a few µs since 2026-12-07): one ``print`` of a few debugging tensors then
cost more than the call's CPU limit, and a correct submission that printed lost the points
of the calls it printed in (blind tester M: 7 of custom_backward's 20). The recording cannot
be paused while torch formats (tester P ran
code inside such a pause), so the formatting is made cheap instead: this module is torch's
own algorithm (torch/_tensor_str.py, torch 2.13: ``_Formatter``, ``_vector_str``,
``_tensor_str_with_formatter``, ``get_summarized_data``, ``_add_suffixes`` and the dense
branch of ``_str_intern``), run over the Python numbers of one ``tolist()`` of the values
it shows. Nothing is switched off: every operator it runs is recorded as any other.

It takes the common case only: an exact ``torch.Tensor`` or ``nn.Parameter``, dense
strided, on the CPU, of a real or bool dtype, outside forward AD and functorch; everything
else (complex, sparse, quantized, meta, subclasses, ``set_printoptions(edgeitems=0)``)
goes to torch's own ``_str``. tests/grader/test_tensor_text.py compares the two on many
tensors and print options; a torch upgrade that changes the format fails it.
"""

from __future__ import annotations

import math
from typing import Any

import torch

_REAL = {
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.bool,
}


def install() -> None:
    """Route ``Tensor.__repr__``/``__str__`` (both call ``torch._tensor_str._str``) through
    ``fast_str`` in this process: the worker calls it before any submission code."""
    import torch._tensor_str as tensor_str

    original = tensor_str._str
    if getattr(original, "__wrapped_by_autograder__", False):
        return

    def _str(self, *, tensor_contents=None):
        text = fast_str(self) if tensor_contents is None else None
        return text if text is not None else original(self, tensor_contents=tensor_contents)

    _str.__wrapped_by_autograder__ = True  # type: ignore[attr-defined]
    tensor_str._str = _str


def fast_str(t: Any) -> str | None:
    """torch's ``str(t)``, or None where torch's own ``_str`` must format ``t``."""
    try:
        if not _plain(t):
            return None
        return _dense_str(t, torch._tensor_str.PRINT_OPTS)
    except Exception:  # anything unforeseen: torch's own formatting, as without this module
        return None


def _plain(t: Any) -> bool:
    import torch.autograd.forward_ad as forward_ad

    return (
        type(t) in (torch.Tensor, torch.nn.Parameter)
        and t.layout == torch.strided
        and t.device.type == "cpu"
        and torch._C._get_default_device() == "cpu"
        and t.dtype in _REAL
        and not t.is_nested
        and not t.is_quantized
        and not t.is_meta
        and not t.is_neg()
        and not t._is_zerotensor()
        and not torch._C._functorch.is_functorch_wrapped_tensor(t)
        and not torch._is_functional_tensor(t)
        and forward_ad._current_level < 0  # a dual tensor's tangent: torch's own
        and torch._tensor_str.PRINT_OPTS.edgeitems > 0
    )


def _dense_str(t: torch.Tensor, opts: Any) -> str:
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    default = torch.get_default_dtype()
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype != default:
            suffixes.append("dtype=" + str(t.dtype))
        body = "[]"
    else:
        complex_default = torch.cdouble if default == torch.double else torch.cfloat
        if t.dtype not in (default, complex_default, torch.int64, torch.bool):
            suffixes.append("dtype=" + str(t.dtype))
        body = _tensor_str(t, indent, opts)
    grad_fn_name = None
    try:
        grad_fn = t.grad_fn
    except RuntimeError:
        grad_fn, grad_fn_name = None, "Invalid"
    if grad_fn_name is None and grad_fn is not None:
        grad_fn_name = type(grad_fn).__name__
        if grad_fn_name == "CppFunction":
            grad_fn_name = grad_fn.name().rsplit("::", 1)[-1]
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent, opts)


def _tensor_str(t: torch.Tensor, indent: int, opts: Any) -> str:
    summarize = t.numel() > opts.threshold
    edge = opts.edgeitems
    shown = t.detach()
    cut = [summarize and size > 2 * edge for size in t.shape]
    for dim, size in enumerate(t.shape):
        if cut[dim]:  # the values torch shows (and sizes its columns by): the first and last `edge` of the axis
            index = torch.tensor([*range(edge), *range(size - edge, size)], dtype=torch.long)
            shown = shown.index_select(dim, index)
    values = shown.tolist()
    formatter = _Formatter(_flat(values, t.dim()), t.dtype.is_floating_point, opts)
    return _with_formatter(values, t.dim(), cut, indent, formatter, opts)


def _flat(values: Any, dims: int) -> list:
    if dims == 0:
        return [values]
    if dims == 1:
        return list(values)
    return [v for row in values for v in _flat(row, dims - 1)]


class _Formatter:
    """torch._tensor_str._Formatter over Python numbers."""

    def __init__(self, values: list, floating: bool, opts: Any) -> None:
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        self.precision = opts.precision
        if not floating:
            for value in values:
                self.max_width = max(self.max_width, len(f"{value}"))
            return
        nonzero_finite = [v for v in values if math.isfinite(v) and v != 0]
        if not nonzero_finite:
            return
        low = min(abs(v) for v in nonzero_finite)
        high = max(abs(v) for v in nonzero_finite)
        self.int_mode = all(v == math.ceil(v) for v in nonzero_finite)
        self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4 if opts.sci_mode is None else opts.sci_mode
        if self.sci_mode:
            spec = f"{{:.{self.precision}e}}"
            self.max_width = max(self.max_width, *(len(spec.format(v)) for v in nonzero_finite))
        elif self.int_mode:
            self.max_width = max(self.max_width, *(len(f"{v:.0f}") + 1 for v in nonzero_finite))
        else:
            spec = f"{{:.{self.precision}f}}"
            self.max_width = max(self.max_width, *(len(spec.format(v)) for v in nonzero_finite))

    def format(self, value: Any) -> str:
        if self.floating_dtype:
            if self.sci_mode:
                text = f"{{:{self.max_width}.{self.precision}e}}".format(value)
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{{:.{self.precision}f}}".format(value)
        else:
            text = f"{value}"
        return (self.max_width - len(text)) * " " + text


def _with_formatter(values: Any, dims: int, cut: list[bool], indent: int, formatter: _Formatter, opts: Any) -> str:
    edge = opts.edgeitems
    if dims == 0:
        return formatter.format(values)
    if dims == 1:
        per_line = max(1, math.floor((opts.linewidth - indent) / (formatter.max_width + 2)))
        data = [formatter.format(v) for v in values]
        if cut[0]:
            data = data[:edge] + [" ..."] + data[edge:]
        lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
        return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"
    slices = [_with_formatter(row, dims - 1, cut[1:], indent + 1, formatter, opts) for row in values]
    if cut[0]:
        slices = slices[:edge] + ["..."] + slices[edge:]
    return "[" + ("," + "\n" * (dims - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text: str, suffixes: list[str], indent: int, opts: Any) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > opts.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)
