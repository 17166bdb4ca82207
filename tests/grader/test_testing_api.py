"""Suites import the grading API from one place, ``autograder.testing`` (its ``__all__``); a
probe's body, which runs in the worker, imports ``autograder.sandbox.probes`` only."""

from __future__ import annotations

import ast

from conftest import ROOT

import autograder.testing as api

SUITES = ROOT / "tests" / "suites"
INIT = ROOT / "autograder" / "testing" / "__init__.py"


def _grader_imports(path):
    """(module, names, inside a function) of every ``from autograder… import …`` in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "autograder":
            yield node.module, [a.name for a in node.names], id(node) in nested, node.lineno
        elif isinstance(node, ast.Import):
            assert not [a.name for a in node.names if a.name.split(".")[0] == "autograder"], (
                f"{path}:{node.lineno}: `import autograder…`"
            )


def test_suites_import_the_api_from_autograder_testing_only():
    wrong, unknown, seen = [], [], set()
    for path in sorted(SUITES.rglob("*.py")):
        rel = path.relative_to(ROOT)
        for module, names, in_function, line in _grader_imports(path):
            if module == "autograder.testing":
                unknown += [f"{rel}:{line}: {n}" for n in names if n not in api.__all__]
                seen.update(names)
            elif not (module == "autograder.sandbox.probes" and in_function):  # a probe's body (the worker)
                wrong.append(f"{rel}:{line}: from {module} import {', '.join(names)}")
    assert not wrong, "import these from autograder.testing:\n" + "\n".join(wrong)
    assert not unknown, "not in autograder.testing.__all__:\n" + "\n".join(unknown)
    assert {"expect", "probe", "randn", "Snapshots", "sibling", "in_float64"} <= seen


def test_the_api_exports_what_it_lists_and_does_nothing_but_import():
    assert len(set(api.__all__)) == len(api.__all__) and all(hasattr(api, name) for name in api.__all__)
    body = ast.parse(INIT.read_text(encoding="utf-8")).body
    docstring, rest = body[0], body[1:]
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    for node in rest:
        assert isinstance(node, (ast.Import, ast.ImportFrom)) or (
            isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]
        ), ast.unparse(node)
