"""The pytest plugin of a grading run (``-p autograder.runner.plugin``).

It runs in the trusted pytest process, in three parts:

- here: the ``--ag-run`` option; the plugin's first hook, which starts the sandbox's fork
  server (runner/process/sandbox_fork_server.py) — before a single test module is collected,
  before this plugin's own modules import torch — and then loads the other two parts; and the
  grading session's life (``session``), built from the run manifest the parent sends on a
  pipe (runner/manifest.py), kept in ``config.stash`` (``keys``) with its hooks registered as
  a plugin object;
- ``fixtures``: what suites use (``sub``, ``seed``, ``rng``, ``credit``, ``ref``);
- ``report``: writes everything a renderer will ever need into the pytest-json-report.

Importing this package does nothing but define hooks (no torch, no process).
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator

import pytest

from ...core import timeline
from .keys import SANDBOX_FORK_SERVER

#: the plugin's other parts, registered by its first hook (what ``pytest_plugins`` would do at import)
PARTS = ("autograder.runner.plugin.fixtures", "autograder.runner.plugin.report")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autograder")
    group.addoption("--ag-run", default=None, help="MANIFEST_FD:PROGRESS_FD, set by `python -m autograder grade`")
    group.addoption(
        "--ag-fork-server", default=None, help="PID:FD of the fork server this process started before pytest (early.py)"
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None]:
    """The earliest hook pytest calls with the command line parsed (right after it imported
    the ``-p`` plugins), and, as the outermost wrapper, before output capturing starts: a
    grading run forks its sandbox fork server here, from a process that has imported torch
    (with the cyclic collector off) and computed nothing — or adopts the one this process forked
    before it became pytest (``--ag-fork-server``: the Early launcher). Then the plugin's other parts load."""
    args = early_config.known_args_namespace
    if getattr(args, "ag_run", None):
        from ..process import sandbox_fork_server

        ahead = getattr(args, "ag_fork_server", None)
        early_config.stash[SANDBOX_FORK_SERVER] = sandbox_fork_server.adopt(ahead) if ahead else sandbox_fork_server.start()
    for name in PARTS:
        early_config.pluginmanager.import_plugin(name)
    return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("--ag-run")
    if not option:
        return
    from ..manifest import RunManifest
    from .report import GradingHooks
    from .session import GradingSession

    manifest_fd, progress_fd = (int(v) for v in option.split(":"))
    with os.fdopen(manifest_fd, "rb") as fh:  # blocks until the parent has prepared the run
        data = fh.read()
    if not data:
        _remove_run_folder(config)  # whoever made it is gone (killed before it sent the manifest)
        raise pytest.UsageError("the grader stopped before sending the run manifest")
    grading = GradingSession(RunManifest.from_dict(json.loads(data)), config.stash.get(SANDBOX_FORK_SERVER, None))
    grading.progress = os.fdopen(progress_fd, "w", buffering=1)
    grading.run_dir = _run_dir(config)
    timeline.mark("trusted: manifest read")
    GradingHooks.register(config, grading)


def _run_dir(config: pytest.Config) -> str | None:
    """The run folder (runner/process/os_spawn.new_run_dir) holding this run's report file."""
    from ..process import os_spawn

    return os_spawn.run_dir_of(getattr(config.option, "json_report_file", None) or "")


def _remove_run_folder(config: pytest.Config) -> None:
    run_dir = _run_dir(config)
    if run_dir is not None:
        from ..process import os_spawn

        os_spawn.remove_tree(run_dir)  # whatever a worker left in its scratch folder, any depth
