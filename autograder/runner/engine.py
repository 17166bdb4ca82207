"""Run the trusted pytest process and follow its progress.

The command line is built so that nothing from a submission or the environment can
configure the grading run: an explicit ini (``-c``), ``--noconftest``, plugin autoload
disabled with the two plugins we need loaded by name, no cache provider, and a scrubbed
environment (no ``PYTEST_ADDOPTS``, a ``PYTHONPATH`` of our own). The child gets its own
session so that a hard timeout can kill it with everything it started.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

INI = Path(__file__).with_name("pytest.ini")
ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT")


@dataclass
class EngineResult:
    returncode: int | None
    timed_out: bool = False
    log_tail: str = ""
    events: list[dict] = field(default_factory=list)


def command(root: Path, manifest: Path, report: Path, test_files: list[str]) -> list[str]:
    return [
        sys.executable, "-s", "-m", "pytest",
        "-c", str(INI), "--rootdir", str(root), "--noconftest",
        "-p", "no:cacheprovider", "-p", "pytest_jsonreport.plugin", "-p", "autograder.runner.plugin",
        "--import-mode=importlib", "-q", "--tb=short", "-o", "console_output_style=classic",
        "--json-report", f"--json-report-file={report}", "--json-report-omit", "log", "streams", "keywords",
        f"--ag-run={manifest}",
        *test_files,
    ]


def environment(root: Path, suites_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ENV_KEEP or k.startswith("LC_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(root), str(suites_dir)]),
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        PYTHONNOUSERSITE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def run(
    root: Path,
    suites_dir: Path,
    manifest_path: Path,
    manifest: dict,
    report: Path,
    log: Path,
    test_files: list[str],
    timeout: float,
    on_event: Callable[[dict], None] | None = None,
) -> EngineResult:
    read_fd, write_fd = os.pipe()
    manifest = dict(manifest, progress_fd=write_fd)
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    result = EngineResult(returncode=None)
    with open(log, "wb") as log_fh:
        proc = subprocess.Popen(
            command(root, manifest_path, report, test_files),
            cwd=root, env=environment(root, suites_dir), stdin=subprocess.DEVNULL, stdout=log_fh, stderr=subprocess.STDOUT,
            pass_fds=(write_fd,), start_new_session=True,
        )
        os.close(write_fd)
        deadline = time.monotonic() + timeout
        buffer = b""
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    result.timed_out = True
                    _kill(proc)
                    break
                ready, _, _ = select.select([read_fd], [], [], min(remaining, 0.5))
                if ready:
                    chunk = os.read(read_fd, 65536)
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
                elif proc.poll() is not None:
                    break
            if not result.timed_out:
                try:
                    proc.wait(timeout=max(deadline - time.monotonic(), 1))
                except subprocess.TimeoutExpired:
                    result.timed_out = True
                    _kill(proc)
        except BaseException:
            _kill(proc)
            raise
        finally:
            os.close(read_fd)
    result.returncode = proc.returncode
    try:
        result.log_tail = log.read_bytes()[-4000:].decode("utf-8", "replace")
    except OSError:
        pass
    return result


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
