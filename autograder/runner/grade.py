"""One grading run, end to end: config → submission copy → sandbox policy → the trusted
pytest run → report → ``Results``. Whatever happens, a ``Results`` comes out: a run that
breaks (the engine crashes, times out, is interrupted) gives status ``error`` or
``interrupted``, a score of 0 and the reason — never a partial pass, never nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import results as results_mod
from ..config import Config
from ..results import Results
from .policy import build_worker_spec
from ..sandbox import zygote
from ..sandbox.spec import WorkerSpec
from . import engine, seeding
from .manifest import RunManifest
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


def suite_hash(config: Config) -> str:
    """Identifies the exact suite that graded: config, suites, course helpers, hints, snapshots."""
    digest = hashlib.sha256()
    files = {config.path}
    for skill in config.skills.values():
        files.update(config.root / s.file for s in skill.suites)
    if config.suites_dir.is_dir():
        files.update(p for p in config.suites_dir.rglob("*") if p.is_file() and p.suffix in (".py", ".toml", ".json") and "__pycache__" not in p.parts)
    for path in sorted(files):
        digest.update(str(path.relative_to(config.root) if path.is_relative_to(config.root) else path).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


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


def _add_run(manifest: RunManifest, config: Config, prepared: PreparedSubmission, spec: WorkerSpec, seed: seeding.SeedChoice) -> RunManifest:
    """The plan plus what this run decided: the submission's modules, the seed, the worker."""
    manifest.modules = dict(prepared.facts)
    manifest.helpers = {name: info["copy_path"] for name, info in {**prepared.siblings, **prepared.helpers}.items() if info.get("copy_path")}
    manifest.preload = sorted(ALWAYS_PRELOAD | {m for skill in config.skills.values() for m in skill.preload})
    manifest.worker = spec
    manifest.seed, manifest.seed_source, manifest.suite_hash = seed.seed, seed.source, suite_hash(config)
    return manifest


def grade(request: GradeRequest) -> Results:
    config = request.config
    started = time.monotonic()
    seed: seeding.SeedChoice | None = None
    run_dir = Path(tempfile.mkdtemp(prefix="autograder-"))
    run_dir.chmod(0o711)
    private = run_dir / "private"
    private.mkdir(mode=0o700)
    scratch = run_dir / "scratch"
    scratch.mkdir(mode=0o711)
    submission_info: dict = {"path": request.submission}
    prepared: PreparedSubmission | None = None
    manifest: RunManifest | None = None  # scoring reads it and the report, nothing else

    def finish(status: str, message: str, report: dict | None) -> Results:
        results = results_mod.build(manifest or RunManifest.plan(config), report, submission_info, status=status, message=message, duration=time.monotonic() - started)
        if seed is not None:  # known before the run starts, so even a broken run records it
            results.seed, results.seed_source = seed.seed, seed.source
        return results

    engine_proc: engine.Engine | None = None
    try:
        report_path = private / "report.json"
        files = sorted({s.file for skill in config.skills.values() for s in skill.suites})
        engine_proc = engine.Engine(config.root, config.suites_dir, files, report_path, private / "pytest.log", request.launcher)
        manifest = RunManifest.plan(config)  # while the engine starts
        try:
            prepared = prepare(request.submission, config, run_dir, world_readable=True)
        except SubmissionDirError as exc:
            engine_proc.abort()
            return finish("error", str(exc), None)
        submission_info = prepared.to_dict()
        manifest.modules = dict(prepared.facts)
        try:
            seed = seeding.choose(request.seed, config.seed_mode, config.seed, prepared.content)
        except seeding.SeedKeyError as exc:
            engine_proc.abort()
            return finish("error", str(exc), None)
        key_file = seeding.key_file()
        spec, notes = build_worker_spec(
            config, prepared.copy_dir, scratch,
            protected=[config.root, config.suites_dir, config.solutions_dir, private, *request.protect, *([key_file] if key_file else [])],
        )
        engine_proc.send_manifest(_add_run(manifest, config, prepared, spec, seed).to_dict())
        outcome = engine_proc.wait(config.limits.run_timeout_s + 120, request.on_event)
        engine_proc = None
        report = _load_report(report_path)
        if request.keep_report and report_path.exists():
            shutil.copyfile(report_path, request.keep_report)
        if outcome.timed_out:
            return finish("error", f"the grading run exceeded its time limit ({config.limits.run_timeout_s:g} s + margin) and was stopped", None)
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
