"""What a run forked from a preloaded process (preloaded.py ``_child``) sets up to look like the
fresh process ``trusted.popen`` would have started: its descriptors where the command line names
them, and its own command line and environment in /proc."""

from __future__ import annotations

import os
import sys


def place_fds(received: list[int], targets: list[int]) -> None:
    """``received`` = [manifest, progress, log]: log → 1 and 2, /dev/null → 0, the pipes on
    ``targets`` (the numbers the argv names); every other descriptor closed."""
    floor = max(1000, *targets) + 1  # above every number we place a pipe on
    high = [dup_high(fd, floor) for fd in received]
    for fd in received:
        os.close(fd)
    manifest, progress, log = high
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(log, 1)
    os.dup2(log, 2)
    keep = {0, 1, 2, *targets}
    os.dup2(manifest, targets[0], inheritable=True)
    os.dup2(progress, targets[1], inheritable=True)
    for fd in (manifest, progress, log):
        if fd not in keep:
            os.close(fd)
    for fd in open_fds():
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def open_fds() -> list[int]:
    """This process's open descriptors: Linux lists them in /proc, macOS in /dev/fd; elsewhere
    every number up to the limit."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return [int(name) for name in os.listdir(folder)]
        except (OSError, ValueError):
            continue
    return list(range(os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024))


def dup_high(fd: int, floor: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)


def show_run(argv: list[str], env: dict[str, str]) -> None:
    """Show this run's own command line and environment in /proc (``ps``, and whatever
    looks for what a run left behind by its report's folder or its ``TMPDIR``), not the
    preloaded process's: its report file and the per-run variables first, as the space the
    preloaded process started with may not hold them all."""
    from autograder.runner.process.os_spawn import PER_RUN
    from autograder.sandbox import confine

    first = [arg for arg in argv if arg.startswith(("--json-report-file=", "--ag-run="))]
    shown_env = {k: env[k] for k in PER_RUN if k in env} | env
    confine.scrub_process_strings([sys.executable, "-m", "pytest", *first, *(a for a in argv if a not in first)], shown_env)
