"""One grading run, end to end: config → submission copy → sandbox policy → the trusted
pytest run → report → ``Results``. Whatever happens, a ``Results`` comes out: a run that
breaks (the trusted process crashes, times out, is interrupted) gives status ``error`` or
``interrupted``, a score of 0 and the reason — never a partial pass, never nothing.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config
from ..core import escape, timeline
from ..core.results import Results, interrupted_message
from ..sandbox import zygote
from ..sandbox.spec import WorkerSpec
from . import cpu_limits, identity, scoring, seeding
from .manifest import RunManifest
from .policy import build_worker_spec
from .process import os_spawn
from .process.launch import FRESH, Launcher
from .process.trusted import Plan, TrustedProcess, remove_run_dir
from .submission import PreparedSubmission, SubmissionDirError, prepare


@dataclass
class GradeRequest:
    config: Config
    submission: str
    seed: int | None = None
    protect: list[Path] = field(default_factory=list)  # e.g. the results file's folder
    on_event: Callable[[dict], None] | None = None
    keep_report: Path | None = None
    launcher: Launcher = FRESH  # how the trusted process starts (a batch: forked from its preloaded process)
    process: TrustedProcess | None = None  # one launched ahead (``start``), used when it was planned for this config
    seed_key_file: Path | None = None  # the course key (batch, --seed-key-file); default: $AUTOGRADER_SEED_KEY_FILE
    #: False: the wall-clock limits alone (``reference-cpu`` measures the reference without the tables it writes)
    cpu_limits: bool = True
    #: this machine's speed (``cpu_limits.calibrate``) when the caller measured it already (a
    #: batch: once for many students, instead of ~0.1 CPU s each); None: measured for this run
    calibration_s: float | None = None


def suite_hash(config: Config) -> str:
    """The full suites' hash (``identity.identify(config).suite``; ``""`` where it is unknown)."""
    return identity.identify(config).suite or ""


#: imported by the fork server in every run, whatever the skills (sandbox/zygote.py)
ALWAYS_PRELOAD = set(zygote.ALWAYS_PRELOAD)


def preload_modules(config: Config) -> list[str]:
    """What a run's fork server imports before its first worker (the manifest's ``preload``),
    and what a process that forks many runs imports once for all of them (a batch's
    preloaded process, a warm server)."""
    return sorted(ALWAYS_PRELOAD | {m for skill in config.skills.values() for m in skill.preload})


def _add_run(
    manifest: RunManifest,
    config: Config,
    prepared: PreparedSubmission,
    spec: WorkerSpec,
    seed: seeding.SeedChoice,
    with_cpu_limits: bool = True,
    calibration_s: float | None = None,
) -> RunManifest:
    """The plan plus what this run decided: the submission's modules, the seed, the worker,
    the CPU-time limits (from the reference's, scaled to this machine: cpu_limits.py)."""
    if with_cpu_limits:
        run_cpu = cpu_limits.run_limits(config, calibration_s)
        manifest.limits.cpu, manifest.limits.cpu_calls = run_cpu.skills, run_cpu.calls
    manifest.skill_seconds = cpu_limits.test_seconds(config)
    manifest.modules = dict(prepared.facts)
    manifest.helpers = {
        name: info["copy_path"] for name, info in {**prepared.siblings, **prepared.helpers}.items() if info.get("copy_path")
    }
    manifest.preload = preload_modules(config)
    manifest.worker = spec
    # a --skill run names the release it is part of (release.json records that one), not its own part
    ident = identity.identify(config.selected_from or config)
    manifest.seed, manifest.seed_source = seed.seed, seed.source
    manifest.suite_hash, manifest.visible_suite_hash = ident.suite, ident.visible
    return manifest


def plan(config: Config) -> Plan:
    """What the trusted process is started with: root, suites folder, test files — a
    skill's visible suites before its hidden ones (the tests then run every visible test
    before any hidden one: ``GradingHooks.pytest_collection_modifyitems``; a worker never goes
    back from a hidden test to a visible one: sandbox.client.Sandbox)."""
    suites = {s.file: s for skill in config.skills.values() for s in skill.suites}
    files = tuple(sorted(suites, key=lambda f: (suites[f].skill, suites[f].visibility == "hidden", f)))
    return Plan(config.root, config.suites_dir, files)


def start(config: Config, launcher: Launcher = FRESH) -> TrustedProcess:
    """The trusted process for ``config``, waiting for its manifest: the command line starts
    it as soon as grading.toml is valid (never for a bad one) and checks the submission while
    it imports torch (~1.3 s). ``grade`` takes it when it was planned for the same suites;
    ``release`` stops it otherwise."""
    return launcher.launch(plan(config))


def grade(request: GradeRequest) -> Results:
    config = request.config
    started = time.monotonic()
    seed: seeding.SeedChoice | None = None
    submission_info: dict = {"path": request.submission}
    prepared: PreparedSubmission | None = None
    manifest: RunManifest | None = None  # scoring reads it and the report, nothing else

    def finish(status: str, message: str, report: dict | None) -> Results:
        results = scoring.build(
            manifest or RunManifest.plan(config),
            report,
            submission_info,
            status=status,
            message=message,
            duration=time.monotonic() - started,
        )
        if seed is not None:  # known before the run starts, so even a broken run records it
            results.seed, results.seed_source = seed.seed, seed.source
        return results

    run = _launched_for(request)
    try:
        run = run if run is not None else start(config, request.launcher)
    except KeyboardInterrupt as exc:
        return finish("interrupted", interrupted_message(exc), None)
    run.taken = True
    run_dir = run.run_dir
    private = run_dir / "private"
    scratch = run_dir / "scratch"
    live: TrustedProcess | None = run
    try:
        report_path = run.report
        manifest = RunManifest.plan(config)  # while the process starts
        try:
            prepared = prepare(request.submission, config, run_dir, world_readable=True)
        except SubmissionDirError as exc:
            live.abort()
            return finish("error", str(exc), None)
        submission_info = prepared.to_dict()
        manifest.modules = dict(prepared.facts)
        try:
            key_env = seeding.key_env(request.seed_key_file)
            seed = seeding.choose(request.seed, config.seed_mode, config.seed, prepared.content, key_env)
        except seeding.SeedKeyError as exc:
            live.abort()
            return finish("error", str(exc), None)
        spec, notes = build_worker_spec(
            config, prepared.copy_dir, scratch, protected=_protected(request, private, seeding.key_file(key_env))
        )
        live.send_manifest(_add_run(manifest, config, prepared, spec, seed, request.cpu_limits, request.calibration_s).to_dict())
        timeline.mark("command line: manifest sent")
        os_spawn.sweep_abandoned(str(run_dir.parent))  # while the run starts: what killed grades left
        outcome = live.wait(config.limits.run_timeout_s + 120, request.on_event)
        live = None
        timeline.mark("command line: run ended")
        report = _load_report(report_path)
        if request.keep_report and report_path.exists():
            shutil.copyfile(report_path, request.keep_report)
        broken = _broken(outcome, report, config)
        if broken is not None:
            return finish("error", broken, None)
        results = finish("complete", "", report)
        results.sandbox = notes + results.sandbox
        return results
    except KeyboardInterrupt as exc:
        # stopped (and waited for) before its folder goes: left running, a process that had
        # its manifest graded on into a removed folder and left one behind (CI, under load)
        if live is not None:
            live.abort()
        return finish("interrupted", interrupted_message(exc), None)
    except BaseException:
        if live is not None:
            live.abort()
        raise
    finally:
        remove_run_dir(run_dir)


def _launched_for(request: GradeRequest) -> TrustedProcess | None:
    """The process launched ahead (``request.process``) when it was planned for this config;
    released otherwise (None: start one)."""
    run = request.process
    if run is not None and (run.taken or run.plan != plan(request.config)):
        run.release()
        return None
    return run


def _protected(request: GradeRequest, private: Path, key_file: Path | None) -> list[Path]:
    """What the worker may never read: the course, the run's private folder, the course key."""
    config = request.config
    return [
        config.root,
        config.suites_dir,
        config.solutions_dir,
        private,
        *request.protect,
        *([key_file] if key_file else []),
    ]


def _broken(outcome, report: dict | None, config: Config) -> str | None:
    """Why a finished run gave no scores (timed out, no report, pytest failed), or None.
    The trusted process's last log lines are part of the message only where the run had no
    hidden test: they can name one, or quote its source in a traceback, and the message
    reaches students; otherwise they go to stderr, which Gradescope shows instructors only
    (blind red-team tester R-DA)."""
    if outcome.timed_out:
        return f"the grading run exceeded its time limit ({config.limits.run_timeout_s:g} s + margin) and was stopped"
    if report is None or outcome.returncode not in (0, 1):
        tail = " | ".join(outcome.log_tail.strip().splitlines()[-6:])[-800:]
        why = f"pytest exited with status {outcome.returncode}" if report is not None else "no report was written"
        if identity.has_hidden(config):
            # the log is the trusted process's, but may quote the submission's text: inert in a terminal or job log
            print(f"autograder: the grading run broke ({why}); its log ends: {escape.plain_inert(tail, 800)}", file=sys.stderr)
            return f"the grading run broke ({why}); the grader's log is with the course staff"
        return f"the grading run broke ({why}): {tail}"
    return None


def _load_report(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("tests"), list) else None
