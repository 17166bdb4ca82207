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
import shutil
from pathlib import Path

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
        _remove_run_folder(config)  # whoever made it is gone (killed before it sent the manifest)
        raise pytest.UsageError("the grader stopped before sending the run manifest")
    grading = session.GradingSession(RunManifest.from_dict(json.loads(data)), server.EARLY_SERVER)
    grading.progress = os.fdopen(progress_fd, "w", buffering=1)
    session.activate(grading)


def _remove_run_folder(config: pytest.Config) -> None:
    """The run folder (runner/engine.new_run_dir) holding this run's report file."""
    report = getattr(config.option, "json_report_file", None)
    if not report:
        return
    private = Path(report).parent
    run_dir = private.parent
    if private.name == "private" and run_dir.name.startswith("autograder-"):
        shutil.rmtree(run_dir, ignore_errors=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    grading = session.activate(None)
    if grading is not None:
        grading.close()
