"""The API grading suites are written in (trusted side): suites import it from here,
``from autograder.testing import expect, randn, Snapshots, …`` — ``__all__`` is the whole of it.

- fixtures (from ``autograder.runner.plugin``): ``sub`` (the submission, called remotely),
  ``seed``/``rng`` (per-test, derived from the run's seed), ``credit`` (partial credit),
  ``ref`` (reference solutions; hidden tests only)
- ``expect``: checks with shape/dtype/NaN-first messages and mistake diagnosis (``Tol``, ``EXACT``)
- ``probe``: ship a small trusted procedure into the worker (``Probe``); ``dispatch``: the
  operators a call ran, as a probe records them
- inputs (``randn``, ``randint``, ``choice``, ``noncontiguous``, …), ``in_float64`` (a reference
  computed in float64), ``Snapshots`` (the visible suites' reference values), ``sibling``
  (a helper module beside the suite)
- mistakes recognised from outputs (``outputs``, ``weights``, ``distinct``, ``keep_if_wrong``, ``whole``)
  and from the source (``check_no_banned``, ``calls``, ``reaches``)
- what a failure is (``CheckFailed``, ``Feedback``, ``SubmissionError``, ``SubmissionRaised``,
  ``SubmissionTimeout``)

A probe's body runs in the worker, where only ``autograder.sandbox`` is importable: it imports
``from autograder.sandbox.probes import …``, never from here. Importing this package imports
its modules and torch (as ``expect`` always did), nothing else runs.
"""

from . import dispatch, expect
from .expect import EXACT, Tol
from .failures import CheckFailed, Feedback, SubmissionError, SubmissionRaised, SubmissionTimeout
from .inputs import bernoulli, beside_regular, choice, dtype_name, long_length, mixed, noncontiguous, randint, randn, weight
from .precision import in_float64
from .probe import Probe, probe
from .siblings import sibling
from .signatures import distinct, keep_if_wrong, outputs, weights, whole
from .snapshots import Snapshots
from .source import calls, check_no_banned, reaches

__all__ = [
    # checks
    "expect",
    "Tol",
    "EXACT",
    # the worker
    "probe",
    "Probe",
    "dispatch",
    # inputs and references
    "randn",
    "randint",
    "long_length",
    "choice",
    "bernoulli",
    "weight",
    "dtype_name",
    "noncontiguous",
    "beside_regular",
    "mixed",
    "in_float64",
    "Snapshots",
    "sibling",
    # mistakes recognised from outputs and from the source
    "outputs",
    "weights",
    "distinct",
    "keep_if_wrong",
    "whole",
    "check_no_banned",
    "calls",
    "reaches",
    # failures
    "CheckFailed",
    "Feedback",
    "SubmissionError",
    "SubmissionRaised",
    "SubmissionTimeout",
]
