"""``dist/student/``: the repository students clone.

    exercises/            the stubs (what `make stubs` wrote)
    autograder/           the grader, without the release tools
    tests/suites/         visible suites, the course helpers they import, hints, snapshots
    grading.toml          visible tests only; each skill's points = its visible weights
    docs/                 [release] docs: the exercise contract and the lessons the hints cite
    Makefile, .ci/run, README.md, .gitignore, requirements.txt (no nbgrader)
    + anything under autograder/release/templates/student/ (e.g. .github/ workflows)

Nothing here is an answer: the leak audit (:mod:`.audit`) checks the tree before it ships.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

from .context import ReleaseContext
from .files import _tree, grader_files, write_tree

TEMPLATES = Path(__file__).resolve().parent / "templates" / "student"
RENAMES = {"gitignore": ".gitignore"}  # kept without the dot so they do not act on the instructors' repository
RENDERED = {"README.md"}


def _points(value: float) -> str:
    return f"{value:g}"


def skills_table(ctx: ReleaseContext) -> str:
    rows = ["| skill | exercise | lessons | visible points (local) | full points (official) |", "|---|---|---|---|---|"]
    for skill in ctx.config.skills.values():
        visible = sum(sum(s.weights.values()) for s in skill.suites if s.visibility == "visible")
        rows.append(f"| `{skill.id}` — {skill.title} | `exercises/{skill.module}` | {', '.join(skill.sections)} | {_points(visible)} | {_points(skill.points)} |")
    total_visible = sum(sum(s.weights.values()) for sk in ctx.config.skills.values() for s in sk.suites if s.visibility == "visible")
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
    lines.append("Breaking a rule scores the whole skill 0 in the official grading, whatever the other tests say. "
                 "Everything else in `docs/EXERCISES.md` (signatures, shapes, conventions) binds every exercise.")
    return "\n".join(lines)


def template_files(ctx: ReleaseContext) -> dict[str, bytes]:
    files = {}
    for rel, data in _tree(TEMPLATES, TEMPLATES).items():
        name = RENAMES.get(rel, rel)
        if rel in RENDERED:
            text = string.Template(data.decode("utf-8")).substitute(
                course=ctx.config.course, version=ctx.version, skills_table=skills_table(ctx), rules=rules_text(ctx))
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
    files["release.json"] = (json.dumps(ctx.release_record(), indent=2, sort_keys=True) + "\n").encode()
    return files


def build(ctx: ReleaseContext) -> list[Path]:
    root = ctx.out / "student"
    return write_tree(root, student_files(ctx))
