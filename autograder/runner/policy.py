"""Decide, on the trusted side, what this run's workers may do on this machine: grading.toml's
``[limits]`` and ``[sandbox]`` turned into a ``WorkerSpec``. This is the one place where the
config meets the sandbox — nothing under ``autograder/sandbox`` reads the config.

- Not root (a student's laptop): the worker keeps the user's uid; Landlock (when the
  kernel has it) limits reads to the interpreter and the submission copy and writes to a
  scratch directory; seccomp forbids fork/exec/ptrace. On a laptop the student owns every
  file anyway — the hidden suite is simply not there.
- Root (Gradescope, CI containers): the worker drops to an unprivileged user
  (``[sandbox] user``) when that user can read the interpreter. Where it cannot (a pyenv
  under /root, as on our CI image), the worker stays uid 0 without any capability and
  Landlock becomes mandatory, which is what keeps root-owned files out of reach. Without
  Landlock, the tests and solutions directories are made unreadable to others instead.
"""

from __future__ import annotations

import os
import pwd
import site
import sys
from pathlib import Path

from ..config import Config
from ..core.results import SANDBOX_TIER
from ..sandbox import confine, features, namespaces, seccomp
from ..sandbox.spec import WorkerSpec

SYSTEM_READ = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"]
DEVICE_READ = [
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
]


def python_paths() -> list[str]:
    """The interpreter, its standard library and site-packages (torch lives there): each
    as Python names it and, where a link leads there (a ``.venv`` linking to a shared
    environment), as its real path too. The worker must reach both: imports use the names."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    try:
        paths.update(site.getsitepackages())
    except AttributeError:
        pass
    found = [os.path.abspath(p) for p in paths if p and os.path.exists(p)]
    return sorted({*found, *(os.path.realpath(p) for p in found)})


def build_worker_spec(config: Config, copy_dir: Path, scratch_root: Path, protected: list[Path]) -> tuple[WorkerSpec, list[str]]:
    """Returns the spec and notes for the report (what was chosen and why)."""
    notes: list[str] = []
    limits = config.limits
    py = python_paths()
    spec = WorkerSpec(
        copy_dir=str(copy_dir),
        scratch_root=str(scratch_root),
        modules=[s.module_name for s in config.skills.values()],
        memory_bytes=limits.memory_mib << 20,
        cpu_seconds=int(max(limits.call_timeout_s * 20, 60)),
        file_bytes=limits.file_write_mib << 20,
        output_bytes=limits.output_kib << 10,
        read_paths=SYSTEM_READ + DEVICE_READ + py,
        protected_paths=sorted({os.path.realpath(p) for p in protected}),
        landlock=config.sandbox.landlock,
        seccomp=config.sandbox.seccomp,
    )
    landlock = confine.landlock_abi() if config.sandbox.landlock != "off" else 0
    spec.namespaces = _namespace_kind(config.root)
    notes.append(tier_note(spec.namespaces, landlock))
    if spec.namespaces:
        notes.append(
            "submission code runs in its own network, IPC and mount namespaces "
            f"({'created as root' if spec.namespaces == 'host' else 'inside an unprivileged user namespace'}): no "
            "network, no shared IPC, the repository hidden"
        )
    elif namespaces.available():  # where there are none at all, the tier's note says what holds instead
        why = (
            "root without CAP_SYS_ADMIN, e.g. Docker's default profile"
            if os.geteuid() == 0
            else "unprivileged user namespaces are disabled or restricted"
        )
        notes.append(
            f"WARNING: namespaces are unavailable here ({why}): the worker shares the host's network and IPC "
            "namespaces, where seccomp alone denies sockets, SysV IPC and keyrings, and can stat (not read) "
            "protected files"
        )
    if os.geteuid() != 0:
        spec.identity = "keep"
        if not landlock:
            notes.append("Landlock unavailable: the worker can read what your user can (fine on your own machine)")
        return spec, notes
    try:
        entry = pwd.getpwnam(config.sandbox.user)
    except KeyError:
        raise ValueError(f"[sandbox] user {config.sandbox.user!r} does not exist on this machine") from None
    spec.uid, spec.gid = entry.pw_uid, entry.pw_gid
    if uid_can_read(spec.uid, spec.gid, py):
        spec.identity = "user"
        notes.append(f"running as root: submission code runs as {config.sandbox.user} (uid {spec.uid})")
    elif landlock:
        spec.identity = "nocaps"
        spec.landlock = "require"
        notes.append(
            f"running as root and {config.sandbox.user} cannot read the interpreter: submission code runs as uid 0 "
            "without capabilities, confined by Landlock"
        )
    else:
        spec.identity = "user"
        notes.append(
            f"{config.sandbox.user} cannot read the interpreter and Landlock is unavailable: only modules preloaded "
            "before the worker starts can be imported"
        )
    if spec.identity == "user" and not landlock:
        for path in (config.root / "tests", config.solutions_dir):
            if path.is_dir() and path.stat().st_mode & 0o007:
                path.chmod(path.stat().st_mode & ~0o007)
                notes.append(f"made {path} unreadable to other users (no Landlock on this kernel)")
    return spec, notes


#: what the portable tier keeps, on every system that can fork (features.py)
PORTABLE_PROTECTIONS = (
    "your code runs in a separate worker process, with the per-call time limit, the output cap, "
    "a private scratch folder and the resource limits this system honours"
)


def tier_note(namespace_kind: str, landlock_abi: int) -> str:
    """The results' line naming the sandbox tier and the protections in force here
    (features.py): "full" where the seccomp filter can be installed, "portable" otherwise."""
    missing = [
        name
        for name, present in (
            ("prctl", features.has("prctl")),
            ("seccomp", features.seccomp_possible(seccomp.seccomp_program(0) is not None)),
            ("Landlock", landlock_abi >= 1),
            ("namespaces", bool(namespace_kind)),
            ("/proc", features.proc_available()),
        )
        if not present
    ]
    if features.seccomp_possible(seccomp.seccomp_program(0) is not None):
        layers = ["the seccomp filter"] + ["Landlock"] * (landlock_abi >= 1) + ["namespaces"] * bool(namespace_kind)
        extra = f" (unavailable here: {', '.join(missing)})" if missing else ""
        return f"{SANDBOX_TIER}full — {PORTABLE_PROTECTIONS}, plus {', '.join(layers)}{extra}"
    return (
        f"{SANDBOX_TIER}portable (this system has no {', '.join(missing)}) — in force: {PORTABLE_PROTECTIONS}; "
        "not in force: the rules against starting processes, the network and reading other files. "
        "Scores are computed as on Linux; the official score comes from the course's Linux autograder"
    )


def _namespace_kind(probe_dir: Path) -> str:
    """Which namespaces a worker can enter here: "host" as root, "user" through an
    unprivileged user namespace, "" when neither works (tried once per run, in a child)."""
    if not hasattr(os, "fork") or not namespaces.available() or not probe_dir.is_dir():
        return ""
    # As root only "host": a user namespace maps root alone, so `setuid(nobody)` would fail in it.
    kind = "host" if os.geteuid() == 0 else "user"
    return kind if namespaces.probe(kind, str(probe_dir)) else ""


def uid_can_read(uid: int, gid: int, paths: list[str]) -> bool:
    """Can an unprivileged uid read the interpreter and its packages? Checked in a child,
    because only the kernel knows (ACLs, parent-directory modes, mount options). Note that
    ``os.path.isdir`` is no test here: it answers False when the uid cannot even stat."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            for path in paths:  # each exists (the caller checked, as root)
                try:
                    os.listdir(path)
                except NotADirectoryError:
                    with open(path, "rb") as fh:
                        fh.read(1)
            code = 0
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
