"""Run the trusted pytest process and follow its progress.

The command line is built so that nothing from a submission or the environment can
configure the grading run: an explicit ini (``-c``), ``--noconftest``, plugin autoload
disabled with the two plugins we need loaded by name, no cache provider, and a scrubbed
environment (no ``PYTEST_ADDOPTS``, a ``PYTHONPATH`` of our own). The child gets its own
session so that a hard timeout can kill it with everything it started.

The process is started *before* the submission is prepared: its ~1.3 s of imports (pytest,
torch) then overlap our preparation, and it reads the run manifest from a pipe when its
plugin configures. ``python -m autograder grade`` starts it earlier still, before the
command line has imported anything or read grading.toml (``boot``, runner/boot.py): that
process imports pytest (not torch) until it gets its pytest arguments as a header on the
same pipe — sent once grading.toml is valid — and from then on is the process ``command``
describes. (runner/process/__init__.py lists every way a trusted process starts.)
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

INI = Path(__file__).with_name("pytest.ini")
#: PYTHONDONTWRITEBYTECODE only when the caller sets it: by default the suites' bytecode (and
#: pytest's assertion-rewritten test modules) is cached in their ``__pycache__`` folders,
#: beside the sources, no more reachable from the worker than those are; recompiling the
#: suites costs ~0.4 s per run otherwise
ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT", "AUTOGRADER_PROFILE", "PYTHONDONTWRITEBYTECODE")


@dataclass
class EngineResult:
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


def environment(root: Path, suites_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ENV_KEEP or k.startswith("LC_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(root), str(suites_dir)]),
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        PYTHONHASHSEED="0",
        PYTHONNOUSERSITE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


#: starts the pytest command: (argv, cwd, env, log file, pass_fds) → a Popen-like handle
#: (pid, poll, wait, returncode; optionally kill_group). A batch forks it from a preloaded
#: process instead (autograder.instructor.batch.server); everything else about the run is the same.
Launcher = Callable[..., "subprocess.Popen"]


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
    (the workers')."""
    run_dir = Path(tempfile.mkdtemp(prefix="autograder-"))
    run_dir.chmod(0o711)
    (run_dir / "private").mkdir(mode=0o700)
    (run_dir / "scratch").mkdir(mode=0o711)
    return run_dir


@dataclass
class Booted:
    """A trusted pytest process started before the run is known (runner/boot.py): it
    imports pytest while the command line validates the config, then waits for ``Engine`` to
    send it its arguments (torch is imported after them). ``root`` is the folder it was
    started in (the autograder package's parent); a config elsewhere cannot use it."""

    run_dir: Path
    root: Path
    proc: subprocess.Popen
    manifest_write: int
    progress_read: int
    log_fh: object
    child_fds: tuple[int, int]  # its manifest and progress descriptors, as numbered in it
    taken: bool = False

    def release(self) -> None:
        """Stop it and remove its folder, unless an ``Engine`` took it."""
        if not self.taken:
            self.taken = True
            _stop(self.proc, self.manifest_write, self.progress_read, self.log_fh)
            shutil.rmtree(self.run_dir, ignore_errors=True)


def boot_root(argv: list[str]) -> Path | None:
    """The root a ``grade`` with these arguments will most likely run in — the autograder
    package's parent, when the config it reads is that folder's grading.toml — or None
    (``--help``, a config elsewhere): there a process started ahead would only be stopped
    again, having taken a core for its imports."""
    root = Path(__file__).resolve().parents[2]
    config: str | None = None
    for i, arg in enumerate(argv):
        if arg in ("-h", "--help"):
            return None
        if arg == "--config" and i + 1 < len(argv):
            config = argv[i + 1]
        elif arg.startswith("--config="):
            config = arg.split("=", 1)[1]
    if config is None:
        here = Path.cwd() / "grading.toml"
        config = str(here if here.is_file() else root / "grading.toml")
    try:
        return root if Path(config).resolve().parent == root else None
    except (OSError, RuntimeError):
        return None


def boot(root: Path | None = None) -> Booted:
    """Start the trusted pytest process of a ``grade`` that is about to be asked for, in a
    fresh run folder (see runner/boot.py)."""
    root = root if root is not None else Path(__file__).resolve().parents[2]
    run_dir = new_run_dir()
    manifest_read = progress_write = -1
    try:
        manifest_read, manifest_write = os.pipe()
        progress_read, progress_write = os.pipe()
        log_fh = open(run_dir / "private" / "pytest.log", "wb")  # noqa: SIM115 - closed by Engine.wait()/abort() or release()
        env = environment(root, root)
        env["PYTHONPATH"] = str(root)  # the suites folder is added once it is known (runner/boot.py)
        proc = popen(
            [sys.executable, "-s", "-m", "autograder.runner.boot", str(manifest_read), str(run_dir)],
            cwd=root,
            env=env,
            log=log_fh,
            pass_fds=(manifest_read, progress_write),
        )
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    finally:
        for fd in (manifest_read, progress_write):
            if fd >= 0:
                os.close(fd)  # the numbers stay valid names inside the child (pass_fds keeps them)
    return Booted(run_dir, root, proc, manifest_write, progress_read, log_fh, (manifest_read, progress_write))


class Engine:
    """The trusted pytest process of one grading run."""

    def __init__(
        self,
        root: Path,
        suites_dir: Path,
        test_files: list[str],
        report: Path,
        log: Path,
        launcher: Launcher | None = None,
        booted: Booted | None = None,
    ) -> None:
        self.log = log
        if booted is not None:  # started ahead (runner/boot.py): its arguments go first on the manifest pipe
            self.proc, self._manifest_write, self._progress_read, self._log_fh = (
                booted.proc,
                booted.manifest_write,
                booted.progress_read,
                booted.log_fh,
            )
            args = command(root, test_files, report, *booted.child_fds)[4:]  # without "python -s -m pytest"
            header = json.dumps({"args": args, "path": [str(root), str(suites_dir)]}).encode()
            self._send(struct.pack(">I", len(header)) + header, close=False)  # read by boot.read_header
            booted.taken = True
            return
        manifest_read, self._manifest_write = os.pipe()
        self._progress_read, progress_write = os.pipe()
        self._log_fh = open(log, "wb")  # noqa: SIM115 - closed in wait()/abort()
        self.proc = (launcher or popen)(
            command(root, test_files, report, manifest_read, progress_write),
            cwd=root,
            env=environment(root, suites_dir),
            log=self._log_fh,
            pass_fds=(manifest_read, progress_write),
        )
        os.close(manifest_read)
        os.close(progress_write)

    def _send(self, data: bytes, close: bool) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._manifest_write, view) :]
        except BrokenPipeError:
            pass  # the engine died early; wait() reports it
        finally:
            if close:
                os.close(self._manifest_write)
                self._manifest_write = -1

    def send_manifest(self, manifest: dict) -> None:
        self._send(json.dumps(manifest).encode(), close=True)

    def abort(self) -> None:
        _stop(self.proc, self._manifest_write, self._progress_read, self._log_fh)
        self._manifest_write = -1

    def wait(self, timeout: float, on_event: Callable[[dict], None] | None = None) -> EngineResult:
        result = EngineResult(returncode=None)
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
            if not result.timed_out:
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
            self._log_fh.close()
        result.returncode = self.proc.returncode
        try:
            result.log_tail = self.log.read_bytes()[-4000:].decode("utf-8", "replace")
        except OSError:
            pass
        return result


def _stop(proc: subprocess.Popen, manifest_write: int, progress_read: int, log_fh) -> None:
    """Close our ends of the process's pipes (a process still waiting for its manifest reads
    EOF and exits; the kill makes sure) and its log."""
    if manifest_write >= 0:
        os.close(manifest_write)
    _kill(proc)
    os.close(progress_read)
    log_fh.close()


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
