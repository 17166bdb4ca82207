"""The fixtures suites use: ``sub`` (the submission, called remotely), ``seed``, ``rng``,
``credit`` (partial credit) and ``ref`` (the reference solution, hidden tests only)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
import torch

from ...testing import expect
from ...testing.credit import Credit
from ...testing.inputs import CaseGenerator
from ...testing.remote import Submission
from .keys import CREDIT, SUBMISSION, active, require
from .session import GradingSession


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed: derived from the run's seed and the test id, so reruns repeat."""
    return require(request.config).test_seed(request.node.nodeid)


@pytest.fixture
def rng(seed: int, request: pytest.FixtureRequest) -> torch.Generator:
    """Values from ``seed``; sizes from the test id alone (testing/inputs.py ``CaseGenerator``)."""
    return CaseGenerator.for_test(seed, request.node.nodeid)


@pytest.fixture
def credit(request: pytest.FixtureRequest) -> Credit:
    value = Credit()
    request.node.stash[CREDIT] = value
    return value


@pytest.fixture
def sub(request: pytest.FixtureRequest):
    grading = require(request.config)
    # one worker serves a skill's tests of one stage in turn; the hidden ones start on a fresh one (sandbox.client.Sandbox)
    grading.sandbox.begin_test(*grading.group(request.node.nodeid))
    nodeid = request.node.nodeid
    test = grading.manifest.test(nodeid)
    submission = Submission(
        grading.runtime,
        bans=grading.worker_bans(nodeid),
        scanned=grading.worker_scanned(nodeid),
        hidden=test is not None and test.visibility == "hidden",
    )
    request.node.stash[SUBMISSION] = submission
    yield submission
    submission.close()
    grading.sandbox.prefork(grading.spares_after(request.node.nodeid))


class _Reference:
    """The instructor's reference modules, imported in the trusted process only."""

    def __init__(self, grading: GradingSession) -> None:
        self._grading = grading

    def __getattr__(self, name: str) -> Any:
        cache = self._grading.reference_cache
        if name not in cache:
            path = self._grading.solutions_dir / f"{name}.py"
            spec = importlib.util.spec_from_file_location(f"_autograder_reference_{name}", path)
            if spec is None or not path.is_file():
                raise RuntimeError(f"reference solution {path} is missing")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            cache[name] = module
        return cache[name]


@pytest.fixture
def ref(request: pytest.FixtureRequest) -> _Reference:
    grading = require(request.config)
    test = grading.manifest.test(request.node.nodeid)
    if test is None or test.visibility != "hidden":
        raise RuntimeError("visible tests ship to students without solutions/: they must not use the `ref` fixture")
    return _Reference(grading)


@pytest.fixture(autouse=True)
def _seed_global_rng(request: pytest.FixtureRequest) -> None:
    expect.reset_matches()  # the hint rule counts signature matches per test
    grading = active(request.config)
    if grading is not None:
        torch.default_generator.manual_seed(grading.test_seed(request.node.nodeid))  # CPU only: cheap
