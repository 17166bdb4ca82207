"""The one tolerance table of the grading suites.

``tolerances.toml`` beside this file is *measured*, not chosen: ``python
tests/benchmarks/measure_tolerances.py`` runs each reference function in float32 against the
same function in float64 over many seeds and writes ~10× the worst error it saw (both
rtol and atol). float64 rows scale the float32 measurement by the ratio of machine
epsilons. Course numbers printed in the lessons use the tolerances of
``expected-numbers.md`` instead (see ``week07.py``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import torch

from autograder.testing import EXACT, Tol

_TABLE = tomllib.loads(Path(__file__).with_name("tolerances.toml").read_text(encoding="utf-8"))

__all__ = ["Tol", "EXACT", "tol"]


def tol(op: str, dtype: torch.dtype, magnitude: float = 1.0) -> Tol:
    """Tolerance for comparing a submission's ``op`` output of ``dtype`` with the
    float64 reference rounded to ``dtype``.

    ``magnitude``: how large the inputs are drawn, where that is far above 1 (scores of
    ``randn × 1e4``). The table is measured on the reference with inputs of size ~1, and
    the reference never holds a number as large as its inputs (s − max is exact). A correct
    solution may: a softmax by logsumexp, exp(s − lse), rounds lse to a unit in the last
    place of the scores' size — ~1e-3 at 1e4 in float32, which moved a weight of 0.99997 to
    1. So the tolerance is at least 10 × eps(dtype) × magnitude, in rtol and atol, as the
    table's own rows are 10× the worst error; the mistakes it must tell apart at that size
    (no max shift, a 0 fill, the mask ignored) move weights by far more."""
    entry = _TABLE["op"].get(op)
    if entry is None:
        raise KeyError(f"no measured tolerance for {op!r}; run tests/benchmarks/measure_tolerances.py")
    row = entry["float64" if dtype == torch.float64 else "float32"]
    out = Tol(rtol=row["rtol"], atol=row["atol"])
    floor = 10 * torch.finfo(dtype).eps * magnitude
    if magnitude > 1.0 and floor > min(out.rtol, out.atol):
        out = Tol(rtol=max(out.rtol, floor), atol=max(out.atol, floor))
    return out
