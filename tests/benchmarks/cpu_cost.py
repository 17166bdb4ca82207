"""CPU seconds (user + system) of a command and every process it starts, and its wall time.

    .venv/bin/python tests/benchmarks/cpu_cost.py [--repeat N] -- COMMAND...

On a busy machine wall time says little about the grader; CPU time says what a run costs.
This process makes itself a child subreaper (Linux prctl), so processes the command leaves
to be reaped by init — the fork server a trusted process does not wait for, the workers it
kills — are re-parented here and reaped, and ``getrusage(RUSAGE_CHILDREN)`` then counts
every one of them. Prints one line per run and the median.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def subreaper() -> bool:
    """Become the reaper of a run's orphans (the fork server, killed workers), so that
    ``getrusage(RUSAGE_CHILDREN)`` counts every process of a run (Linux; False elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children_cpu() -> float:
    """CPU seconds of every child reaped so far, after reaping the orphans that have ended."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:  # children left, none ended
                break
        except ChildProcessError:  # none left
            break
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def import_torch_cpu() -> float:
    """CPU seconds of ``python -c "import torch"``: what the benchmarks' ratios divide by."""
    before = children_cpu()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return children_cpu() - before


def _reap_all() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def measure(command: list[str]) -> tuple[int, float, float]:
    """(return code, wall seconds, CPU seconds of the command and all its descendants)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    rc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    wall = time.monotonic() - start
    _reap_all()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rc, wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command after --")
    if not subreaper():
        print("warning: not a subreaper here: processes left to init are not counted", file=sys.stderr)
    cpus = []
    for run in range(args.repeat):
        rc, wall, cpu = measure(command)
        cpus.append(cpu)
        print(f"run {run + 1}: rc {rc}, wall {wall:.2f} s, CPU {cpu:.2f} s (user + system, all processes)")
    print(f"median CPU {statistics.median(cpus):.2f} s over {len(cpus)} run(s); load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
