"""A returned value in words and numbers, as the checks' messages show it: what kind of
thing it is (``describe``), a number or a small tensor written out (``fmt_number``,
``fmt_tensor``), and a returned number as a float where it has one (``as_float``). Every
helper takes whatever the submission returned — None, ``2**2000``, a bool tensor — and
never raises on it. ``expect`` re-exports them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch


def fmt_pair(want: Any, got: Any) -> tuple[str, str]:
    """Two numbers as ``fmt_number`` writes them, with as many more digits as it takes for two
    different floats to read differently (blind tester R-AA: "expected 0.264477, got 0.264477"
    for a float32 square root in float64 work, 1.4e-8 apart)."""
    shown = fmt_number(want), fmt_number(got)
    if shown[0] != shown[1] or not (isinstance(want, float) and isinstance(got, float)) or want == got:
        return shown
    for digits in range(7, 18):
        if f"{want:.{digits}g}" != f"{got:.{digits}g}":
            return f"{want:.{digits}g}", f"{got:.{digits}g}"
    return shown


def fmt_number(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        if value.bit_length() > 64:  # str() of > 4300 digits raises; nobody reads 600 digits
            return f"{'-' if value < 0 else ''}an integer of {int(value.bit_length() * math.log10(2)) + 1} digits"
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "−∞" if value < 0 else "+∞"
        return f"{value:.6g}"
    return str(value)


def fmt_tensor(t: torch.Tensor, limit: int = 24) -> str:
    if t.dim() == 0:
        return fmt_number(t.item())
    flat = t.reshape(-1)
    if flat.numel() > limit:
        head = ", ".join(fmt_number(v) for v in flat[:limit].tolist())
        return f"[{head}, …] (shape {list(t.shape)})"
    return _nested(t.tolist())


def _nested(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    return fmt_number(value)


def describe(value: Any) -> str:
    """What kind of thing the submission returned, in words."""
    if type(value) is torch.Tensor:
        return f"a tensor of shape {list(value.shape)} and dtype {str(value.dtype).replace('torch.', '')}"
    if value is None:
        return "None (did you forget `return`?)"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} items"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    type_name = getattr(value, "type_name", None)
    if type_name:
        return f"a {type_name} object ({getattr(value, 'summary', '')[:160]})"
    if isinstance(value, (int, float)):
        return f"a {type(value).__name__} ({fmt_number(value)[:80]})"
    return f"a {type(value).__name__} ({str(value)[:80]})"


def as_float(value: Any) -> float | None:
    """A returned Python number as a float, or None where it has none: an int beyond the
    float range (``2**2000``), a bool, anything that is not an int or float. The suites
    compare numbers as floats; a submission's odd number must fail its check, not the test."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def dtype_text(t: torch.dtype) -> str:
    return str(t).replace("torch.", "")


def index_text(idx: Iterable[int]) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"
