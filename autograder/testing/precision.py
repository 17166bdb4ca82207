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


def float32_slip(got: Any, want: Any) -> bool:
    """A float64 result that differs from ``want`` by float32's precision and no more: a
    constant or a step computed in float32 (``torch.tensor(d_k).sqrt()``, a float32 buffer;
    blind tester R-I lost points with no word of why), or the whole computation done in
    float32 and cast back — then every value is a float32 number, and a sum that cancels near
    0 is off by more than 1e-7 (blind tester R-CM: two qkv tests without the hint). Only
    where the values that differ are of ordinary size: beside a stand-in such as −1e9,
    ``s − 1e9`` for ``−1e9`` is as close, and is another mistake."""
    if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor):
        return False
    if got.dtype != torch.float64 or got.shape != want.shape:
        return False
    g, w = got.detach(), want.detach().to(torch.float64)
    differs = ~((g == w) | (torch.isnan(g) & torch.isnan(w)))
    if not bool(differs.any()) or not bool((w[differs].abs() <= 1e4).all()):
        return False
    if bool(torch.isclose(g, w, rtol=1e-5, atol=1e-7, equal_nan=True).all()):
        return True
    finite = torch.isfinite(g)
    if not bool((g[finite] == g[finite].float().double()).all()):
        return False
    known = torch.isfinite(w)
    scale = max(1.0, float(w[known].abs().max())) if bool(known.any()) else 1.0
    return bool(torch.isclose(g, w, rtol=1e-5, atol=1e-6 * scale, equal_nan=True).all())
