"""Where the plugin keeps its state: pytest's stashes, under these keys (as pytest's own
plugins do), never module globals or attributes hung on pytest's objects.

- ``config.stash[GRADING]``: the grading session of this process (runner/plugin/session.py),
  absent when pytest runs without ``--ag-run``;
- ``config.stash[SANDBOX_FORK_SERVER]``: the sandbox's fork server, (pid, control socket),
  started (or, from the Early launcher's process, adopted) by the plugin's first hook
  (runner/process/sandbox_fork_server.py);
- ``item.stash[CREDIT]``, ``item.stash[SUBMISSION]``: what a test's ``credit`` and ``sub``
  fixtures gave it, read by the report hooks.

This module imports nothing heavy: the plugin's first hook runs before torch is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ...testing.credit import Credit
    from ...testing.remote import Submission
    from .session import GradingSession

GRADING: pytest.StashKey[GradingSession] = pytest.StashKey()
SANDBOX_FORK_SERVER: pytest.StashKey[tuple[int, object]] = pytest.StashKey()
CREDIT: pytest.StashKey[Credit] = pytest.StashKey()
SUBMISSION: pytest.StashKey[Submission] = pytest.StashKey()


def active(config: pytest.Config) -> GradingSession | None:
    """This process's grading session; None when pytest runs without ``--ag-run``."""
    return config.stash.get(GRADING, None)


def require(config: pytest.Config) -> GradingSession:
    grading = active(config)
    if grading is None:
        raise RuntimeError("these fixtures only exist in a grading run (python -m autograder grade)")
    return grading
