"""The preloaded process of a batch run: start Python and ``import torch`` once, not once
per student (its launcher: preloaded_launcher.py). Started with ``--listen`` it is a warm
server instead (warm.py, ``serve``): the same forks, one per ``grade`` that connects.

``python -m autograder grade`` starts a fresh ``python -m pytest … -p autograder.runner.plugin``
per run (runner/process/trusted.py). A batch starts *this* process once instead, with exactly the
environment and working folder ``trusted.start`` gives pytest, and it imports what every run
imports — pytest and its built-in plugins, pytest-json-report, torch, the sandbox and the
testing helpers: what runner/process/preimport.py derives — but computes nothing, imports no
suite, no solution and no submission, and starts no sandbox fork server (each run forks its
own: below). For
each student the batch sends it the argv ``trusted.start`` would have run and the run's three file
descriptors (manifest pipe, progress pipe, log file); this process forks a child that

- starts its own session (a kill takes its whole process group, like ``Popen(start_new_session)``),
- resets every signal handler and the signal mask to a fresh interpreter's,
- puts the log on stdout/stderr, ``/dev/null`` on stdin, the pipes on the descriptor numbers
  named in the argv, and closes every other inherited descriptor,
- sets ``sys.argv`` and ``os.environ`` to what the fresh process would have had,
- forks the run's sandbox fork server, as the Early launcher does (runner/process/early.py),
  from a process that has imported torch and computed nothing — torch's thread pool does not
  survive ``fork()`` once it has run: docs/ARCHITECTURE.md, *Processes* — and hands it to the
  plugin with ``--ag-fork-server`` (forked here rather than from the plugin's first hook, the
  workers' Python stack is ~20 frames shallower: see sandbox/zygote._BecomeWorker),
- compiles what it imports from then on (the suites, hidden tests included) into the batch's
  private bytecode folder, and reads what an earlier run compiled there (``_cache_bytecode``:
  set after the fork server is forked, so no worker inherits even the folder's name),
- and runs pytest's ``__main__`` (``early.become_pytest``): from here on it is the same program
  as the fresh one (the plugin adopts the fork server and reads the manifest). It never
  returns into this process: it leaves with ``os._exit``.

So a forked run and a ``Popen`` run differ only in how the process started. The preloaded process is a
child subreaper: whatever a run leaves behind is re-parented here and killed.

Protocol (a SOCK_SEQPACKET pair, one JSON object per message):
  batch → preloaded  ``{"op": "run", "id": N, "argv": [...], "cwd": "...", "env": {...}, "fds": [m, p]}``
                  with three descriptors attached: manifest read end, progress write end, log;
                  ``{"op": "kill", "id": N}``; ``{"op": "stop"}``.
  preloaded → batch  ``{"id": N, "pid": P}`` once forked, ``{"id": N, "status": S}`` (waitpid status)
                  once reaped, ``{"ready": true, ...}`` once, after the imports.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time

from . import fresh_child

MAX_MESSAGE = 1 << 20

#: the batch's private bytecode folder (launcher.Preloaded.bytecode_dir), or None
_BYTECODE_DIR: str | None = None


def _preload(extra: list[str]) -> list[str]:
    """What every trusted process imports before its run is known (runner/process/preimport.py:
    derived from the code a run runs), then ``extra``. The names that failed to import."""
    import gc

    from autograder.runner.process import preimport

    failed = preimport.pytest_side() + preimport.torch_side(extra)
    # torch's kernel registry, which every fork server reads before its first worker (~0.15 s
    # here: 10 000 registrations), read once for the class: each run's fork server inherits it.
    # It reads the dispatcher's tables only (no computation, so no thread pool to fork with),
    # and after every import above, so it is the list a single grade's fork server reads.
    from autograder.sandbox import probes

    probes.kernel_registrations()
    gc.enable()  # off while torch loaded (sandbox_fork_server.imports); each run turns it off again before its fork
    return failed


def _startup_signals() -> tuple[dict, set]:
    """The dispositions and mask this interpreter started with: exactly what a fresh
    ``python`` started by the batch (``Popen``) gets — defaults, Python's own SIGINT/SIGPIPE/
    SIGXFSZ choices, and whatever the batch's parent ignores (``nohup``, a shell's ``&``),
    which survives ``exec``. Recorded in ``main`` before this process changes anything."""
    handlers = {}
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            handlers[sig] = signal.getsignal(sig)
        except (OSError, ValueError):
            pass
    return handlers, set(signal.pthread_sigmask(signal.SIG_BLOCK, []))


_STARTUP: tuple[dict, set] | None = None


def _fresh_signals() -> None:
    """The dispositions and mask a fresh process started by the batch would have."""
    handlers, mask = _STARTUP if _STARTUP is not None else _startup_signals()
    for sig, handler in handlers.items():
        try:
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        except (OSError, ValueError, TypeError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _child(socks: list[socket.socket], request: dict, fds: list[int]) -> None:
    """The forked run. Never returns."""
    code = 70
    try:
        for sock in socks:  # the batch's socket; a warm server's listener and every connection
            sock.close()
        os.setsid()
        _fresh_signals()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if "tempfile" in sys.modules:  # its cached folder is the preloaded process's TMPDIR
            import tempfile

            tempfile.tempdir = None
        fresh_child.show_run(request["argv"], request["env"])
        fresh_child.place_fds(fds, [int(fd) for fd in request["fds"]])
        sys.stdin = open(0, closefd=False)  # the fresh process's streams
        sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
        from autograder.core import timeline
        from autograder.runner.process import sandbox_fork_server
        from autograder.runner.process.early import become_pytest

        timeline.mark("trusted: forked from the preloaded process")

        # The run's sandbox fork server, forked here as the Early launcher forks it (early.py)
        # rather than by the plugin's first hook: the same process, imports and environment,
        # nothing computed, but a Python stack ~20 frames shallower (no runpy, pytest or
        # pluggy frames below it), which every worker inherits (see sandbox/zygote._BecomeWorker).
        argv = list(request["argv"])
        server = None  # kept referenced: its control socket must stay open for the plugin to adopt
        if any(arg.startswith("--ag-run=") for arg in argv):  # a grading run (trusted.command)
            server = sandbox_fork_server.start()
            argv.append(f"--ag-fork-server={sandbox_fork_server.handed_over(server)}")
            _cache_bytecode()
        become_pytest(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # report it in the run's log, then leave
        import traceback

        try:
            traceback.print_exc()
        except Exception:
            pass
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code if isinstance(code, int) else 1)


def _cache_bytecode() -> None:
    """From here on this run's imports (the suites, their course helpers, whatever pytest
    or the plugin imports late) read and write their bytecode in the batch's private folder,
    not beside their sources: the first run of a batch compiles the suites, every later one
    reads them (validated against each source's mtime and size, as any ``.pyc``). Only in a
    grading run, after its fork server is forked: a worker never has the setting. Written
    even under ``PYTHONDONTWRITEBYTECODE``, whose point is nothing written beside the
    grader: the folder is the batch's own, hidden from workers and removed at its end."""
    if _BYTECODE_DIR is not None and os.path.isdir(_BYTECODE_DIR):
        sys.pycache_prefix = _BYTECODE_DIR
        sys.dont_write_bytecode = False


class _Forker:
    """Forks a run for each ``run`` request and answers on the socket the request came on.

    ``socks``: the connected sockets (a batch: its one end of the pair). A warm server
    (warm.py) also has a ``listener``: each connection is one ``grade`` command line, which
    is greeted with what this process was started for (``hello``); its runs are killed when
    it closes, and the process leaves after ``idle`` seconds with no connection and no run,
    or at once when a module it imported changed on disk (``fresh``: a run would otherwise
    use the old grader)."""

    def __init__(
        self,
        socks: list[socket.socket],
        listener: socket.socket | None = None,
        hello: dict | None = None,
        idle: float | None = None,
        fresh=None,
    ) -> None:
        self.socks = list(socks)
        self.listener = listener
        self.hello = hello or {}
        self.idle = idle
        self.fresh = fresh
        self.runs: dict[int, tuple[socket.socket, int]] = {}  # pid → (its connection, request id)
        self.run_dirs: dict[int, str] = {}  # pid → its run folder (os_spawn.new_run_dir), where known
        self.warm = listener is not None  # a warm server: lets its runs finish when it stops
        self.why = ""  # why a warm server left (its log says)
        self.name = _bound_name(listener) if listener is not None else None
        self.stopping = False

    def all_sockets(self) -> list[socket.socket]:
        return [*self.socks, *([self.listener] if self.listener is not None else [])]

    def send(self, sock: socket.socket, message: dict) -> None:
        try:
            sock.send(json.dumps(message).encode())
        except OSError:
            pass  # that command line is gone; its runs are killed when its socket reads closed

    def start(self, sock: socket.socket, request: dict, fds: list[int]) -> None:
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            raise ValueError("run needs three descriptors: manifest, progress, log")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(self.all_sockets(), request, fds)
        for fd in fds:
            os.close(fd)
        self.runs[pid] = (sock, int(request["id"]))
        run_dir = _run_dir(request["argv"])
        if run_dir is not None:
            self.run_dirs[pid] = run_dir
        self.send(sock, {"id": int(request["id"]), "pid": pid})
        if self.listener is not None:  # a warm server's log: which grades it served
            print(f"{time.strftime('%H:%M:%S')} run forked: pid {pid}", file=sys.stderr, flush=True)

    def kill(self, sock: socket.socket | None, run_id: int | None) -> None:
        """``sock``'s run ``run_id``; all of ``sock``'s runs when ``run_id`` is None; every run
        when ``sock`` is None too."""
        for pid, (owner, rid) in self.runs.items():
            if (sock is None or owner is sock) and (run_id is None or rid == run_id):
                for target in (-pid, pid):
                    try:
                        os.kill(target, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass

    def reap(self) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            owner = self.runs.pop(pid, None)
            if owner is not None:
                # whatever the run started and left behind (in its own process group) goes too
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                # CPU of the run and of every process it waited for (its fork server, workers)
                self.send(owner[0], {"id": owner[1], "status": status, "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)})
            run_dir = self.run_dirs.pop(pid, None)
            if run_dir is not None:  # its grade was killed (its connection closed, the run killed with it)
                from autograder.runner.process import os_spawn

                os_spawn.remove_if_abandoned(run_dir)

    def sweep_orphans(self) -> None:
        """Kill what finished runs left behind (re-parented here: we are a subreaper)."""
        me = os.getpid()
        try:
            with open(f"/proc/{me}/task/{me}/children") as fh:
                children = [int(p) for p in fh.read().split()]
        except OSError:
            return
        for pid in children:
            if pid not in self.runs:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()  # type: ignore[union-attr]
        except OSError:
            return
        if not _same_user(conn):  # the folder's mode already keeps other users out
            self.send(conn, {"refused": "another user"})
            conn.close()
            return
        if self.fresh is not None and not self.fresh():
            # a module this process imported changed on disk: a run would use the old grader;
            # say so, take no run, and leave once the runs are done
            self.send(conn, {"stale": True})
            conn.close()
            self.why = self.why or "a module it imported changed on disk"
            self.stop_listening()
            return
        self.socks.append(conn)
        self.send(conn, self.hello)

    def stop_listening(self) -> None:
        if self.listener is not None:
            _unlink_own(self.name)
            self.listener.close()
            self.listener = None
            self.stopping = True

    def _closed(self, sock: socket.socket) -> bool:
        """``sock`` closed: True for the batch's one socket (then this process leaves)."""
        self.kill(sock, None)
        self.socks.remove(sock)
        sock.close()
        return not self.warm

    def loop(self) -> None:
        last_sweep = last_busy = time.monotonic()
        while True:
            watch = self.all_sockets()
            # a run to reap soon: look often; a warm server with none sleeps until a grade comes
            ready, _, _ = select.select(watch, [], [], 0.05 if self.runs or not self.warm else 1.0)
            for sock in ready:
                if sock is self.listener:
                    self._accept()
                    continue
                try:
                    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 4)
                except OSError:
                    data, fds = b"", []
                if not data:
                    if self._closed(sock):
                        self.stopping = True
                    continue
                try:
                    request = json.loads(data)
                    op = request.get("op")
                    if op == "run":
                        self.start(sock, request, list(fds))
                        fds = []
                    elif op == "kill":
                        self.kill(sock, int(request["id"]))
                    elif op == "stop" and not self.warm:  # the batch's; a warm server's clients cannot stop it
                        self.stopping = True
                except (ValueError, KeyError, TypeError):
                    pass  # a malformed request: nothing forked
                for fd in fds:
                    os.close(fd)
            self.reap()
            now = time.monotonic()
            if now - last_sweep > 1.0:
                self.sweep_orphans()
                last_sweep = now
            if self.runs or (self.warm and self.socks):
                last_busy = now
            elif self.idle is not None and now - last_busy > self.idle:
                self.why = self.why or f"no grade for {self.idle:g} s"
                self.stopping = True
            if self.stopping and (not self.warm or not self.runs):
                break
        self.stop_listening()
        self.kill(None, None)
        self.reap()
        self.sweep_orphans()


def _run_dir(argv: list[str]) -> str | None:
    """The run folder of a grading run's command (trusted.command: its report file's)."""
    from autograder.runner.process import os_spawn

    for arg in argv:
        if isinstance(arg, str) and arg.startswith("--json-report-file="):
            return os_spawn.run_dir_of(arg.partition("=")[2])
    return None


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this process's user, where the system says (Linux: SO_PEERCRED);
    elsewhere the socket's folder, mode 0700, is the check (warm.socket_dir)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    try:
        import struct

        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    except OSError:
        return False
    return uid == os.getuid()


def _bound_name(listener: socket.socket) -> tuple[str, int, int] | None:
    """The listening socket's path and that file's identity, read once it is bound."""
    try:
        path = listener.getsockname()
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    return (path, st.st_dev, st.st_ino) if isinstance(path, str) and path else None


def _unlink_own(name: tuple[str, int, int] | None) -> None:
    """Remove the listening socket's path, only while the file there is still the one this
    process bound (a newer server may have taken the name after this one went stale)."""
    if name is None:
        return
    path, dev, ino = name
    try:
        st = os.stat(path)
        if (st.st_dev, st.st_ino) == (dev, ino):
            os.unlink(path)
    except OSError:
        pass


def _module_files() -> dict[str, tuple[int, int]]:
    """Every imported module's file and its (mtime, size): a warm server's grader as loaded."""
    files = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            try:
                st = os.stat(path)
            except OSError:
                continue
            files[path] = (st.st_mtime_ns, st.st_size)
    return files


def _unchanged(files: dict[str, tuple[int, int]]):
    def fresh() -> bool:
        for path, seen in files.items():
            try:
                st = os.stat(path)
            except OSError:
                return False
            if (st.st_mtime_ns, st.st_size) != seen:
                return False
        return True

    return fresh


def main(argv: list[str]) -> int:
    """argv: socket fd, comma-separated extra modules to preload, a label (the batch's --out:
    it shows in ``ps`` for this process and every run forked from it), the batch's private
    bytecode folder (optional). A warm server (warm.py) is started with ``--listen`` instead."""
    global _STARTUP, _BYTECODE_DIR
    _STARTUP = _startup_signals()
    if argv[:1] == ["--listen"]:
        return serve(argv[1:])
    _BYTECODE_DIR = argv[3] if len(argv) > 3 and argv[3] else None
    fd = int(argv[0])
    extra = [m for m in (argv[1].split(",") if len(argv) > 1 else []) if m]
    sock = socket.socket(fileno=fd)
    from autograder.sandbox import confine

    confine.set_child_subreaper()
    started = time.monotonic()
    failed = _preload(extra)
    sock.send(json.dumps({"ready": True, "seconds": round(time.monotonic() - started, 3), "not_preloaded": failed}).encode())
    _Forker([sock]).loop()
    return 0


def serve(argv: list[str]) -> int:
    """A warm server (warm.py): argv = socket path, lock file, idle seconds, root, suites
    folder, bytecode folder, comma-separated modules to preload (as a batch's ``extra``).
    Holds the lock for its whole life (one server a name), binds the path, preloads, then
    forks a run for each ``grade`` that connects. Its runs compile what
    they import after the fork (the suites) into the bytecode folder, as a batch's do
    (``_cache_bytecode``), so the second grade reads what the first compiled; the folder is
    in the user's own socket folder, named in the greeting (each grade hides it from its
    workers: ``Preloaded.attach``'s ``protect``), and removed when the server leaves."""
    import fcntl

    global _BYTECODE_DIR
    path, lock_path, idle, root, suites = argv[0], argv[1], float(argv[2]), argv[3], argv[4]
    lock = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    for _ in range(40):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if os.path.exists(path):
                return 0  # another server has this name and is listening
            time.sleep(0.25)  # one that went stale and is leaving, or one still preloading
    else:
        return 0
    try:
        from autograder.sandbox import confine

        confine.set_child_subreaper()
    except Exception:
        pass  # where there is no prctl, a run's leftovers are killed with its process group only
    started = time.monotonic()
    failed = _preload([m for m in (argv[6].split(",") if len(argv) > 6 else []) if m])
    bytecode = argv[5] if len(argv) > 5 and argv[5] else None
    if bytecode is not None:
        from autograder.sandbox.tree import remove_tree

        remove_tree(bytecode)  # a dead server's: we hold the lock
        os.mkdir(bytecode, 0o700)
        _BYTECODE_DIR = bytecode
    hello = {
        "ready": True,
        "pid": os.getpid(),
        "root": root,
        "suites_dir": suites,
        "env": dict(os.environ),
        "bytecode_dir": bytecode,
        "seconds": round(time.monotonic() - started, 3),
        "not_preloaded": failed,
    }
    fresh = _unchanged(_module_files())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        os.unlink(path)  # a dead server's (we hold the lock)
    except FileNotFoundError:
        pass
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(8)
    print(
        f"{time.strftime('%H:%M:%S')} listening: pid {os.getpid()}, {path}, {hello['seconds']} s to preload",
        file=sys.stderr,
        flush=True,
    )
    forker = _Forker([], listener, hello, idle, fresh)

    def leave(signum, _frame):
        forker.why = forker.why or f"stopped by signal {signal.Signals(signum).name}"
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, leave)  # stopped by its user (or `pkill`): leave cleanly; runs reset it
    try:
        forker.loop()
    finally:
        forker.stop_listening()
        forker.kill(None, None)
        if bytecode is not None:
            from autograder.sandbox.tree import remove_tree

            remove_tree(bytecode)
        why = forker.why or "stopped"
        print(f"{time.strftime('%H:%M:%S')} leaving: pid {os.getpid()} ({why})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
