"""The live nbgrader course, kept outside ``dist/``: a release never destroys course state.

``make release`` rebuilds ``dist/`` from scratch, so a course run *inside* ``dist/nbgrader``
would lose its gradebook and every submission on the next release (a typo fix). Instead:

* ``make release`` refuses to replace a ``dist/`` whose ``nbgrader/`` holds course state
  (``STATE``), naming what it found and this command;
* ``make nbgrader-course DIR=../attention-course`` (``python -m autograder nbgrader-course
  --from dist/nbgrader DIR``) creates the course folder or updates it from the release:
  ``source/<assignment>/`` and the release's own files (``nbgrader_config.py``, README,
  ``grader/``: the course autograder that scores the notebooks) are replaced; the
  gradebook, ``release/``, ``submitted/``, ``autograded/``, ``feedback/`` and anything else
  nbgrader or the instructor put there stay as they are.

Assignments that were already released to students (``release/<assignment>`` exists) are
updated in ``source/`` only; run ``nbgrader generate_assignment --force`` yourself when the
change must reach students.
"""

from __future__ import annotations

import shutil
from pathlib import Path

#: what nbgrader creates while a course runs: losing any of it loses grades or submissions
STATE = ("gradebook.db", "submitted", "autograded", "feedback", "release", "exchange", "downloaded")
#: what a release owns inside the course folder (replaced on update)
OWNED_FILES = ("nbgrader_config.py", "README.md")
#: the release's copy of the course autograder, which scores the notebooks (replaced whole on update)
OWNED_DIRS = ("grader",)


class CourseDirError(Exception):
    """The course folder cannot be created or updated; ``str()`` says why and how to fix it."""


def state_in(folder: Path) -> list[str]:
    """The course state ``folder`` holds (empty: none, or no such folder)."""
    return [name for name in STATE if (folder / name).exists()]


def update(release: Path, course: Path) -> list[str]:
    """Create or update ``course`` from a release's ``nbgrader/`` folder; returns what changed,
    one line each. State is never touched."""
    release, course = release.resolve(), course.resolve()
    if not (release / "nbgrader_config.py").is_file() or not (release / "source").is_dir():
        raise CourseDirError(
            f"{release}: not the nbgrader folder of a release (no nbgrader_config.py and source/) — run `make release` first"
        )
    if course == release or course.is_relative_to(release) or release.is_relative_to(course):
        raise CourseDirError(f"{course}: must be a folder of its own, outside the release (the next release replaces {release})")
    if course.exists() and not course.is_dir():
        raise CourseDirError(f"{course}: is a file — choose a folder")
    if course.is_dir() and any(course.iterdir()) and not (course / "nbgrader_config.py").is_file():
        raise CourseDirError(f"{course}: not empty and not an nbgrader course (no nbgrader_config.py) — choose another folder")
    course.mkdir(parents=True, exist_ok=True)
    said = []
    for name in OWNED_FILES:
        src = release / name
        if src.is_file():
            old = (course / name).read_bytes() if (course / name).is_file() else None
            if old != src.read_bytes():
                shutil.copyfile(src, course / name)
                said.append(f"{'updated' if old is not None else 'created'} {name}")
    for name in OWNED_DIRS:
        src, target = release / name, course / name
        if src.is_dir():
            existed = target.exists()
            if existed:
                shutil.rmtree(target)
            shutil.copytree(src, target)
            said.append(f"{'updated' if existed else 'created'} {name}/")
    (course / "source").mkdir(exist_ok=True)
    for assignment in sorted(p for p in (release / "source").iterdir() if p.is_dir()):
        target = course / "source" / assignment.name
        existed = target.exists()
        if existed:
            shutil.rmtree(target)
        shutil.copytree(assignment, target)
        released = (course / "release" / assignment.name).exists()
        said.append(
            f"{'updated' if existed else 'created'} source/{assignment.name}"
            + (
                " (already released to students: run `nbgrader generate_assignment --force` if they need the change)"
                if released
                else ""
            )
        )
    kept = state_in(course)
    said.append("course state kept: " + (", ".join(kept) if kept else "none yet"))
    return said
