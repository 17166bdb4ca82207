"""Linux namespaces for the worker: its own network, IPC, UTS and mount namespaces.

* network: only a loopback device that is down — no address, inside or outside the
  machine, is reachable (seccomp also denies ``socket``);
* IPC: SysV shared memory, semaphores, message queues and POSIX message queues the worker
  might create (seccomp denies those calls too) live in a namespace that dies with it, so
  nothing crosses to the next test, run or student;
* mount: the protected trees (repository, hidden suites, solutions, the run's private
  folder, the results folder) are covered by an empty read-only tmpfs, so submission code
  cannot even ``stat`` them; the few paths the worker needs from inside them (its copy of
  the modules, its scratch folder, a ``.venv`` inside the repository) are bind-mounted
  back in place. Every other memory-backed file system (``/dev/shm``, a tmpfs ``/tmp`` or
  ``/run/lock``) is made read-only here, and the scratch folder is a small tmpfs of its
  own: what the worker writes is memory the address-space limit does not count, so its
  total is bounded by the tmpfs's ``size=``, and it is freed when the worker ends.

As root we create them directly (before the capabilities are dropped). As an ordinary
user we create a user namespace first, mapping only our own uid and gid, where the kernel
allows unprivileged ones. Where neither works (e.g. Docker's default seccomp profile) the
worker runs without them; ``runner/policy.py`` probes which kind works once per run and says so in
the results.
"""

from __future__ import annotations

import ctypes
import os
import re

from . import features

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
WORKER_NAMESPACES = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MS_STRICTATIME = 0x1000000

#: file systems whose files are memory (shmem or page cache that cannot be written back)
MEMORY_FS = {"tmpfs", "ramfs", "hugetlbfs", "devtmpfs"}


#: a results folder of "/" (``--output /results.json``) must not cover what every process needs
_NEVER_HIDDEN = {"/", "/proc", "/dev", "/sys"}


class NamespaceError(OSError):
    pass


def _libc_call(name: str):
    """``mount``/``unshare`` of this process's C library, looked up when first needed (never
    at import: macOS's has neither); a ``NamespaceError`` where there is none."""
    fn = features.libc_function(name) if features.linux_kernel() else None
    if fn is None:
        raise NamespaceError(38, f"{name}() is not available on this system")  # ENOSYS
    if name == "mount":
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return fn


def available() -> bool:
    """Whether this system has the calls a worker's namespaces need at all (``probe`` then
    asks the kernel whether it allows them)."""
    return features.has("unshare") and features.has("mount") and features.proc_available()


def _check(res: int, what: str) -> None:
    if res != 0:
        err = ctypes.get_errno()
        raise NamespaceError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: None if s is None else s.encode()
    _check(_libc_call("mount")(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def unshare(kind: str) -> None:
    """kind "host": new namespaces owned by the host's user namespace (needs root's
    CAP_SYS_ADMIN); kind "user": a new user namespace first, mapping our uid/gid onto
    themselves, owning the others. Must be called while single-threaded."""
    uid, gid = os.getuid(), os.getgid()
    flags = WORKER_NAMESPACES | (CLONE_NEWUSER if kind == "user" else 0)
    _check(_libc_call("unshare")(flags), "unshare")
    if kind == "user":
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)


def _outermost(paths: list[str]) -> list[str]:
    out: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in out):
            out.append(path)
    return out


def _below(path: str, tree: str) -> bool:
    return path.startswith(tree.rstrip("/") + "/")


def _kept_below(tree: str, keep: list[str]) -> list[tuple[str, str]]:
    """(where, what): each path of ``keep`` that is reached below ``tree`` — at its real
    place, and also where it is named when a link leads there. A ``.venv`` inside the
    repository that links to a virtual environment elsewhere (shared by several courses) is
    named ``repo/.venv/...`` in ``sys.path`` and in every imported package's ``__path__``;
    covering the repository would hide that name though the target stays readable, and
    every later import from it would fail. Only ``what`` (the kept path's real target) is
    bound, so nothing beyond what ``keep`` names becomes reachable."""
    places: dict[str, str] = {}
    for path in keep:
        real = os.path.realpath(path)
        named = os.path.normpath(os.path.abspath(path))
        folder_resolved = os.path.join(os.path.realpath(os.path.dirname(named)), os.path.basename(named))
        for where in (real, named, folder_resolved):
            if _below(where, tree):
                places.setdefault(where, real)
    return [(where, places[where]) for where in _outermost(list(places))]


def hide_trees(hide: list[str], keep: list[str]) -> list[str]:
    """Cover every directory in ``hide`` with an empty read-only tmpfs, then bind each path
    of ``keep`` that lay below one of them back where it was (and where a link to it lay:
    ``_kept_below``). Returns what was hidden."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount propagates to the host
    hidden: list[str] = []
    for tree in _outermost([os.path.realpath(p) for p in hide if os.path.realpath(p) not in _NEVER_HIDDEN]):
        if not os.path.isdir(tree):
            continue
        held = []
        for path, source in _kept_below(tree, keep):
            try:
                held.append((path, os.open(source, os.O_PATH | os.O_CLOEXEC)))
            except OSError:
                continue  # gone: nothing to bring back
        try:
            _mount("tmpfs", tree, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,nr_inodes=256,mode=0755")
            for path, fd in held:
                rel = os.path.relpath(path, tree)
                target = os.path.join(tree, rel)
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.makedirs(target, mode=0o755, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
                    os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o444))
                _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
            _mount(None, tree, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        finally:
            for _path, fd in held:
                os.close(fd)
        hidden.append(tree)
    return hidden


def mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, per-mount options) of every mount this process sees,
    in /proc/self/mountinfo's order (parents before what is mounted below them)."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            try:
                sep = fields.index("-", 6)
            except ValueError:
                continue
            point = fields[4]
            if "\\" in point:  # the kernel writes space, tab, newline and backslash as \ooo
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point)
            out.append((point, fields[sep + 1], set(fields[5].split(","))))
    return out


def file_system_of(path: str) -> str:
    """The type of the file system ``path`` lies on (the innermost mount above it); "unknown"
    without /proc (macOS)."""
    real = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        found = mounts()
    except OSError:
        return kind
    for point, fstype, _options in found:
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def freeze_memory_filesystems() -> int:
    """Make every writable memory-backed mount (``/dev/shm``, a tmpfs ``/tmp``…) read-only in
    this mount namespace — only here: the mounts were made private by ``hide_trees``. For a
    worker without Landlock, which denies those writes otherwise (~1 ms here). Returns how
    many were made read-only; one the kernel refuses is left as it is."""
    done = 0
    for point, fstype, options in mounts():
        if fstype not in MEMORY_FS or "ro" in options:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        flags |= MS_NOSUID if "nosuid" in options else 0
        flags |= MS_NODEV if "nodev" in options else 0
        flags |= MS_NOEXEC if "noexec" in options else 0
        # a mount inherited from a more privileged user namespace has its atime flags locked
        if "noatime" in options:
            flags |= MS_NOATIME
        elif "relatime" not in options:
            flags |= MS_STRICTATIME
        flags |= MS_NODIRATIME if "nodiratime" in options else 0
        try:
            _mount(None, point, None, flags)
            done += 1
        except OSError:
            continue
    return done


def mount_scratch(path: str, size_bytes: int, uid: int = -1, gid: int = -1) -> None:
    """A fresh tmpfs of ``size_bytes`` on ``path``: everything the worker writes there
    together (unlinked files included) fits in it, and it is freed with the namespace."""
    owner = f",uid={uid},gid={gid}" if uid >= 0 and gid >= 0 else ""
    options = f"size={max(size_bytes, 4096)},nr_inodes=1024,mode=0700{owner}"
    _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)


def probe(kind: str, hide_test: str) -> bool:
    """Can a worker here enter namespaces of this kind and hide a tree? Tried in a child,
    because only the kernel (and its LSMs: AppArmor restricts unprivileged user namespaces
    on recent Ubuntu) knows."""
    if not available():
        return False
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            unshare(kind)
            hide_trees([hide_test], [])
            code = 0 if not os.listdir(hide_test) else 1
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
