"""The grader's layers, checked from the source (AST): what each package may import."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "autograder"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, at any depth of the file
    (inside functions too: a late import is still a dependency)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)  # `from .. import config`
    return out


def test_imported_modules_resolves_relative_imports():
    probe = PACKAGE / "sandbox" / "client.py"
    names = imported_modules(probe)
    assert "autograder.sandbox.zygote" in names and "autograder.sandbox.spec.WorkerSpec" in names


def test_nothing_under_sandbox_imports_the_config():
    """The sandbox knows nothing of grading.toml: runner/policy.py turns the config into a
    WorkerSpec, and the sandbox only ever sees that spec."""
    offenders = {}
    for path in sorted((PACKAGE / "sandbox").rglob("*.py")):
        bad = sorted(m for m in imported_modules(path) if m == "autograder.config" or m.startswith("autograder.config."))
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert not offenders, f"sandbox modules import the config: {offenders}"


def test_sandbox_imports_only_itself_from_the_grader():
    offenders = {}
    for path in sorted((PACKAGE / "sandbox").rglob("*.py")):
        bad = sorted(m for m in imported_modules(path) if m.startswith("autograder.") and not m.startswith("autograder.sandbox"))
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert not offenders, f"sandbox modules import other parts of the grader: {offenders}"
