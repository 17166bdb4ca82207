"""What a trusted process imports before it knows its run — derived from the code that runs
it, never a hand-kept list: pytest and its built-in plugins, pytest-json-report, the grading
plugin (whose import does nothing: runner/plugin/__init__.py) and, on the torch side, the
plugin's other parts and what the sandbox fork server is forked with. Each function imports,
computes nothing and starts nothing.

- the Early launcher's process (runner/process/early.py) imports both while the command line
  validates grading.toml and checks the submission;
- the batch's preloaded process (preloaded.py) imports both, once per batch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

#: the grading plugin's entry (``-p`` in trusted.command)
PLUGIN = "autograder.runner.plugin"
JSON_REPORT = "pytest_jsonreport.plugin"


def pytest_side() -> list[str]:
    """pytest, its built-in plugins, pytest-json-report and the grading plugin's entry. The
    names that failed to import (the run itself imports them, and says why)."""
    from _pytest.config import default_plugins

    return _import(["pytest", *(f"_pytest.{name}" for name in default_plugins), JSON_REPORT, PLUGIN])


def torch_side(extra: Sequence[str] = ()) -> list[str]:
    """What the sandbox fork server is forked with (torch first, with the cyclic collector
    off while it loads), the plugin's other parts, then ``extra``. The names that failed."""
    from . import sandbox_fork_server

    sandbox_fork_server.imports()
    plugin = importlib.import_module(PLUGIN)
    return _import([*plugin.PARTS, *extra])


def _import(names: list[str]) -> list[str]:
    failed = []
    for name in dict.fromkeys(names):
        try:
            importlib.import_module(name)
        except Exception:  # a module we cannot preload is imported by the run itself
            failed.append(name)
    return failed
