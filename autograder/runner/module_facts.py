"""Facts about an exercise module read from its source, never by running it: the functions
and methods it defines, and which of them are still the TODO stub.

One place for "the skill module's function names": the results ("Still TODO: …") and the
renderers (which TODO names may be shown from a hidden test) both ask here. Names a student
may see are always restricted to the *known* names of the exercise — those of the
instructor's module (``solutions/``, else the release stub in ``exercises/``) — so a
submission cannot put text of its choosing in the output by naming a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["functions", "is_todo_stub", "still_todo", "known_functions"]

_KEPT_DUNDERS = {"__init__", "__call__"}


def _parse(source: str | bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


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


def functions(source: str | bytes) -> list[str]:
    """Qualified names (``split_heads``, ``MultiHeadAttention.forward``) a module defines;
    empty when it does not parse."""
    tree = _parse(source)
    return [name for name, _ in _defs(tree)] if tree else []


def _is_todo_raise(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise) or not isinstance(stmt.exc, ast.Call):
        return False
    func, args = stmt.exc.func, stmt.exc.args
    named = (isinstance(func, ast.Name) and func.id == "NotImplementedError") or (
        isinstance(func, ast.Attribute) and func.attr == "NotImplementedError"
    )
    return (
        named and bool(args) and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)
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


def known_functions(module: str, solutions_dir: Path | None, exercises_dir: Path | None) -> list[str]:
    """The exercise's own function names: from the instructor's reference module when this
    tree has one, else from the release stub. Empty when neither can be read."""
    for folder in (solutions_dir, exercises_dir):
        if folder is None:
            continue
        path = Path(folder) / module
        try:
            if path.is_file() and not path.is_symlink():
                names = functions(path.read_bytes())
                if names:
                    return names
        except OSError:
            continue
    return []
