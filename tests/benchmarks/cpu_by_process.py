"""CPU seconds of a command's processes, grouped by their depth in its process tree: which
process of a grade or a batch the CPU goes to (Linux: reads /proc).

    .venv/bin/python tests/benchmarks/cpu_by_process.py -- .venv/bin/python -m autograder batch SUBS --out OUT --jobs 2

For a batch the depths are: 0 the batch command, 1 its preloaded process, 2 the trusted
pytest process of each student (and, with two trusted processes, 3 its second), then the
run's fork server and its workers one level further down. Every process on the machine is
sampled every ``--every`` seconds and kept by (pid, start time); a process's user and system
CPU are those of its last sample, so a process that lives less than one interval, or the
CPU a process spends after its last sample, is missed (a worker lives for a whole skill; a
run, seconds). The tree is followed by parent pid as first seen, so a process re-parented to
a subreaper (the batch's preloaded process) stays in it, and by start time where a pid was
used twice.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import defaultdict

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: str) -> tuple[int, int, int, int] | None:
    """(parent pid, user ticks, system ticks, start time) of ``pid``, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()  # the name may hold ")"
    except OSError:
        return None
    return int(fields[1]), int(fields[11]), int(fields[12]), int(fields[19])


def sample(command: list[str], every: float) -> tuple[int, dict[tuple[int, int], list[int]]]:
    """Run ``command``; (its pid, {(pid, start): [parent, user ticks, system ticks]})."""
    seen: dict[tuple[int, int], list[int]] = {}
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            got = _stat(name)
            if got is None:
                continue
            parent, user, system, start = got
            entry = seen.setdefault((int(name), start), [parent, 0, 0])
            entry[1], entry[2] = max(entry[1], user), max(entry[2], system)
        time.sleep(every)
    return proc.pid, seen


def by_depth(root: int, seen: dict[tuple[int, int], list[int]]) -> dict[int, list[float]]:
    """{depth below ``root``: [processes, user s, system s]} over the processes of its tree.
    A pid used again (by a later process) is told apart by start time: a process's parent is
    the process of its parent pid that started last before it did."""
    starts: dict[int, list[tuple[int, int]]] = defaultdict(list)  # pid → [(start, parent pid)]
    for (pid, start), entry in seen.items():
        starts[pid].append((start, entry[0]))

    def parent(pid: int, start: int) -> tuple[int, int] | None:
        """(pid, start) of the parent of process (pid, start), or None when not seen."""
        ppid = next((p for s, p in starts[pid] if s == start), None)
        earlier = [s for s, _ in starts.get(ppid, []) if s <= start] if ppid is not None else []
        return (ppid, max(earlier)) if earlier else None

    out: dict[int, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for (pid, start), (_, user, system) in seen.items():
        depth, node = 0, (pid, start)
        while node is not None and node[0] != root and depth < 64:
            node, depth = parent(*node), depth + 1
        if node is None or node[0] != root:
            continue  # not the command's
        row = out[depth]
        row[0] += 1
        row[1] += user / TICK
        row[2] += system / TICK
    return dict(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=0.01, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or not os.path.isdir("/proc"):
        sys.exit("usage: cpu_by_process.py -- COMMAND… (Linux only: reads /proc)")
    root, seen = sample(command, args.every)
    rows = by_depth(root, seen)
    print(f"{'depth':>5} {'processes':>9} {'user s':>8} {'system s':>8} {'CPU s':>8}")
    for depth in sorted(rows):
        n, user, system = rows[depth]
        print(f"{depth:>5} {n:>9} {user:>8.2f} {system:>8.2f} {user + system:>8.2f}")
    print(f"{'all':>5} {sum(r[0] for r in rows.values()):>9} {'':>8} {'':>8} {sum(r[1] + r[2] for r in rows.values()):>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
