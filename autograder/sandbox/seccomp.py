"""The worker's seccomp filter: which system calls submission code may make.

Deny-list, not allow-list: torch and the Python runtime make hundreds of different calls,
and an allow-list that misses one breaks a correct submission on some kernel or libc. What
is denied is what a worker never needs and an attacker wants:

* new processes and programs (``fork``, ``vfork``, ``exec*``, ``clone`` without
  ``CLONE_THREAD``) and reaching into other processes (``ptrace``, ``process_vm_*``,
  ``pidfd_*``, ``kcmp``, ``process_madvise``);
* signals, resource limits and scheduling of *other* processes: ``kill``, ``tgkill``,
  ``rt_(tg)sigqueueinfo``, ``prlimit64``, ``sched_set*``, ``setpriority`` are allowed only
  on the worker itself (argument checks below), because a worker that shares the grader's
  uid could otherwise lower the grader's limits or stop it;
* the network and IPC that outlive or escape a worker: ``socket`` (the worker's one
  socket is inherited; ``socketpair`` stays, AF_UNIX only, as it reaches nobody), SysV
  shared memory, semaphores and message queues, POSIX message queues, the kernel keyring;
* memory the address-space limit does not count: ``memfd_create`` (an anonymous shmem
  file holds its pages while only a descriptor refers to it: 256 descriptors × a 16 MiB
  ``RLIMIT_FSIZE`` held ~3 GiB outside ``RLIMIT_AS``) and ``memfd_secret``. The other
  ways to shmem are closed elsewhere: SysV shm here, ``/dev/shm`` (``shm_open``) and every
  other tmpfs by Landlock and the mount namespace, the scratch folder by a small tmpfs of
  its own (``worker.py``); a ``MAP_SHARED|MAP_ANONYMOUS`` mapping counts in ``RLIMIT_AS``
  and is freed with it;
* changing metadata of files: the ``chmod``/``chown``/``utime``/``setxattr`` families
  (Landlock does not cover metadata, and a root worker would otherwise make a 0600 file
  outside its folder setuid or world-writable);
* mounts, namespaces, ``chroot``, ``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring``, ``syslog``, file handles.

Denied calls fail with EPERM (the program sees ``PermissionError``); nothing is killed, so
the submission's own error handling decides what the student sees.

A second filter (``thread_program``), stacked on the first once the worker is confined and
before any submission code is imported, takes threads away too: ``clone`` fails with EPERM
whatever its flags (the first filter already refuses it without ``CLONE_THREAD``) and
``clone3`` answers ENOSYS, so glibc's ``pthread_create`` falls back to ``clone`` and fails;
Python says ``RuntimeError: can't start new thread``. The rule checks record what runs on
the calling thread (torch's ``RecordFunction``, ``sys.setprofile``, a ``TorchFunctionMode``
are all per thread): with one thread there is nowhere else for code to run. The worker
needs no thread after it is confined (torch's intra-op and inter-op pools are fixed at one
thread, which is the caller; autograd's engine runs CPU work on the calling thread).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

MACHINE = platform.machine()
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_CLONE_THREAD = 0x00010000
_AF_UNIX = 1

#: name → (x86_64 number, aarch64 number or None where the call does not exist)
SYSCALLS: dict[str, tuple[int, int | None]] = {
    # processes and programs
    "fork": (57, None),
    "vfork": (58, None),
    "execve": (59, 221),
    "execveat": (322, 281),
    "clone": (56, 220),
    "clone3": (435, 435),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "pidfd_open": (434, 434),
    "pidfd_send_signal": (424, 424),
    "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
    "process_mrelease": (448, 448),
    "kcmp": (312, 272),
    "migrate_pages": (256, 238),
    "move_pages": (279, 239),
    # other processes: allowed on the worker itself only
    "kill": (62, 129),
    "tkill": (200, 130),
    "tgkill": (234, 131),
    "rt_sigqueueinfo": (129, 138),
    "rt_tgsigqueueinfo": (297, 240),
    "prlimit64": (302, 261),
    "setpriority": (141, 140),
    "ioprio_set": (251, 30),
    "sched_setparam": (142, 118),
    "sched_setscheduler": (144, 119),
    "sched_setaffinity": (203, 122),
    "sched_setattr": (314, 274),
    # network and IPC
    "socket": (41, 198),
    "socketpair": (53, 199),
    "shmget": (29, 194),
    "shmat": (30, 196),
    "shmctl": (31, 195),
    "shmdt": (67, 197),
    "semget": (64, 190),
    "semop": (65, 193),
    "semctl": (66, 191),
    "semtimedop": (220, 192),
    "msgget": (68, 186),
    "msgsnd": (69, 189),
    "msgrcv": (70, 188),
    "msgctl": (71, 187),
    "mq_open": (240, 180),
    "mq_unlink": (241, 181),
    "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183),
    "mq_notify": (244, 184),
    "mq_getsetattr": (245, 185),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    # memory outside RLIMIT_AS
    "memfd_create": (319, 279),
    "memfd_secret": (447, 447),
    # file metadata
    "chmod": (90, None),
    "fchmod": (91, 52),
    "fchmodat": (268, 53),
    "fchmodat2": (452, 452),
    "chown": (92, None),
    "fchown": (93, 55),
    "lchown": (94, None),
    "fchownat": (260, 54),
    "utime": (132, None),
    "utimes": (235, None),
    "futimesat": (261, None),
    "utimensat": (280, 88),
    "setxattr": (188, 5),
    "lsetxattr": (189, 6),
    "fsetxattr": (190, 7),
    "setxattrat": (463, 463),
    "removexattr": (197, 14),
    "lremovexattr": (198, 15),
    "fremovexattr": (199, 16),
    "removexattrat": (466, 466),
    # the kernel's rarer corners
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "bpf": (321, 280),
    "syslog": (103, 116),
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
}

DENY = [
    "fork",
    "vfork",
    "execve",
    "execveat",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_open",
    "pidfd_send_signal",
    "pidfd_getfd",
    "process_madvise",
    "process_mrelease",
    "kcmp",
    "migrate_pages",
    "move_pages",
    "tkill",
    "ioprio_set",
    "socket",
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "add_key",
    "request_key",
    "keyctl",
    "memfd_create",
    "memfd_secret",
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "utime",
    "utimes",
    "futimesat",
    "utimensat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "setxattrat",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "removexattrat",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "syslog",
    "name_to_handle_at",
    "open_by_handle_at",
]

_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM
_RET_ENOSYS = 0x00050000 | errno.ENOSYS


def _self_only(pid: int) -> dict[str, list[tuple[int, set[int]]]]:
    """Calls allowed only when their pid argument names this process (0 or its pid; for
    ``kill`` also its own process group, which is itself: the worker leads its session).
    Every condition is on the low 32 bits of an argument: the kernel reads pids as int."""
    me = {0, pid}
    return {
        "kill": [(0, me | {(-pid) & 0xFFFFFFFF})],
        "tgkill": [(0, {pid})],
        "rt_sigqueueinfo": [(0, {pid})],
        "rt_tgsigqueueinfo": [(0, {pid})],
        "prlimit64": [(0, me)],
        "sched_setparam": [(0, me)],
        "sched_setscheduler": [(0, me)],
        "sched_setaffinity": [(0, me)],
        "sched_setattr": [(0, me)],
        "setpriority": [(0, {0}), (1, me)],  # PRIO_PROCESS of itself; never a group or a uid
        "socketpair": [(0, {_AF_UNIX})],
    }


# --------------------------------------------------------------------------- a tiny BPF assembler
def _ld(offset: int) -> tuple:
    return (0x20, 0, 0, offset)  # BPF_LD | BPF_W | BPF_ABS


def _jeq(k: int, jt: int, jf: int) -> tuple:
    return (0x15, jt, jf, k)


def _jset(k: int, jt: int, jf: int) -> tuple:
    return (0x45, jt, jf, k)


def _ret(k: int) -> tuple:
    return (0x06, 0, 0, k)


_NR, _ARCH = 0, 4


def _arg_low(index: int) -> int:
    return 16 + 8 * index  # struct seccomp_data: args[] after nr, arch, instruction_pointer (little-endian)


def _checked_block(conditions: list[tuple[int, set[int]]]) -> list[tuple]:
    """Instructions run once the syscall number matched: ALLOW when every condition holds,
    EPERM otherwise. Ends in a return either way."""
    block: list[tuple] = []
    fixups: list[int] = []  # instructions whose false branch must reach the final EPERM
    for index, values in conditions:
        block.append(_ld(_arg_low(index)))
        values = sorted(values)
        for n, value in enumerate(values):
            last = n == len(values) - 1
            # true: skip the rest of this condition's values; false: try the next value, or fail
            block.append(_jeq(value, len(values) - 1 - n, 0 if not last else -1))
            if last:
                fixups.append(len(block) - 1)
    block.append(_ret(_RET_ALLOW))
    block.append(_ret(_RET_EPERM))
    eperm = len(block) - 1
    for at in fixups:
        code, jt, _jf, k = block[at]
        block[at] = (code, jt, eperm - at - 1, k)
    return block


def seccomp_program(self_pid: int | None = None) -> list[tuple] | None:
    if MACHINE not in _AUDIT_ARCH:
        return None
    arch = 0 if MACHINE == "x86_64" else 1
    number = {name: nrs[arch] for name, nrs in SYSCALLS.items() if nrs[arch] is not None}
    pid = os.getpid() if self_pid is None else self_pid
    prog = [_ld(_ARCH), _jeq(_AUDIT_ARCH[MACHINE], 1, 0), _ret(_RET_EPERM), _ld(_NR)]
    if MACHINE == "x86_64":
        prog += [(0x35, 0, 1, 0x40000000), _ret(_RET_EPERM)]  # BPF_JGE: no x32 syscalls
    # clone(): threads only (CLONE_THREAD set in the low word of args[0]).
    prog += [_jeq(number["clone"], 0, 4), _ld(_arg_low(0)), _jset(_CLONE_THREAD, 0, 1), _ret(_RET_ALLOW), _ret(_RET_EPERM)]
    # clone3() passes its flags in memory we cannot inspect: ENOSYS makes glibc fall back to clone().
    prog += [_jeq(number["clone3"], 0, 1), _ret(_RET_ENOSYS)]
    for name, conditions in _self_only(pid).items():
        block = _checked_block(conditions)
        prog += [_jeq(number[name], 0, len(block))] + block
    for name in DENY:
        if name in number:
            prog += [_jeq(number[name], 0, 1), _ret(_RET_EPERM)]
    prog.append(_ret(_RET_ALLOW))
    return prog


def thread_program() -> list[tuple] | None:
    """The second filter: no new thread (nor process) at all; every other call goes on to
    the first filter. None where there is no table for this machine."""
    if MACHINE not in _AUDIT_ARCH:
        return None
    arch = 0 if MACHINE == "x86_64" else 1
    clone, clone3 = SYSCALLS["clone"][arch], SYSCALLS["clone3"][arch]
    prog = [_ld(_ARCH), _jeq(_AUDIT_ARCH[MACHINE], 1, 0), _ret(_RET_EPERM), _ld(_NR)]
    prog += [_jeq(clone, 0, 1), _ret(_RET_EPERM)]
    prog += [_jeq(clone3, 0, 1), _ret(_RET_ENOSYS)]
    prog.append(_ret(_RET_ALLOW))
    return prog


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_libc = ctypes.CDLL(None, use_errno=True)


def install(prog: list[tuple]) -> None:
    """Load the filter for this thread (and, as we call it before threads exist, the
    process). Needs no_new_privs (or CAP_SYS_ADMIN), which the caller sets."""
    filters = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), filters)
    if (
        _libc.prctl(
            _PR_SET_SECCOMP,
            ctypes.c_ulong(_SECCOMP_MODE_FILTER),
            ctypes.c_void_p(ctypes.addressof(fprog)),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )
        != 0
    ):
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")
