"""One grading run, end to end: config → submission copy → sandbox policy → the trusted
pytest run → report → ``Results``. Whatever happens, a ``Results`` comes out: a run that
breaks (the engine crashes, times out, is interrupted) gives status ``error`` or
``interrupted``, a score of 0 and the reason — never a partial pass, never nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config
from ..core.results import Results
from ..sandbox import zygote
from ..sandbox.spec import WorkerSpec
from . import engine, identity, scoring, seeding
from .manifest import RunManifest
from .policy import build_worker_spec
from .submission import PreparedSubmission, SubmissionDirError, prepare


@dataclass
class GradeRequest:
    config: Config
    submission: str
    seed: int | None = None
    protect: list[Path] = field(default_factory=list)  # e.g. the results file's folder
    on_event: Callable[[dict], None] | None = None
    keep_report: Path | None = None
    launcher: engine.Launcher | None = None  # how the pytest process starts (batch: forked from a preloaded one)
    started: Started | None = None  # a run folder and engine started ahead (``start``), used when it fits this config
    seed_key_file: Path | None = None  # the course key (batch, --seed-key-file); default: $AUTOGRADER_SEED_KEY_FILE


def suite_hash(config: Config) -> str:
    """The full suites' hash (``identity.identify(config).suite``; ``""`` where it is unknown)."""
    return identity.identify(config).suite or ""


def _rmtree(path: Path) -> None:
    def onerror(func, target, _exc):
        try:
            os.chmod(target, stat.S_IRWXU)
            func(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=onerror)


#: imported by the fork server in every run, whatever the skills (sandbox/zygote.py)
ALWAYS_PRELOAD = set(zygote.ALWAYS_PRELOAD)


def _add_run(
    manifest: RunManifest, config: Config, prepared: PreparedSubmission, spec: WorkerSpec, seed: seeding.SeedChoice
) -> RunManifest:
    """The plan plus what this run decided: the submission's modules, the seed, the worker."""
    manifest.modules = dict(prepared.facts)
    manifest.helpers = {
        name: info["copy_path"] for name, info in {**prepared.siblings, **prepared.helpers}.items() if info.get("copy_path")
    }
    manifest.preload = sorted(ALWAYS_PRELOAD | {m for skill in config.skills.values() for m in skill.preload})
    manifest.worker = spec
    ident = identity.identify(config)
    manifest.seed, manifest.seed_source = seed.seed, seed.source
    manifest.suite_hash, manifest.visible_suite_hash = ident.suite, ident.visible
    return manifest


def _engine_args(config: Config) -> tuple[Path, Path, tuple[str, ...]]:
    """What the trusted pytest process is started with: root, suites folder, test files."""
    return config.root, config.suites_dir, tuple(sorted({s.file for skill in config.skills.values() for s in skill.suites}))


@dataclass
class Started:
    """A run's folder and its trusted pytest process, started before anything else of the
    run is known: the command line starts it as soon as grading.toml is valid (never for a
    bad one), and checks the submission while the process imports torch (~1.3 s).
    ``grade`` takes it when it was started for the same suites; ``release`` stops it otherwise."""

    run_dir: Path
    engine: engine.Engine
    args: tuple[Path, Path, tuple[str, ...]]
    taken: bool = False

    def release(self) -> None:
        """Stop the process and remove the folder, unless ``grade`` took them."""
        if not self.taken:
            self.taken = True
            self.engine.abort()
            _rmtree(self.run_dir)


def start(config: Config, launcher: engine.Launcher | None = None, booted: engine.Booted | None = None) -> Started:
    """A fresh run folder (``private/`` for the report and log, ``scratch/`` for the workers)
    and the trusted pytest process, waiting for its manifest. ``booted``: the process the
    command line started first thing (runner/boot.py), used when it was started in this
    config's root (released otherwise)."""
    root, suites_dir, files = args = _engine_args(config)
    if booted is not None and (booted.taken or launcher is not None or booted.root != root or booted.proc.poll() is not None):
        booted.release()
        booted = None
    run_dir = booted.run_dir if booted is not None else engine.new_run_dir()
    try:
        private = run_dir / "private"
        proc = engine.Engine(
            root, suites_dir, list(files), private / "report.json", private / "pytest.log", launcher, booted=booted
        )
    except BaseException:
        if booted is not None:
            booted.release()
        _rmtree(run_dir)
        raise
    return Started(run_dir, proc, args)


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

    run = request.started
    if run is not None and (run.taken or run.args != _engine_args(config)):
        run.release()
        run = None
    try:
        run = run if run is not None else start(config, request.launcher)
    except KeyboardInterrupt:
        return finish("interrupted", "grading was interrupted (Ctrl-C)", None)
    run.taken = True
    run_dir = run.run_dir
    private = run_dir / "private"
    scratch = run_dir / "scratch"
    engine_proc: engine.Engine | None = run.engine
    try:
        report_path = private / "report.json"
        manifest = RunManifest.plan(config)  # while the engine starts
        try:
            prepared = prepare(request.submission, config, run_dir, world_readable=True)
        except SubmissionDirError as exc:
            engine_proc.abort()
            return finish("error", str(exc), None)
        submission_info = prepared.to_dict()
        manifest.modules = dict(prepared.facts)
        try:
            key_env = seeding.key_env(request.seed_key_file)
            seed = seeding.choose(request.seed, config.seed_mode, config.seed, prepared.content, key_env)
        except seeding.SeedKeyError as exc:
            engine_proc.abort()
            return finish("error", str(exc), None)
        key_file = seeding.key_file(key_env)
        spec, notes = build_worker_spec(
            config,
            prepared.copy_dir,
            scratch,
            protected=[
                config.root,
                config.suites_dir,
                config.solutions_dir,
                private,
                *request.protect,
                *([key_file] if key_file else []),
            ],
        )
        engine_proc.send_manifest(_add_run(manifest, config, prepared, spec, seed).to_dict())
        outcome = engine_proc.wait(config.limits.run_timeout_s + 120, request.on_event)
        engine_proc = None
        report = _load_report(report_path)
        if request.keep_report and report_path.exists():
            shutil.copyfile(report_path, request.keep_report)
        if outcome.timed_out:
            return finish(
                "error",
                f"the grading run exceeded its time limit ({config.limits.run_timeout_s:g} s + margin) and was stopped",
                None,
            )
        if report is None or outcome.returncode not in (0, 1):
            tail = outcome.log_tail.strip().splitlines()[-6:]
            why = f"pytest exited with status {outcome.returncode}" if report is not None else "no report was written"
            return finish("error", f"the grading run broke ({why}): " + " | ".join(tail)[-800:], None)
        results = finish("complete", "", report)
        results.sandbox = notes + results.sandbox
        return results
    except KeyboardInterrupt:
        return finish("interrupted", "grading was interrupted (Ctrl-C)", None)
    except BaseException:
        if engine_proc is not None:
            engine_proc.abort()
        raise
    finally:
        _rmtree(run_dir)


def _load_report(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("tests"), list) else None
