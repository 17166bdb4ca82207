"""Whether this Python can grade at all, asked before anything else is imported.

Grading starts the submission in a separate process forked from one that imported torch,
under POSIX resource limits (sandbox/). Native Windows has neither ``fork`` nor
``resource`` (nor ``make``): there a student grades inside WSL2 or the course's container,
and ``python -m autograder grade`` says so instead of failing with a traceback.
"""

from __future__ import annotations

import os

WINDOWS_HELP = (
    "autograder: grading needs Linux or macOS: it runs your code in a separate, limited process "
    "(fork() and resource limits), which native Windows does not have. On Windows, use WSL2: in "
    "PowerShell run `wsl --install`, restart, open the Ubuntu terminal, clone the repository inside "
    "the Linux file system (e.g. ~/attention, not /mnt/c/...), then run `make grade` there. Or open "
    "the repository in its container (.devcontainer: VS Code 'Reopen in Container', or GitHub "
    "Codespaces). README.md, section 'Windows', has the steps."
)


def unsupported_system() -> str | None:
    """The message for a system that cannot grade (native Windows), None where it can."""
    if os.name == "posix" and hasattr(os, "fork"):
        return None
    return WINDOWS_HELP
