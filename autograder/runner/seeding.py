"""The run's seed: the same submission always gets the same inputs, yet nobody without the
course key can predict them.

``[grader] seed = "content"`` (the default) derives the seed from the submission itself:
``HMAC-SHA256(key, canonical list of its files' SHA-256)`` — every exercise module (whatever
``--skill`` selected, so a ``--skill`` run draws the same inputs as a full one) and every
helper module copied for the worker, in file-name order, a refused or missing file counted
as absent. Resubmitting unchanged code gives the same score and the same hints; changing
one byte of a module draws new inputs.

The key is read from the file named by ``$AUTOGRADER_SEED_KEY_FILE`` (the Gradescope bundle
sets it; the file is never in the student release and never readable from a worker). Without
it, a documented public default key is used: local grades are reproducible, and a student
can see exactly which inputs ``make grade`` drew, but cannot compute the course's seeds.
``seed = "fresh"`` draws a new seed per run; ``seed = <integer>`` and ``--seed N`` fix it.
Every report records the seed and where it came from (``seed_source``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

ENV_KEY_FILE = "AUTOGRADER_SEED_KEY_FILE"
#: public on purpose: local grading only. A course sets its own key for graded runs.
DEFAULT_KEY = b"attention-autograder: public default seed key for local grading (v1)"
MIN_KEY_BYTES = 16
SEED_BITS = 53  # exact in JSON readers that hold numbers as doubles (Gradescope's front end)


class SeedKeyError(Exception):
    """The course key is configured but cannot be used; ``str()`` says why and how to fix it."""


@dataclass(frozen=True)
class SeedChoice:
    seed: int
    source: str  # one of core/schema.py SEED_SOURCES


def key_env(path: Path | None) -> dict[str, str] | None:
    """The environment ``choose`` reads the key from: ``path`` when given, else the process's."""
    return None if path is None else {**os.environ, ENV_KEY_FILE: str(path)}


def course_key_path(course: str, env: dict[str, str] | None = None) -> Path:
    """Where an instructor's machine keeps the course's seed key, outside every repository and
    release: ``$AUTOGRADER_SEED_KEY_FILE`` when set, else
    ``${XDG_CONFIG_HOME:-~/.config}/attention-autograder/<course>.seed.key``, ``course`` being
    grading.toml's ``[course] id`` (``key_name``; the name only where no id is given). ``make release``
    creates it once (random, 32 bytes as hex) and every later release, regrade and batch of
    the course reads the same file, so their seeds agree with the Gradescope bundle's."""
    env = os.environ if env is None else env
    explicit = key_file(env)
    if explicit is not None:
        return explicit
    base = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME") or Path.home()) / ".config")
    slug = "".join(c if c.isalnum() else "-" for c in course.lower()).strip("-") or "course"
    return base / "attention-autograder" / f"{slug}.seed.key"


def key_name(config) -> str:
    """What names a course's key file: ``[course] id`` when given (two courses of one name on
    one machine keep two keys), else the course's name, as before ids existed."""
    return getattr(config, "course_id", None) or config.course


def key_file(env: dict[str, str] | None = None) -> Path | None:
    value = (os.environ if env is None else env).get(ENV_KEY_FILE, "").strip()
    return Path(value) if value else None


def load_key(env: dict[str, str] | None = None) -> tuple[bytes, bool]:
    """(key, is_course_key). A key file that is set but unusable is an error, never a silent
    fall-back to the public default (that would make a course's inputs predictable)."""
    path = key_file(env)
    if path is None:
        return DEFAULT_KEY, False
    try:
        key = path.read_bytes().strip()
    except OSError as exc:
        raise SeedKeyError(
            f"{ENV_KEY_FILE}={path}: cannot be read ({exc.strerror or exc}) — point it at the course's seed key "
            "file, or unset it for local grading"
        ) from None
    if len(key) < MIN_KEY_BYTES:
        raise SeedKeyError(
            f"{ENV_KEY_FILE}={path}: the key is {len(key)} bytes; use at least {MIN_KEY_BYTES} "
            "(e.g. `python3 -c 'import secrets; print(secrets.token_hex(32))' > seed.key`)"
        )
    return key, True


def key_id(path: Path | None) -> str:
    """A short, one-way name for the key a run uses (never the key): batch resume and summaries
    compare it, so results keyed otherwise are regraded, never mixed."""
    key, is_course_key = load_key(key_env(path))
    if not is_course_key:
        return "public-default"
    return id_of(key)


def id_of(key: bytes) -> str:
    """``key_id`` of a key already read."""
    return hashlib.sha256(b"attention-autograder seed key id\0" + key).hexdigest()[:16]


def canonical(content: list[tuple[str, str | None]]) -> bytes:
    """One line per file, sorted by name: ``name<TAB>sha256`` (or ``-`` when absent)."""
    lines = sorted(f"{name}\t{digest or '-'}\n" for name, digest in content)
    return "".join(lines).encode("utf-8", "surrogateescape")  # a name that is not UTF-8: its own bytes


def content_seed(key: bytes, content: list[tuple[str, str | None]]) -> int:
    digest = hmac.new(key, canonical(content), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


def choose(
    option: int | None, mode: str, fixed: int | None, content: list[tuple[str, str | None]], env: dict[str, str] | None = None
) -> SeedChoice:
    """The seed of a run: ``--seed`` first, then ``[grader] seed``."""
    if option is not None:
        return SeedChoice(option, "option")
    if mode == "fixed" and fixed is not None:
        return SeedChoice(fixed, "config")
    if mode == "fresh":
        return SeedChoice(secrets.randbits(31), "fresh")
    key, is_course_key = load_key(env)
    return SeedChoice(content_seed(key, content), "content" if is_course_key else "content-default-key")
