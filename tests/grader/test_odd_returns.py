"""Odd returned values fail as the student's answer, never as the grader's error.

Every public function of the reference, rewritten to return something odd (None, 2**2000,
a pair of ints, a bool or complex tensor, a flattened or empty one, a numpy array, a
generator, …: see tests/submissions/odd_returns.py), graded as one class with every hidden test. A suite that
indexes, subtracts or ``float()``s a returned value before checking its type, shape and
dtype would end that test as "grader error (not your fault)", which tells the student to
report a bug that is theirs and the instructor to look for one that is not.
"""

from __future__ import annotations

import sys

import pytest
from conftest import SUBMISSIONS, graded_class, student

sys.path.insert(0, str(SUBMISSIONS))
import odd_returns


@pytest.fixture(scope="module")
def odd_class(tmp_path_factory):
    return graded_class(tmp_path_factory, "odd-returns", odd_returns.build)


# slow: 13 full grades with hidden tests (~10 s of a batch); the fast set's hostile and
# mistake submissions cover the classified failures themselves, and `make check` sweeps
# every function with every value (tests/submissions/odd_returns.py)
@pytest.mark.slow
def test_odd_returned_values_fail_their_checks_and_never_as_a_grader_error(odd_class):
    assert odd_class.rc == 0, odd_class.stderr[-3000:]
    errors = []
    for name in odd_returns.names():
        result = student(odd_class, name)
        assert result.data is not None, f"{name}: no results.json"
        assert result.data["status"] == "complete", (name, result.data.get("message"))
        for test in result.tests():
            summary = test.get("summary") or ""
            if test["status"] == "error" or summary.startswith("grader error"):
                errors.append(f"{name}: {test['id']}: {summary[:160]}")
        # an odd value is no answer: nothing that checks a returned value can pass on it
        assert result.data["score"] < result.data["max_score"], name
    assert not errors, "\n".join(errors)
