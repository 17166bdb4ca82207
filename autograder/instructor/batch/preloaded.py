"""The preloaded process of a batch run: start Python and ``import torch`` once, not once
per student (its launcher: launcher.py).

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


def _place_fds(received: list[int], targets: list[int]) -> None:
    """``received`` = [manifest, progress, log]: log → 1 and 2, /dev/null → 0, the pipes on
    ``targets`` (the numbers the argv names); every other descriptor closed."""
    floor = max(1000, *targets) + 1  # above every number we place a pipe on
    high = [_dup_high(fd, floor) for fd in received]
    for fd in received:
        os.close(fd)
    manifest, progress, log = high
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(log, 1)
    os.dup2(log, 2)
    keep = {0, 1, 2, *targets}
    os.dup2(manifest, targets[0], inheritable=True)
    os.dup2(progress, targets[1], inheritable=True)
    for fd in (manifest, progress, log):
        if fd not in keep:
            os.close(fd)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _dup_high(fd: int, floor: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)


def _child(sock: socket.socket, request: dict, fds: list[int]) -> None:
    """The forked run. Never returns."""
    code = 70
    try:
        sock.close()
        os.setsid()
        _fresh_signals()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _place_fds(fds, [int(fd) for fd in request["fds"]])
        sys.stdin = open(0, closefd=False)  # the fresh process's streams
        sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
        from autograder.runner.process import sandbox_fork_server
        from autograder.runner.process.early import become_pytest

        # The run's sandbox fork server, forked here as the Early launcher forks it (early.py)
        # rather than by the plugin's first hook: the same process, imports and environment,
        # nothing computed, but a Python stack ~20 frames shallower (no runpy, pytest or
        # pluggy frames below it), which every worker inherits and every operator a
        # rule-checked call records (see sandbox/zygote._BecomeWorker).
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
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.runs: dict[int, int] = {}  # pid → request id

    def send(self, message: dict) -> None:
        self.sock.send(json.dumps(message).encode())

    def start(self, request: dict, fds: list[int]) -> None:
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            raise ValueError("run needs three descriptors: manifest, progress, log")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(self.sock, request, fds)
        for fd in fds:
            os.close(fd)
        self.runs[pid] = int(request["id"])
        self.send({"id": int(request["id"]), "pid": pid})

    def kill(self, run_id: int) -> None:
        for pid, rid in self.runs.items():
            if rid == run_id:
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
            run_id = self.runs.pop(pid, None)
            if run_id is not None:
                # whatever the run started and left behind (in its own process group) goes too
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                # CPU of the run and of every process it waited for (its fork server, workers)
                self.send({"id": run_id, "status": status, "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)})

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

    def loop(self) -> None:
        last_sweep = time.monotonic()
        while True:
            ready, _, _ = select.select([self.sock], [], [], 0.05)
            if ready:
                try:
                    data, fds, _flags, _addr = socket.recv_fds(self.sock, MAX_MESSAGE, 4)
                except OSError:
                    break
                if not data:
                    break
                request = json.loads(data)
                op = request.get("op")
                if op == "run":
                    self.start(request, list(fds))
                elif op == "kill":
                    self.kill(int(request["id"]))
                elif op == "stop":
                    break
                for fd in fds if op != "run" else ():
                    os.close(fd)
            self.reap()
            if time.monotonic() - last_sweep > 1.0:
                self.sweep_orphans()
                last_sweep = time.monotonic()
        for run_id in list(self.runs.values()):
            self.kill(run_id)
        self.reap()
        self.sweep_orphans()


def main(argv: list[str]) -> int:
    """argv: socket fd, comma-separated extra modules to preload, a label (the batch's --out:
    it shows in ``ps`` for this process and every run forked from it), the batch's private
    bytecode folder (optional)."""
    global _STARTUP, _BYTECODE_DIR
    _STARTUP = _startup_signals()
    _BYTECODE_DIR = argv[3] if len(argv) > 3 and argv[3] else None
    fd = int(argv[0])
    extra = [m for m in (argv[1].split(",") if len(argv) > 1 else []) if m]
    sock = socket.socket(fileno=fd)
    from autograder.sandbox import confine

    confine.set_child_subreaper()
    started = time.monotonic()
    failed = _preload(extra)
    sock.send(json.dumps({"ready": True, "seconds": round(time.monotonic() - started, 3), "not_preloaded": failed}).encode())
    _Forker(sock).loop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
