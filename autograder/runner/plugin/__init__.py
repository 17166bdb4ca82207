"""The pytest plugin of a grading run (``-p autograder.runner.plugin``).

It runs in the trusted pytest process, in three parts:

- ``server``: starts the sandbox's fork server as soon as this package is imported —
  before a single test module is collected — so workers inherit an imported torch and
  nothing else of ours;
- ``fixtures``: what suites use (``sub``, ``seed``, ``rng``, ``credit``, ``ref``);
- ``report``: writes everything a renderer will ever need into the pytest-json-report.

Here: the ``--ag-run`` option and the grading session's life (``session``), built from the
run manifest the parent sends on a pipe (runner/manifest.py).
"""

from __future__ import annotations

import json
import os

import pytest

from ..manifest import RunManifest
from . import server, session

pytest_plugins = ["autograder.runner.plugin.fixtures", "autograder.runner.plugin.report"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autograder")
    group.addoption("--ag-run", default=None, help="MANIFEST_FD:PROGRESS_FD, set by `python -m autograder grade`")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("--ag-run")
    if not option:
        return
    manifest_fd, progress_fd = (int(v) for v in option.split(":"))
    with os.fdopen(manifest_fd, "rb") as fh:  # blocks until the parent has prepared the run
        data = fh.read()
    if not data:
        raise pytest.UsageError("the grader stopped before sending the run manifest")
    grading = session.GradingSession(RunManifest.from_dict(json.loads(data)), server.EARLY_SERVER)
    grading.progress = os.fdopen(progress_fd, "w", buffering=1)
    session.activate(grading)


def pytest_unconfigure(config: pytest.Config) -> None:
    grading = session.activate(None)
    if grading is not None:
        grading.close()
