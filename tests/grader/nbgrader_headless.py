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

    def run(step: str, *args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "nbgrader", step, *args], cwd=root, env=env, capture_output=True, text=True, timeout=1200
        )
        if proc.returncode != 0:
            raise NbgraderFailed(
                f"nbgrader {step} {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            )
        return proc.stdout + proc.stderr

    def nbgrader(step: str, *args: str) -> None:
        start = time.monotonic()
        logs[step] = run(step, *args)
        seconds[step] = round(time.monotonic() - start, 1)

    def autograde_each_student() -> None:
        """``nbgrader autograde --student S`` for each student, two at a time: nbgrader
        grades one student's notebooks after another, each in a kernel of its own that
        imports torch, so one command for all keeps one core busy; per student, as an
        instructor who grades a late submission runs it, the students share nothing but the
        gradebook, whose writes are short transactions."""
        from concurrent.futures import ThreadPoolExecutor

        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=2) as pool:
            outputs = list(pool.map(lambda student: run("autograde", assignment, "--force", f"--student={student}"), submissions))
        logs["autograde"] = "".join(outputs)
        seconds["autograde"] = round(time.monotonic() - start, 1)

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
    autograde_each_student()
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


# --------------------------------------------------------------------------- nbgrader's autograde step, in process
def _meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def course_config(course: Path) -> tuple[object, dict]:
    """The course's nbgrader_config.py as nbgrader loads it: its traitlets Config and namespace."""
    from traitlets.config import Config

    config = Config()
    path = course / "nbgrader_config.py"
    namespace = {"get_config": lambda: config, "__file__": str(path)}
    # our own release's config, as nbgrader reads it (S102: pyproject's per-file ignores)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return config, namespace


STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # the course config's ClearSolutions.code_stub


def submit(course: Path, root: Path, student: str, modules: Path | None, assignment: str, edit=None) -> Path:
    """``root``/submitted/<student>/<assignment>/: the course's notebooks as a student hands
    them in — each solution cell holding ``modules``' exercise module (None: the stub left as
    the release has it) — then ``edit(notebook, nb)`` where given."""
    import nbformat
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True)
    for path in sorted((course / "source" / assignment).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if _meta(cell).get("solution"):
                if modules is None:
                    ClearSolutions(code_stub={"python": STUB})._replace_solution_region(cell, "python")
                else:
                    cell.source = (modules / f"{path.stem}.py").read_text(encoding="utf-8")
            elif _meta(cell).get("grade"):
                ClearHiddenTests()._remove_hidden_test_region(cell)
        if edit is not None:
            edit(path.stem, nb)
        nbformat.write(nb, folder / path.name)
    return folder


def autograde_in_process(course: Path, submitted: Path, calls: list | None = None) -> tuple[dict[str, float], dict]:
    """What `nbgrader autograde` with the course's nbgrader_config.py records for each notebook
    in ``submitted`` (root/submitted/<student>/<assignment>/): the config's ScoreFromGrader, in
    this (nbgrader's) process, then nbgrader's own determine_grade on every grade cell, summed
    as the gradebook sums them. Execute is left out: whatever the kernel printed, ScoreFromGrader
    replaces the score cell's output. ``calls`` collects the grader runs."""
    import nbformat
    from nbgrader.utils import determine_grade

    config, ns = course_config(course)
    config.CourseDirectory.root = str(submitted.parents[2])
    if calls is not None:
        real = ns["grade_modules"]
        ns["grade_modules"] = lambda *a, **k: calls.append(a[0]) or real(*a, **k)
    pre = ns["ScoreFromGrader"](config=config)
    scores, notebooks = {}, {}
    for path in sorted(submitted.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        info = {"student": submitted.parent.name, "assignment": submitted.name, "notebook": path.stem}
        nb, _ = pre.preprocess(nb, {"nbgrader": info})
        score = 0.0
        for cell in nb.cells:
            if _meta(cell).get("grade"):
                score += determine_grade(cell)[0]
        scores[path.stem], notebooks[path.stem] = score, nb
    return scores, notebooks
