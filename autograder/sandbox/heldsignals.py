"""A rule-checked worker takes no asynchronous signal: no handler of the exercise's runs
between two of the worker's recorded windows.

Python runs a signal handler wherever the worker is when the signal comes, and a handler is
the exercise's code. An interval timer (``signal.setitimer``) fired while the worker waited
for its next request, where nothing is recorded and the tripwire is off: blind red-team tester
R-CN's handler built Jacobians there by calling the graph's nodes by hand, for a later
request's backward (custom_backward +1.31, the rule test passed on 5 of 7 grades). Timers are
one source among several (an ``RLIMIT_CPU`` soft limit, ``O_ASYNC`` on a socket), so the
signals are held, not the timers: once a worker is confined for the rule checks (``hold``) it
blocks every signal for the rest of its life. A signal then stays pending: no handler runs, and
a timer's default action (ending the process) never comes. The worker needs none (the trusted
side ends a worker with SIGKILL, which no mask holds; a fault such as SIGSEGV still ends it).

A block that exercise code could lift is no block: every module's name for
``pthread_sigmask`` (``_signal``'s and ``signal``'s, and any module's copy of either) is
replaced, in the fork server before it forks (``seal_sigmask``), by one that does what was
asked and then, in a worker that holds its signals, blocks them all again. Signals it unblocked
are delivered there, inside the exercise's own call. No correct exercise needs a signal, and
none is refused: every call succeeds and returns what it would have returned.

Written here: no library holds a process's signals against its own code.
"""

from __future__ import annotations

import _signal
import signal as signal_module
from typing import Any

from .everywhere import replace_everywhere

#: bound at import, before any exercise code: the replacements below call these
_SIGMASK = _signal.pthread_sigmask
_TO_ENUM = signal_module.Signals


def _all_signals() -> set[int]:
    return {int(s) for s in signal_module.valid_signals()}


def hold() -> None:
    """Block every signal for the rest of this worker's life (the kernel leaves SIGKILL and
    SIGSTOP out by itself). Once, when the worker is confined for the rule checks, before any
    exercise code runs."""
    _SIGMASK(_signal.SIG_BLOCK, _all_signals())


def _sigmask(how: int, mask: Any) -> set[int]:
    """``_signal.pthread_sigmask`` in a worker: as asked, then every signal blocked again where
    the worker holds them (judged by the mask the process had: nothing of Python's to change)."""
    everything = _all_signals()
    previous = _SIGMASK(how, mask)  # signals it unblocked are delivered now: inside the caller's call
    if everything - {int(signal_module.SIGKILL), int(signal_module.SIGSTOP)} <= set(previous):  # held
        _SIGMASK(_signal.SIG_BLOCK, everything)
    return previous


def _sigmask_enums(how: int, mask: Any) -> set:
    """``signal.pthread_sigmask`` in a worker: the same, with its signals as ``Signals``."""
    out: set[Any] = set()
    for number in _sigmask(how, mask):
        try:
            out.add(_TO_ENUM(number))
        except ValueError:
            out.add(number)
    return out


def seal_sigmask() -> int:
    """Replace every module-level name holding ``_signal.pthread_sigmask`` or
    ``signal.pthread_sigmask`` with the versions above: the number of names replaced. In the
    fork server before it forks (a worker finds it done and walks nothing); again in a worker
    before any exercise code."""
    if _signal.pthread_sigmask is _sigmask:
        return 0
    replacements = {id(_SIGMASK): _sigmask, id(signal_module.pthread_sigmask): _sigmask_enums}
    return replace_everywhere(replacements, keep=globals())  # this module keeps the originals
