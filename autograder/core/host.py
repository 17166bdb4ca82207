"""Whether this Python can grade at all, asked before anything else is imported; and how
a grade meets its host's signals (``interrupt_on_termination``).

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


#: the interrupts this process received, in order (each as raised: its signal's name as its
#: argument, none for Ctrl-C)
RECEIVED: list[KeyboardInterrupt] = []


def interrupt_on_termination() -> None:
    """SIGTERM (``kill``, a container stopping) and SIGHUP (a closed terminal or SSH session)
    stop a grade as Ctrl-C does: the run is stopped, its folder (a copy of the submission)
    removed, and the results say it was interrupted, and by what. By default either would
    end the process where it stood, leaving the folder behind. Installed first thing
    (``__main__``), so an interrupt at any moment ends the same way.

    Each interrupt is also recorded (``RECEIVED``): a ``KeyboardInterrupt`` raised while a
    finaliser or callback runs is printed and dropped by Python, and the command line checks
    the record before it publishes a complete result. A signal this process was started
    ignoring (``nohup`` ignores SIGHUP, a background job SIGINT) stays ignored. Python prints
    such a dropped interrupt as "Exception ignored in ..." with a traceback (CI saw one from
    importlib's module-lock callback); the record already carries it, so the interrupt's own
    report ("grading was interrupted") is the only text the student sees for it."""
    import signal
    import sys

    def interrupt(signum: int, _frame) -> None:
        exc = KeyboardInterrupt() if signum == signal.SIGINT else KeyboardInterrupt(signal.Signals(signum).name)
        RECEIVED.append(exc)
        raise exc

    if sys.unraisablehook is not _quiet_for_recorded_interrupts:  # installed once
        _EARLIER_HOOK.append(sys.unraisablehook)
        sys.unraisablehook = _quiet_for_recorded_interrupts

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is None:
            continue
        current = signal.getsignal(number)
        if current in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(number, interrupt)


#: the unraisable hook ``interrupt_on_termination`` found (Python's own, unless someone set one)
_EARLIER_HOOK: list = []


def _quiet_for_recorded_interrupts(unraisable) -> None:
    """Python's print of a dropped interrupt is left out: the command line reports it as the
    run's interruption (``RECEIVED``); anything else goes to the hook that was there."""
    if any(unraisable.exc_value is exc for exc in RECEIVED):
        return
    _EARLIER_HOOK[0](unraisable)
