"""Leak audit of a student tree (``python -m autograder audit dist/student``; part of
``make release`` and ``make check``). Every finding names the file (and line):

* a hidden suite's file, or any file only the hidden suites need (present in the grader's
  full file set but not in the students'), e.g. a course helper or data file of hidden tests;
* a hidden test's name, anywhere in a text file;
* a line of a solution region (at least 20 characters, whitespace ignored; also the code part
  of a line whose comment was changed);
* code that replays a solution (any ``.py`` outside ``exercises/``): a function whose body, or
  an expression of at least ``MIN_NODES`` syntax nodes, is a solution region's code up to
  names and constants (compared as ASTs with every name, argument and constant abstracted:
  renaming the variables, reformatting or changing a comment does not hide a copy). Visible
  suites take such values from their snapshot file instead (``make snapshots``);
* keys (``*.key``, ``*.pem``, ``.env``: the course's seed key stays with the instructors);
* repository and grading leftovers: ``.git``, ``gradebook.db``, pytest/grading reports
  (``results.json``, ``*report*.json``), caches, nbgrader's ``autograded/``, ``submitted/``,
  ``source/`` and ``feedback/``, a ``solutions/`` folder, symbolic links;
* the instructors' tools (anything under ``autograder/instructor/``).

The check is textual on purpose: it does not trust the builder that wrote the tree.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ...config import Config
from .context import ReleaseContext
from .files import INSTRUCTOR_DIR, grader_files
from .stubs import regions

MIN_CHARS = 20
# an expression this large is telling (`scale * (d_scores.transpose(-2, -1) @ q)`); smaller ones are idioms (`x.softmax(-1)`)
MIN_NODES = 16
#: shipped files whose code may equal solution code, and why (they compute no expected value)
REPLAY_EXEMPT = {"autograder/sandbox/zygote.py": "the fork server warms torch's attention kernels up on random data"}
MIN_BODY_NODES = 6  # a whole function body: `return weights @ v` counts, `return x` does not
LEFTOVER_NAMES = {
    ".git": "a git repository (history may hold solutions)",
    "gradebook.db": "nbgrader's gradebook (holds hidden tests in plain text)",
    "results.json": "a grading report",
    ".pytest_cache": "a pytest cache",
    "__pycache__": "compiled caches",
    ".grader-cache": "a grader cache",
    "autograded": "nbgrader's autograded notebooks (hold hidden tests)",
    "submitted": "nbgrader submissions",
    "feedback": "nbgrader feedback (shows hidden tests)",
    "solutions": "the reference solutions",
}
TOP_LEVEL_ONLY = {"autograded", "submitted", "feedback"}  # nbgrader's folders; autograder/core/feedback is the grader's hints
REPORT = re.compile(r"(report.*\.json|\.report\.json|\.pyc)$")
SECRET = re.compile(r"(\.key|\.pem|^\.env)$")  # e.g. the course's seed key ($AUTOGRADER_SEED_KEY_FILE)


def _squash(line: str) -> str:
    return re.sub(r"\s+", "", line)


def public_lines(config: Config) -> set[str]:
    """Lines (without whitespace) of the course texts that ship anyway (``[release] docs``: the
    lessons, the exercise contract): code the lessons print — ``self.query = nn.Linear(…)`` in
    Week 7 §13 — is taught, not leaked, when a solution has the same line."""
    out: set[str] = set()
    for doc in config.release.get("docs", []):
        path = config.root / doc
        for file in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []:
            try:
                out.update(_squash(line) for line in file.read_text(encoding="utf-8").splitlines())
            except (OSError, UnicodeDecodeError):
                continue
    return out


def solution_lines(config: Config) -> dict[str, str]:
    """{line without whitespace: "solutions/x.py:N"} for every line of every solution region
    (and its code part without a trailing comment) that is long enough to be telling and that
    the shipped course texts do not print themselves (``public_lines``)."""
    public = public_lines(config)
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
                    if len(candidate) >= MIN_CHARS and not candidate.startswith("#") and candidate not in public:
                        out.setdefault(candidate, f"{rel}:{number}")
    return out


# --------------------------------------------------------------------------- replays (AST)
class _Abstract(ast.NodeTransformer):
    """Every name, argument and constant becomes one placeholder; annotations and
    docstrings go. What is left is the code's shape: calls, attributes, operators, keywords."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id="_", ctx=ast.Load())

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.arg(arg="_")

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Name(id="_", ctx=ast.Load())  # `scale * x` and `0.5 * x` are the same code

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node = self.generic_visit(node)
        node.name, node.returns, node.decorator_list = "_", None, []
        node.body = _code(node.body) or [ast.Pass()]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        return self.generic_visit(ast.Assign(targets=[node.target], value=node.value or ast.Constant(value=0)))


def _code(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` without docstrings and bare string/ellipsis statements."""
    return [b for b in body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]


def shape(nodes: list[ast.AST]) -> str:
    """The abstracted dump of ``nodes`` (names and constants replaced)."""
    import copy

    return "|".join(ast.dump(_Abstract().visit(copy.deepcopy(n)), annotate_fields=False) for n in nodes)


def size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))


@dataclass(frozen=True)
class Replayable:
    where: str  # solutions/x.py:N
    what: str  # "the body of f" or "an expression of f"


def _inside(node: ast.AST, spans: list[tuple[int, int]]) -> bool:
    return any(b < node.lineno and node.end_lineno < e for b, e in spans)


def solution_shapes(config: Config) -> tuple[dict[str, Replayable], dict[str, Replayable]]:
    """({abstracted body: where}, {abstracted expression: where}) for the code inside the
    solution regions: each function's code (at least ``MIN_BODY_NODES`` nodes), and every
    expression of at least ``MIN_NODES`` nodes, at any depth."""
    bodies: dict[str, Replayable] = {}
    expressions: dict[str, Replayable] = {}
    for skill in config.skills.values():
        path = config.solutions_dir / skill.module
        rel = path.relative_to(config.root).as_posix()
        text = path.read_text(encoding="utf-8")
        spans = [(r.begin, r.end) for r in regions(path, text, rel)]
        for fn in ast.walk(ast.parse(text, filename=rel)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = [b for b in _code(fn.body) if _inside(b, spans)]
            if body and sum(size(b) for b in body) >= MIN_BODY_NODES:
                bodies.setdefault(shape(body), Replayable(f"{rel}:{body[0].lineno}", f"the body of {fn.name}"))
            for node in ast.walk(fn):
                if isinstance(node, ast.expr) and hasattr(node, "lineno") and _inside(node, spans) and size(node) >= MIN_NODES:
                    expressions.setdefault(
                        shape([node]), Replayable(f"{rel}:{node.lineno}", f"`{ast.unparse(node)[:60]}` of {fn.name}")
                    )
    return bodies, expressions


def replays(source: str, rel: str, bodies: dict[str, Replayable], expressions: dict[str, Replayable]) -> list[str]:
    """Findings for the functions and expressions of ``source`` that are solution code up to
    names and constants: one per function or line (the outermost match)."""
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError:
        return []
    findings, covered = [], set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code(fn.body):
            hit = bodies.get(shape(_code(fn.body)))
            if hit:
                findings.append(
                    f"{rel}:{fn.lineno}: function {fn.name} replays {hit.what} at {hit.where} (same code up to "
                    "names and constants)"
                )
                covered.update(range(fn.lineno, fn.end_lineno + 1))
    for node in ast.walk(tree):  # breadth first: an outer expression before the ones inside it
        if isinstance(node, ast.expr) and hasattr(node, "lineno") and node.lineno not in covered and size(node) >= MIN_NODES:
            hit = expressions.get(shape([node]))
            if hit:
                findings.append(
                    f"{rel}:{node.lineno}: `{ast.unparse(node)[:60]}` replays {hit.what} at {hit.where} (same code "
                    "up to names and constants)"
                )
                covered.update(range(node.lineno, node.end_lineno + 1))
    return findings


def hidden_test_names(config: Config) -> set[str]:
    visible = {
        name for s in config.skills.values() for suite in s.suites if suite.visibility == "visible" for name in suite.weights
    }
    return {
        name for s in config.skills.values() for suite in s.suites if suite.visibility == "hidden" for name in suite.weights
    } - visible


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
    bodies, expressions = solution_shapes(config)
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
        if rel.startswith(INSTRUCTOR_DIR):
            findings.append(f"{rel}: the instructors' tools ({INSTRUCTOR_DIR}) must not ship")
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
        if (
            path.suffix == ".py" and not rel.startswith("exercises/") and rel not in REPLAY_EXEMPT
        ):  # the stubs are the solutions' signatures
            findings.extend(replays(text, rel, bodies, expressions))
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
