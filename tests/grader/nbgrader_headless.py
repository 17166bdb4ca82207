"""The real nbgrader, run headless on a built course (dist/nbgrader): what the tests and the
nbgrader benchmark use to prove the course works (commands and gotchas:
/work/shared/reference/nbgrader-headless.md). Test code, so it lives here and not in the
release package; nbgrader must be importable by this Python (requirements-instructor.txt).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


class NbgraderFailed(RuntimeError):
    """An nbgrader command exited non-zero; the message holds the end of its output."""


@dataclass
class RoundTrip:
    scores: dict[str, float]  # student → exported score
    notebooks: dict[str, dict[str, float]]  # student → notebook (skill) → score, from the gradebook
    max_score: float
    seconds: dict[str, float]  # generate_assignment, autograde, [generate_feedback,] export
    release: Path  # release/<assignment>: what students get
    feedback: Path | None = None  # feedback/: each student's HTML, when asked for
    logs: dict[str, str] = field(default_factory=dict)  # step → what nbgrader logged (stdout + stderr)


def round_trip(
    course: Path,
    work: Path,
    submissions: dict[str, Path | None],
    assignment: str,
    *,
    feedback: bool = False,
    edit: dict[str, Callable] | None = None,
) -> RoundTrip:
    """Run the real nbgrader headless on a copy of ``course``: ``generate_assignment``, then
    ``autograde`` each student's notebooks — the release with the solution cells filled from
    ``submissions[student]`` (a folder of exercise modules) or left untouched (None), then
    ``edit[student](notebook_name, nb)`` where given (a student who changes a locked cell) —
    then ``generate_feedback`` if asked, and ``export``."""
    import nbformat

    root = work / "course"
    shutil.copytree(course, root)
    env = dict(os.environ)
    # nbgrader writes into $HOME otherwise
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        (work / name).mkdir(exist_ok=True)
        env[name] = str(work / name)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # creating the DB runs `alembic`
    env.pop("PYTHONPATH", None)
    seconds: dict[str, float] = {}
    logs: dict[str, str] = {}

    def nbgrader(step: str, *args: str) -> None:
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "nbgrader", step, *args], cwd=root, env=env, capture_output=True, text=True, timeout=1200
        )
        seconds[step] = round(time.monotonic() - start, 1)
        logs[step] = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise NbgraderFailed(
                f"nbgrader {step} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            )

    nbgrader("generate_assignment", assignment, "--force")
    release = root / "release" / assignment
    for student, modules in submissions.items():
        target = root / "submitted" / student / assignment
        target.mkdir(parents=True)
        for path in sorted(release.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:
                if modules is not None and cell.metadata.get("nbgrader", {}).get("solution"):
                    cell.source = (modules / f"{path.stem}.py").read_text(encoding="utf-8")
            if edit and student in edit:
                edit[student](path.stem, nb)
            nbformat.write(nb, target / path.name)
    nbgrader("autograde", assignment, "--force")
    if feedback:
        nbgrader("generate_feedback", assignment, "--force")
    grades = work / "grades.csv"
    nbgrader("export", "--to", str(grades))
    with grades.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    scores = {r["student_id"]: float(r["score"]) for r in rows if r["assignment"] == assignment}
    max_score = max((float(r["max_score"]) for r in rows), default=0.0)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        notebooks = {
            student: {nb.name: nb.score for nb in gb.find_submission(assignment, student).notebooks} for student in submissions
        }
    return RoundTrip(scores, notebooks, max_score, seconds, release, root / "feedback" if feedback else None, logs)
