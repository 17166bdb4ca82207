"""Shared by the qkv suites: project_qkv's errors explained.

A student who knows ``nn.Linear`` (y = x Wᵀ) may write ``x @ w_q.T`` (or ``F.linear(x, w_q)``,
an einsum over the wrong index, a ``bmm`` with the transpose): on the tests' shapes,
W [C, d_k] with C ≠ d_k, that raises a shape error whose message depends on the spelling,
so a message cannot name the mistake. On a square input (C = d_k = d_v) the same code runs,
and its answer does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from autograder.testing import Snapshots, SubmissionError, SubmissionRaised, Tol, expect

SKILL_DIR = Path(__file__).resolve().parent.parent / "qkv"  # its snapshot holds square_probe
#: the error types a shape mismatch raises (torch's RuntimeError; a student's own check may
#: raise ValueError or AssertionError): only these are explained, with one more call
EXPLAINED = ("RuntimeError", "ValueError", "IndexError", "AssertionError")
EXACT = Tol(1e-9, 1e-12)


def explain(sub, exc: SubmissionError) -> SubmissionError:
    """A raising project_qkv called once more, on the snapshot's square float64 input (fixed
    data: it names a mistake and earns nothing); the mistakes its Q, K and V there match are
    added to the error's hints. Nothing is added when it raises again or matches none."""
    if not isinstance(exc, SubmissionRaised) or getattr(exc, "explained", False):
        return exc
    exc.explained = True
    if (exc.error or {}).get("type") not in EXPLAINED:
        return exc
    exc.hints = [h for h in square_diagnosis(sub) if h not in exc.hints] + exc.hints
    return exc


def square_diagnosis(sub) -> list[str]:
    """Hint ids of the mistakes project_qkv's answer on the square probe matches."""
    probe = Snapshots(SKILL_DIR)["square_probe"]["project_qkv"]
    try:
        got = sub.qkv.call("project_qkv", *probe["args"]).value
    except SubmissionError:
        return []
    if not isinstance(got, tuple | list) or len(got) != 3:
        return []
    found: list[str] = []
    for name, g, want in zip("QKV", got, probe["want"]):
        if type(g) is not torch.Tensor or expect.distance(g, want, EXACT) <= 1:
            continue
        found += [h for h in expect.diagnose(g, probe["mistakes"][name], EXACT, want) if h not in found]
    return found


def project(sub, *args: Any):
    """``sub.qkv.project_qkv(*args)`` with its errors explained (``explain``)."""
    try:
        return sub.qkv.project_qkv(*args)
    except SubmissionError as exc:
        raise explain(sub, exc) from None
