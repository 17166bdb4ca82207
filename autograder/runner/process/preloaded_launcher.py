"""The preloaded launcher (launch.py): ``Preloaded`` starts the batch's preloaded process
(preloaded.py) once, then forks each student's trusted process from it instead of starting
Python and importing torch again; ``Preloaded.attach`` does the same with a warm server a
user's earlier ``grade`` left running (warm.py). Here, below ``instructor/``, because the
student tree's ``grade`` uses it too.

``Preloaded.spawn`` has ``trusted.popen``'s signature and returns a handle with ``Popen``'s
``pid``/``poll``/``wait``/``returncode`` and a ``kill_group`` (the preloaded process, the
run's parent, kills it: no pid-reuse race). A plan for another root or suites folder, a
command or environment not the one the process was started for, or any run after it died,
is started with ``trusted.popen`` — slower, never different.

The batch's bytecode folder (``bytecode_dir``; a warm server has none): each forked run compiles the modules it
imports after the fork — the suites, hidden tests included, their course helpers — into
this private folder (``sys.pycache_prefix``, preloaded._child), and every later run reads
them from there instead of compiling them again: ~0.12 CPU s a student where Python writes
no bytecode (``PYTHONDONTWRITEBYTECODE=1``, how this repository's environments and
Gradescope run). It is made here (mode 0700, the grader's), named in ``protect`` (so every
worker's confinement hides it as it hides the suites: runner/grade._protected) and removed
by ``close``; nothing is written beside the grader or the course.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from ...sandbox.tree import remove_tree
from . import os_spawn, trusted
from .trusted import Plan, TrustedProcess

PYTEST = [sys.executable, "-s", "-m", "pytest"]


class PreloadError(Exception):
    pass


class ForkedRun:
    """A pytest run forked by the preloaded process: what a ``TrustedProcess`` needs of a ``Popen``."""

    def __init__(self, preloaded: Preloaded, run_id: int) -> None:
        self._preloaded = preloaded
        self.id = run_id
        self.pid = -1
        self.returncode: int | None = None
        self.cpu_seconds: float | None = None  # the run's processes together, once it ended
        self._done = threading.Event()

    def _finish(self, returncode: int, cpu_seconds: float | None = None) -> None:
        self.returncode = returncode
        self.cpu_seconds = cpu_seconds
        self._done.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(["pytest (forked)"], timeout or 0)
        return self.returncode  # type: ignore[return-value]

    def kill_group(self) -> None:
        self._preloaded._send({"op": "kill", "id": self.id})


class Preloaded:
    """One preloaded process per batch (``with Preloaded(root, suites_dir, preload) as launcher:``),
    or a warm server's (``attach``)."""

    proc: subprocess.Popen | None  # None: attached (the process is a warm server's own)
    bytecode_dir: Path | None
    protect: list[Path]
    not_preloaded: list[str]
    _stderr: IO[bytes] | None

    def __init__(self, root: Path, suites_dir: Path, preload: list[str], start_timeout: float = 120.0, label: str = "") -> None:
        self._state(trusted.environment(root, suites_dir), root, suites_dir)
        self._stderr = tempfile.TemporaryFile()  # what the preloaded process says if it breaks
        bytecode_dir = Path(tempfile.mkdtemp(prefix="autograder-bytecode-"))  # mode 0700
        self.bytecode_dir = bytecode_dir
        #: what no worker of this batch may read (GradeRequest.protect)
        self.protect = [bytecode_dir.resolve()]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-s",
                "-m",
                "autograder.runner.process.preloaded",
                str(theirs.fileno()),
                ",".join(preload),
                label,
                str(self.bytecode_dir),
            ],
            cwd=root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        theirs.close()
        ours.settimeout(start_timeout)
        try:
            data = ours.recv(1 << 16)
        except OSError as exc:
            self._stop_process()
            remove_tree(self.bytecode_dir)
            raise PreloadError(f"the batch's preloaded process did not start: {exc}") from None
        if not data:
            self._stop_process()
            remove_tree(self.bytecode_dir)
            err = self._preloaded_stderr()
            raise PreloadError(f"the batch's preloaded process did not start: {err.strip() or 'it exited'}")
        ready = json.loads(data)
        self.not_preloaded = list(ready.get("not_preloaded") or [])
        self.started_seconds = time.monotonic() - started
        ours.settimeout(None)
        self.alive = True
        self._reader = threading.Thread(target=self._read, name="batch-preloaded", daemon=True)
        self._reader.start()

    def _state(self, env: dict[str, str], root, suites_dir) -> None:
        self.env = env
        self.cwd = Path(root)
        self.suites_dir = Path(suites_dir)
        self._lock = threading.Lock()
        self._runs: dict[int, ForkedRun] = {}
        self._local = threading.local()  # the run this thread launched last (its CPU time)
        self._next = 1
        self.alive = False
        self.fallbacks = 0
        self.started_seconds = 0.0
        self.not_preloaded = []
        self.proc = None
        self.bytecode_dir = None
        self.protect = []

    @classmethod
    def attach(cls, sock: socket.socket, hello: dict) -> Preloaded:
        """A launcher for a preloaded process someone else started: a warm server (warm.py),
        connected on ``sock``, which greeted us with ``hello`` (its root, suites folder and
        environment). Its runs are forked there; ``close`` only hangs up (the server kills
        what this connection left running, and stays for the next grade)."""
        self = cls.__new__(cls)
        self._state({str(k): str(v) for k, v in hello["env"].items()}, hello["root"], hello["suites_dir"])
        self._stderr = None
        self._sock = sock
        self.not_preloaded = list(hello.get("not_preloaded") or [])
        if hello.get("bytecode_dir"):  # the server's, where its runs compile the suites: no worker reads it
            self.protect = [Path(hello["bytecode_dir"]).resolve()]
        self.alive = True
        self._reader = threading.Thread(target=self._read, name="warm-server", daemon=True)
        self._reader.start()
        return self

    # ------------------------------------------------------------------ launcher
    def launch(self, plan: Plan) -> TrustedProcess:
        """The Launcher protocol: ``plan``'s trusted process, forked when it can be."""
        if (Path(plan.root), Path(plan.suites_dir)) != (self.cwd, self.suites_dir):
            self.fallbacks += 1
            return trusted.start(plan, trusted.popen)
        return trusted.start(plan, self.spawn)

    def spawn(self, argv: list[str], *, cwd: Path, env: dict[str, str], log, pass_fds: tuple[int, ...]):
        """``trusted.popen``, forked from the preloaded process when it can be."""
        same_env = os_spawn.same_but_per_run(env, self.env)
        if not self.alive or argv[: len(PYTEST)] != PYTEST or not same_env or Path(cwd) != self.cwd or len(pass_fds) != 2:
            self.fallbacks += 1
            return trusted.popen(argv, cwd=cwd, env=env, log=log, pass_fds=pass_fds)
        with self._lock:
            run_id = self._next
            self._next += 1
            forked = ForkedRun(self, run_id)
            self._runs[run_id] = forked
            run: ForkedRun | None = forked
            message = {"op": "run", "id": run_id, "argv": argv[len(PYTEST) :], "cwd": str(cwd), "env": env, "fds": list(pass_fds)}
            try:
                socket.send_fds(self._sock, [json.dumps(message).encode()], [*pass_fds, log.fileno()])
            except OSError:
                del self._runs[run_id]
                self.alive = False
                run = None
        if run is None:
            self.fallbacks += 1
            return trusted.popen(argv, cwd=cwd, env=env, log=log, pass_fds=pass_fds)
        self._local.run = run
        return run

    def take_last_run(self) -> ForkedRun | None:
        """The run this thread launched last (and forget it)."""
        run = getattr(self._local, "run", None)
        self._local.run = None
        return run

    # ------------------------------------------------------------------ internals
    def _send(self, message: dict) -> None:
        with self._lock:
            try:
                self._sock.send(json.dumps(message).encode())
            except OSError:
                pass

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            try:
                message = json.loads(data)
            except ValueError:
                continue
            with self._lock:
                run = self._runs.get(int(message.get("id", -1)))
                if run is not None and "pid" in message:
                    run.pid = int(message["pid"])
                if run is not None and "status" in message:
                    del self._runs[run.id]
            if run is not None and "status" in message:
                run._finish(os.waitstatus_to_exitcode(int(message["status"])), message.get("cpu_s"))
        # the preloaded process is gone: its runs died with it (each in a session it killed or orphaned)
        with self._lock:
            self.alive = False
            runs, self._runs = list(self._runs.values()), {}
        for run in runs:
            if run.pid > 0:
                try:
                    os.killpg(run.pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
            run._finish(-9)

    def kill_all(self) -> None:
        with self._lock:
            ids = list(self._runs)
        for run_id in ids:
            self._send({"op": "kill", "id": run_id})

    def _stop_process(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        if self.proc is None:  # attached: hang up only
            self._hang_up()
            return
        if self.alive:
            self._send({"op": "stop"})
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        self._stop_process()
        self._hang_up()
        if self._stderr is not None:
            self._stderr.close()
        if self.bytecode_dir is not None:
            remove_tree(self.bytecode_dir)

    def _hang_up(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the reader thread
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass

    def release(self) -> None:
        """As ``Early.release``: the command line is done with this launcher (a run, if it
        took one, has ended by now)."""
        self.close()

    def _preloaded_stderr(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            return self._stderr.read()[-600:].decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def __enter__(self) -> Preloaded:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
