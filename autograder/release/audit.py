"""Leak audit of a student tree (``python -m autograder audit dist/student``; part of
``make release`` and ``make check``). Every finding names the file (and line):

* a hidden suite's file, or any file only the hidden suites need (present in the grader's
  full file set but not in the students'), e.g. a course helper or data file of hidden tests;
* a hidden test's name, anywhere in a text file;
* a line of a solution region (at least 20 characters, whitespace ignored; also the code part
  of a line whose comment was changed);
* keys (``*.key``, ``*.pem``, ``.env``: the course's seed key stays with the instructors);
* repository and grading leftovers: ``.git``, ``gradebook.db``, pytest/grading reports
  (``results.json``, ``*report*.json``), caches, nbgrader's ``autograded/``, ``submitted/``,
  ``source/`` and ``feedback/``, a ``solutions/`` folder, symbolic links.

The check is textual on purpose: it does not trust the builder that wrote the tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..config import Config
from .context import ReleaseContext
from .files import grader_files
from .stubs import regions

MIN_CHARS = 20
LEFTOVER_NAMES = {".git": "a git repository (history may hold solutions)", "gradebook.db": "nbgrader's gradebook (holds hidden tests in plain text)",
                  "results.json": "a grading report", ".pytest_cache": "a pytest cache", "__pycache__": "compiled caches",
                  ".grader-cache": "a grader cache", "autograded": "nbgrader's autograded notebooks (hold hidden tests)",
                  "submitted": "nbgrader submissions", "feedback": "nbgrader feedback (shows hidden tests)", "solutions": "the reference solutions"}
TOP_LEVEL_ONLY = {"autograded", "submitted", "feedback"}  # nbgrader's folders; autograder/feedback is the grader's hints
REPORT = re.compile(r"(report.*\.json|\.report\.json|\.pyc)$")
SECRET = re.compile(r"(\.key|\.pem|^\.env)$")  # e.g. the course's seed key ($AUTOGRADER_SEED_KEY_FILE)


def _squash(line: str) -> str:
    return re.sub(r"\s+", "", line)


def solution_lines(config: Config) -> dict[str, str]:
    """{line without whitespace: "solutions/x.py:N"} for every line of every solution region
    (and its code part without a trailing comment) that is long enough to be telling."""
    out: dict[str, str] = {}
    for skill in config.skills.values():
        path = config.solutions_dir / skill.module
        rel = path.relative_to(config.root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for region in regions(path, text, rel):
            for number in range(region.begin + 1, region.end):
                line = lines[number - 1]
                for candidate in {_squash(line), _squash(line.split("#", 1)[0])}:
                    if len(candidate) >= MIN_CHARS and not candidate.startswith("#"):
                        out.setdefault(candidate, f"{rel}:{number}")
    return out


def hidden_test_names(config: Config) -> set[str]:
    visible = {name for s in config.skills.values() for suite in s.suites if suite.visibility == "visible" for name in suite.weights}
    return {name for s in config.skills.values() for suite in s.suites if suite.visibility == "hidden" for name in suite.weights} - visible


def hidden_only_files(config: Config) -> set[str]:
    ctx = ReleaseContext(config.root, config, config.root / "dist", "audit", "audit", "audit")
    return set(grader_files(ctx, include_hidden=True)) - set(grader_files(ctx, include_hidden=False))


def audit(tree: Path, config: Config) -> list[str]:
    tree = Path(tree)
    if not tree.is_dir():
        return [f"{tree}: not a directory"]
    findings: list[str] = []
    hidden_files = hidden_only_files(config)
    hidden_basenames = {Path(f).name: f for f in hidden_files if Path(f).suffix == ".py" and "/suites/" in f}
    names = hidden_test_names(config)
    name_re = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b") if names else None
    solution = solution_lines(config)
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree).as_posix()
        for depth, part in enumerate(path.relative_to(tree).parts):
            if part in LEFTOVER_NAMES and (depth == 0 or part not in TOP_LEVEL_ONLY):
                findings.append(f"{rel}: {LEFTOVER_NAMES[part]} must not ship")
                break
        if path.is_symlink():
            findings.append(f"{rel}: a symbolic link (it may point into the instructors' repository)")
            continue
        if not path.is_file():
            continue
        if REPORT.search(path.name):
            findings.append(f"{rel}: a report or compiled file must not ship")
        if SECRET.search(path.name):
            findings.append(f"{rel}: looks like a key or secret (e.g. the course's seed key) and must not ship")
        if rel in hidden_files:
            findings.append(f"{rel}: only the hidden tests need this file (a hidden suite, a reference or their data)")
        elif path.name in hidden_basenames:
            findings.append(f"{rel}: has the name of the hidden suite {hidden_basenames[path.name]}")
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary data: the file checks above apply
        for number, line in enumerate(text.splitlines(), start=1):
            if name_re is not None:
                m = name_re.search(line)
                if m:
                    findings.append(f"{rel}:{number}: names the hidden test {m.group(1)}")
            squashed = _squash(line)
            for candidate in (squashed, _squash(line.split("#", 1)[0])):
                if len(candidate) >= MIN_CHARS and candidate in solution:
                    findings.append(f"{rel}:{number}: line of the solution region at {solution[candidate]}: {line.strip()[:80]}")
                    break
    return findings
