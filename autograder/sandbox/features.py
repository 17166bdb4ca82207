"""What this machine offers the sandbox, found at run time: the one place that asks.

The sandbox has two tiers, and which one a run gets is decided by what is found here, never
by the name of the operating system:

- **full** (Linux with ``prctl`` and a seccomp table for the machine): the worker is confined
  by rlimits, seccomp (no fork/exec/sockets/IPC), and where the kernel allows, Landlock and
  its own namespaces (see ``confine.py``, ``namespaces.py``);
- **portable** (macOS; a Linux libc without ``prctl``, or a machine without a seccomp table):
  the submission still runs in a separate worker process with the per-call time limit
  (enforced from outside: ``client.py``), the output cap, a private scratch folder and the
  rlimits the system honours. Scores are computed the same way; only the confinement is
  weaker — fine on a student's own laptop, never the official score (SECURITY.md).

Each question below is answered by trying: a C function looked up in the process's own
C library (``ctypes.CDLL(None)``: macOS's lacks ``prctl``, ``mount``, ``unshare``), a file
of ``/proc`` read (macOS has none; a locked-down container may hide it). Linux system-call
numbers (Landlock, the seccomp filter) are used only where the kernel is Linux: the same
number is another call elsewhere.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Any

#: where Linux shows processes; absent on macOS and the BSDs
PROC = "/proc"

#: set to ``unsafe`` in the environment to start workers as on a system where ``fork()`` after
#: threads is unsafe (no warm-up computed in the fork server, no forked second trusted process):
#: how the tests exercise the macOS start on Linux. It can only make the start more careful.
FORK_ENV = "AUTOGRADER_FORK_AFTER_THREADS"


@functools.cache
def libc() -> ctypes.CDLL:
    """The C library (and everything else) loaded into this process."""
    return ctypes.CDLL(None, use_errno=True)


def libc_function(name: str) -> Any | None:
    """The C function ``name`` of this process, or None where the C library has none."""
    try:
        return getattr(libc(), name)
    except AttributeError:
        return None


@functools.cache
def linux_kernel() -> bool:
    """Whether Linux system-call numbers mean what ``confine.py``/``seccomp.py`` think."""
    return hasattr(os, "uname") and os.uname().sysname == "Linux"


def has(name: str) -> bool:
    """A Linux-only C function (``prctl``, ``mount``, ``unshare``, ``capset``, ``syscall``)
    that this process can call with Linux's meaning."""
    return linux_kernel() and libc_function(name) is not None


def seccomp_possible(machine_has_table: bool) -> bool:
    """A seccomp filter can be installed: Linux, ``prctl`` and a table for this machine."""
    return machine_has_table and has("prctl")


@functools.cache
def proc_available() -> bool:
    """``/proc`` shows this process (Linux): read once per process."""
    try:
        with open(f"{PROC}/self/stat", "rb") as fh:
            return bool(fh.read(1))
    except OSError:
        return False


def fork_after_threads_safe() -> bool:
    """Whether a process that has computed with torch may fork workers.

    On Linux the forked child is a copy of the calling thread, and the one pool that would
    not survive (torch's OpenMP threads) is never started in the fork server
    (``set_num_threads(1)`` before its warm-up). On macOS, libdispatch and the Objective-C
    runtime (which Accelerate and torch's first computations may start) are unusable in a
    child forked after their threads ran — why CPython's multiprocessing spawns there —
    and other systems are unknown: there the fork server computes nothing before it forks
    (``zygote.py``), which keeps a worker's start a fork instead of a new interpreter that
    imports torch (1-4 s a worker)."""
    return sys.platform.startswith("linux") and os.environ.get(FORK_ENV) != "unsafe"


# --------------------------------------------------------------------------- another process
_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4
_PROC_PIDTASKINFO = 4


class _ProcTaskInfo(ctypes.Structure):
    """``struct proc_taskinfo`` of macOS's <sys/proc_info.h>."""

    _fields_ = [
        ("virtual_size", ctypes.c_uint64),
        ("resident_size", ctypes.c_uint64),
        ("total_user", ctypes.c_uint64),
        ("total_system", ctypes.c_uint64),
        ("threads_user", ctypes.c_uint64),
        ("threads_system", ctypes.c_uint64),
        ("policy", ctypes.c_int32),
        ("faults", ctypes.c_int32),
        ("pageins", ctypes.c_int32),
        ("cow_faults", ctypes.c_int32),
        ("messages_sent", ctypes.c_int32),
        ("messages_received", ctypes.c_int32),
        ("syscalls_mach", ctypes.c_int32),
        ("syscalls_unix", ctypes.c_int32),
        ("csw", ctypes.c_int32),
        ("threadnum", ctypes.c_int32),
        ("numrunning", ctypes.c_int32),
        ("priority", ctypes.c_int32),
    ]


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(raw: bytes) -> list[bytes]:
    """The fields of a /proc/<pid>/stat line after the process's name, which the process may
    set (so the line is cut at its last ")"): stat(5)'s 3rd field is the first of them."""
    return raw.rsplit(b")", 1)[1].split()


def _usage(fields: list[bytes]) -> tuple[int, int]:
    """(threads, resident KiB): num_threads is stat(5)'s 20th field, rss in pages the 24th."""
    return int(fields[17]), int(fields[21]) * _PAGE_KIB


class ProcessClock:
    """Process ``pid``'s CPU time, read from ``/proc/<pid>/stat`` (user + system ticks of all
    its threads, the 14th and 15th fields of stat(5)) and ``/proc/<pid>/schedstat`` (its main
    thread's run time in nanoseconds), both opened once and read again with ``pread`` (a
    sixth of the cost of opening them for each reading: the client reads them before and
    after every call). An open /proc file stays the file of the process it was opened for:
    once that process is gone a read fails, it never reads another process given the same pid."""

    def __init__(self, pid: int) -> None:
        self._stat = self._open(f"{PROC}/{pid}/stat")
        self._schedstat = self._open(f"{PROC}/{pid}/schedstat") if self._stat >= 0 else -1

    @staticmethod
    def _open(path: str) -> int:
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return -1

    @property
    def opened(self) -> bool:
        """Whether /proc showed this process (else every reading is None: ask otherwise)."""
        return self._stat >= 0

    def read(self) -> tuple[float | None, float] | None:
        """(main thread's seconds, or None where there is no schedstat; all threads' seconds
        in ticks), or None when the process cannot be read (gone, or no /proc)."""
        try:
            fields = _stat_fields(os.pread(self._stat, 4096, 0))
            ticks = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        except (OSError, IndexError, ValueError):
            return None
        try:
            precise: float | None = int(os.pread(self._schedstat, 256, 0).split()[0]) / 1e9
        except (OSError, IndexError, ValueError):
            precise = None
        return precise, ticks

    def usage(self) -> tuple[int, int] | None:
        """(threads, resident KiB) from the same open stat file (``process_usage``'s figures)."""
        try:
            return _usage(_stat_fields(os.pread(self._stat, 4096, 0)))
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        for fd in (self._stat, self._schedstat):
            if fd >= 0:
                os.close(fd)
        self._stat = self._schedstat = -1


def process_usage(pid: int) -> tuple[int, int] | None:
    """(threads, resident KiB) of process ``pid``, asked of the kernel — from
    ``/proc/<pid>/stat`` on Linux, ``proc_pidinfo`` where the C library has it (macOS) — or
    None where neither answers (the caller then assumes the worst)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            return _usage(_stat_fields(fh.read()))
    except (OSError, IndexError, ValueError):
        pass
    pidinfo = libc_function("proc_pidinfo")
    if pidinfo is None:
        return None
    info = _ProcTaskInfo()
    size = ctypes.sizeof(info)
    got = pidinfo(ctypes.c_int(pid), ctypes.c_int(_PROC_PIDTASKINFO), ctypes.c_uint64(0), ctypes.byref(info), ctypes.c_int(size))
    if got != size or info.threadnum <= 0:
        return None
    return int(info.threadnum), int(info.resident_size) // 1024
