"""Facts about an exercise module read from its source (AST) on the trusted side, never by
running it: the functions and methods it defines, where each one is, and which are still
the TODO stub.

One place for "the functions of a skill's module": the public results only name a function
a hidden test waits on when it is one of these, "Still TODO" lists them, and GitHub
annotations point at their definitions. Names a student may see are always restricted to
the *known* names of the exercise — those of the instructor's module (``solutions/``, else
the release stub in ``exercises/``) — so a submission cannot put text of its choosing in
the output by naming a function.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config, Skill

__all__ = ["definitions", "enclosing_function", "functions", "is_todo_stub", "known_functions", "skill_functions", "still_todo"]

#: methods with these names belong to an exercise's contract although they start with "_"
_KEPT_DUNDERS = {"__init__", "__call__"}


@functools.lru_cache(maxsize=16)
def _parse(source: str | bytes) -> ast.Module | None:
    """The module's AST, shared by every caller (read, never changed): a submission's file is
    asked about several times — which folder holds the work, which functions are written,
    which are still TODO (a batch parsed each of a student's files three times)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


@functools.lru_cache(maxsize=64)
def _parse_file(path: str, mtime_ns: int, size: int) -> ast.Module | None:
    try:
        return _parse(Path(path).read_bytes())
    except OSError:
        return None


def _tree(source: str | bytes | Path) -> ast.Module | None:
    """A module's AST from its source text, or from a file (cached while it is unchanged)."""
    if not isinstance(source, Path):
        return _parse(source)
    try:
        st = source.stat()
    except OSError:
        return None
    return _parse_file(str(source), st.st_mtime_ns, st.st_size)


def _defs(tree: ast.Module):
    """(qualified name, def node) for top-level functions and methods of top-level classes,
    in source order; private helpers (``_name``) are not part of an exercise's contract."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    not item.name.startswith("_") or item.name in _KEPT_DUNDERS
                ):
                    yield f"{node.name}.{item.name}", item


def functions(source: str | bytes | Path) -> list[str]:
    """The module's API as a student sees it (``split_heads``, ``MultiHeadAttention.forward``,
    ``AttentionHead.__init__``), in source order; private helpers (``_name``) and the
    classes themselves are left out. Empty when it does not parse."""
    tree = _tree(source)
    return [name for name, _ in _defs(tree)] if tree else []


def definitions(source: str | bytes | Path) -> dict[str, tuple[int, int]]:
    """name → (first line, last line) of each top-level def/class, and of each method as
    ``Class.method``, in file order. Empty when the source is missing or does not parse."""
    tree = _tree(source)
    out: dict[str, tuple[int, int]] = {}
    if tree is None:
        return out
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = (node.lineno, node.end_lineno or node.lineno)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        out[f"{node.name}.{item.name}"] = (item.lineno, item.end_lineno or item.lineno)
    return out


def enclosing_function(defs: dict[str, tuple[int, int]], line: int) -> str | None:
    """The innermost def (``Class.method`` for methods) of ``defs`` (see ``definitions``)
    whose lines hold ``line``; None at module level."""
    best: tuple[int, str] | None = None
    for name, (first, last) in defs.items():
        if first <= line <= last and (best is None or first >= best[0]):
            best = (first, name)
    return best[1] if best else None


def _is_todo_raise(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise) or not isinstance(stmt.exc, ast.Call):
        return False
    func, args = stmt.exc.func, stmt.exc.args
    named = (isinstance(func, ast.Name) and func.id == "NotImplementedError") or (
        isinstance(func, ast.Attribute) and func.attr == "NotImplementedError"
    )
    return (
        named
        and bool(args)
        and isinstance(args[0], ast.Constant)
        and isinstance(args[0].value, str)
        and args[0].value.lstrip().startswith("TODO(")
    )


def is_todo_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """True when the function still always raises the stub's ``NotImplementedError("TODO(…)")``:
    the raise is a statement of the body itself (not inside an ``if``), with no ``return``
    before it. A student who started writing above the raise is still "to do"."""
    for stmt in node.body:
        if _is_todo_raise(stmt):
            return True
        if isinstance(stmt, ast.Return):
            return False
    return False


def still_todo(source: str | bytes, known: list[str] | None = None) -> list[str]:
    """The functions of ``source`` that are still the TODO stub, in source order; restricted
    to ``known`` names when given (the only names a report may show)."""
    tree = _parse(source)
    if tree is None:
        return []
    allowed = set(known) if known is not None else None
    return [name for name, node in _defs(tree) if is_todo_stub(node) and (allowed is None or name in allowed)]


def imported_modules(source: str | bytes) -> set[str]:
    """The top-level names of the modules ``source`` imports anywhere in it, read from its
    AST (nothing runs): ``import a.b`` → a, ``from a import b`` → a, ``from . import b`` and
    ``from .b import c`` → b, ``importlib.import_module("a")`` / ``__import__("a")`` with a
    literal name → a. What the file needs beside it wherever it is graded."""
    tree = _parse(source)
    if tree is None:
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                found.add(node.module.split(".", 1)[0])
            elif node.level:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value.lstrip(".").split(".", 1)[0])
    return found


def known_functions(module: str, solutions_dir: Path | None, exercises_dir: Path | None) -> list[str]:
    """The exercise's own function names: from the instructor's reference module when this
    tree has one, else from the release stub. Empty when neither can be read."""
    for folder in (solutions_dir, exercises_dir):
        if folder is None:
            continue
        path = Path(folder) / module
        try:
            if path.is_file() and not path.is_symlink():
                names = functions(path)
                if names:
                    return names
        except OSError:
            continue
    return []


def skill_functions(config: Config, skill: Skill) -> list[str]:
    """The public functions of a skill's module (see ``known_functions``)."""
    return known_functions(skill.module, config.solutions_dir, config.exercises_dir)
