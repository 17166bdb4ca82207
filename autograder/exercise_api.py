"""What an exercise module defines, read from its source (AST) on the trusted side.

One helper for every place that needs "the functions of a skill's module": the public
results only name a function a hidden test waits on when it is one of these, "Still TODO"
lists them, and GitHub annotations point at their definitions. Nothing here imports or runs
the module.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Config, Skill


@functools.lru_cache(maxsize=64)
def _parse(path: str, mtime_ns: int, size: int) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _tree(path: Path) -> ast.Module | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return _parse(str(path), st.st_mtime_ns, st.st_size)


def definitions(path: str | Path) -> dict[str, tuple[int, int]]:
    """name → (first line, last line) of each top-level def/class, and of each method as
    ``Class.method``, in file order. Empty when the file is missing or does not parse."""
    tree = _tree(Path(path))
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


def public_functions(path: str | Path) -> list[str]:
    """The module's API as a student sees it: top-level functions and the public methods of
    its classes (``MultiHeadAttention.forward``, ``AttentionHead.__init__``), in file order;
    private helpers (``_name``) and the classes themselves are left out."""
    tree = _tree(Path(path))
    out: list[str] = []
    if tree is None:
        return out
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            out.append(node.name)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (item.name == "__init__" or not item.name.startswith("_")):
                    out.append(f"{node.name}.{item.name}")
    return out


def enclosing_function(path: str | Path, line: int) -> str | None:
    """The innermost def (``Class.method`` for methods) whose lines hold ``line``; None at
    module level or when the file cannot be parsed."""
    best: tuple[int, str] | None = None
    for name, (first, last) in definitions(path).items():
        if first <= line <= last and (best is None or first >= best[0]):
            best = (first, name)
    return best[1] if best else None


def skill_module_source(config: "Config", skill: "Skill") -> Path | None:
    """The trusted source of a skill's API: the reference solution where this tree has one
    (instructors, the Gradescope bundle), else the stub shipped in ``exercises_dir``."""
    for folder in (config.solutions_dir, config.exercises_dir):
        path = Path(folder) / skill.module
        if path.is_file():
            return path
    return None


def skill_functions(config: "Config", skill: "Skill") -> list[str]:
    """The public functions of a skill's module (see ``public_functions``)."""
    path = skill_module_source(config, skill)
    return public_functions(path) if path else []
