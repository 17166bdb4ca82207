"""Constraint checks on a submitted file's source (AST), done on the trusted side.

"``row_softmax.py`` calls no softmax of torch, in any spelling": the scan flags every
*attribute* or *import* of a banned name (``torch.softmax``, ``F.softmax``,
``x.softmax``, ``torch.special.softmax``, ``from torch.nn.functional import softmax as s``,
``getattr(torch, "softmax")``), wildcard imports from torch, and — because they could
hide any of those — dynamic code (``eval``/``exec``/``compile``/``__import__``/
``importlib``/``getattr`` with a computed name). Bare names are not flagged: a student's
own ``def softmax(...)`` is fine. The run-time check in the worker (``record_ops``)
catches what a static scan cannot see; together they are the defence.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Iterable

from .failures import CheckFailed, Feedback

DYNAMIC = {"eval", "exec", "compile", "__import__"}


@dataclass(frozen=True)
class Violation:
    line: int
    found: str
    function: str

    def frame(self, file: str) -> dict:
        return {"file": file, "line": self.line, "function": self.function}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(_dotted(node.func) + "()")
    else:
        parts.append("…")
    return ".".join(reversed(parts))


class _Scanner(ast.NodeVisitor):
    def __init__(self, banned: set[str], dynamic: bool) -> None:
        self.banned = banned
        self.dynamic = dynamic
        self.found: list[Violation] = []
        self.stack: list[str] = []

    def _flag(self, node: ast.AST, text: str) -> None:
        self.found.append(Violation(getattr(node, "lineno", 0), text, ".".join(self.stack) or "<module>"))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.banned:
            self._flag(node, _dotted(node))
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*" and (node.module or "").split(".")[0] == "torch":
                self._flag(node, f"from {node.module} import *")
            elif alias.name in self.banned:
                self._flag(node, f"from {node.module} import {alias.name}")
        if self.dynamic and (node.module or "").split(".")[0] == "importlib":
            self._flag(node, f"from {node.module} import …")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self.dynamic and alias.name.split(".")[0] == "importlib":
                self._flag(node, f"import {alias.name}")
            if alias.name.split(".")[-1] in self.banned:
                self._flag(node, f"import {alias.name}")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                if name.value in self.banned:
                    self._flag(node, f"getattr(…, {name.value!r})")
            elif self.dynamic:
                self._flag(node, "getattr with a computed name")
        if self.dynamic and isinstance(func, ast.Name) and func.id in DYNAMIC:
            self._flag(node, f"{func.id}(…)")
        self.generic_visit(node)


@functools.lru_cache(maxsize=32)
def _parse(source: str) -> ast.Module:
    """Suites scan the same file in many tests: parse it once (the tree is never modified)."""
    return ast.parse(source)


def _functions(tree: ast.Module, scope: Iterable[str]) -> list[ast.AST]:
    """The nodes of the named functions ("f" or "Class.method")."""
    wanted = set(scope)
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in wanted:
            out.append(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and f"{node.name}.{item.name}" in wanted:
                    out.append(item)
    return out


def scan(source: str, banned: Iterable[str], *, scope: Iterable[str] | None = None, dynamic: bool = True) -> list[Violation]:
    """Violations in ``source`` (whole module, or only the functions in ``scope``)."""
    tree = _parse(source)
    scanner = _Scanner(set(banned), dynamic)
    if scope is None:
        scanner.visit(tree)
    else:
        for node in _functions(tree, scope):
            scanner.stack = []
            scanner.visit(node)
    return sorted(scanner.found, key=lambda v: v.line)


def calls(source: str, function: str) -> set[str]:
    """Names called inside ``function`` ("f" or "Class.method"): ``foo(...)`` → "foo",
    ``obj.foo(...)`` → "foo"."""
    out: set[str] = set()
    for node in _functions(_parse(source), [function]):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                if isinstance(sub.func, ast.Name):
                    out.add(sub.func.id)
                elif isinstance(sub.func, ast.Attribute):
                    out.add(sub.func.attr)
    return out


def check_no_banned(source: str | None, file: str, banned: Iterable[str], *, what: str, hints: Iterable[str] = (), scope: Iterable[str] | None = None) -> None:
    """Fail with every offending line of the student's file when a banned name appears."""
    if source is None:
        return  # a missing module fails elsewhere, with its own message
    found = scan(source, banned, scope=scope)
    if found:
        listing = "; ".join(f"line {v.line}: {v.found}" for v in found[:6])
        raise CheckFailed(Feedback(
            check=what, problem="constraint",
            detail=f"{file} uses what this exercise forbids ({listing}); write it from tensor operations",
            hints=list(hints) or ["general/forbidden-api"],
            frames=[v.frame(file) for v in found[:6]],
        ))
