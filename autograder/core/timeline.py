"""Where one grade's time goes: with ``AUTOGRADER_TIMELINE=<file>`` set, each process of a
grade (the command line, its trusted processes) appends a line ``<unix time> <pid> <stage>``
to ``<file>`` at each stage; without it, ``mark`` costs one environment lookup.

tests/benchmarks/grade_timeline.py reads the file (each stage's median offset from the
command's start, over several grades). Workers never get the variable (their environment is
replaced), so nothing of the submission's is written. Written here, not taken from a
profiler: a sampling profiler sees one process at a time and not the waits between them,
and the stages are what docs/PERFORMANCE.md compares from one change to the next.
"""

from __future__ import annotations

import os
import time

ENV = "AUTOGRADER_TIMELINE"


def mark(stage: str) -> None:
    """Append ``stage`` with the time and this process's id, when the variable names a file."""
    path = os.environ.get(ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:  # one short write: lines of processes do not interleave
            fh.write(f"{time.time():.4f} {os.getpid()} {stage}\n")
    except OSError:
        pass  # a measurement aid never stops a grade
