"""The course's seed key: random, made once, kept outside every repository and release.

The Gradescope bundle carries it as ``seed.key`` (``AUTOGRADER_SEED_KEY_FILE``): it keys each
submission's seed (``runner/seeding.py``). It must be something only the course staff hold —
never derived from files (a TA, a leaked copy or last year's repository would hold those
too) — and the same for every release of the course, so that a re-release after a typo fix,
a regrade (``make batch``) and the bundle all draw the same inputs for the same code.

Where it lives: ``runner.seeding.course_key_path`` (``$AUTOGRADER_SEED_KEY_FILE``, else
``~/.config/attention-autograder/<course>.seed.key``). The first ``make release`` creates
it (64 hex characters, mode 0600, its folder 0700) and says so; back it up with the
course's other secrets. A key inside the repository or the release folder, or shorter than
``seeding.MIN_KEY_BYTES``, stops the release.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from ...runner import seeding


class SeedKeyProblem(Exception):
    """The course key cannot be used for a release; ``str()`` says why and how to fix it."""


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def ensure(
    course: str, repo: Path, out: Path, log: Callable[[str], None] = print, legacy: str | None = None
) -> tuple[bytes, Path]:
    """(key, path): the course key, created at its place when there is none yet. ``course``:
    ``seeding.key_name`` (the ``[course] id``); ``legacy``: the course's name when an id is
    given — a key kept under the name (made before the id) is never silently replaced by a
    new one, which would change every student's inputs against the bundles already out."""
    path = seeding.course_key_path(course)
    if legacy is not None and not path.exists() and seeding.key_file() is None:
        old = seeding.course_key_path(legacy)
        if old.exists() and old != path:
            raise SeedKeyProblem(
                f"grading.toml's [course] id names the course key {path}, which does not exist yet, while {old} "
                f"(keyed by the course's name, before [course] id) does. If that is this course's key, move it: "
                f"`mv '{old}' '{path}'`. If it belongs to another course of the same name, make this course its own: "
                f"`python3 -c 'import secrets; print(secrets.token_hex(32))' > '{path}' && chmod 600 '{path}'`"
            )
    for folder, what in ((repo, "the repository"), (out, "the release folder")):
        if _inside(path, folder):
            raise SeedKeyProblem(
                f"the course seed key {path} is inside {what} ({folder}): anyone who gets a copy could compute every "
                f"student's inputs. Keep it outside, e.g. unset {seeding.ENV_KEY_FILE} to use "
                f"{seeding.course_key_path(course, {k: v for k, v in os.environ.items() if k != seeding.ENV_KEY_FILE})}"
            )
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        log(
            f"release: created the course seed key {path} (random; every release, regrade and batch of this course "
            "reads it — back it up with the course's other secrets, never commit it)"
        )
    try:
        key, _ = seeding.load_key({seeding.ENV_KEY_FILE: str(path)})
    except seeding.SeedKeyError as exc:
        raise SeedKeyProblem(str(exc)) from None
    return key, path
