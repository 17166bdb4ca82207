# --- Autograde: every notebook's points are the course autograder's ------------------------------
# One score on every path: `nbgrader autograde` scores each notebook with the course autograder
# (`python -m autograder grade`, bundled in grader/ beside this file with the visible and hidden
# suites, grading.toml and the course's seed key), never with cells run in the student's kernel
# (code there can redefine whatever a test cell calls). ScoreFromGrader runs in nbgrader's own
# process after Execute and before SaveAutoGrades: it exports the submission's exercise modules
# from the notebooks' solution cells (the cells the release filled from them; grader/nbgrader.json
# names them), grades them once per submission — the grader runs the code in its own sandboxed
# workers — and gives each notebook's score cell the skill's score as nbgrader's partial credit
# (an execute_result holding the number: nbgrader.utils.determine_grade), with the grader's
# feedback on the visible tests above it. The checks cells stay for the student (0 points).
# Written here because nbgrader has no hook for a score decided outside the kernel: its grades
# come from the executed cells' outputs, so we write the outputs it reads.
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.converters import Autograde
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import LimitOutput, NbGraderPreprocessor, SaveAutoGrades
from traitlets import Integer

GRADER = os.path.join(here, "grader")  # here: nbgrader_config.py's folder (defined above it)
HIDDEN_NOTE = (
    "Hidden tests of this skill also count: the score above includes them; their names, inputs and results are not shown."
)


def grader_manifest() -> dict:
    """grader/nbgrader.json: each notebook's skill, exercise module, solution and score cells."""
    with open(os.path.join(GRADER, "nbgrader.json"), encoding="utf-8") as handle:
        return json.load(handle)


def exercise_modules(folder: str, manifest: dict) -> dict:
    """{notebook: the module text its solution cell holds, or None} for each notebook of the
    course in ``folder`` (a submission): the inverse of how the release wrote the notebooks.
    The first cell with the solution cell's id counts (nbgrader's DeduplicateIds keeps that one)."""
    modules = {}
    for stem, entry in sorted(manifest["notebooks"].items()):
        path = os.path.join(folder, f"{stem}.ipynb")
        if not os.path.isfile(path):
            continue  # nbgrader scores a missing notebook 0 itself
        try:
            with open(path, encoding="utf-8") as handle:
                cells = json.load(handle).get("cells", [])
            sources = [
                c.get("source", "")
                for c in cells
                if isinstance(c, dict)
                and c.get("cell_type") == "code"
                and (c.get("metadata") or {}).get("nbgrader", {}).get("grade_id") == entry["solution"]
            ]
            source = sources[0] if sources else None
            modules[stem] = ("".join(source) if isinstance(source, list) else source) if source is not None else None
        except (OSError, ValueError, AttributeError, TypeError):
            modules[stem] = None  # not a notebook: graded as a missing module (0, with the grader's message)
    return modules


def grade_modules(modules: dict, manifest: dict, timeout: int, log) -> dict:
    """{notebook: (score, feedback text)}: ``python -m autograder grade`` on the modules, once."""
    with tempfile.TemporaryDirectory(prefix="nbgrader-submission-") as tmp:
        folder = os.path.join(tmp, "submission")
        os.mkdir(folder)
        for stem, text in modules.items():
            if text is not None:
                with open(os.path.join(folder, manifest["notebooks"][stem]["module"]), "w", encoding="utf-8") as handle:
                    handle.write(text.rstrip("\n") + "\n")  # the module as the release read it from solutions/
        out = os.path.join(tmp, "results.json")
        cmd = [sys.executable, "-m", "autograder", "grade", folder, "--format", "json", "--output", out, "--no-progress"]
        cmd += ["--config", os.path.join(GRADER, "grading.toml")]
        for stem in modules:
            cmd += ["--skill", manifest["notebooks"][stem]["skill"]]
        if manifest.get("seed_key"):
            cmd += ["--seed-key-file", os.path.join(GRADER, manifest["seed_key"])]
        env = dict(os.environ, PYTHONPATH=GRADER)
        # a class is graded one submission after another: the first grade leaves a warm server
        # (grader/autograder/runner/process/warm.py: torch imported once, each later grade forked
        # from it; it leaves after [grader] warm_idle_s of no grade). AUTOGRADER_WARM=0 in
        # nbgrader's environment, or warm_idle_s = 0, turns it off.
        env.setdefault("AUTOGRADER_WARM", "1")
        problem, proc = None, None
        try:
            proc = subprocess.run(cmd, cwd=GRADER, env=env, capture_output=True, text=True, timeout=timeout, check=False)
            with open(out, encoding="utf-8") as handle:
                data = json.load(handle)
        except subprocess.TimeoutExpired:
            problem = f"the course autograder did not finish within {timeout} s"
        except (OSError, ValueError) as exc:
            tail = (proc.stderr or "")[-1500:] if proc is not None else ""
            problem = f"the course autograder left no results ({type(exc).__name__}): {tail}"
    if problem is not None:
        log.error("ScoreFromGrader: %s", problem)
        message = f"This notebook could not be graded: {problem}. It scores 0 until your instructor regrades it."
        return {stem: (0.0, message) for stem in modules}
    scores = {s["id"]: s["score"] for s in data.get("skills", [])}
    graded = {}
    for stem in modules:
        skill = manifest["notebooks"][stem]["skill"]
        if skill not in scores:
            graded[stem] = (0.0, f"The course autograder did not grade {skill}: {data.get('message', '')}")
        else:
            # the module's path in the report is the folder graded here: the student knows the notebook
            text = feedback(data, skill).replace(folder + os.sep, "")
            if modules[stem] is None:
                cell = manifest["notebooks"][stem]["solution"]
                text = f"No solution cell (id {cell}) in {stem}.ipynb: nothing to grade.\n" + text
            graded[stem] = (float(scores[skill]), text)
    return graded


def feedback(data: dict, skill: str) -> str:
    """The text renderer's report of ``skill``'s visible tests (failures, hints, the lesson
    sections to reread), as the Gradescope bundle shows it before the due date: no hidden test."""
    if GRADER not in sys.path:
        sys.path.insert(0, GRADER)
    from rich.console import Console

    from autograder.core.results import from_dict
    from autograder.renderers import text
    from autograder.renderers.gradescope import visible_view

    results = from_dict(data)
    full = next(s for s in results.skills if s.id == skill)
    submission = {**results.submission, "path": f"the solution cell of {skill}.ipynb"}
    one = replace(results, skills=[full], not_graded=[], score=full.score, max_score=full.points, submission=submission)
    view = visible_view(one, {"hidden": "after_due_date"})  # only the tests shown at once: the visible ones
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, color_system=None, force_terminal=False, highlight=False, emoji=False)
    text.render(view, console)
    head = f"Course autograder: {skill} scored {full.score:g} / {full.points:g} (every test, hidden ones included)."
    hidden = any(t.visibility != "visible" for t in full.tests)
    if full.gated_by:  # the visible view leaves the rule out: its gate may be a hidden test, named nowhere here
        from autograder.core.escape import one_line  # the summary may quote the submission

        name, _, why = full.gated_by.partition(": ")
        hidden_gate = any(t.name == name and t.visibility != "visible" for t in full.tests)
        shown = why if hidden_gate else full.gated_by
        head += "\nIt scores 0: it breaks a rule of the exercise" + (f" ({one_line(shown, 300)})." if shown else ".")
    return head + "\n" + (HIDDEN_NOTE + "\n" if hidden else "") + "\nVisible tests:\n" + buffer.getvalue()


class ScoreFromGrader(NbGraderPreprocessor):
    """Each notebook's score cell: the course autograder's score of its skill (see above)."""

    timeout = Integer(1800, help="seconds for one submission's grading").tag(config=True)
    _graded: dict = {}  # submission content → grades, for this nbgrader process: graded once, all notebooks

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        manifest = grader_manifest()
        entry = manifest["notebooks"].get(info["notebook"])
        if entry is None:
            return nb, resources
        coursedir = CourseDirectory(config=self.config)
        folder = coursedir.format_path(coursedir.submitted_directory, info["student"], info["assignment"])
        modules = exercise_modules(folder, manifest)
        key = hashlib.sha256(json.dumps([folder, sorted(modules.items())]).encode()).hexdigest()
        if key not in self._graded:
            self.log.info("Grading %s's %s with the course autograder", info["student"], info["assignment"])
            self._graded[key] = grade_modules(modules, manifest, self.timeout, self.log)
        score, text = self._graded[key].get(info["notebook"], (0.0, "This notebook's solution cell could not be read."))
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and utils.is_grade(cell) and meta.get("grade_id") == entry["score"]:
                points = float(meta.get("points", 0))
                cell.outputs = [
                    new_output("stream", name="stdout", text=text.rstrip("\n") + "\n"),
                    new_output("execute_result", data={"text/plain": repr(min(max(score, 0.0), points))}, execution_count=1),
                ]
        return nb, resources


# nbgrader's default is [Execute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades, ...]
# ScoreFromGrader goes after LimitOutput (its report is not cut) and before SaveAutoGrades (which reads the scores)
_steps = list(Autograde.class_traits()["autograde_preprocessors"].default())
_save = _steps.index(SaveAutoGrades)
assert _steps.index(LimitOutput) < _save
c.Autograde.autograde_preprocessors = [*_steps[:_save], ScoreFromGrader, *_steps[_save:]]  # c: nbgrader_config.py's config
