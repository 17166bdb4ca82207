"""The grader's layers, checked from the source (AST): every module of the package belongs to
one layer, imports only layers below its own (or modules of its own layer), and the import
graph has no cycle. Imports inside functions count (a late import is still a dependency), as
do ``TYPE_CHECKING`` ones. ``tests/benchmarks/import_graph.py`` prints the same graph."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "autograder"

#: bottom → top. An entry names a module and everything under it (the package's own name,
#: ``autograder``, names only ``autograder/__init__.py``); a module belongs to the layer of its
#: longest entry.
LAYERS: dict[str, list[str]] = {
    # torch-free: results model + JSON, redaction, escaping, text helpers, exercise API, hints; grading.toml
    "core": ["autograder", "autograder.core", "autograder.config"],
    "sandbox": ["autograder.sandbox"],  # a leaf: imports nothing else of the grader
    "testing": ["autograder.testing"],  # what suites use
    "runner": ["autograder.runner"],  # grading: policy, manifest, the trusted pytest run, scoring
    "renderers": ["autograder.renderers"],  # results → text, markdown, JSON, Gradescope, GitHub
    # entry points; autograder.commands: what every subcommand is made of (cli.py and the instructors' cli modules use it)
    "app": ["autograder.__main__", "autograder.cli", "autograder.commands", "autograder.ci", "autograder.app"],
    "instructor": [
        "autograder.instructor"
    ],  # release, batch, new_test: never shipped; autograder.cli names its modules as strings
}

#: imports of a higher layer that are known and still to go, each with its reason (none now:
#: the CLI's command registry finds the instructors' commands by module name, autograder/cli.py
#: INSTRUCTOR_MODULES). test_pending_upward_imports_still_exist fails once an entry's import is gone.
PENDING_UPWARD: dict[tuple[str, str], str] = {}


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, at any depth of the file
    (inside functions too: a late import is still a dependency)."""
    name = _module_name(path, root)
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


def package_modules(root: Path = ROOT) -> dict[str, Path]:
    """{module name: file} of every module of the package; the release templates are shipped
    files, not modules of the grader."""
    return {_module_name(p, root): p for p in sorted((root / "autograder").rglob("*.py")) if "templates" not in p.parts}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module an imported name is in (``autograder.core.results.dumps`` → ``autograder.core.results``)."""
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name if name in modules else None


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """{module: the package's modules it imports}. A module's own packages are left out: Python
    imports them before it anyway, and ``from . import x`` names the package only to reach x."""
    modules = package_modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = {_resolve(m, modules) for m in imported_modules(path, root) if m == "autograder" or m.startswith("autograder.")}
        graph[name] = {t for t in targets if t is not None and t != name and not name.startswith(t + ".")}
    return graph


def _matches(entry: str, module: str) -> bool:
    return module == entry or (entry != "autograder" and module.startswith(entry + "."))


def layer_of(module: str) -> str | None:
    found = [(len(e), layer) for layer, entries in LAYERS.items() for e in entries if _matches(e, module)]
    return max(found)[1] if found else None


RANK = {layer: i for i, layer in enumerate(LAYERS)}


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) where the imported module's layer is above the importer's."""
    out = []
    for src, targets in sorted(graph.items()):
        for dst in sorted(targets):
            a, b = layer_of(src), layer_of(dst)
            if a is not None and b is not None and RANK[b] > RANK[a]:
                out.append((src, dst))
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def unit_of(module: str) -> str:
    """The package graph's node: ``autograder.runner.plugin.x`` → ``runner``, ``autograder.cli`` → ``cli``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "autograder"


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = defaultdict(set)
    for src, targets in graph.items():
        units[unit_of(src)].update(unit_of(t) for t in targets if unit_of(t) != unit_of(src))
    return dict(units)


def _without_pending(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {src: {t for t in targets if (src, t) not in PENDING_UPWARD} for src, targets in graph.items()}


# --------------------------------------------------------------------------- tests
def test_imported_modules_resolves_relative_imports():
    probe = PACKAGE / "sandbox" / "client.py"
    names = imported_modules(probe)
    assert "autograder.sandbox.zygote" in names and "autograder.sandbox.spec.WorkerSpec" in names


def test_module_graph_counts_late_imports_and_resolves_names_to_modules():
    graph = module_graph()
    assert "autograder.runner.scoring" in graph["autograder.cli"]  # inside a function
    assert "autograder.core.results" in graph["autograder.renderers"]  # `from ..core.results import dumps`
    assert "autograder.renderers" not in graph["autograder.renderers.gradescope"]  # `from . import markdown`: its own package


def test_every_module_belongs_to_exactly_one_layer():
    modules = package_modules()
    entries = [e for layer in LAYERS.values() for e in layer]
    assert len(entries) == len(set(entries)), "an entry is listed in two layers"
    assert not [m for m in modules if layer_of(m) is None], "modules in no layer: add them to LAYERS"
    for module in modules:  # the longest entry decides, and no two entries of the same length can both match
        longest = max(len(e) for e in entries if _matches(e, module))
        assert len({layer for layer, es in LAYERS.items() for e in es if _matches(e, module) and len(e) == longest}) == 1, module
    stale = [e for e in entries if not any(_matches(e, m) for m in modules)]
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


def test_no_module_imports_a_higher_layer():
    """Function-level and TYPE_CHECKING imports included; a module may import its own layer
    (acyclically, see below) and every layer below it."""
    upward = [(a, b) for a, b in upward_imports(module_graph()) if (a, b) not in PENDING_UPWARD]
    assert not upward, "imports of a higher layer:\n" + "\n".join(
        f"  {a} ({layer_of(a)}) -> {b} ({layer_of(b)})" for a, b in upward
    )


def test_pending_upward_imports_still_exist():
    """PENDING_UPWARD lists only what is still there: remove an entry once its import is gone."""
    graph = module_graph()
    gone = [edge for edge in PENDING_UPWARD if edge[1] not in graph.get(edge[0], set())]
    assert not gone, f"no longer imported, delete from PENDING_UPWARD: {gone}"


def test_the_module_graph_has_no_cycle():
    found = cycles(_without_pending(module_graph()))
    assert not found, f"import cycles between modules: {found}"


def test_the_package_graph_has_no_cycle():
    """One node per package (core, runner, …) or top-level module (cli, ci, config)."""
    found = cycles(unit_graph(_without_pending(module_graph())))
    assert not found, f"import cycles between packages: {found}"


def test_the_layer_checks_catch_an_upward_import(tmp_path):
    """The checks themselves: a core module importing the runner, late, is an upward import
    and (with the runner importing core) a cycle."""
    for rel, text in {
        "autograder/__init__.py": "",
        "autograder/core/__init__.py": "",
        "autograder/core/results.py": "def f():\n    from ..runner import scoring\n",
        "autograder/runner/__init__.py": "",
        "autograder/runner/scoring.py": "from ..core.results import f\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph = module_graph(tmp_path)
    assert upward_imports(graph) == [
        ("autograder.core.results", "autograder.runner"),
        ("autograder.core.results", "autograder.runner.scoring"),
    ]
    assert cycles(graph) == [["autograder.core.results", "autograder.runner.scoring"]]
    assert cycles(unit_graph(graph)) == [["core", "runner"]]


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
