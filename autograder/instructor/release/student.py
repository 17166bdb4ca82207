"""``dist/student/``: the repository students clone.

    exercises/            the stubs (what `make stubs` wrote)
    autograder/           the grader, without autograder/instructor/ (the instructors' tools)
    tests/suites/         visible suites, the course helpers they import, hints, snapshots
    grading.toml          visible tests only; each skill's points = its visible weights
    docs/                 [release] docs: the exercise contract and the lessons the hints cite
    Makefile, .ci/run, README.md, .gitignore, requirements.txt (no nbgrader)
    .devcontainer/ (Dockerfile + devcontainer.json: Intel Macs, Chromebooks, lab machines), .dockerignore
    + anything under autograder/instructor/release/templates/student/ (.github/ workflows only when
      ``[release] platforms`` lists github-actions); README.md's "How to submit" has one part
      per platform listed there

Nothing here is an answer: the leak audit (:mod:`.audit`) checks the tree before it ships.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

from .context import ReleaseContext
from .files import _tree, grader_files, write_tree

TEMPLATES = Path(__file__).resolve().parent / "templates" / "student"
RENAMES = {"gitignore": ".gitignore", "dockerignore": ".dockerignore"}  # without the dot here: they would act on this repository
RENDERED = {"README.md"}


def _points(value: float) -> str:
    return f"{value:g}"


def skills_table(ctx: ReleaseContext) -> str:
    rows = ["| skill | exercise | lessons | visible points (local) | full points (official) |", "|---|---|---|---|---|"]
    for skill in ctx.config.skills.values():
        visible = sum(sum(s.weights.values()) for s in skill.suites if s.visibility == "visible")
        rows.append(
            f"| `{skill.id}` — {skill.title} | `exercises/{skill.module}` | {', '.join(skill.sections)} | "
            f"{_points(visible)} | {_points(skill.points)} |"
        )
    total_visible = sum(
        sum(s.weights.values()) for sk in ctx.config.skills.values() for s in sk.suites if s.visibility == "visible"
    )
    rows.append(f"| **total** | | | **{_points(total_visible)}** | **{_points(ctx.config.total_points)}** |")
    return "\n".join(rows)


def rules_text(ctx: ReleaseContext) -> str:
    rules = ctx.config.release.get("rules", {})
    unknown = sorted(set(rules) - set(ctx.config.skills))
    if unknown:
        raise ValueError(f"grading.toml: [release.rules] names unknown skill(s) {', '.join(unknown)}")
    lines = []
    for sid, skill in ctx.config.skills.items():
        if sid in rules:
            lines.append(f"- `exercises/{skill.module}`: {rules[sid]}.")
    lines.append("")
    lines.append(
        "Breaking a rule scores the whole skill 0 in the official grading, whatever the other tests say. "
        "Everything else in `docs/EXERCISES.md` (signatures, shapes, conventions) binds every exercise."
    )
    return "\n".join(lines)


GRADESCOPE_SHOWS = {
    "visible": "shown as soon as grading ends, like the visible ones",
    "after_due_date": "shown after the due date",
    "after_published": "shown once your instructors publish the grades",
    "hidden": "not shown (they count in the score your instructors see)",
}


def official_autograder(ctx: ReleaseContext) -> str:
    if "gradescope" in ctx.config.platforms:
        return "the course's autograder (Gradescope)"
    return "the course's autograder (your instructors grade your submitted commit with the hidden tests too)"


def _modules(ctx: ReleaseContext, skills) -> str:
    return ", ".join(f"`exercises/{ctx.config.skills[s].module}`" for s in skills)


def _gradescope(ctx: ReleaseContext) -> list[str]:
    config = ctx.config
    if config.assignments:
        which = ["Each assignment is a Gradescope assignment of its own; upload its exercise modules there:", ""]
        which += [f"- **{name}**: {_modules(ctx, skills)}" for name, skills in config.assignments.items()]
    else:
        which = [f"Upload the exercise modules: {_modules(ctx, config.skills)}."]
    return [
        "### Gradescope — your official score",
        "",
        *which,
        "",
        "In Gradescope's submit dialog, any one of:",
        "",
        "- the `.py` files themselves, with their names unchanged (`qkv.py`, not `qkv (1).py`);",
        "- one `.zip` of them, of the `exercises/` folder, or of this whole repository;",
        "- **GitHub**: link this repository and choose the branch; the modules are taken from `exercises/`.",
        "",
        (
            "Only the exercise modules count: other files are not graded (the feedback lists them), though the "
            "modules may import your own helper `.py` files uploaded with them; a module that is missing scores 0 "
            "in its skill. A module that imports another assignment's module needs that "
            "file in this upload too (`make grade` names such imports). An upload with no exercise module is "
            "refused with a message that says what to upload. You may resubmit; your latest submission is the "
            "active one."
        ),
        "",
        (
            f"The visible tests' results are shown when grading ends; the hidden tests' results are "
            f"{GRADESCOPE_SHOWS[config.gradescope_visibility['hidden']]}."
        ),
    ]


def _actions(ctx: ReleaseContext) -> list[str]:
    below = ctx.config.ci_fail_below
    red = "grading itself broke (the log says why)" + (f", or your total is below {_points(below)} points" if below > 0 else "")
    return [
        "### GitHub Actions — feedback on every commit, not your score",
        "",
        (
            "Every push to a branch of your repository runs the workflow **Feedback** "
            "(`.github/workflows/feedback.yml`) once on that commit: the visible tests, as `make grade` runs them. "
            "Nothing is submitted by it."
        ),
        "",
        (
            f"- **The tick** next to the commit: green means grading *ran*, whatever the score — a green tick "
            f"at 0 points is possible. Red means {red}. **The tick is not your score.**"
        ),
        (
            "- **The job summary** (open the run, then *Summary*): your score out of the visible points, and "
            "for every failed test what was checked, expected vs got, and a hint."
        ),
        ("- **Annotations**: error markers on your own lines in the commit's files (one per failing place, at most 10)."),
        (
            "- **The pull-request comment**: when the branch you push has an open pull request, one comment on it "
            "shows the same table and is updated on every push. A pull request from a fork gets the summary and "
            "the annotations only."
        ),
        "- **`results.json`**: the run's artifact `autograder-results`.",
    ]


def _classroom50(ctx: ReleaseContext) -> list[str]:
    from .classroom50 import scale_for

    config = ctx.config
    scale = scale_for(
        [w for sk in config.skills.values() for s in sk.suites if s.visibility == "visible" for w in s.weights.values()]
    )
    unit = (
        f" Classroom 50 stores whole numbers, so it records 1/{scale} point as 1 (the Release text shows the points)."
        if scale > 1
        else ""
    )
    named = (
        (" Each of " + ", ".join(f"**{n}**" for n in config.assignments) + " is a Classroom 50 assignment of its own.")
        if config.assignments
        else ""
    )
    gradescope = (
        " Your upload to Gradescope (above) is still what gives the official score." if "gradescope" in config.platforms else ""
    )
    return [
        "### Classroom 50 — recording your submission",
        "",
        (
            f"Submit from your clone with `gh student submit` (or push a tag: `git tag submit/done && git push origin "
            f"submit/done`); if your instructors chose to grade every push, each push to the default branch also "
            f"submits.{named}"
        ),
        "",
        (
            "`gh student` is Classroom 50's extension of the GitHub CLI (`gh`). Install it once, from a clone of "
            "[foundation50/classroom50](https://github.com/foundation50/classroom50) (it needs Go and `gh`): "
            "`git clone https://github.com/foundation50/classroom50 && cd classroom50/cli/gh-student && go build . "
            "&& gh extension install .`, then `gh student login` (see the wiki's *Installation* and *Student Guide*)."
        ),
        "",
        (
            "Is a Classroom 50 submission required? "
            + (
                "Only if your instructors ask for one: it records your own check (visible tests). Your grade is "
                "the Gradescope upload's."
                if "gradescope" in config.platforms
                else "Yes: it is how your work is handed in, and each submission records what you handed in."
            )
        ),
        "",
        (
            "Each submission becomes a **Release** of your repository on a `submit/<time>-<commit>` tag (the *View grade* "
            "link) with a PASS/FAIL table per test, and a `classroom50/autograde` status on the commit. That score is "
            f"the **visible tests only**, computed in your repository as `make grade` does, and the Release says so; the "
            f"official score comes from {official_autograder(ctx)}.{unit}{gradescope}"
        ),
    ]


SUBMIT_PARTS = {"gradescope": _gradescope, "github-actions": _actions, "classroom50": _classroom50}


def submit_text(ctx: ReleaseContext) -> str:
    """The README's "How to submit": one part per ``[release] platforms`` entry, in its order."""
    parts = [SUBMIT_PARTS[p](ctx) for p in ctx.config.platforms]
    return "\n\n".join("\n".join(lines) for lines in parts)


def template_files(ctx: ReleaseContext) -> dict[str, bytes]:
    files = {}
    for rel, data in _tree(TEMPLATES, TEMPLATES).items():
        if rel.startswith(".github/") and "github-actions" not in ctx.config.platforms:
            continue  # the feedback workflow runs only where the course uses GitHub Actions
        name = RENAMES.get(rel, rel)
        if rel in RENDERED:
            text = string.Template(data.decode("utf-8")).substitute(
                course=ctx.config.course,
                version=ctx.version,
                skills_table=skills_table(ctx),
                rules=rules_text(ctx),
                submit=submit_text(ctx),
                official_autograder=official_autograder(ctx),
            )
            data = text.encode("utf-8")
        files[name] = data
    return files


def student_files(ctx: ReleaseContext) -> dict[str, bytes]:
    files = grader_files(ctx, include_hidden=False)
    for skill in ctx.config.skills.values():
        stub = ctx.config.exercises_dir / skill.module
        files[f"exercises/{skill.module}"] = stub.read_bytes()
    files.update(template_files(ctx))
    # which release this tree is, and the full suites' hash it cannot compute (runner/identity.py)
    # (and each assignment's, for `make grade ARGS="--assignment NAME"`)
    record = ctx.release_record() | ({"assignments": ctx.assignment_records()} if ctx.config.assignments else {})
    files["release.json"] = (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()
    return files


def build(ctx: ReleaseContext) -> list[Path]:
    root = ctx.out / "student"
    return write_tree(root, student_files(ctx))
