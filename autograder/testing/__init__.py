"""The API grading suites are written in (trusted side).

- fixtures (from ``autograder.runner.plugin``): ``sub`` (the submission, called remotely),
  ``seed``/``rng`` (per-test, derived from the run's seed), ``credit`` (partial credit),
  ``ref`` (reference solutions; hidden tests only)
- ``expect``: checks with shape/dtype/NaN-first messages and mistake diagnosis
- ``probe``: ship a small trusted procedure into the worker
"""

from . import expect
from .expect import EXACT, Tol
from .failures import CheckFailed, Feedback, SubmissionError
from .probe import Probe, probe

__all__ = ["expect", "Tol", "EXACT", "probe", "Probe", "CheckFailed", "Feedback", "SubmissionError"]
