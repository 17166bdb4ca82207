"""The trusted pytest process of one grading run: what it runs, how we talk to it, how it ends.

The command line is built so that nothing from a submission or the environment can
configure the grading run: an explicit ini (``-c``), ``--noconftest``, plugin autoload
disabled with the two plugins we need loaded by name, no cache provider, and a scrubbed
environment (no ``PYTEST_ADDOPTS``, a ``PYTHONPATH`` of our own). The child gets its own
session so that a hard timeout can kill it with everything it started.

A ``TrustedProcess`` is made by a launcher (launch.py: how it starts is the launcher's only
choice) *before* the submission is prepared: its ~1.3 s of imports (pytest, torch) then
overlap our preparation, and it reads the run manifest from a pipe when its plugin
configures; its progress events come back on a second pipe, its output goes to a log.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import os_spawn
from .os_spawn import environment, spawn_piped

INI = Path(__file__).with_name("pytest.ini")


@dataclass(frozen=True)
class Plan:
    """What a trusted process is started to run: known once grading.toml is valid, before
    the submission is (runner/grade.plan)."""

    root: Path
    suites_dir: Path
    test_files: tuple[str, ...]


@dataclass
class Outcome:
    returncode: int | None
    timed_out: bool = False
    log_tail: str = ""
    events: list[dict] = field(default_factory=list)


def command(root: Path, test_files: list[str], report: Path, manifest_fd: int, progress_fd: int) -> list[str]:
    return [
        sys.executable,
        "-s",
        "-m",
        "pytest",
        "-c",
        str(INI),
        "--rootdir",
        str(root),
        "--noconftest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:logging",
        "-p",
        "pytest_jsonreport.plugin",
        "-p",
        "autograder.runner.plugin",
        "--import-mode=importlib",
        "--continue-on-collection-errors",
        "-q",
        "--assert=plain",  # suites check through testing.expect; rewriting their asserts cost ~0.2 s a run without .pyc
        "--capture=no",  # nothing a test prints is kept (--json-report-omit streams): capturing only cost ~5 % of a test's time
        "--tb=native",
        "-o",
        "console_output_style=classic",
        "--json-report",
        f"--json-report-file={report}",
        "--json-report-omit",
        "log",
        "streams",
        "keywords",
        f"--ag-run={manifest_fd}:{progress_fd}",
        *test_files,
    ]


#: starts a process: (argv, *, cwd, env, log file, pass_fds) → a Popen-like handle (pid, poll,
#: wait, returncode; optionally kill_group). ``popen`` starts a fresh one; a batch forks it
#: from its preloaded process instead (preloaded_launcher.py); the Early
#: launcher uses ``os_spawn.posix_spawn`` (nothing to import first).
Spawn = Callable[..., "subprocess.Popen"]


def popen(argv: list[str], *, cwd: Path, env: dict[str, str], log, pass_fds: tuple[int, ...]) -> subprocess.Popen:
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        pass_fds=pass_fds,
        start_new_session=True,
    )


def new_run_dir() -> Path:
    """A fresh run folder: ``private/`` (report, log; the grader's only) and ``scratch/``
    (the workers'); os_spawn.new_run_dir."""
    return Path(os_spawn.new_run_dir())


class TrustedProcess:
    """The trusted pytest process of one grading run and its run folder (``private/``: report
    and log; ``scratch/``: the workers'). Made by a launcher (launch.py), waiting for its
    manifest; ``runner.grade.grade`` takes it (``taken``), or ``release`` stops it and removes
    the folder."""

    def __init__(self, plan: Plan, run_dir: Path, proc, manifest_write: int, progress_read: int, log_fh) -> None:
        self.plan, self.run_dir, self.proc = plan, run_dir, proc
        self._manifest_write, self._progress_read, self._log_fh = manifest_write, progress_read, log_fh
        self.log, self.report = log_path(run_dir), report_path(run_dir)
        self.taken = False

    def send(self, data: bytes, close: bool) -> None:
        """Write ``data`` on the manifest pipe (and close it: the manifest is the last thing sent)."""
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._manifest_write, view) :]
        except BrokenPipeError:
            pass  # the process died early; wait() reports it
        finally:
            if close:
                os.close(self._manifest_write)
                self._manifest_write = -1

    def send_manifest(self, manifest: dict) -> None:
        self.send(json.dumps(manifest).encode(), close=True)

    def abort(self) -> None:
        """Stop the process (the run folder stays: its owner removes it); once is enough."""
        stop(self.proc, self._manifest_write, self._progress_read, self._log_fh)
        self._manifest_write = self._progress_read = -1

    def release(self) -> None:
        """Stop the process and remove its folder, unless a run took them."""
        if not self.taken:
            self.taken = True
            self.abort()
            remove_run_dir(self.run_dir)

    def wait(self, timeout: float, on_event: Callable[[dict], None] | None = None) -> Outcome:
        result = Outcome(returncode=None)
        deadline = time.monotonic() + timeout
        buffer = b""
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    result.timed_out = True
                    _kill(self.proc)
                    break
                ready, _, _ = select.select([self._progress_read], [], [], min(remaining, 0.5))
                if ready:
                    chunk = os.read(self._progress_read, 65536)
                    if not chunk:
                        break  # the child closed the pipe: it is finishing
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        try:
                            event = json.loads(line)
                        except ValueError:
                            continue
                        result.events.append(event)
                        if on_event:
                            on_event(event)
                elif self.proc.poll() is not None:
                    break
            done = next((e for e in result.events if e.get("event") == "done"), None)
            if not result.timed_out and done is not None and type(done.get("exitstatus")) is int:
                # The run is over — report written, sandbox stopped, log flushed, then the progress
                # pipe closed — and the process only exits now, with this status (os._exit). Its exit,
                # the kernel freeing a process with torch (~50 ms), overlaps our scoring and output.
                result.returncode = done["exitstatus"]
                _reap_in_background(self.proc)
            elif not result.timed_out:
                try:
                    self.proc.wait(timeout=max(deadline - time.monotonic(), 1))
                except subprocess.TimeoutExpired:
                    result.timed_out = True
                    _kill(self.proc)
        except BaseException:
            _kill(self.proc)
            raise
        finally:
            os.close(self._progress_read)
            self._progress_read = -1  # an abort after an interrupt here closes nothing twice
            self._log_fh.close()
        if result.returncode is None:
            result.returncode = self.proc.returncode
        try:
            result.log_tail = self.log.read_bytes()[-4000:].decode("utf-8", "replace")
        except OSError:
            pass
        return result


def start(plan: Plan, spawn: Spawn) -> TrustedProcess:
    """Start ``command`` for ``plan`` with ``spawn`` in a fresh run folder."""
    run_dir = new_run_dir()
    try:
        proc, manifest_write, progress_read, log_fh, _ = spawn_piped(
            run_dir,
            lambda manifest_fd, progress_fd: command(
                plan.root, list(plan.test_files), report_path(run_dir), manifest_fd, progress_fd
            ),
            spawn,
            cwd=plan.root,
            env=environment(plan.root, plan.suites_dir),
        )
    except BaseException:
        remove_run_dir(run_dir)
        raise
    return TrustedProcess(plan, run_dir, proc, manifest_write, progress_read, log_fh)


def log_path(run_dir: Path) -> Path:
    return run_dir.joinpath(*os_spawn.LOG)


def report_path(run_dir: Path) -> Path:
    return run_dir.joinpath(*os_spawn.REPORT)


def remove_run_dir(path: Path) -> None:
    """Remove a run folder, whatever a worker left in it (read-only folders, any depth:
    sandbox/tree.py), once no compile-ahead writes in it (bytecode.py)."""
    from ...sandbox.tree import remove_tree
    from . import bytecode

    bytecode.stop_under(str(path))
    remove_tree(path)
    os_spawn.let_go(path)


def stop(proc: subprocess.Popen, manifest_write: int, progress_read: int, log_fh) -> None:
    """Close our ends of the process's pipes (a process still waiting for its manifest reads
    EOF and exits; the kill makes sure) and its log."""
    if manifest_write >= 0:
        os.close(manifest_write)
    _kill(proc)
    if progress_read >= 0:  # -1: closed already (``wait`` closes it however it ends)
        os.close(progress_read)
    log_fh.close()


def _reap_in_background(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Wait for ``proc``'s exit in a thread of its own — not a daemon: the interpreter's exit
    joins it, so the command line never ends before the process it started — and kill it if
    it has not exited within ``timeout``."""

    def reap() -> None:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)

    threading.Thread(target=reap, name="autograder-reap", daemon=False).start()


def _kill(proc: subprocess.Popen) -> None:
    kill_group = getattr(proc, "kill_group", None)  # a forked run: its parent kills it (no pid-reuse race)
    try:
        kill_group() if kill_group is not None else os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
