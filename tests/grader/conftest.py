"""Helpers for the grader's own tests (`make test`).

`grade(...)` runs the real command line (`python -m autograder grade ...`) in a child
process, exactly as students, Gradescope and CI do, and returns the exit status, the
parsed output and both streams. Fixed seeds keep every run reproducible.

Each grading run starts torch (seconds), so a test that needs one submission in several
formats grades it once: ``grade(..., fmt="text", results=path)`` gives the text on stdout
and the JSON results (``--results``) as ``data`` from the same run, and ``rendered`` turns
those results into another format in-process (the renderers are pure functions of them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
SUBMISSIONS = ROOT / "tests" / "submissions"
CONFIG = tomllib.loads((ROOT / "grading.toml").read_text(encoding="utf-8"))
SKILLS = list(CONFIG["skills"])
TOTAL_POINTS = sum(skill["points"] for skill in CONFIG["skills"].values())  # the course as grading.toml has it
MODULES = {sid: skill["module"] for sid, skill in CONFIG["skills"].items()}
SEED = 20261129


@dataclass
class Graded:
    rc: int
    data: dict | None
    stdout: str
    stderr: str
    seconds: float
    output: Path | None = None  # the --output file (e.g. the Gradescope results.json of a run whose `data` is --results)

    def skill(self, sid: str) -> dict:
        return next(s for s in self.data["skills"] if s["id"] == sid)

    def score(self, sid: str) -> float:
        return self.skill(sid)["score"]

    def tests(self, sid: str | None = None) -> list[dict]:
        return [t for s in self.data["skills"] if sid is None or s["id"] == sid for t in s["tests"]]

    def hints(self, sid: str) -> set[str]:
        return {h["id"] for t in self.tests(sid) for h in t["hints"]}


def _warm_folder(config: pytest.Config) -> Path:
    """The run's folder for warm grading servers (``XDG_RUNTIME_DIR``): the controller's
    temporary folder, which every xdist worker's lies under."""
    return config._tmp_path_factory.getbasetemp() / "runtime"  # type: ignore[attr-defined]


@pytest.hookimpl(trylast=True)  # after the tmp_path plugin's, which makes the temporary folder
def pytest_configure(config: pytest.Config) -> None:
    """One warm grading server for this repository (runner/process/warm.py), started by the
    controller before the workers: each ``grade(...)`` of ``ROOT`` forks its trusted process
    from it instead of importing torch again (a grade of the red-team or hints tests ~3.5 CPU s
    less). A grade started before it listens starts its own, as the first ``make grade`` of a
    student's session does. Servers for other roots (releases, toy courses) are never started:
    ``grade`` leaves one only where its terminal is interactive. ``AUTOGRADER_WARM=0`` in the
    environment of ``make test`` turns it off (every grade cold), and a test that checks the
    cold start itself (test_launch.py) passes it."""
    if os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("AUTOGRADER_WARM", "").strip() in ("0", "off"):
        return
    runtime = _warm_folder(config)
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # the workers inherit it
    from autograder.config import load
    from autograder.runner.grade import preload_modules
    from autograder.runner.process import warm

    config = load(ROOT / "grading.toml")
    if warm.allowed(config):
        warm.start(config, preload_modules(config))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the warm server ``pytest_configure`` started, and any a test's nbgrader grade left
    in this run's folder (the tests' own grades are not interactive and leave none). SIGTERM
    lets each remove its socket and bytecode folder."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import subprocess

    from autograder.runner.process import warm

    for proc in warm.STARTED:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # and those the tests' nbgrader grades left (ScoreFromGrader asks for one: a class is
    # graded one submission after another), in this run's folder
    if os.environ.get("XDG_RUNTIME_DIR") == str(_warm_folder(config)):
        warm.stop_all()


def grade(
    submission: Path | str | None,
    *args: str,
    fmt: str = "json",
    output: Path | None = None,
    config: Path | None = None,
    seed: int | None = SEED,
    timeout: float = 300,
    env: dict | None = None,
    cwd: Path = ROOT,
    results: Path | None = None,
    python: Path | str = sys.executable,
) -> Graded:
    import time

    out = output
    cmd = [str(python), "-m", "autograder", "grade"]
    if submission is not None:
        cmd.append(str(submission))
    cmd += ["--format", fmt, "--no-progress", *args]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    if config is not None:
        cmd += ["--config", str(config)]
    if out is not None:
        cmd += ["--output", str(out)]
    if results is not None:
        cmd += ["--results", str(results)]
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)  # `-m autograder` from any folder
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    seconds = time.monotonic() - start
    data = None
    text = out.read_text(encoding="utf-8") if out is not None and out.is_file() else proc.stdout
    if results is not None:
        text = results.read_text(encoding="utf-8") if results.is_file() else ""
    if (results is not None or fmt in ("json", "gradescope")) and text.strip():
        try:
            data = json.loads(text)
        except ValueError:
            data = None
    return Graded(proc.returncode, data, proc.stdout, proc.stderr, seconds, out)


def rendered(graded: Graded, fmt: str) -> str:
    """The JSON results of a run in another format, rendered in-process (markdown, github,
    gradescope: what `grade --format fmt` writes from the same results)."""
    from autograder.core.results import from_dict
    from autograder.renderers import render

    return render(from_dict(graded.data), fmt, None)


def make_submission(path: Path, modules: dict[str, str], base: Path | None = SOLUTIONS) -> Path:
    """A submission folder: the base's modules, with some replaced by the given sources."""
    path.mkdir(parents=True, exist_ok=True)
    if base is not None:
        for module in MODULES.values():
            if (base / module).exists():
                shutil.copyfile(base / module, path / module)
    for name, source in modules.items():
        (path / name).write_text(source, encoding="utf-8")
    return path


def write_config(path: Path, text_edits: dict[str, str] | None = None, **limits: float) -> Path:
    """A copy of grading.toml that points at this repository, with limits overridden."""
    text = (ROOT / "grading.toml").read_text(encoding="utf-8")
    text = text.replace("[grader]\n", f'[grader]\nroot = "{ROOT}"\n', 1)
    for key, value in limits.items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.split("=")[0].strip() == key:
                lines[i] = f"{key} = {value}"
        text = "\n".join(lines) + "\n"
    for old, new in (text_edits or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def fast_config(tmp_path_factory) -> Path:
    """A short wall-clock backstop, so code that sleeps costs 1.5 s a call instead of 10, and
    a CPU floor of 0.4 s a call instead of grading.toml's 0.1: the hostile attacks that do
    real work before their trap (printing 100 MB, building deep folder trees, sending 50 MB
    replies) need more than 0.1 CPU s on a busy machine to reach it, and the red-team tests
    check that the trap, not a CPU limit, stopped them. Every other CPU limit is grading.toml's
    own, per function (docs/time-limits.md), ≥ 4× the costliest call of the reference and the
    slow styles, so no correct student of these tests reads as slow; the wall-clock backstop
    may (a busy machine), which the tests allow for (test_red_team.py says_unless_busy)."""
    return write_config(tmp_path_factory.mktemp("config") / "grading.toml", call_timeout_s=1.5, call_cpu_floor_s=0.4)


def once_per_run(tmp_path_factory, name: str, compute) -> Graded:
    """``compute(folder)`` once per test run, however many xdist workers ask: the first one
    grades (under a lock in the run's shared temporary folder), the others read its result
    (pytest-xdist's own recipe for session fixtures, with fcntl instead of filelock). A
    session fixture alone would grade once per worker."""
    import fcntl

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return compute(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent / f"once-{name}"  # the run's folder, above each worker's
    cached = shared / "graded.json"
    with open(shared.with_name(f"once-{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if cached.is_file():
            fields = json.loads(cached.read_text(encoding="utf-8"))
            return Graded(**{**fields, "output": Path(fields["output"]) if fields["output"] else None})
        shared.mkdir()
        graded = compute(shared)
        fields = {**graded.__dict__, "output": str(graded.output) if graded.output else None}
        cached.write_text(json.dumps(fields), encoding="utf-8")
        return graded


def graded_class(tmp_path_factory, name: str, build, *args: str, jobs: int = 2) -> Graded:
    """A class graded once per test run by ``python -m autograder batch`` (the real command
    line, --seed SEED): ``build(folder)`` writes one subfolder per student. ``output`` is the
    batch's --out folder; ``student(graded, key)`` reads one student's results. Many
    submissions each need a grading run; one batch imports torch and collects the suites once
    for all of them (a forked preloaded process per student) instead of once per run. Call it
    from a session fixture (``once_per_run``)."""

    def compute(folder: Path) -> Graded:
        import time

        subs = folder / "class"
        subs.mkdir()
        build(subs)
        out = folder / "out"
        cmd = [sys.executable, "-m", "autograder", "batch", str(subs), "--out", str(out), "--seed", str(SEED)]
        cmd += ["--jobs", str(jobs), "--no-progress", *args]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800, env=env)
        return Graded(proc.returncode, None, proc.stdout, proc.stderr, time.monotonic() - start, out)

    return once_per_run(tmp_path_factory, name, compute)


def student(graded: Graded, key: str) -> Graded:
    """One student of ``graded_class``: its results.json as ``data`` (None when absent)."""
    assert graded.rc == 0, graded.stderr[-2000:]
    path = graded.output / key / "results.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    return Graded(graded.rc, data, graded.stdout, graded.stderr, graded.seconds, path)


def _graded_for_gradescope(submission: Path):
    return lambda folder: grade(
        submission, "--reveal-hidden", fmt="gradescope", output=folder / "gradescope.json", results=folder / "results.json"
    )


@pytest.fixture(scope="session")
def solutions_graded(tmp_path_factory) -> Graded:
    """The reference graded once per run: ``data`` its JSON results, ``output`` its Gradescope results."""
    return once_per_run(tmp_path_factory, "solutions", _graded_for_gradescope(SOLUTIONS))


@pytest.fixture(scope="session")
def stubs_graded(tmp_path_factory) -> Graded:
    """The stubs graded once per run: ``data`` its JSON results, ``output`` its Gradescope results."""
    return once_per_run(tmp_path_factory, "stubs", _graded_for_gradescope(EXERCISES))


def no_leftover_processes() -> list[str]:
    """Processes of a grading run that outlived it (workers, the fork server)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "--ag-run" in cmd or cmd.startswith("autograder-worker"):  # a worker shows only its own name
            out.append(f"{entry}: {cmd[:120]}")
    return out
