"""CPU time of a worker's call, as the trusted side reads it while it waits (client.Worker)."""

from __future__ import annotations

from . import features
from .protocol import POLL_S

#: what /proc/<pid>/stat may show above the main thread's own time for the same span (its
#: ticks are rounded): more means other threads ran, and the coarser figure of all counts
_TICK_SLACK_S = 2.5 / features.CLOCK_TICKS


def cpu_poll_s(cpu_limit: float) -> float:
    """How often the worker's CPU time is read while a call with ``cpu_limit`` runs: an
    eighth of the limit (a loop is stopped within ~12 % of it), between 10 and 50 ms (each
    reading costs the trusted side ~0.1 ms; a call that finishes sooner costs none)."""
    return min(POLL_S, max(0.01, cpu_limit / 8))


#: the shortest wait between two readings near a limit (each costs the trusted side ~0.1 ms)
_NEAR_POLL_S = 0.002


def cpu_next_poll_s(cpu_limit: float, used: float) -> float:
    """When to read again after a reading of ``used`` seconds: not before the limit can be
    reached — one thread uses at most a CPU second a second, and the worker has one — and not
    later than ``cpu_poll_s``. So a loop is stopped a millisecond or two past its limit, not
    up to an eighth of it (every stopped call is paid in full: a submission that loops in
    every function pays it some forty times)."""
    return min(cpu_poll_s(cpu_limit), max(_NEAR_POLL_S, cpu_limit - used))


def cpu_used(start: tuple[float | None, float], now: tuple[float | None, float]) -> float:
    """CPU seconds between two ``Worker.cpu_seconds`` readings: the main thread's, to the
    nanosecond (a call limit of a tenth of a second needs better than 10 ms ticks), unless
    the whole process's ticks show clearly more — a thread the sandbox could not refuse
    (no seccomp) — which then count: time on another thread is never free."""
    coarse = max(0.0, now[1] - start[1])
    if start[0] is None or now[0] is None:
        return coarse
    precise = max(0.0, now[0] - start[0])
    return coarse if coarse > precise + _TICK_SLACK_S else precise
