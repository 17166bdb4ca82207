"""Publishing a course: everything students and graders receive is generated from
``solutions/``, ``tests/`` and ``grading.toml`` and checked before it leaves.

    python -m autograder release --out dist --version 1.0.0

writes ``dist/student/`` (the student repository), ``dist/autograder.zip`` (Gradescope),
``dist/nbgrader/`` (an nbgrader course) and ``dist/MANIFEST.json``. Instructor-only: this
package is never shipped to students or to Gradescope.

Builders of one artifact each are plain functions ``build(ctx: ReleaseContext) -> list[Path]``
(the files they wrote); :mod:`.files` holds what they share (the grader's file set, the
filtered ``grading.toml``, a deterministic zip writer).
"""

from __future__ import annotations

from .context import ReleaseContext

__all__ = ["ReleaseContext"]
