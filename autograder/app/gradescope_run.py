"""The Python half of the Gradescope bundle's ``run_autograder``.

    python -m autograder.app.gradescope_run --root /autograder --budget 480

Finds the exercise modules in ``$ROOT/submission`` (see ``upload``), grades them
with ``python -m autograder grade`` (visible + hidden suites, the bundle's grading.toml)
in a child process, and always leaves ``$ROOT/results/results.json``: when the upload
cannot be graded, when the run passes its time budget (it is interrupted, then killed) or
when the grader breaks, every test scores 0 and the top of the results says why. The
results carry the release (version, commit, suite hash) from the bundle's release.json.

This process is a child subreaper: whatever the grading run leaves behind (the trusted
pytest process starts its own session) is re-parented here and killed before it exits.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..config import Config, ConfigError, load
from ..core.results import dumps, write_atomic
from ..renderers import render
from ..runner import scoring
from ..sandbox.tree import remove_tree
from .upload import UploadError, locate

PR_SET_CHILD_SUBREAPER = 36
INTERRUPT_GRACE_S = 15.0  # after SIGINT the grader still writes results for what it has


def _log(message: str) -> None:  # goes to Gradescope's stdout: instructors only
    print(f"[run_autograder] {message}", flush=True)


def _become_subreaper() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children.get(child, []))
    return out


def _reap_ended(grace: float) -> None:
    """Reap the children that end within ``grace`` seconds (returns once none is left): a
    grading run's processes are exiting when its results come back (the trusted process and
    the fork server each take ~50 ms to be freed), and are not left behind."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child left
        if pid == 0:
            time.sleep(0.01)


def _kill_leftovers() -> int:
    """Kill and reap every process still below this one once the run's own have ended; how
    many there were."""
    _reap_ended(0.5)
    left = _descendants(os.getpid())
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _reap_ended(5)
    return len(left)


def release_info(source: Path) -> dict:
    try:
        data = json.loads((source / "release.json").read_text(encoding="utf-8"))
        return {k: data.get(k) for k in ("version", "commit", "suite_hash", "visible_suite_hash")}
    except (OSError, ValueError, AttributeError):
        return {"version": None, "commit": None, "suite_hash": None, "visible_suite_hash": None}


def _stamp(data: dict, release: dict, note: str | None) -> dict:
    """Add the release to the results; the student sees which release graded them."""
    extra = data.setdefault("extra_data", {})
    extra["release"] = release
    if note:
        extra["upload"] = note
    version = release.get("version") or "unknown"
    commit = (release.get("commit") or "unknown")[:12]
    data["output"] = (data.get("output") or "").rstrip(
        "\n"
    ) + f"\n\n_Graded by autograder release {version} (commit {commit})._\n"
    return data


def error_results(config: Config | None, message: str, elapsed: float) -> dict:
    """Every configured test at 0 with the reason (or, without a config, no tests)."""
    results = scoring.error_result(config, message, submission="submission", duration=elapsed)
    return json.loads(render(results, "gradescope", config))


def _valid(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("score"), (int, float)) and isinstance(data.get("tests"), list):
        return data
    return None


def _grade(folder: Path, config_path: Path, results_path: Path, timeout: float) -> tuple[int | None, str]:
    """(exit status or None when the budget ran out, what the grader said on stderr)."""
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(folder),
        "--config",
        str(config_path),
        "--format",
        "gradescope",
        "--output",
        str(results_path),
        "--no-progress",
    ]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=config_path.parent, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT)
        try:
            rc: int | None = proc.wait(timeout=max(timeout, 1.0))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # the grader stops its run and writes what it has
            try:
                proc.wait(timeout=INTERRUPT_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            rc = None
        err.seek(0)
        said = err.read().decode("utf-8", errors="replace")
    return rc, said


def run(root: Path, budget_s: float) -> int:
    started = time.monotonic()
    source = root / "source"
    results_path = root / "results" / "results.json"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    release = release_info(source)
    _log(
        f"release {release.get('version')} (commit {release.get('commit')}, suite {release.get('suite_hash')}); "
        f"budget {budget_s:g} s"
    )
    config: Config | None = None
    note = None
    work = Path(tempfile.mkdtemp(prefix="gradescope-"))
    try:
        try:
            config = load(source / "grading.toml")
        except ConfigError as exc:
            raise _Broken(f"the autograder's configuration is broken ({exc}) — please tell your instructor") from None
        modules = [s.module for s in config.skills.values()]
        try:
            folder, note = locate(root / "submission", modules, work, config.limits.max_module_kib * 1024)
        except UploadError as exc:
            raise _Broken(f"your upload cannot be graded: {exc}") from None
        _log(note)
        results_path.unlink(missing_ok=True)
        rc, said = _grade(folder, source / "grading.toml", results_path, budget_s - (time.monotonic() - started))
        if said.strip():
            _log("grader output:\n" + said.strip()[-4000:])
        data = _valid(results_path)
        if rc is None:
            raise _Broken(
                f"grading took longer than this assignment's budget of {budget_s:g} s and was stopped; "
                "make sure none of your functions loops forever or waits for input"
            )
        if data is None:
            raise _Broken(f"the grader stopped (exit status {rc}) without writing results — please tell your instructor")
        _log(f"score {data.get('score')} (grader exit status {rc})")
    except _Broken as exc:
        _log(str(exc))
        data = error_results(config, str(exc), time.monotonic() - started)
    except Exception:  # a bug of ours: still a results file that says so
        import traceback

        _log("internal error:\n" + traceback.format_exc())
        data = error_results(
            config,
            "the autograder itself failed on this submission (not your fault) — please tell your instructor",
            time.monotonic() - started,
        )
    finally:
        remove_tree(work)  # sandbox/tree.py: whatever the run left there, any depth
        killed = _kill_leftovers()
        if killed:
            _log(f"killed {killed} leftover process(es) of the grading run")
    data["execution_time"] = round(time.monotonic() - started, 3)  # the whole run, as Gradescope timed it
    write_atomic(results_path, dumps(_stamp(data, release, note)))
    return 0


class _Broken(Exception):
    """The run cannot give a score: the message is for the student."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.app.gradescope_run")
    parser.add_argument("--root", default=os.environ.get("GRADESCOPE_AUTOGRADER_ROOT", "/autograder"))
    parser.add_argument("--budget", type=float, required=True, help="seconds for the whole run")
    args = parser.parse_args(argv)
    _become_subreaper()
    return run(Path(args.root), args.budget)


if __name__ == "__main__":
    raise SystemExit(main())
