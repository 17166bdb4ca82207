"""Wall time and peak memory of a command and every process it starts, sampled from /proc.

Memory is summed over the whole process tree at each sample: RSS (counts pages shared
between processes once per process, so it overstates) and PSS (shares each page among the
processes that map it, which is what a container's memory limit sees, give or take the
page cache). Processes that leave the tree by starting a new session are still found: the
tree is followed by parent pid, and a process re-parented to a subreaper stays inside.

PSS misses shared memory that no process maps — a memfd or a /dev/shm file held only by a
descriptor, a file written to a tmpfs — which the container's limit counts all the same. So
each sample also takes
  - ``shmem_delta``: ``Shmem`` of /proc/meminfo minus its value when the command started
    (every tmpfs, memfd and shm page on the machine, whoever holds it: other processes on
    the machine add noise, in either direction);
  - ``shmem_held``: the memfd and /dev/shm files the tree holds open (allocated blocks,
    each file once), mapped or not;
  - ``pss_shmem``: the shared-memory part of PSS (``Pss_Shmem``: mapped shmem);
  - ``total``: PSS − Pss_Shmem + the largest of the three shmem figures (so no page counts
    twice): about what a container's memory limit would see.

    from proctree import measure
    m = measure(["bash", "run_autograder"], env=...)
    m.wall_s, m.peak_rss_mib, m.peak_pss_mib, m.peak_processes, m.peak_shmem_delta_mib, m.peak_total_mib
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
    peak_shmem_delta_mib: float = 0.0
    peak_shmem_held_mib: float = 0.0
    peak_pss_shmem_mib: float = 0.0
    peak_total_mib: float = 0.0


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


def _memory_kib(pid: int) -> tuple[int, int, int]:
    """(rss, pss, pss_shmem) in KiB; zeros for a process that has gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0, 0
    rss = pss = pss_shmem = 0
    for line in text.splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
        elif line.startswith("Pss_Shmem:"):
            pss_shmem = int(line.split()[1])
    return rss, pss, pss_shmem


def system_shmem_kib() -> int:
    """``Shmem`` of /proc/meminfo: every tmpfs, memfd and shm page on the machine."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1])
    return 0


def _held_shmem(pid: int, seen: dict[tuple[int, int], int]) -> None:
    """Record the memfd and /dev/shm files ``pid`` holds open: (device, inode) → KiB."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if not target.startswith(("/memfd:", "/dev/shm/")):
                continue
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        seen[(st.st_dev, st.st_ino)] = st.st_blocks // 2


def measure(
    cmd: list[str],
    *,
    env: dict | None = None,
    cwd: str | Path | None = None,
    interval: float = 0.05,
    timeout: float | None = None,
) -> Measurement:
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"rss": 0, "pss": 0, "n": 0, "samples": 0, "delta": 0, "held": 0, "pss_shmem": 0, "total": 0}
    done = threading.Event()
    shmem_before = system_shmem_kib()

    def sample() -> None:
        while not done.is_set():
            pids = _tree(proc.pid)
            rss = pss = pss_shmem = 0
            held: dict[tuple[int, int], int] = {}
            for pid in pids:
                r, p, ps = _memory_kib(pid)
                rss, pss, pss_shmem = rss + r, pss + p, pss_shmem + ps
                _held_shmem(pid, held)
            delta = system_shmem_kib() - shmem_before
            total = pss - pss_shmem + max(delta, sum(held.values()), pss_shmem)
            for key, value in (
                ("rss", rss),
                ("pss", pss),
                ("n", len(pids)),
                ("delta", delta),
                ("held", sum(held.values())),
                ("pss_shmem", pss_shmem),
                ("total", total),
            ):
                peak[key] = max(peak[key], value)
            peak["samples"] += 1
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
    return Measurement(
        proc.returncode,
        time.monotonic() - start,
        peak["rss"] / 1024,
        peak["pss"] / 1024,
        peak["n"],
        peak["samples"],
        stdout,
        stderr,
        peak_shmem_delta_mib=peak["delta"] / 1024,
        peak_shmem_held_mib=peak["held"] / 1024,
        peak_pss_shmem_mib=peak["pss_shmem"] / 1024,
        peak_total_mib=peak["total"] / 1024,
    )
