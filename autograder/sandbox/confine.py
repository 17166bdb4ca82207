"""Linux confinement for the submission worker: rlimits, identity, Landlock, seccomp.

Every layer is applied in the worker right after it is forked, before any submission code
is imported. Each returns a short fact string for the report, so a results file always
says which protections were active on the machine that graded it.

We call the kernel through ``ctypes`` ourselves: Python 3.11 has no bindings for Landlock,
seccomp or capability sets, and the packages that wrap them (``pyseccomp``, ``landlock``)
need libseccomp or compile steps that students' machines may lack. The whole surface is the
few structures below, each checked against the kernel's uapi headers.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import struct
from dataclasses import dataclass

from . import features, seccomp

# prctl(2)
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2

MACHINE = platform.machine()

# Landlock syscalls share their numbers across architectures.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446


class ConfineError(RuntimeError):
    """A protection that was asked for could not be applied."""


class Unavailable(OSError):
    """The C library here has no such function (macOS has no ``prctl``): the portable tier."""

    def __init__(self, name: str) -> None:
        super().__init__(errno.ENOSYS, f"{name}() is not available on this system")


def _function(name: str, restype=ctypes.c_int):
    """A Linux C function of this process, looked up when first called (never at import:
    macOS's C library has no ``prctl``); ``Unavailable`` where there is none."""
    fn = features.libc_function(name) if features.linux_kernel() else None
    if fn is None:
        raise Unavailable(name)
    fn.restype = restype
    return fn


def _syscall(*args) -> int:
    return _function("syscall", ctypes.c_long)(*args)


def _prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    res = _function("prctl")(option, ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), ctypes.c_ulong(arg4), ctypes.c_ulong(arg5))
    if res < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")
    return res


# --------------------------------------------------------------------------- process
def set_parent_death_signal(sig: int) -> bool:
    """Die with ``sig`` when the parent does. False where the system cannot (no ``prctl``):
    there the process notices its parent's end on its socket instead, and its CPU rlimit
    bounds a loop that never looks."""
    try:
        _prctl(PR_SET_PDEATHSIG, sig)
    except Unavailable:
        return False
    return True


def set_child_subreaper() -> None:
    """Orphaned descendants are re-parented to us, so nothing a worker forks escapes the sweep."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def set_dumpable(flag: bool) -> bool:
    """False where the system has no ``prctl`` (nothing to change there: macOS keeps other
    processes of the same user from reading our memory without the debugger entitlement)."""
    try:
        _prctl(PR_SET_DUMPABLE, 1 if flag else 0)
    except Unavailable:
        return False
    return True


def set_no_new_privs() -> None:
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


# --------------------------------------------------------------------------- rlimits
@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    cpu_seconds: int
    file_bytes: int
    open_files: int = 256
    processes: int | None = None  # only meaningful for a dedicated unprivileged uid


def apply_rlimits(limits: Limits) -> str:
    """Each limit the system honours. On Linux every one must take (a refusal is a
    ``ConfineError``: the worker does not start); elsewhere one the system refuses (macOS may
    refuse RLIMIT_AS below what a process has mapped) is named in the fact, and the others
    still hold."""
    refused: list[str] = []

    def cap(name: str, res: int | None, value: int) -> bool:
        if res is None:
            refused.append(name)
            return False
        try:
            _soft, hard = resource.getrlimit(res)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(res, (value, value))
        except (OSError, ValueError):
            refused.append(name)
            return False
        return True

    parts = []
    if cap("as", getattr(resource, "RLIMIT_AS", None), limits.memory_bytes):
        parts.append(f"as={limits.memory_bytes >> 20}MiB")
    if cap("cpu", resource.RLIMIT_CPU, limits.cpu_seconds):
        parts.append(f"cpu={limits.cpu_seconds}s")
    if cap("fsize", resource.RLIMIT_FSIZE, limits.file_bytes):
        parts.append(f"fsize={limits.file_bytes >> 20}MiB")
    if cap("nofile", resource.RLIMIT_NOFILE, limits.open_files):
        parts.append(f"nofile={limits.open_files}")
    cap("core", resource.RLIMIT_CORE, 0)
    if limits.processes is not None:
        cap("nproc", getattr(resource, "RLIMIT_NPROC", None), limits.processes)
    if refused and features.linux_kernel():
        raise ConfineError(f"the kernel refused the resource limit(s) {', '.join(refused)}")
    fact = f"rlimits({','.join(parts)})"
    return fact + (f";rlimits-refused({','.join(refused)})" if refused else "")


# --------------------------------------------------------------------------- identity
class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_LINUX_CAPABILITY_VERSION_3 = 0x20080522
# SECBIT_NOROOT | _LOCKED, NO_SETUID_FIXUP | _LOCKED, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE | _LOCKED
_SECUREBITS_LOCKDOWN = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80


def drop_to_user(uid: int, gid: int) -> str:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise ConfineError("setuid did not take effect")
    return f"user(uid={uid})"


def drop_all_capabilities() -> str:
    """Stay uid 0 but keep no capability, now or after any exec.

    Used when the interpreter lives where an unprivileged uid cannot read it (e.g. a
    pyenv under /root). It is only safe together with Landlock, which then is what
    keeps root-owned files out of reach; the caller enforces that pairing.
    """
    try:
        _prctl(PR_SET_SECUREBITS, _SECUREBITS_LOCKDOWN)
    except OSError:
        pass  # needs CAP_SETPCAP; without it the bounding-set drop below still holds
    for cap in range(64):
        try:
            _prctl(PR_CAPBSET_DROP, cap)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                break
            raise
    try:
        _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if _function("capset")(ctypes.byref(header), data) != 0:
        err = ctypes.get_errno()
        raise ConfineError(f"capset failed: {os.strerror(err)}")
    return "root-without-capabilities"


# --------------------------------------------------------------------------- Landlock
LL_FS_EXECUTE = 1 << 0
LL_FS_WRITE_FILE = 1 << 1
LL_FS_READ_FILE = 1 << 2
LL_FS_READ_DIR = 1 << 3
LL_FS_REMOVE_DIR = 1 << 4
LL_FS_REMOVE_FILE = 1 << 5
LL_FS_MAKE_CHAR = 1 << 6
LL_FS_MAKE_DIR = 1 << 7
LL_FS_MAKE_REG = 1 << 8
LL_FS_MAKE_SOCK = 1 << 9
LL_FS_MAKE_FIFO = 1 << 10
LL_FS_MAKE_BLOCK = 1 << 11
LL_FS_MAKE_SYM = 1 << 12
LL_FS_REFER = 1 << 13  # ABI 2
LL_FS_TRUNCATE = 1 << 14  # ABI 3
LL_FS_IOCTL_DEV = 1 << 15  # ABI 5
LL_NET_BIND_TCP = 1 << 0  # ABI 4
LL_NET_CONNECT_TCP = 1 << 1
LL_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
LL_SCOPE_SIGNAL = 1 << 1
_LL_RULE_PATH_BENEATH = 1
_FILE_RIGHTS = LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable (no Linux
    kernel, no ``syscall`` or ``prctl`` to call it with: it needs no_new_privs)."""
    if not features.has("prctl"):
        return 0
    try:
        res = _syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except Unavailable:
        return 0
    return max(int(res), 0)


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= LL_FS_REFER
    if abi >= 3:
        rights |= LL_FS_TRUNCATE
    if abi >= 5:
        rights |= LL_FS_IOCTL_DEV
    return rights


@dataclass
class FsPolicy:
    read: list[str]  # trees the worker may read (never execute)
    write: list[str]  # trees the worker may read, write, create and delete in
    protected: list[str]  # never readable, even when below a `read` tree


def is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _expand_read_rules(roots: list[str], protected: list[str]) -> list[str]:
    """Allow-list semantics cannot say "all of /usr except /usr/src/course": split such a
    root into its children, recursively, leaving out every protected subtree. A root that
    lies *inside* a protected tree (``.venv`` inside the repository) is an explicit
    carve-out and stays readable."""
    out: list[str] = []
    protected = [os.path.realpath(p) for p in protected]

    def visit(root: str, depth: int) -> None:
        if root in protected:
            return
        inner = [p for p in protected if is_within(p, root) and p != root]
        if not inner:
            out.append(root)
            return
        if depth > 12 or not os.path.isdir(root):
            return
        try:
            names = sorted(os.listdir(root))
        except OSError:
            return
        for name in names:
            visit(os.path.join(root, name), depth + 1)

    for root in roots:
        visit(os.path.realpath(root), 0)
    return out


def apply_landlock(policy: FsPolicy, *, required: bool) -> str:
    """Confine the calling thread (and, as we call it before threads exist, the process)."""
    abi = landlock_abi()
    if abi < 1:
        if required:
            raise ConfineError("Landlock is not available on this kernel")
        return "landlock=unavailable"
    fs_rights = _fs_rights(abi)
    attr = _RulesetAttr(fs_rights, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL
        size = 24
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        err = ctypes.get_errno()
        raise ConfineError(f"landlock_create_ruleset: {os.strerror(err)}")
    read_rights = LL_FS_READ_FILE | LL_FS_READ_DIR
    try:
        for path in _expand_read_rules(policy.read, policy.protected):
            _add_path_rule(ruleset, path, read_rights)
        for path in policy.write:
            _add_path_rule(ruleset, path, fs_rights & ~LL_FS_EXECUTE)
        set_no_new_privs()
        if _syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            err = ctypes.get_errno()
            raise ConfineError(f"landlock_restrict_self: {os.strerror(err)}")
    finally:
        os.close(ruleset)
    return f"landlock(abi={abi})"


def _add_path_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that does not exist here needs no rule
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd
        buf = ctypes.create_string_buffer(struct.pack("<Qi", rights, fd), 12)
        if (
            _syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_LL_RULE_PATH_BENEATH), buf, ctypes.c_uint32(0))
            != 0
        ):
            err = ctypes.get_errno()
            raise ConfineError(f"landlock_add_rule({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- seccomp
def apply_seccomp(*, required: bool) -> str:
    """The worker's system-call filter (see ``seccomp.py`` for what it denies and why)."""
    if not features.has("prctl"):
        if required:
            raise ConfineError("seccomp needs prctl(), which this system does not have")
        return "seccomp=unavailable(no prctl)"
    prog = seccomp.seccomp_program()
    if prog is None:
        if required:
            raise ConfineError(f"no seccomp table for {MACHINE}")
        return f"seccomp=unavailable({MACHINE})"
    set_no_new_privs()
    try:
        seccomp.install(prog)
    except OSError as exc:
        if required:
            raise ConfineError(f"seccomp: {exc}") from None
        return "seccomp=unavailable"
    return (
        "seccomp(no-fork,no-exec,no-ptrace,no-sockets,no-sysv-ipc,no-keyring,no-memfd,no-chmod/utime/xattr,"
        "self-only-signals/limits)"
    )


def forbid_threads(*, required: bool) -> str:
    """Stack the second filter (``seccomp.thread_program``): from here on this process
    cannot start a thread. Called last, once the worker is confined, before any submission
    code is imported; ``apply_seccomp`` has set no_new_privs."""
    if not features.has("prctl"):
        if required:
            raise ConfineError("seccomp needs prctl(), which this system does not have")
        return "threads=allowed(no prctl; Python's thread start is removed)"
    prog = seccomp.thread_program()
    if prog is None:
        if required:
            raise ConfineError(f"no seccomp table for {MACHINE}")
        return f"threads=allowed(seccomp unavailable on {MACHINE}; Python's thread start is removed)"
    try:
        seccomp.install(prog)
    except OSError as exc:
        if required:
            raise ConfineError(f"seccomp (threads): {exc}") from None
        return "threads=allowed(seccomp unavailable; Python's thread start is removed)"
    return "seccomp(no-threads)"


# --------------------------------------------------------------------------- /proc/self
def scrub_process_strings(argv: str | list[str], env: dict[str, str]) -> str:
    """Overwrite the command line and environment the kernel shows in /proc/<pid>/cmdline
    and /proc/<pid>/environ. A forked worker inherits the grader's: the repository's paths,
    the suites' file names. Those strings live in our own stack memory (the kernel keeps
    only their addresses), so we zero them and write the worker's own values in their
    place; the C ``environ`` array no longer points there once ``os.environ`` was reset.
    Each is cut to the space the process started with (the first items stay whole). Also
    used by a run forked from a preloaded process, to show its own command line. Without
    /proc (macOS) the kernel shows them through no file, and they are left."""
    args = [argv] if isinstance(argv, str) else argv
    try:
        with open(f"{features.PROC}/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return "cmdline-environ=not-scrubbed(no /proc)"
    # fields 48–51 of /proc/<pid>/stat (fields[0] is field 3): arg_start arg_end env_start env_end
    arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])

    def fill(start: int, end: int, data: bytes) -> None:
        size = end - start
        if size <= 0:
            return
        data = data[: size - 1]
        ctypes.memset(start, 0, size)
        ctypes.memmove(start, data, len(data))

    fill(arg_start, arg_end, b"".join(a.encode() + b"\0" for a in args))
    fill(env_start, env_end, b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))
    return "scrubbed-cmdline-environ"
