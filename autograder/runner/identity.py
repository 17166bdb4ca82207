"""The suites' identity: one hash names one release's suites on every path.

Two hashes, with the same labels everywhere they are shown (release summary, MANIFEST,
Gradescope output and ``extra_data``, batch gradebook, a local grade):

* ``suite`` — every file that decides a score (visible and hidden suites, the skills' hints,
  snapshots and helpers, the ``course`` package, the reference solutions) and the scoring
  table (each skill's points and gates, each test's weight and visibility);
* ``visible`` — the part a student release ships: the visible suites, hints, snapshots, the
  ``course`` modules those suites import (and the data files they name), and the visible
  tests' weights and gates.

Both hash file contents by repository-relative path and the *parsed* scoring table, never
``grading.toml``'s bytes. ``suite`` hashes a reference solution's *code*: its text without
docstrings and comments (``code_text``), so a reworded docstring of a reference solution
does not make the next batch regrade the whole class, while any change to what runs does.
``visible`` keeps each file's bytes (a student tree whose suites were touched in any way no
longer claims the release's suites). the Gradescope bundle's copy has other limits and the student
tree's has no hidden entries, yet they grade with the same suites. A tree without hidden
suites (the student release) cannot compute ``suite``; it reads it from the ``release.json``
the release put beside ``grading.toml``, and only while the visible part it computes is the
one that release recorded (otherwise the suites were changed and ``suite`` is unknown). It
records each ``[release.assignments]`` entry's two hashes too, so a grade ``--assignment
NAME`` there names that assignment's suites as its Gradescope bundle does.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import json
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from . import cpu_limits

COURSE_PACKAGE = "course"  # tests/suites/course: helpers shared by the suites
CASES_FILE = "snapshot_cases.py"  # instructors only: never graded with, never shipped
RELEASE_FILE = "release.json"  # written by `make release` beside grading.toml (student tree, bundle)
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".grader-cache"}


@dataclass(frozen=True)
class SuiteIdentity:
    suite: str | None  # None: the full suite is not known here (a changed student tree)
    visible: str


# --------------------------------------------------------------------------- course helpers
#: ``from course import a, b`` / ``from course.x import y`` / ``import course.x``, at any indentation.
#: A regular expression, not ``ast``: every grade computes the visible identity, and parsing the
#: suites costs ~0.1 s where this costs ~1 ms. An import written inside a string also counts,
#: which can only add a module (the leak audit still checks what ships).
_COURSE_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+course(?:\.([A-Za-z_]\w*))?[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+course\.([A-Za-z_]\w*))",
    re.M,
)


# inside the course package: ``from .tolerances import tol``, ``from . import week07 as w7`` —
# anywhere in the file, a function's own import too (it runs when the function does)
_RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+\.(?:([A-Za-z_]\w*)[ \t]+import\b|[ \t]+import[ \t]+(\([^)]*\)|[^\n]*))", re.M)


def _course_imports(source: str, filename: str = "") -> set[str]:
    """``course.<name>`` modules a suite imports, or a course module imports of its package."""
    names = set()
    found = [(a, b, c) for a, b, c in _COURSE_IMPORT.findall(source)]
    found += [(module, listed, "") for module, listed in _RELATIVE_IMPORT.findall(source)]
    for sub_from, imported, sub_import in found:
        if sub_from or sub_import:
            names.add(sub_from or sub_import)
            continue
        for item in imported.split("#")[0].strip("() \t").replace("\n", " ").split(","):
            name = item.strip().split(" ")[0].strip("()")
            if name.isidentifier():
                names.add(name)
    return names


def course_closure(course_dir: Path, sources: dict[str, str]) -> set[str]:
    """The ``course`` modules (file names) the given suite sources need, transitively."""
    needed: set[str] = set()
    todo = [name for rel, text in sources.items() for name in _course_imports(text, rel)]
    while todo:
        name = todo.pop()
        path = course_dir / f"{name}.py"
        if name in needed or not path.is_file():
            continue
        needed.add(name)
        todo.extend(_course_imports(path.read_text(encoding="utf-8"), str(path)))
    return {f"{n}.py" for n in needed} | {"__init__.py"}


def _tree(root: Path, folder: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(root).as_posix()
            if not any(p in SKIP_PARTS for p in rel.split("/")) and not rel.endswith((".pyc", ".pyo")):
                out[rel] = path.read_bytes()
    return out


def suite_files(config: Config, include_hidden: bool) -> dict[str, bytes]:
    """{repository-relative path: bytes} of what grades with the suites: the release ships
    exactly these (``include_hidden``: the Gradescope bundle; without: the student tree)."""
    repo = config.root
    files: dict[str, bytes] = {}
    suites_rel = config.suites_dir.relative_to(repo).as_posix()
    sources: dict[str, str] = {}
    for skill in config.skills.values():
        for suite in skill.suites:
            if include_hidden or suite.visibility == "visible":
                sources[suite.file] = (repo / suite.file).read_text(encoding="utf-8")
        skill_dir = config.suites_dir / skill.id
        if (skill_dir / "hints.toml").is_file():
            files[f"{suites_rel}/{skill.id}/hints.toml"] = (skill_dir / "hints.toml").read_bytes()
        snapshots = _tree(repo, skill_dir / "snapshots")
        table = f"{suites_rel}/{skill.id}/snapshots/{cpu_limits.TABLE_NAME}"
        if not include_hidden and table in snapshots:  # its size classes tell the hidden inputs' sizes
            snapshots[table] = cpu_limits.without_sizes(snapshots[table], skill.id)
        files.update(snapshots)
        if include_hidden:  # helpers beside the suites (mistakes.py: the named mistakes' outputs) serve hidden tests only
            for path in sorted(skill_dir.glob("*.py")):
                if path.name != CASES_FILE and not path.name.startswith("test_"):
                    files[path.relative_to(repo).as_posix()] = path.read_bytes()
    files.update({rel: text.encode() for rel, text in sources.items()})

    course_dir = config.suites_dir / COURSE_PACKAGE
    course = _tree(repo, course_dir)
    if include_hidden:
        files.update(course)
    else:  # the modules the shipped suites import, and the data files those modules name
        wanted = course_closure(course_dir, sources)
        modules = {rel: data for rel, data in course.items() if rel.rsplit("/", 1)[-1] in wanted}
        texts = [d.decode("utf-8", "replace") for d in modules.values()] + list(sources.values())
        files.update(modules)
        files.update(
            {
                rel: data
                for rel, data in course.items()
                if not rel.endswith(".py") and any(rel.rsplit("/", 1)[-1] in t for t in texts)
            }
        )
    if include_hidden:
        for skill in config.skills.values():
            path = config.solutions_dir / skill.module
            if path.is_file():  # (a skill without a reference grades nothing against `ref`; the suites say so)
                files[path.relative_to(repo).as_posix()] = path.read_bytes()
    return files


def scoring_table(config: Config, include_hidden: bool) -> dict:
    """What grading.toml says about scoring, parsed: the same on every path for the same part."""
    table = {}
    for skill in config.skills.values():
        tests = {
            name: [weight, suite.visibility]
            for suite in skill.suites
            if include_hidden or suite.visibility == "visible"
            for name, weight in suite.weights.items()
        }
        entry = {
            "module": skill.module,
            "tests": tests,
            "gates": sorted(g for g in skill.gates if g in tests),
            "properties": sorted(g for g in skill.properties if g in tests),
        }
        if include_hidden:
            entry["points"] = skill.points
        table[skill.id] = entry
    return table


def _docstring_spans(tree: ast.AST) -> list[tuple[int, int, int, int]]:
    """(line, byte column, end line, end byte column) of each docstring statement."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                spans.append((first.lineno, first.col_offset, first.end_lineno or first.lineno, first.end_col_offset or 0))
    return spans


@functools.lru_cache(maxsize=64)  # by content: a batch hashes the same reference files for every student
def code_text(data: bytes) -> bytes:
    """A Python file's code: docstrings and comments cut out, trailing spaces and blank lines
    dropped. Built from positions (``ast`` for docstrings, ``tokenize`` for comments), which
    are the same on every Python version, never from ``ast.dump`` (whose output is not).
    A file that does not parse is its bytes."""
    try:
        text = data.decode("utf-8")
        tree = ast.parse(text)
        lines = [line.encode("utf-8") for line in text.splitlines(keepends=True)]
        cuts = _docstring_spans(tree)
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                (row, col), (end_row, end_col) = tok.start, tok.end
                line = text.splitlines(keepends=True)[row - 1]
                cuts.append((row, len(line[:col].encode()), end_row, len(line[:end_col].encode())))
    except (UnicodeDecodeError, SyntaxError, ValueError, MemoryError, RecursionError, tokenize.TokenError):
        return data
    for row, col, end_row, end_col in sorted(cuts, reverse=True):  # last first: earlier positions stay valid
        if row == end_row:
            lines[row - 1] = lines[row - 1][:col] + lines[row - 1][end_col:]
        else:
            lines[row - 1] = lines[row - 1][:col] + lines[end_row - 1][end_col:]
            del lines[row:end_row]
    kept = [line.rstrip() for line in b"".join(lines).splitlines()]
    return b"\n".join(line for line in kept if line.strip()) + b"\n"


def digest(files: dict[str, bytes], table: dict, code_only: tuple[str, ...] = ()) -> str:
    """``code_only``: files under these folders count by their code (``code_text``), not their bytes."""
    h = hashlib.sha256(b"attention-autograder suites v3\0" if code_only else b"attention-autograder suites v2\0")
    h.update(json.dumps(table, sort_keys=True, separators=(",", ":")).encode() + b"\0")
    for rel in sorted(files):
        by_code = rel.endswith(".py") and any(rel.startswith(f"{folder}/") for folder in code_only)
        data = code_text(files[rel]) if by_code else files[rel]
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def has_hidden(config: Config) -> bool:
    return any(s.visibility == "hidden" for skill in config.skills.values() for s in skill.suites)


def identify(config: Config) -> SuiteIdentity:
    visible = digest(suite_files(config, False), scoring_table(config, False))
    if has_hidden(config):
        # the reference solutions by their code (their docstrings are the stubs' text, parsed here
        # only: ~10 ms; the suites' 1 MB would cost 0.3 s on every grade)
        try:
            solutions: tuple[str, ...] = (config.solutions_dir.relative_to(config.root).as_posix(),)
        except ValueError:  # kept outside the repository: not in the files hashed anyway
            solutions = ()
        return SuiteIdentity(digest(suite_files(config, True), scoring_table(config, True), code_only=solutions), visible)
    return SuiteIdentity(recorded_suite(released(config.path.parent), visible), visible)


def recorded_suite(recorded: dict, visible: str) -> str | None:
    """The full hash ``release.json`` records for the visible part ``visible``: the whole
    release's, or one ``[release.assignments]`` entry's (a grade with ``--assignment``); None
    when no record has that visible part (the suites were changed, or no release made them)."""
    parts = recorded.get("assignments")
    records = [recorded] + (list(parts.values()) if isinstance(parts, dict) else [])
    for record in records:
        if isinstance(record, dict) and record.get("visible_suite_hash") == visible:
            suite = record.get("suite_hash")
            return suite if isinstance(suite, str) else None
    return None


def released(folder: Path) -> dict:
    """The ``release.json`` beside grading.toml ({} when there is none or it is unreadable)."""
    try:
        data = json.loads((folder / RELEASE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
