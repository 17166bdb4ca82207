"""The report hooks: everything a renderer will ever need goes into the pytest-json-report —
per test the verdict's facts (feedback, hints, partial credit, seed, what the code printed),
per run the seeds, suite hash, versions and the sandbox's protections — and progress events
go to the parent. The report is the only thing the grader reads afterwards.

The hooks are methods of ``GradingHooks``, a plugin object registered (with its session)
only in a grading run, as pytest's own plugins are: without ``--ag-run`` none of them runs."""

from __future__ import annotations

import gc
import os
import sys
import traceback
from typing import Any

import pytest
import torch

from ...core import timeline
from ...core.feedback import hints as hint_catalogue
from ...testing import expect
from ...testing.failures import CheckFailed, SubmissionError
from ..process import split
from .keys import CREDIT, GRADING, SUBMISSION
from .session import GradingSession


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
        return {
            "kind": "check",
            "feedback": {
                "check": item.name,
                "problem": "values",
                "detail": text,
                "hints": [],
                "grids": [],
                "frames": [],
                "error": None,
            },
        }
    return {
        "kind": "grader_error",
        "error": {
            "type": type(exc).__name__,
            "message": str(exc)[:2000],
            "traceback": _suite_traceback(exc),
        },
    }


class GradingHooks:
    """The report hooks of one grading run (registered as ``NAME`` by the plugin's
    ``pytest_configure``, the session also in ``config.stash[GRADING]``)."""

    NAME = "autograder-grading"

    def __init__(self, grading: GradingSession) -> None:
        self.grading = grading

    @classmethod
    def register(cls, config: pytest.Config, grading: GradingSession) -> GradingHooks:
        config.stash[GRADING] = grading
        hooks = cls(grading)
        config.pluginmanager.register(hooks, cls.NAME)
        return hooks

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        del config.stash[GRADING]
        self.grading.close()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """With two cores, half of the skills run in a second trusted process (runner/process/split.py)."""
        return split.runtestloop(session, self.grading)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Every visible test runs before any hidden one (a stable sort: each suite keeps its
        order). Students see a visible test's output where a hidden test shows only its name
        and score; a visible test run after a hidden one could read off the wall clock how long
        that one took, and so a fact of its inputs (red team R-CZ). runner/process/split.py
        keeps the order across its two processes."""
        items[:] = sorted(items, key=lambda item: self.grading.group(item.nodeid)[1])

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        timeline.mark("trusted: tests collected")
        grading = self.grading
        if os.environ.get("AUTOGRADER_PROFILE"):
            # suite authors: AUTOGRADER_PROFILE=out.prof profiles the trusted side of the tests
            import cProfile

            grading.profiler = cProfile.Profile()
            grading.profiler.enable()
        gc.freeze()  # what start-up and collection made lives for the run: never walked again
        gc.enable()
        grading.emit({"event": "collected", "count": len(session.items)})
        grading.plan(session.items)
        grading.sandbox.prefork(grading.spares_at_start())

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport | None:
        """A failure the suites classified (a check that found the answer wrong, a call that
        gave none) is reported by its facts, which the metadata carries (``_classify``):
        pytest's own report would format the trusted side's traceback for it, source lines
        and caret anchors included (a stub's whole grade took 1.23× the CPU with it,
        docs/PERFORMANCE.md), only for nothing to read it. Its text here is the exception's line. Anything else (a
        grader error, a skip, a setup or teardown failure) gets pytest's report, traceback
        and all (None: pytest's own hook makes it)."""
        excinfo = call.excinfo
        if excinfo is None or call.when != "call" or not isinstance(excinfo.value, (CheckFailed, SubmissionError)):
            return None
        exc = excinfo.value
        return pytest.TestReport(
            item.nodeid,
            item.location,
            dict.fromkeys(item.keywords, 1),
            "failed",
            f"{type(exc).__name__}: {exc}"[:4000],
            call.when,
            [(f"Captured {key} {when}", content) for when, key, content in item._report_sections],
            call.duration,
            call.start,
            call.stop,
            user_properties=item.user_properties,
        )

    def pytest_json_runtest_metadata(self, item: pytest.Item, call: pytest.CallInfo) -> dict | None:
        grading = self.grading
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
                submission = item.stash.get(SUBMISSION, None)
                named = hint_catalogue.filter_named(
                    feedback.get("hints", []),
                    grading.hints,
                    expect.matched_hints(),
                    submission.targets if submission is not None else [],
                )
                feedback["hints"] = hint_catalogue.resolve(named, grading.hints)
            credit = item.stash.get(CREDIT, None)
            if credit is not None and credit.outcomes:
                meta["credit"] = dict(credit.summary(), fraction=credit.fraction)
            submission = item.stash.get(SUBMISSION, None)
            if submission is not None:
                meta["printed"] = submission.printed[:20]
                meta["targets"] = submission.targets[:20]
                if submission.autograd_uses:
                    meta["autograd_uses"] = sorted(submission.autograd_uses)
        elif call.when == "teardown" and call.excinfo is not None:
            meta["teardown_error"] = _classify(item, call).get("error") or {
                "type": "error",
                "message": str(call.excinfo.value)[:500],
            }
        return meta

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        grading = self.grading
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            grading.emit(
                {"event": "test", "nodeid": report.nodeid, "outcome": report.outcome, "duration": round(report.duration, 4)}
            )

    def pytest_json_modifyreport(self, json_report: dict) -> None:
        grading = self.grading
        json_report["autograder"] = {
            "seed": grading.seed,
            "seed_source": grading.manifest.seed_source,
            "suite_hash": grading.manifest.suite_hash,
            "visible_suite_hash": grading.manifest.visible_suite_hash,
            "versions": {
                "python": sys.version.split()[0],
                "torch": torch.__version__,
                "pytest": pytest.__version__,
            },
            "sandbox": grading.runtime.facts,
            "trusted_processes": grading.trusted_processes,
            "workers_started": grading.sandbox.spawned,
            "workers_reused": grading.sandbox.reused,
            "call_seconds": {module: round(seconds, 3) for module, seconds in grading.runtime.spent.items()},
            "call_cpu_seconds": {module: round(seconds, 3) for module, seconds in grading.runtime.cpu_spent.items()},
            "slowest_call_cpu_seconds": {module: round(seconds, 3) for module, seconds in grading.runtime.cpu_slowest.items()},
            "slowest_call_cpu_seconds_by_target": {
                module: {target: round(seconds, 6) for target, seconds in targets.items()}
                for module, targets in grading.runtime.cpu_slowest_by_target.items()
            },
        }

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """The JSON report is written by now (its plugin's sessionfinish ran first). Tell the
        parent, stop the sandbox, and leave without tearing torch down (~0.3 s): nothing after
        this point can change a result."""
        timeline.mark("trusted: tests done")
        grading = self.grading
        if grading.profiler is not None:
            grading.profiler.disable()
            grading.profiler.dump_stats(os.environ["AUTOGRADER_PROFILE"])
        sys.stdout.flush()  # the log is complete before the parent hears "done"
        sys.stderr.flush()
        grading.emit({"event": "done", "exitstatus": int(exitstatus)})
        grading.close(exiting=True)  # stops the sandbox, then closes the progress pipe: the parent goes on
        if grading.run_dir:
            # a grade killed just after "done" cannot remove its run folder (a copy of the
            # submission): removed here when nobody holds the folder's lock any more; a live
            # grade holds it and removes the folder itself once it has read the report
            from ..process import os_spawn

            os_spawn.remove_if_abandoned(grading.run_dir)
        os._exit(int(exitstatus))
