"""Expected values at full precision: run a reference function on float64 copies of the
inputs and round its output to the dtype the submission works in (a float32 submission is
compared with the float64 answer rounded to float32, not with float32 arithmetic)."""

from __future__ import annotations

from typing import Any

import torch


def rounded(value: Any, dtype: torch.dtype = torch.float32) -> Any:
    """``value`` with every floating tensor cast to ``dtype`` (tuples, lists and dicts too)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to(dtype) if value.is_floating_point() else value.detach()
    if isinstance(value, (list, tuple)):
        return type(value)(rounded(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: rounded(v, dtype) for k, v in value.items()}
    return value


def in_float64(fn, *args: Any, dtype: torch.dtype = torch.float32, **kwargs: Any) -> Any:
    """``fn`` (a reference function) on float64 copies of ``args``, rounded to ``dtype``."""
    as64 = [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    with torch.no_grad():
        return rounded(fn(*as64, **kwargs), dtype)
