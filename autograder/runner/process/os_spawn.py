"""What starting a trusted process needs, with nothing imported but ``os`` (and ``struct``
for early.py's header): its environment,
its run folder, its pipes and log, and — for the one started before anything else — the start
itself (``posix_spawn``) and a ``Popen``-like handle (``Child``).

Why not ``subprocess`` and ``tempfile`` here: ``python -m autograder grade`` starts the
trusted process as its very first act (early.py), and that process's torch import is the
beginning of every grade's critical path. Importing ``subprocess`` (``locale``, ``re``) and
``tempfile`` (``random``, ``shutil``) first cost ~25 and ~22 ms; with ``launch.py``'s own
imports the process started ~0.1 s after the command line, and now ~0.03 s. Every other
start of a trusted process uses ``subprocess.Popen`` (trusted.popen), where nothing waits
for its import. Written here, then, and kept small: ``new_run_dir`` is ``tempfile.mkdtemp``'s
exclusive creation under ``tempfile.gettempdir``'s candidates (read afresh each call, where
``gettempdir`` caches its choice and honours a ``tempfile.tempdir`` set in-process), ``posix_spawn`` is ``os.posix_spawn`` with
``Popen``'s ``close_fds``, ``pass_fds``, ``start_new_session`` and ``cwd``, ``Child`` is
``Popen``'s ``poll``/``wait``/``returncode``.
"""

from __future__ import annotations

import os

#: PYTHONDONTWRITEBYTECODE only when the caller sets it: by default the suites' bytecode (and
#: pytest's assertion-rewritten test modules) is cached in their ``__pycache__`` folders,
#: beside the sources, no more reachable from the worker than those are; recompiling the
#: suites costs ~0.4 s per run otherwise
#: AUTOGRADER_FORK_AFTER_THREADS=unsafe starts workers as on macOS (sandbox/features.py): it can only make the start more careful
ENV_KEEP = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "SYSTEMROOT",
    "AUTOGRADER_PROFILE",
    "AUTOGRADER_TIMELINE",
    "PYTHONDONTWRITEBYTECODE",
    "AUTOGRADER_FORK_AFTER_THREADS",
)

#: of ENV_KEEP, what may differ from one run to the next of one warm server or batch's
#: preloaded process: a forked run takes its request's environment whole, and these change
#: nothing the process preloaded (warm.names, Preloaded.spawn). TMPDIR: where a run's folder
#: and its workers' scratch folders go; the forked run forgets any temporary folder the
#: preloaded process looked up (preloaded._child), so the run's own is used
PER_RUN = ("AUTOGRADER_TIMELINE", "TMPDIR")


def same_but_per_run(a: dict[str, str], b: dict[str, str]) -> bool:
    """Whether two trusted processes' environments differ at most in ``PER_RUN``."""
    return {k: v for k, v in a.items() if k not in PER_RUN} == {k: v for k, v in b.items() if k not in PER_RUN}


LOG = ("private", "pytest.log")
REPORT = ("private", "report.json")
#: locked (flock) by the process that made the run folder for as long as it may use it: a folder
#: whose lock anyone can take was left by a process that is gone (killed: no ``finally`` ran)
ALIVE = ("private", "alive")
#: the descriptors holding our run folders' locks (closed by ``let_go``)
_HELD: dict[str, int] = {}
#: temporary folders already swept by this process (``sweep_abandoned``)
_SWEPT: set[str] = set()


#: the grader's own package's parent (autograder/runner/process/os_spawn.py → 4 levels up)
GRADER_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))


def import_path(root, suites_dir) -> list[str]:
    """What the trusted process imports from: the course's root and its suites folder, then
    the grader itself when the course lives elsewhere (a second course kept beside the
    grader, as tests/fixtures/toy_course: the framework is not part of any course)."""
    path = [str(root), str(suites_dir)]
    return path if os.path.realpath(str(root)) == GRADER_ROOT else [*path, GRADER_ROOT]


def environment(root, suites_dir) -> dict[str, str]:
    """The trusted process's whole environment: what ``ENV_KEEP`` names, the import folders,
    and no plugin autoload."""
    env = {k: v for k, v in os.environ.items() if k in ENV_KEEP or k.startswith("LC_")}
    env.update(
        PYTHONPATH=os.pathsep.join(import_path(root, suites_dir)),
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        PYTHONHASHSEED="0",
        PYTHONNOUSERSITE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def _temporary_folders() -> list[str]:
    """``tempfile.gettempdir``'s candidates, in its order."""
    named = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")]
    return [os.path.abspath(d) for d in named if d] + ["/tmp", "/var/tmp", "/usr/tmp", os.getcwd()]


def new_run_dir() -> str:
    """A fresh run folder, made exclusively under the first usable temporary folder (as
    ``tempfile.mkdtemp(prefix="autograder-")``): ``private/`` (report, log; the grader's
    only) and ``scratch/`` (the workers')."""
    for parent in _temporary_folders():
        for _ in range(100):
            path = os.path.join(parent, "autograder-" + os.urandom(6).hex())
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                continue
            except OSError:
                break  # not a usable folder: the next candidate
            try:
                # modes set explicitly: mkdir's are trimmed by the umask (under 077, workers
                # running as another user could not reach their scratch folders)
                for folder, mode in (
                    (path, 0o711),
                    (os.path.join(path, *LOG[:-1]), 0o700),
                    (os.path.join(path, "scratch"), 0o711),
                ):
                    if folder != path:
                        os.mkdir(folder)
                    os.chmod(folder, mode)
                _hold(path)
            except BaseException:
                remove_tree(path)
                raise
            return path
    raise FileNotFoundError(f"no usable temporary folder among {_temporary_folders()}")


def _hold(run_dir: str) -> None:
    """Lock ``run_dir``'s ``ALIVE`` file for as long as this process lives or until ``let_go``.
    Locked before it takes its name, so no sweep ever finds it unlocked while we live."""
    import fcntl  # built into the interpreter: nothing to read from disk

    final = os.path.join(run_dir, *ALIVE)
    fd = os.open(final + ".new", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # a file system without locks (some network mounts): no lock file, never swept
        os.close(fd)
        os.unlink(final + ".new")
        return
    except BaseException:
        os.close(fd)
        raise
    try:
        os.rename(final + ".new", final)
    except BaseException:
        os.close(fd)
        raise
    _HELD[run_dir] = fd


def let_go(run_dir) -> None:
    """Release the lock ``new_run_dir`` took on ``run_dir`` (once the folder is removed)."""
    fd = _HELD.pop(str(run_dir), None)
    if fd is not None:
        os.close(fd)


def _is_run_dir_name(name: str) -> bool:
    hexdigits = "0123456789abcdef"
    return len(name) == 23 and name.startswith("autograder-") and all(c in hexdigits for c in name[11:])


def run_dir_of(report) -> str | None:
    """The run folder holding ``report`` (a path ``REPORT`` places in a folder ``new_run_dir``
    made), or None for a report written anywhere else."""
    private = os.path.dirname(os.path.abspath(str(report)))
    run_dir = os.path.dirname(private)
    if os.path.basename(private) == REPORT[0] and _is_run_dir_name(os.path.basename(run_dir)):
        return run_dir
    return None


def remove_if_abandoned(run_dir) -> bool:
    """Remove ``run_dir`` when the process that made it is gone (its ``ALIVE`` lock is free:
    the kernel releases it with the process, however it ended). A folder without that file
    (being made, or made by an older grader) is left alone: only a proven abandonment counts."""
    import fcntl

    try:
        fd = os.open(os.path.join(str(run_dir), *ALIVE), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its maker lives
        remove_tree(str(run_dir))  # holding the lock: no other sweep removes it at the same time
        return True
    finally:
        os.close(fd)


def sweep_abandoned(parent: str) -> list[str]:
    """Remove the run folders in ``parent`` (a temporary folder) that this user's grades left
    when they were killed (``kill -9``, a closed terminal, an out-of-memory kill): each held a
    copy of a submission and a report. Once per folder per process; a few hundred
    microseconds for a /tmp of a few hundred entries. Returns what was removed."""
    if parent in _SWEPT:
        return []
    _SWEPT.add(parent)
    removed: list[str] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    uid = os.geteuid()
    for name in names:
        if not _is_run_dir_name(name):
            continue
        path = os.path.join(parent, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if info.st_uid == uid and (info.st_mode & 0o170000) == 0o040000 and path not in _HELD:
            if remove_if_abandoned(path):
                removed.append(path)
    return removed


def spawn_piped(run_dir, argv_for, spawn, *, cwd, env: dict[str, str]):
    """The manifest and progress pipes and the log of a trusted process in ``run_dir``, and
    ``argv_for(manifest_fd, progress_fd)`` started with ``spawn`` (``posix_spawn``'s or
    ``trusted.popen``'s signature): (process, our manifest write end, our progress read end,
    the log file, the child's two descriptor numbers). The child's ends are closed here once
    it has them; on failure, everything made here."""
    manifest_read = progress_write = manifest_write = progress_read = -1
    log_fh = None
    try:
        manifest_read, manifest_write = os.pipe()
        progress_read, progress_write = os.pipe()
        log_fh = open(os.path.join(run_dir, *LOG), "wb")  # closed by TrustedProcess.wait()/abort() or Early.release()
        child_fds = (manifest_read, progress_write)
        proc = spawn(argv_for(*child_fds), cwd=cwd, env=env, log=log_fh, pass_fds=child_fds)
    except BaseException:
        for fd in (manifest_write, progress_read):
            if fd >= 0:
                os.close(fd)
        if log_fh is not None:
            log_fh.close()
        raise
    finally:
        for fd in (manifest_read, progress_write):
            if fd >= 0:
                os.close(fd)  # the numbers stay valid names inside the child (pass_fds keeps them)
    return proc, manifest_write, progress_read, log_fh, (manifest_read, progress_write)


def posix_spawn(argv: list[str], *, cwd, env: dict[str, str], log, pass_fds: tuple[int, ...]) -> Child:
    """Start ``argv`` as ``trusted.popen`` does — stdin from /dev/null, stdout and stderr to
    ``log``, only ``pass_fds`` kept of our other descriptors, a session of its own, in ``cwd``
    — with ``os.posix_spawn``. For a single-threaded caller: the folder change it needs
    (posix_spawn has no ``cwd``) is the whole process's for that moment."""
    keep = set(pass_fds)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, log.fileno(), 1),
        (os.POSIX_SPAWN_DUP2, log.fileno(), 2),
    ]
    for fd in _open_descriptors():  # what we inherited (a make jobserver's pipe, …): not passed on
        try:
            if fd > 2 and fd not in keep and os.get_inheritable(fd):
                actions.append((os.POSIX_SPAWN_CLOSE, fd))
        except OSError:
            pass  # the listing's own descriptor, closed by now
    moved = os.path.realpath(cwd) != os.path.realpath(os.curdir)
    here = os.open(os.curdir, os.O_RDONLY) if moved else -1  # where we come back to, by descriptor
    child = None
    try:
        for fd in keep:
            os.set_inheritable(fd, True)
        if moved:
            os.chdir(cwd)
        child = Child(os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True), argv)
    finally:
        try:
            if here >= 0:
                os.fchdir(here)
        except BaseException:
            if child is not None:  # started, but we could not come back: it goes, nothing is left half-done
                child.kill()
            raise
        finally:
            if here >= 0:
                os.close(here)
            for fd in keep:
                os.set_inheritable(fd, False)
    return child


def remove_tree(path: str) -> None:
    """Remove a folder this module made, whatever is in it: the grader's one remover
    (sandbox/tree.py: iterative, by descriptors, any depth), imported only now."""
    from ...sandbox.tree import remove_tree as remove

    remove(path)
    let_go(path)


def _open_descriptors() -> list[int]:
    for folder in ("/proc/self/fd", "/dev/fd"):  # Linux; macOS and the BSDs
        try:
            return [int(name) for name in os.listdir(folder)]
        except (OSError, ValueError):
            continue
    return list(range(3, 256))  # nowhere to list them: the usual range, tried one by one


class Child:
    """A process we started, as ``subprocess.Popen`` shows one: ``pid``, ``returncode`` (the
    exit status, or minus the signal that ended it), ``poll`` and ``wait`` — which reap it.
    Unlike ``Popen`` it has no lock: one thread at a time waits for it (as every caller does)."""

    def __init__(self, pid: int, args: list[str]) -> None:
        self.pid, self.args = pid, args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The return code once it has ended; ``subprocess.TimeoutExpired`` after ``timeout``
        seconds (polled with growing sleeps, as ``Popen.wait`` does)."""
        if timeout is None:
            while self.returncode is None:
                self._reap(0)
            return self.returncode
        import time

        deadline, delay = time.monotonic() + timeout, 0.0005
        while self.poll() is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                import subprocess

                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)
        return self.returncode

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): its status is lost, as Popen reports it
            if self.returncode is None:
                self.returncode = 0
            return
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        """SIGKILL its session's process group, and reap it."""
        import signal

        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.wait()
