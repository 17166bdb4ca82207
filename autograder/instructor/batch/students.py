"""Who is in a batch: the students of a SUBMISSIONS folder.

Two layouts:

- a folder with one entry per student: a subfolder (its modules at the top, under
  ``exercises/``, or deeper as in a cloned repository) or a ``.zip`` of one; the student's
  name is the entry's name;
- a Gradescope "Export Submissions" folder: ``submission_metadata.yml`` next to one
  ``submission_<id>/`` folder per submission; the names (and student ids) come from the
  metadata's ``:submitters:`` (several for a group submission).

Each student gets a *key*: a file-name-safe, unique folder name under ``--out`` (the results
of one student never land in another's folder, whatever the names hold). Names are kept as
given for the gradebook (escaped there) and the markdown (escaped there).

Finding the modules inside a student's entry reuses the Gradescope upload rules
(app/upload.py): the folder is chosen by the one rule of every path
(runner/submission.choose_folder), a zip is read without extracting anything but the chosen
folder's exercise and helper modules, and every module then goes through the same
checks as a single ``grade`` (runner/submission.py: no links, no special files, size limits).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
import unicodedata
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ...app import upload
from ...config import Config
from ...runner import submission
from ...sandbox.tree import remove_tree
from . import gsmeta

METADATA = "submission_metadata.yml"
#: names a student folder under --out may not take (our own files and folders), compared
#: casefolded: macOS and Windows file systems take Gradebook.csv/ and gradebook.csv as one name
#: (every class-level output: a student folder named items.csv made the batch fail to write it,
#: one named similarity was removed with the old report: blind red-team tester R-BZ)
RESERVED = {
    "gradebook.csv", "summary.md", ".work", "batch.log", "lms", "items.csv", "changes.csv", "similarity", "plots", "shard.json",
}  # fmt: skip
MAX_KEY = 80
#: hidden folders a class folder holds that are nobody's submission: skipped without a note
QUIET_HIDDEN = {".git", ".ipynb_checkpoints", ".venv", ".idea", ".vscode", ".Trash", ".work"}


@dataclass
class Student:
    key: str  # the folder under --out
    name: str  # as given (folder name, or the Gradescope submitters' names)
    source: Path  # a folder or a .zip
    sid: str = ""
    email: str = ""
    extra: dict = field(default_factory=dict)
    #: a Gradescope submission's submitters, each {"name", "sid", "email"} (a group has several)
    members: list[dict] = field(default_factory=list)

    @property
    def is_zip(self) -> bool:
        return self.source.suffix.lower() == ".zip" and not self.source.is_dir()


class BatchInputError(Exception):
    """SUBMISSIONS cannot be read as a class; ``str()`` says why and what to pass instead."""


def safe_key(name: str) -> str:
    """A file-name-safe version of a student's name: letters, digits, ``._-``; no leading dot."""
    text = unicodedata.normalize("NFKC", name)
    text = re.sub(r"[^\w.\-]+", "_", text, flags=re.UNICODE).strip("._-")
    text = text[:MAX_KEY] or "student"
    return text


def is_reserved(name: str) -> bool:
    return name.casefold() in RESERVED


def _unique(keys: set[str], key: str) -> str:
    """``key``, or ``key-2``, ``key-3``…: unique among ``keys`` (casefolded) and never reserved."""
    candidate, n = key, 2
    while candidate.casefold() in keys or is_reserved(candidate):
        candidate, n = f"{key}-{n}", n + 1
    keys.add(candidate.casefold())
    return candidate


def _kind(path: Path) -> str | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode) and path.suffix.lower() == ".zip":
        return "zip"
    if stat.S_ISLNK(st.st_mode):
        return "link"
    return None


def discover(folder: Path) -> tuple[list[Student], list[str]]:
    """(students in a stable order, notes about entries that were skipped)."""
    if not folder.is_dir():
        raise BatchInputError(
            f"{folder}: not a folder — pass the folder holding one subfolder or .zip per student, or a Gradescope export"
        )
    if (folder / METADATA).is_file():
        return _gradescope(folder)
    students: list[Student] = []
    notes: list[str] = []
    keys: set[str] = set()
    for entry in sorted(os.listdir(folder)):
        path = folder / entry
        kind = _kind(path)
        if entry.startswith(".") or entry == "__MACOSX":
            if kind in ("dir", "zip") and entry not in QUIET_HIDDEN:  # a student's, maybe: never dropped unsaid (R-BZ)
                notes.append(
                    f"{entry}: a hidden {'folder' if kind == 'dir' else 'zip'} — skipped (rename it without the dot to grade it)"
                )
            continue
        if kind == "link":
            # a student named by a link could point at anything (solutions/, another student)
            notes.append(f"{entry}: is a symbolic link — skipped (copy the submission itself into {folder})")
            continue
        if kind is None:
            if path.suffix != ".md" and path.suffix != ".csv":
                notes.append(f"{entry}: not a folder or a .zip — skipped")
            continue
        name = entry[:-4] if kind == "zip" else entry
        students.append(Student(key=_unique(keys, safe_key(name)), name=name, source=path))
    if not students:
        raise BatchInputError(
            f"{folder}: holds no student folders or .zip files — pass the folder with one subfolder or .zip per student"
        )
    return students, notes


def _gradescope(folder: Path) -> tuple[list[Student], list[str]]:
    meta_path = folder / METADATA
    try:
        metadata = gsmeta.parse(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchInputError(f"{meta_path}: cannot be read ({exc}) — export the submissions from Gradescope again") from None
    except gsmeta.MetadataError as exc:
        raise BatchInputError(f"{meta_path}: {exc}") from None
    students: list[Student] = []
    notes: list[str] = []
    keys: set[str] = set()
    for sub_id in sorted(metadata):
        entry = metadata[sub_id]
        path = folder / sub_id
        if _kind(path) != "dir" or not safe_key(sub_id) == sub_id:
            notes.append(f"{sub_id}: listed in {METADATA} but {sub_id}/ is not a folder here — skipped")
            continue
        submitters = entry.get("submitters") or []
        if not isinstance(submitters, list):
            submitters = []
        names = [gsmeta.scalar(s.get("name", "")) for s in submitters if isinstance(s, dict)]
        sids = [gsmeta.scalar(s.get("sid", "")) for s in submitters if isinstance(s, dict)]
        emails = [gsmeta.scalar(s.get("email", "")) for s in submitters if isinstance(s, dict)]
        name = " & ".join(n for n in names if n) or sub_id
        extra = {k: gsmeta.scalar(entry[k]) for k in ("created_at", "score") if k in entry}
        people = [{"name": n, "sid": s, "email": e} for n, s, e in zip(names, sids, emails)]
        students.append(
            Student(
                key=_unique(keys, sub_id),
                name=name,
                source=path,
                sid=" ".join(s for s in sids if s),
                email=" ".join(e for e in emails if e),
                extra=extra,
                members=people,
            )
        )
    listed = set(metadata)
    for entry in sorted(os.listdir(folder)):
        if entry.startswith("submission_") and entry not in listed and (folder / entry).is_dir():
            notes.append(f"{entry}/: not listed in {METADATA} — skipped")
    if not students:
        raise BatchInputError(f"{meta_path}: lists no submission folder present in {folder}")
    return students, notes


def locate(student: Student, config: Config, work: Path) -> tuple[Path, str]:
    """(the folder to grade, where the modules were found) — ``UploadError`` when the entry
    cannot be graded; a zip's modules are taken out into ``work``."""
    modules = list(config.exercise_modules)
    limit = config.limits.max_module_kib * 1024
    if student.is_zip:
        return upload.locate_zip(student.source, modules, work, limit)
    return upload.locate(student.source, modules, work, limit)


def fingerprint(student: Student, config: Config) -> str:
    """Identifies what would be graded of a student's entry: where the modules were found and
    exactly the files a grade reads there (``submission.digest``: the modules and helper
    modules, the same selection as the copy), or why the entry cannot be graded. A finished
    result is reused only while this and the suite are unchanged; other files in the entry,
    however many, change nothing. A fingerprint that cannot be taken never matches (the
    student is graded again)."""
    work = Path(tempfile.mkdtemp(prefix="autograder-fingerprint-"))
    try:
        try:
            folder, note = locate(student, config, work)
        except upload.UploadError as exc:
            return hashlib.sha256(f"upload-error\0{exc}".encode("utf-8", "backslashreplace")).hexdigest()
        return hashlib.sha256(
            f"located\0{note}\0{submission.digest(folder, config)}".encode("utf-8", "backslashreplace")
        ).hexdigest()
    except Exception as exc:  # never a reason to stop the batch; the grading says what is wrong
        return f"unfingerprinted:{type(exc).__name__}:{uuid.uuid4().hex}"
    finally:
        remove_tree(work)  # sandbox/tree.py: any depth
