"""A scan that recursion cannot stop: a deep syntax tree read again on a thread with room for it.

The scan's visitors recurse along the tree, about three Python frames a level, and Python
stops at 1 000 frames; the compiler accepts a tree ~3 000 levels deep (an ``if``/``elif``
chain of 400 branches is ~400 levels, a sum of 500 terms ~500). A scan that stopped there
was a grader error in the rule test — no proof of a violation, so no gate — and the file's
library attention scored (blind red-team tester R-CX: ``_PAD = 0 + 0 + … + 0``, mha_reshape
12.92 of 15 with torch's attention). A function that raises ``RecursionError`` is run again
on a thread whose stack holds ``STACK_BYTES`` under a recursion limit of ``FRAMES``: enough
for any tree the compiler accepts. Written here: the standard library has no call "with a
larger stack"; a thread made for it is how Python gives one. The scans are pure functions of
their arguments (their caches fill only with results), so running one again is safe.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

#: a frame costs ~0.1–0.5 KiB of C stack (more where a C function calls back into Python:
#: ``map``, ``next``); 256 MiB is address space reserved, touched only as deep as the scan goes
STACK_BYTES = 256 * 1024 * 1024
FRAMES = 60_000

F = TypeVar("F", bound=Callable[..., Any])

_LOCK = threading.Lock()  # one deep run at a time: the recursion limit is the process's


def deep_enough(function: F) -> F:
    """``function``, run again on a thread with room to recurse where it ran out of frames."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except RecursionError:
            if threading.current_thread().name == _THREAD:  # already the deep run: out of room
                raise
            return _on_a_deep_thread(function, args, kwargs)

    return run  # type: ignore[return-value]


_THREAD = "autograder-deep-scan"


def _on_a_deep_thread(function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    outcome: dict[str, Any] = {}
    ready = threading.Event()  # set once the recursion limit is raised

    def body() -> None:
        ready.wait()
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as exc:  # handed to the caller's thread, raised there
            outcome["error"] = exc

    with _LOCK:
        limit, stack = sys.getrecursionlimit(), threading.stack_size()
        try:
            try:
                threading.stack_size(STACK_BYTES)
                thread = threading.Thread(target=body, name=_THREAD, daemon=True)
                thread.start()  # it waits for the raised limit
            except (RuntimeError, ValueError, MemoryError) as exc:  # no such stack here: as before
                raise RecursionError(f"the syntax tree is too deep to read ({exc})") from None
            sys.setrecursionlimit(max(limit, FRAMES))
            ready.set()
            thread.join()
        finally:
            threading.stack_size(stack)
            sys.setrecursionlimit(limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
