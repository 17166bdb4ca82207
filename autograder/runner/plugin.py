"""The pytest plugin of a grading run (``-p autograder.runner.plugin``).

It runs in the trusted pytest process. At ``pytest_configure`` — before a single test
module is collected — it starts the sandbox's fork server, so workers inherit an
imported torch and nothing else of ours. It provides the fixtures suites use (``sub``,
``seed``, ``rng``, ``credit``, ``ref``) and writes everything a renderer will ever need
into the pytest-json-report: per test the verdict's facts (feedback, hints, partial
credit, seed, what the code printed), per run the seeds, suite hash, versions and the
sandbox's protections. The report is the only thing the grader reads afterwards.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
import torch  # noqa: F401 - imported before the fork server starts, so workers inherit it
import torch.nn.functional  # noqa: F401

from ..feedback import hints as hint_catalogue
from ..sandbox import probes as _probes  # noqa: F401 - preloaded for the workers
from ..sandbox import worker as _worker  # noqa: F401 - preloaded for the workers
from ..sandbox import zygote
from ..sandbox.client import Sandbox
from ..sandbox.confine import set_dumpable
from ..sandbox.spec import WorkerSpec
from ..testing import expect
from ..testing.credit import Credit
from ..testing.failures import CheckFailed, SubmissionError
from ..testing.remote import ModuleInfo, Runtime, Submission

_PRELOAD = ("math", "typing", "functools", "itertools", "dataclasses", "collections", "numbers", "warnings", "einops", "numpy", "torch.func", "torch.autograd.functional")


def _start_server_early() -> tuple[int, object] | None:
    """In a grading run, fork the sandbox's fork server as soon as this plugin is imported
    (torch imported, nothing computed, no test collected): its warm-up then overlaps the
    rest of pytest's start-up instead of delaying the first test."""
    if not any(arg.startswith("--ag-run") for arg in sys.argv):
        return None
    for name in _PRELOAD:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - optional conveniences for submissions
            pass
    set_dumpable(False)  # same-uid processes cannot read our memory via /proc
    server = zygote.start()
    # The trusted side's tensors are tiny: one intra-op thread avoids stalls of several ms
    # per op on a loaded machine (and the fork server is already forked, so it is unaffected).
    torch.set_num_threads(1)
    return server


_EARLY_SERVER = _start_server_early()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autograder")
    group.addoption("--ag-run", default=None, help="MANIFEST_FD:PROGRESS_FD, set by `python -m autograder grade`")


class GradingSession:
    def __init__(self, manifest: dict) -> None:
        self.manifest = manifest
        self.seed: int = manifest["seed"]
        self.tests: dict[str, dict] = manifest["tests"]
        self.hints = hint_catalogue.load_catalogue(Path(manifest["suites_dir"]))
        self.solutions_dir = Path(manifest["solutions_dir"])
        self.progress = None
        limits = manifest["limits"]
        modules = {
            name: ModuleInfo(
                name=name,
                display_path=info["display_path"],
                copy_path=Path(info["copy_path"]) if info.get("copy_path") else None,
                problem=info.get("problem"),
                problem_line=info.get("problem_line"),
            )
            for name, info in manifest["modules"].items()
        }
        self.sandbox = Sandbox(
            WorkerSpec.from_dict(manifest["worker"]),
            start_timeout=limits["worker_start_timeout_s"],
            max_reply_bytes=limits["max_result_mib"] << 20,
            server=_EARLY_SERVER,
        )
        self.sandbox.preload(manifest.get("preload", []))
        self.runtime = Runtime(
            sandbox=self.sandbox,
            modules=modules,
            call_timeout=limits["call_timeout_s"],
            budget_deadline=time.monotonic() + limits["run_timeout_s"],
            importable={name: Path(path) for name, path in (manifest.get("helpers") or {}).items()},
            skill_time=limits.get("skill_time_s", float("inf")),
        )
        self.reference_cache: dict[str, Any] = {}

    def emit(self, event: dict) -> None:
        if self.progress is not None:
            try:
                self.progress.write(json.dumps(event) + "\n")
            except OSError:
                self.progress = None

    def test_seed(self, nodeid: str) -> int:
        digest = hashlib.sha256(f"{self.seed}:{nodeid}".encode()).digest()
        return int.from_bytes(digest[:8], "little") >> 1

    def close(self) -> None:
        self.sandbox.close()
        if self.progress is not None:
            self.progress.close()


def _session(config: pytest.Config) -> GradingSession:
    session = getattr(config, "_autograder", None)
    if session is None:
        raise RuntimeError("these fixtures only exist in a grading run (python -m autograder grade)")
    return session


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("--ag-run")
    if not option:
        return
    manifest_fd, progress_fd = (int(v) for v in option.split(":"))
    with os.fdopen(manifest_fd, "rb") as fh:  # blocks until the parent has prepared the run
        data = fh.read()
    if not data:
        raise pytest.UsageError("the grader stopped before sending the run manifest")
    grading = GradingSession(json.loads(data))
    grading.progress = os.fdopen(progress_fd, "w", buffering=1)
    config._autograder = grading  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    session = getattr(config, "_autograder", None)
    if session is not None:
        session.close()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The JSON report is written by now (its plugin's sessionfinish ran first). Tell the
    parent, stop the sandbox, and leave without tearing torch down (~0.3 s): nothing after
    this point can change a result."""
    grading = getattr(session.config, "_autograder", None)
    if grading is None:
        return
    profiler = getattr(grading, "profiler", None)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(os.environ["AUTOGRADER_PROFILE"])
    grading.emit({"event": "done", "exitstatus": int(exitstatus)})
    grading.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(exitstatus))


def pytest_collection_finish(session: pytest.Session) -> None:
    grading = getattr(session.config, "_autograder", None)
    if grading is not None and os.environ.get("AUTOGRADER_PROFILE"):
        # suite authors: AUTOGRADER_PROFILE=out.prof profiles the trusted side of the tests
        import cProfile

        grading.profiler = cProfile.Profile()
        grading.profiler.enable()
    if grading is not None:
        grading.emit({"event": "collected", "count": len(session.items)})
        grading.sandbox.prefork()


# --------------------------------------------------------------------------- fixtures
@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed: derived from the run's seed and the test id, so reruns repeat."""
    return _session(request.config).test_seed(request.node.nodeid)


@pytest.fixture
def rng(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.fixture
def credit(request: pytest.FixtureRequest) -> Credit:
    value = Credit()
    request.node._ag_credit = value
    return value


@pytest.fixture
def sub(request: pytest.FixtureRequest):
    grading = _session(request.config)
    submission = Submission(grading.runtime)
    request.node._ag_submission = submission
    yield submission
    submission.close()
    grading.sandbox.prefork()


class _Reference:
    """The instructor's reference modules, imported in the trusted process only."""

    def __init__(self, grading: GradingSession) -> None:
        self._grading = grading

    def __getattr__(self, name: str) -> Any:
        cache = self._grading.reference_cache
        if name not in cache:
            path = self._grading.solutions_dir / f"{name}.py"
            spec = importlib.util.spec_from_file_location(f"_autograder_reference_{name}", path)
            if spec is None or not path.is_file():
                raise RuntimeError(f"reference solution {path} is missing")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            cache[name] = module
        return cache[name]


@pytest.fixture
def ref(request: pytest.FixtureRequest) -> _Reference:
    grading = _session(request.config)
    info = grading.tests.get(request.node.nodeid, {})
    if info.get("visibility") != "hidden":
        raise RuntimeError("visible tests ship to students without solutions/: they must not use the `ref` fixture")
    return _Reference(grading)


@pytest.fixture(autouse=True)
def _seed_global_rng(request: pytest.FixtureRequest) -> None:
    expect.reset_matches()  # the hint rule counts signature matches per test
    grading = getattr(request.config, "_autograder", None)
    if grading is not None:
        torch.default_generator.manual_seed(grading.test_seed(request.node.nodeid))  # CPU only: cheap


# --------------------------------------------------------------------------- report
def _suite_traceback(exc: BaseException) -> str:
    """The grader error's traceback, without pytest's and pluggy's own frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "site-packages" not in f.filename]
    lines = traceback.format_list(frames[-8:]) + traceback.format_exception_only(type(exc), exc)
    return "Traceback (most recent call last):\n" + "".join(lines)[-6000:]


def _classify(item: pytest.Item, call: pytest.CallInfo) -> dict:
    excinfo = call.excinfo
    if excinfo is None:
        return {"kind": "passed"}
    exc = excinfo.value
    if isinstance(exc, CheckFailed):
        return {"kind": "check", "feedback": exc.feedback.to_dict()}
    if isinstance(exc, SubmissionError):
        return {"kind": "submission", "feedback": exc.feedback().to_dict()}
    if excinfo.errisinstance((pytest.skip.Exception,)):
        return {"kind": "skipped", "reason": str(exc)}
    if isinstance(exc, AssertionError):  # a plain `assert` in a suite: still a failed check
        text = str(exc).split("\n")[0][:500] or "assertion failed"
        return {"kind": "check", "feedback": {"check": item.name, "problem": "values", "detail": text, "hints": [], "grids": [], "frames": [], "error": None}}
    return {
        "kind": "grader_error",
        "error": {
            "type": type(exc).__name__,
            "message": str(exc)[:2000],
            "traceback": _suite_traceback(exc),
        },
    }


def pytest_json_runtest_metadata(item: pytest.Item, call: pytest.CallInfo) -> dict | None:
    grading = getattr(item.config, "_autograder", None)
    if grading is None:
        return None
    meta: dict[str, Any] = {}
    if call.when == "setup":
        meta["seed"] = grading.test_seed(item.nodeid)
        if call.excinfo is not None:
            meta["result"] = _classify(item, call)
            if meta["result"]["kind"] not in ("check", "submission", "skipped"):
                meta["result"]["kind"] = "grader_error"
    elif call.when == "call":
        result = _classify(item, call)
        meta["result"] = result
        feedback = result.get("feedback")
        if feedback is not None:
            submission = getattr(item, "_ag_submission", None)
            named = hint_catalogue.filter_named(feedback.get("hints", []), grading.hints, expect.matched_hints(),
                                                submission.targets if submission is not None else [])
            feedback["hints"] = hint_catalogue.resolve(named, grading.hints)
        credit = getattr(item, "_ag_credit", None)
        if credit is not None and credit.outcomes:
            meta["credit"] = dict(credit.summary(), fraction=credit.fraction)
        submission = getattr(item, "_ag_submission", None)
        if submission is not None:
            meta["printed"] = submission.printed[:20]
            meta["targets"] = submission.targets[:20]
            if submission.autograd_uses:
                meta["autograd_uses"] = sorted(submission.autograd_uses)
    elif call.when == "teardown" and call.excinfo is not None:
        meta["teardown_error"] = _classify(item, call).get("error") or {"type": "error", "message": str(call.excinfo.value)[:500]}
    return meta


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # progress for the live display in the parent process
    grading = _CURRENT.get("session")
    if grading is None:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        grading.emit({"event": "test", "nodeid": report.nodeid, "outcome": report.outcome, "duration": round(report.duration, 4)})


_CURRENT: dict[str, GradingSession] = {}


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    grading = getattr(session.config, "_autograder", None)
    if grading is not None:
        _CURRENT["session"] = grading


def pytest_json_modifyreport(json_report: dict) -> None:
    grading = _CURRENT.get("session")
    if grading is None:
        return
    import pytest as _pytest

    json_report["autograder"] = {
        "seed": grading.seed,
        "seed_source": grading.manifest.get("seed_source"),
        "suite_hash": grading.manifest.get("suite_hash"),
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "pytest": _pytest.__version__,
        },
        "sandbox": grading.runtime.facts,
        "workers_started": grading.sandbox.spawned,
        "call_seconds": {module: round(seconds, 3) for module, seconds in grading.runtime.spent.items()},
    }
