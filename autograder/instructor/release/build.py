"""``make release VERSION=x.y.z`` (``python -m autograder release --out dist --version x.y.z``).

1. refuses a release whose stubs or snapshots are stale (``make stubs``, ``make snapshots``);
2. writes ``dist/student/`` and audits it for leaks (any finding stops the release);
3. writes ``dist/autograder.zip`` (:mod:`.gradescope`) and ``dist/nbgrader/``
   (:mod:`.nbgrader_course`) when those builders are present, and ``dist/classroom50/``
   (:mod:`.classroom50`, audited like the student tree) when ``[release] platforms`` lists it;
4. writes ``dist/MANIFEST.json`` (version, source commit, suite hash, sha256 of every file).

Same commit + same version → byte-identical ``dist/``. ``dist/`` is replaced, but only if it
is empty or a previous release (it holds ``MANIFEST.json``): nothing else is ever deleted.
Everything is built in a folder beside it (``.dist.building-<pid>``) that replaces ``dist/``
only once the whole release is built and audited: a release refused or broken midway
leaves ``dist/`` exactly as it was (the previous release stays usable, and the next
release still recognises it).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ...config import Config
from ...renderers.common import suite_label
from ...runner import seeding
from . import course_dir, manifest, seedkey
from .context import ReleaseContext

VERSION = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")
#: (module under autograder.instructor.release, artifact under dist/, what it is); optional builders are skipped when absent
BUILDERS = [
    ("student", "student", "the student repository (visible suites, stubs, grader, docs)", True),
    (
        "classroom50",
        "classroom50",
        "Classroom 50 autograders, one per assignment (<assignment>/autograder.py; visible tests only)",
        False,
    ),
    ("gradescope", "autograder.zip", "Gradescope autograder bundle (setup.sh, run_autograder; visible + hidden suites)", False),
    ("nbgrader_course", "nbgrader", "nbgrader course directory (nbgrader_config.py, source/<assignment>/<skill>.ipynb)", False),
]
#: built only when ``[release] platforms`` lists the platform
PLATFORM_OF = {"classroom50": "classroom50"}
#: what runs where students can read it: the leak audit checks each before anything else is built
AUDITED = ("student", "classroom50")


class ReleaseError(Exception):
    """The release cannot be built; ``str()`` says why and how to fix it."""


def source_commit(repo: Path) -> str:
    """``git rev-parse HEAD`` of the instructors' repository, ``+dirty`` when tracked or
    untracked (not ignored) files differ from it; ``unknown`` outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if status else "")


def _check_out(out: Path, repo: Path) -> None:
    """``out`` may be replaced by a release: empty, missing or a previous release; nothing is touched."""
    out = out.resolve()
    if out == repo or repo.is_relative_to(out):
        raise ReleaseError(f"--out {out}: is the repository or contains it — choose a folder of its own, e.g. dist")
    if out.exists():
        if not out.is_dir():
            raise ReleaseError(f"--out {out}: is a file — choose a folder")
        if any(out.iterdir()) and not (out / manifest.NAME).is_file():
            raise ReleaseError(
                f"--out {out}: not empty and not a previous release (no {manifest.NAME}) — empty it or choose another folder"
            )
        state = course_dir.state_in(out / "nbgrader")
        if state:
            raise ReleaseError(
                f"--out {out}: {out / 'nbgrader'} holds a running nbgrader course ({', '.join(state)}), "
                "which a release would delete. "
                f"Move it out first: `make nbgrader-course DIR=../attention-course` copies the course to a folder of its own "
                f"(then move {', '.join(state)} there), and run nbgrader there from now on"
            )


def _staging(out: Path) -> Path:
    """A fresh folder beside ``out`` (same file system: the final rename is one step)."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.building-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    return staging


def _publish(staging: Path, out: Path) -> None:
    """Replace ``out`` (checked by ``_check_out``) with the finished ``staging``."""
    out = out.resolve()
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)


def _builder(module: str) -> Callable[[ReleaseContext], list[Path]] | None:
    name = f"{__package__}.{module}"
    try:
        return importlib.import_module(name).build
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


def stale(config: Config) -> list[str]:
    from . import snapshots, stubs

    return stubs.check(config) + snapshots.stale(config, config.root)


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def release(config: Config, out: Path, version: str, log: Callable[[str], None] = print) -> ReleaseContext:
    from ...runner.grade import suite_hash

    if not VERSION.match(version):
        raise ReleaseError(f"VERSION={version!r}: use MAJOR.MINOR.PATCH, e.g. 1.0.0 (optionally -rc1)")
    log("release: checking that exercises/ and the snapshots are fresh (runs the reference on the control inputs) …")
    problems = stale(config)
    if problems:
        raise ReleaseError("\n".join(problems) + "\nnothing was released: regenerate, commit, and release again")
    try:
        key, key_path = seedkey.ensure(
            seeding.key_name(config), config.root, out, log, legacy=config.course if config.course_id else None
        )
    except seedkey.SeedKeyProblem as exc:
        raise ReleaseError(f"{exc}\nnothing was released") from None
    _check_out(out, config.root)
    staging = _staging(out)
    try:
        ctx = ReleaseContext(config.root, config, staging, version, source_commit(config.root), suite_hash(config), seed_key=key)
        keyed = f"[course] id {config.course_id!r}" if config.course_id else f"the course name {config.course!r}"
        log(
            f"release: course seed key {key_path} (key id {seeding.id_of(key)}, keyed by {keyed}; the bundle's seed.key, "
            "`make batch` regrades with the same file)"
        )
        if not config.course_id:
            log(
                "release: note: grading.toml has no [course] id — the key is found by the course's name, which another "
                'course on this machine could share; add e.g. id = "llm-attention-2026s" under [course]'
            )
        if ctx.commit.endswith("+dirty"):
            log(f"release: warning: the repository has uncommitted changes; MANIFEST.json records {ctx.commit}")
        _build_all(ctx, config, log, out)
        _publish(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return dataclasses.replace(ctx, out=out.resolve())


def _build_all(ctx: ReleaseContext, config: Config, log: Callable[[str], None], out: Path) -> None:
    """Every builder into ``ctx.out`` (the staging folder); the log names each artifact where
    it will be, under ``out`` (``--out`` / ``DIST=``, as given), not the staging folder."""
    from .audit import audit

    artifacts = {}
    for module, artifact, what, required in BUILDERS:
        shown = (out / artifact).as_posix()
        if module in PLATFORM_OF and PLATFORM_OF[module] not in config.platforms:
            log(f"release: skipped {shown}: [release] platforms does not list {PLATFORM_OF[module]!r}")
            continue
        build = _builder(module)
        if build is None:
            if required:
                raise ReleaseError(f"autograder/instructor/release/{module}.py is missing")
            log(f"release: skipped {shown}: autograder/instructor/release/{module}.py is not in this repository yet")
            continue
        started = time.monotonic()
        log(f"release: building {shown} — {what} …")
        build(ctx)
        if not (ctx.out / artifact).exists():
            raise ReleaseError(f"autograder/instructor/release/{module}.py did not write {shown}")
        artifacts[artifact] = what
        log(f"release: {shown} ({time.monotonic() - started:.1f} s)")
        if module in AUDITED:
            log(f"release: leak audit of {shown} …")
            findings = audit(ctx.out / artifact, config)
            if findings:
                raise ReleaseError(
                    f"leak audit of {shown}:\n"
                    + "\n".join(f"  {f}" for f in findings)
                    + f"\n{len(findings)} finding(s): nothing was released"
                )
            log(f"release: leak audit of {shown}: no finding")
    if (ctx.out / "assignments").is_dir():
        artifacts["assignments"] = "one Gradescope bundle per [release.assignments] entry (assignments/<name>/autograder.zip)"
    manifest.write(ctx, artifacts)


def main(config: Config, out: Path, version: str) -> int:
    started = time.monotonic()
    try:
        ctx = release(config, out, version)
    except ReleaseError as exc:  # dist/ is as it was: the release was built beside it
        print(f"release: {exc}", file=sys.stderr)
        return 1
    print(
        f"release {ctx.version} of {ctx.commit[:12]} ({suite_label(ctx.suite_hash, ctx.visible_suite_hash)}) in "
        f"{time.monotonic() - started:.1f} s → {out}"
    )
    for rel in sorted(p.name for p in ctx.out.iterdir()):
        path = ctx.out / rel
        size = path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        count = 1 if path.is_file() else sum(1 for p in path.rglob("*") if p.is_file())
        print(f"  {rel:<20} {human(size):>10}  {count} file(s)")
    return 0
