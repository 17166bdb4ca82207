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


def tol(op: str, dtype: torch.dtype) -> Tol:
    """Tolerance for comparing a submission's ``op`` output of ``dtype`` with the
    float64 reference rounded to ``dtype``."""
    entry = _TABLE["op"].get(op)
    if entry is None:
        raise KeyError(f"no measured tolerance for {op!r}; run tests/benchmarks/measure_tolerances.py")
    row = entry["float64" if dtype == torch.float64 else "float32"]
    return Tol(rtol=row["rtol"], atol=row["atol"])
