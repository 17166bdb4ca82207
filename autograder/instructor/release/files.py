"""What the release builders share: the grader's file set, ``grading.toml`` without hidden
entries, and byte-for-byte reproducible zips and trees.

Same commit + same version → the same bytes: files are listed in sorted order, zip entries
carry the fixed timestamp 1980-01-01 00:00 and fixed permissions (0755 for a file that
starts with ``#!``, 0644 otherwise), and nothing records the time or the machine.
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

from ...config import VISIBLE_SUITES, VISIBLE_SUM, VISIBLE_TESTS, Config, student_copy
from ...runner.identity import COURSE_PACKAGE, course_closure, suite_files  # (re-exported)
from ...runner.identity import _tree as identity_tree
from .. import grading_toml

#: the zip format's earliest timestamp: no build time ends up in an artifact
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
#: never shipped: caches and build leftovers
#: the instructors' tools (the release tooling, batch grading of a class, the suite author's
#: `make new-test`) stay with the instructors: one folder, left out of every copy of the grader
#: (neither a student nor Gradescope runs them; the leak audit flags it in a student tree)
INSTRUCTOR_DIR = "autograder/instructor/"
#: the grader's own repository (autograder/instructor/release/files.py → 4 levels up): the
#: package a release ships comes from here, whichever course is released
GRADER_ROOT = Path(__file__).resolve().parents[3]


def course_or_grader(repo: Path, name: str) -> Path:
    """``name`` in the course's repository, else the grader's (a course kept beside the
    grader, as tests/fixtures/toy_course, needs no requirements.txt of its own)."""
    own = repo / name
    return own if own.exists() else GRADER_ROOT / name


def executable(data: bytes) -> bool:
    return data.startswith(b"#!")


def file_mode(data: bytes) -> int:
    return 0o755 if executable(data) else 0o644


def write_zip_deterministic(path: Path, files: dict[str, bytes]) -> Path:
    """Write ``files`` ({arcname: bytes}) as a zip whose bytes depend on nothing else."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for name in sorted(files):
            if name.startswith("/") or ".." in Path(name).parts:
                raise ValueError(f"zip entry {name!r} must be a relative path inside the archive")
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.create_system = 3  # unix: the permission bits below are honoured
            info.external_attr = (stat.S_IFREG | file_mode(files[name])) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    tmp.replace(path)
    return path


def write_tree(root: Path, files: dict[str, bytes]) -> list[Path]:
    """Write ``files`` under ``root`` (which must not exist yet or be empty), with the same
    permissions a zip of them would carry. Returns the paths written, sorted."""
    root = Path(root)
    written = []
    for name in sorted(files):
        target = root / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            raise ValueError(f"{name!r} must be a relative path inside {root}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[name])
        target.chmod(file_mode(files[name]))
        written.append(target)
    return written


# one file walk for the suites' identity and the release: the same files count in both
_tree = identity_tree


# --------------------------------------------------------------------------- grading.toml
STUDENT_NOTE = (
    "# Student release: only the visible tests are listed, and each skill's points are the sum of\n"
    "# their weights. The course autograder also runs hidden tests (fresh inputs, properties and\n"
    "# the exercises' rules) and grades out of the full points.\n"
)


def filtered_grading_toml(config_text: str, include_hidden: bool) -> str:
    """``grading.toml`` for a release. With ``include_hidden`` (Gradescope, nbgrader) it is
    unchanged. Without (the student repository): every hidden suite is removed, each skill's
    ``points`` become the sum of its visible weights (so the file still validates and the
    local score is out of what can be checked locally), gates that named hidden tests go,
    and a comment at the top says so. Comments and layout of what stays are kept
    (``instructor/grading_toml.py``, on tomlkit). Which keys are treated so is their
    declaration's (``Key.student`` in autograder/config/keys.py)."""
    if include_hidden:
        return config_text
    (suites_key,) = student_copy(VISIBLE_SUITES)
    return grading_toml.student_copy(
        config_text,
        suites_key=suites_key,
        summed=student_copy(VISIBLE_SUM),
        to_visible=student_copy(VISIBLE_TESTS),
        note=STUDENT_NOTE,
    )


def assignment_grading_toml(config_text: str, skills: tuple[str, ...]) -> str:
    """``grading.toml`` for one assignment's bundle: only its skills (their tables and suites),
    their rules, and no ``[release.assignments]`` (the bundle is one of them). Comments and
    layout of what stays are kept."""
    return grading_toml.assignment_copy(config_text, skills)


# --------------------------------------------------------------------------- the grader
def grader_files(ctx, include_hidden: bool) -> dict[str, bytes]:
    """{repository-relative path: bytes} of the grader to ship: the ``autograder`` package
    (without ``autograder/instructor/``, the instructors' tools), ``grading.toml`` (filtered unless ``include_hidden``),
    ``requirements.txt``, and under ``tests/suites/`` the suites that grade with it, the
    ``course`` helpers those suites import (found by parsing their imports) and the data files
    those helpers name, each skill's ``hints.toml`` and snapshot data. With ``include_hidden`` also the hidden suites, the
    helper modules beside them (``tests/suites/<skill>/mistakes.py``; never ``snapshot_cases.py``) and ``solutions/``
    (hidden tests compare with the reference through the ``ref`` fixture).
    """
    repo: Path = ctx.repo
    config: Config = ctx.config
    files: dict[str, bytes] = {}
    for rel, data in _tree(GRADER_ROOT, GRADER_ROOT / "autograder").items():
        if not rel.startswith(INSTRUCTOR_DIR):
            files[rel] = data
    files["grading.toml"] = filtered_grading_toml(config.path.read_text(encoding="utf-8"), include_hidden).encode()
    files["requirements.txt"] = course_or_grader(repo, "requirements.txt").read_bytes()

    files.update(suite_files(config, include_hidden))
    files.update(doc_files(ctx))
    return files


def doc_files(ctx) -> dict[str, bytes]:
    """``[release] docs``: the exercise contract and the lessons the hints cite (hint sections
    resolve to lines in them: autograder/core/feedback/citations.py)."""
    files = {}
    for doc in ctx.config.release.get("docs", []):
        path = ctx.repo / doc
        if path.is_dir():
            files.update(_tree(ctx.repo, path))
        elif path.is_file():
            files[doc] = path.read_bytes()
        else:
            raise FileNotFoundError(f"grading.toml: [release] docs lists {doc}, which does not exist")
    return files
