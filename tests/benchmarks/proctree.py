"""Wall time and peak memory of a command and every process it starts, sampled from /proc.

Memory is summed over the whole process tree at each sample: RSS (counts pages shared
between processes once per process, so it overstates) and PSS (shares each page among the
processes that map it, which is what a container's memory limit sees, give or take the
page cache). Processes that leave the tree by starting a new session are still found: the
tree is followed by parent pid, and a process re-parented to a subreaper stays inside.

    from proctree import measure
    m = measure(["bash", "run_autograder"], env=...)
    m.wall_s, m.peak_rss_mib, m.peak_pss_mib, m.peak_processes
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Measurement:
    returncode: int
    wall_s: float
    peak_rss_mib: float
    peak_pss_mib: float
    peak_processes: int
    samples: int
    stdout: str
    stderr: str


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name may contain spaces and parentheses: the ppid follows the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _tree(root: int) -> list[int]:
    children = _children()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _memory_kib(pid: int) -> tuple[int, int]:
    """(rss, pss) in KiB; (0, 0) for a process that has gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    rss = pss = 0
    for line in text.splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
    return rss, pss


def measure(cmd: list[str], *, env: dict | None = None, cwd: str | Path | None = None, interval: float = 0.05,
            timeout: float | None = None) -> Measurement:
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"rss": 0, "pss": 0, "n": 0, "samples": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            pids = _tree(proc.pid)
            rss = pss = 0
            for pid in pids:
                r, p = _memory_kib(pid)
                rss, pss = rss + r, pss + p
            peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)
            peak["n"] = max(peak["n"], len(pids))
            peak["samples"] += 1
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
    return Measurement(proc.returncode, time.monotonic() - start, peak["rss"] / 1024, peak["pss"] / 1024, peak["n"],
                       peak["samples"], stdout, stderr)
