"""The checks suites call: ``scan``, ``calls``, ``reaches``, ``imported_scopes``, ``check_no_banned``."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable

from ..failures import CheckFailed, Feedback
from .deep import deep_enough
from .facts import names_in_reach
from .instances import own_names
from .scanner import _Scanner
from .tree import (
    MODULE_LEVEL,
    NOT_PYTHON,
    MisreadSource,
    Violation,
    _lambda_name,
    _nodes,
    _parse,
    import_cycles,
    live_parts,
    main_guard_runs,
)

PARTIALS = {"partial", "partialmethod", "staticmethod", "classmethod"}  # calling one calls the function it wraps


def _wrapped_function(call: ast.AST) -> str | None:
    """``partial(f, …)`` / ``functools.partial(f, …)``: the name of ``f`` (``obj.f`` → "f"), else None."""
    if not (isinstance(call, ast.Call) and call.args):
        return None
    func = call.func
    callee = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if callee not in PARTIALS:
        return None
    first = call.args[0]
    return first.id if isinstance(first, ast.Name) else first.attr if isinstance(first, ast.Attribute) else None


def _assigned_function(node: ast.AST) -> str | None:
    """A function written as an assignment: ``f = lambda …`` (``_lambda_name``), the same with a
    type annotation, or ``f = partial(g, …)``; its name, else None."""
    name = _lambda_name(node)
    if name is not None:
        return name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        if isinstance(node.value, ast.Lambda) or _wrapped_function(node.value):
            return node.target.id
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id if _wrapped_function(node.value) else None
    return None


def _definitions(tree: ast.Module) -> list[tuple[str, str, ast.AST]]:
    """(qualified name, plain name, node) of every top-level function and method, ``def`` or
    assignment (``_assigned_function``): "f" / "Class.method"."""
    out = []
    for node in tree.body:
        name = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else _assigned_function(node)
        if name is not None:
            out.append((name, name, node))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                method = item.name if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else _assigned_function(item)
                if method is not None:
                    out.append((f"{node.name}.{method}", method, item))
    return out


def _inherited(tree: ast.Module, scope: Iterable[str]) -> dict[str, str]:
    """For each "Class.method" of ``scope`` the class does not define: the "Base.method" it
    inherits from the file's own base classes (nearest first), where one defines it."""
    defined = {qualified for qualified, _, _ in _definitions(tree)}
    bases = {node.name: [ast.unparse(b) for b in node.bases] for node in tree.body if isinstance(node, ast.ClassDef)}
    out = {}
    for qualified in sorted(set(scope) - defined):
        cls, _, method = qualified.rpartition(".")
        todo, seen = list(bases.get(cls, ())), set()
        while todo:
            base = todo.pop(0)
            if base not in seen:
                seen.add(base)
                if f"{base}.{method}" in defined:
                    out[qualified] = f"{base}.{method}"
                    break
                todo += bases.get(base, [])
    return out


def _functions(tree: ast.Module, scope: Iterable[str]) -> list[ast.AST]:
    """The nodes of the named functions ("f" or "Class.method"; a lambda assignment counts). A
    method the class inherits from another class of the file is that class's method."""
    wanted = set(scope)
    wanted |= set(_inherited(tree, wanted).values())
    return [node for qualified, _, node in _definitions(tree) if qualified in wanted]


#: a MisreadSource's violation (tree.read_python_source)
MISREAD = (
    "a file whose bytes Python compiles to other code than its text reads (a coding cookie or line ends "
    "the scan cannot follow: save it as UTF-8 with ordinary line ends)"
)


@deep_enough
def scan(
    source: str,
    banned: Iterable[str],
    *,
    scope: Iterable[str] | None = None,
    dynamic: bool = True,
    bound: Iterable[str] | None = None,
    in_import_cycle: bool = False,
    alone: bool = True,
    deferred: Iterable[str] = (),
    fellow_names: Iterable[str] = (),
) -> list[Violation]:
    """Violations in ``source``: banned names in the whole module (or only in the functions
    of ``scope``), and — when ``dynamic`` — the deny-by-default constructs anywhere in it,
    whatever the scope (a helper at module level can hide what a scoped function calls).
    ``bound`` (a fellow file's scan: the names its scope and its importers use; the exercise
    file's: the names by which anything can read its globals, ``facts.names_in_reach``): a
    banned name imported at module level counts only when the name it binds is one of them.
    ``in_import_cycle``: the file imports itself through the submission's files, so its main
    guard may run (``tree.main_guard_runs``) and is judged like the rest. ``alone``: the file
    imports none of the submission's other files (which could rebind its names or store into
    its objects): only then are its module-level instances and ``self.A`` trusted (instances.py).
    ``deferred``: banned names the rule's run-time check refuses wherever they run; on an object the
    scan cannot place, in a submission with its own function by that name (this file's, or one of
    ``fellow_names``), they are left to that check (instances.py)."""
    if isinstance(source, MisreadSource):  # what the scan would read is not what Python runs
        return [Violation(1, MISREAD, "<module>")]
    frozen = frozenset(bound) if bound is not None else None
    if scope is not None:  # an inherited method is scanned as the method it stands for
        scope = set(scope) | set(_inherited(_parse(source), scope).values())
    return list(
        _scan(
            source,
            frozenset(banned),
            frozenset(scope) if scope is not None else None,
            dynamic,
            frozen,
            in_import_cycle,
            alone,
            frozenset(deferred),
            frozenset(fellow_names),
        )
    )


@functools.lru_cache(maxsize=64)
def _scan(
    source: str,
    banned: frozenset[str],
    scope: frozenset[str] | None,
    dynamic: bool,
    bound: frozenset[str] | None = None,
    in_import_cycle: bool = False,
    alone: bool = True,
    deferred: frozenset[str] = frozenset(),
    fellow_names: frozenset[str] = frozenset(),
) -> tuple[Violation, ...]:
    """Several tests of a suite scan the same file with the same rule: keyed by the file's
    content and the rule, a scan runs once per run (a Violation is immutable)."""
    tree = _parse(source)
    scope_set = set(scope) if scope is not None else None
    scanner = _Scanner(set(banned), dynamic, tree, scope_set, bound, in_import_cycle, alone, deferred, fellow_names)
    scanner.visit(tree)
    found = {(v.line, v.found): v for v in scanner.found}  # one entry per construct and line
    return tuple(sorted(found.values(), key=lambda v: v.line))


@deep_enough
def calls(source: str, function: str) -> set[str]:
    """Names called inside ``function`` ("f" or "Class.method"): ``foo(...)`` → "foo",
    ``obj.foo(...)`` → "foo"; ``partial(foo, …)`` → "foo" too (a partial exists to be called),
    and a name or attribute the file binds to ``partial(foo, …)`` anywhere (``ctx.grads =
    partial(attention_backward, …)`` in forward, ``ctx.grads(…)`` in backward) → "foo"; an
    alias (``grad_fn = softmax_backward`` in the function or at module level, ``self.bw =
    attention_backward`` anywhere) → what it stands for (``_aliases``)."""
    tree = _parse(source)
    out: set[str] = set()
    bound = {name: set(targets) for name, targets in _bindings(source).items()}
    for node in _functions(tree, [function]):
        for name, targets in _aliases(_nodes(node), names=True).items():  # the function's own locals
            bound.setdefault(name, set()).update(targets)
        for sub in _nodes(node):
            if isinstance(sub, ast.Call):
                if isinstance(sub.func, ast.Name):
                    out.add(sub.func.id)
                elif isinstance(sub.func, ast.Attribute):
                    out.add(sub.func.attr)
                wrapped = _wrapped_function(sub)
                if wrapped is not None:
                    out.add(wrapped)
    todo = list(out)
    while todo:  # an alias of an alias (``f = g``; ``h = f``; ``h(…)``) reaches ``g``
        for name in bound.get(todo.pop(), ()):
            if name not in out:
                out.add(name)
                todo.append(name)
    return out


@functools.lru_cache(maxsize=64)
def _bindings(source: str) -> dict[str, set[str]]:
    """What the file binds for every function to see (once per file content: ``reaches``
    asks for every function it follows): names at module level and attributes anywhere →
    the functions assigned to them (``calls`` adds each function's own local names)."""
    tree = _parse(source)
    module_level: list[ast.AST] = []
    todo = list(getattr(tree, "body", []))
    while todo:  # module and class bodies, not function bodies: their names are the function's own
        node = todo.pop()
        module_level.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    out = _aliases(module_level, names=True)
    for name, targets in _aliases(_nodes(tree), names=False).items():
        out.setdefault(name, set()).update(targets)
    return out


def _aliases(nodes, *, names: bool) -> dict[str, set[str]]:
    """Among ``nodes``' assignments, target → the functions assigned to it: what a ``partial``
    wraps, or the name or attribute an alias stands for (``grad_fn = softmax_backward``,
    ``self.bw = attention_backward``, ``fn = Helper.method``: blind tester R-G's correct
    backwards called their helpers through such aliases and lost a rule test's points).
    Targets that are names when ``names``, attributes otherwise."""
    out: dict[str, set[str]] = {}
    for node in nodes:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = node.value if targets else None
        if value is None:
            continue
        wrapped = _wrapped_function(value)
        if wrapped is None and isinstance(value, ast.Name):
            wrapped = value.id
        elif wrapped is None and isinstance(value, ast.Attribute):
            wrapped = value.attr
        for target in targets if wrapped else []:
            if names and isinstance(target, ast.Name):
                out.setdefault(target.id, set()).add(wrapped)
            elif not names and isinstance(target, ast.Attribute):
                out.setdefault(target.attr, set()).add(wrapped)
    return out


@deep_enough
def reaches(source: str, function: str, target: str) -> bool:
    """Does ``function`` ("f" or "Class.method") call ``target``, directly or through the
    file's own functions and methods (``backward`` → ``self._grads`` → ``target``)? A name
    called is followed into every top-level function and method of that name, and a class
    called into its ``__init__``/``__call__``; a lambda assignment (``f = lambda …``) is a
    function like any other."""
    defs: dict[str, list[str]] = {}
    for qualified, name, _ in _definitions(_parse(source)):
        defs.setdefault(name, []).append(qualified)
        if "." in qualified and name in ("__init__", "__call__", "__new__"):
            defs.setdefault(qualified.split(".")[0], []).append(qualified)
    seen = {function}
    todo = [function]
    while todo:
        names = calls(source, todo.pop())
        if target in names:
            return True
        for name in names:
            for qualified in defs.get(name, ()):
                if qualified not in seen:
                    seen.add(qualified)
                    todo.append(qualified)
    return False


def _module_uses(source: str, available: Iterable[str]) -> dict[str, set[str] | None]:
    """The modules among ``available`` that ``source`` imports (absolute imports, anywhere in
    the file) and the names it takes from each: ``from m import a, b`` → {a, b};
    ``import m as x`` → the attributes read as ``x.attr``; None (all of it) for
    ``from m import *``, a submodule, or the module object used any other way."""
    tree = _parse(source)
    available = set(available)
    uses: dict[str, set[str] | None] = {}
    aliases: dict[str, str] = {}

    def add(module: str, names: set[str] | None) -> None:
        current = uses.get(module, set())
        uses[module] = None if current is None or names is None else current | names

    for node in _nodes(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            top = node.module.split(".")[0]
            if top in available:
                add(top, None if node.module != top or any(a.name == "*" for a in node.names) else {a.name for a in node.names})
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in available:
                    add(top, set() if alias.name == top else None)
                    aliases[alias.asname or top] = top
    if aliases:
        read_attr = {
            id(node.value) for node in _nodes(tree) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
        }
        for node in _nodes(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and isinstance(node.ctx, ast.Load)
            ):
                add(aliases[node.value.id], {node.attr})
            elif isinstance(node, ast.Name) and node.id in aliases and id(node) not in read_attr:
                add(aliases[node.id], None)  # passed around, rebound, deleted: anything of it may be used
    return uses


def _runs_at_import(node: ast.AST) -> bool:
    """Could this top-level def hand its code out while the module is imported, without its
    name being mentioned? A class (its body runs at import), a decorated function (the
    decorator may register it), a function whose defaults or annotations call something or
    bind a name (``def h(x=REGISTRY.append(…))``, ``(y := …)``)."""
    if isinstance(node, ast.ClassDef) or node.decorator_list:
        return True
    args = node.args
    parts = [
        *args.defaults,
        *(d for d in args.kw_defaults if d is not None),
        node.returns,
        *(a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a is not None),
    ]
    return any(
        isinstance(sub, (ast.Call, ast.NamedExpr, ast.Lambda)) for part in parts if part is not None for sub in _nodes(part)
    )


def _reached(source: str, names: set[str], in_import_cycle: bool = False) -> set[str]:
    """The top-level functions and classes of ``source`` that an importer can run: those it
    imports (``names``), those the module's top-level code mentions, those that run or hand
    themselves out at import (``_runs_at_import``), and everything any of them mentions
    (calls, references, decorators, defaults), transitively. The body of a ``__main__`` guard
    that never runs (``tree.main_guard_runs``) counts for nothing; its ``else`` branch does.
    The rest — a function nobody can reach by name — never runs for the importer."""
    tree = _parse(source)
    guard_runs = main_guard_runs(tree, in_import_cycle)
    defs = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    todo = [n for n in names if n in defs] + [n for n, node in defs.items() if _runs_at_import(node)]
    for node in tree.body:
        if node.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            parts = live_parts(node, guard_runs)
            todo += [sub.id for part in parts for sub in _nodes(part) if isinstance(sub, ast.Name) and sub.id in defs]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [sub.id for sub in _nodes(defs[name]) if isinstance(sub, ast.Name) and sub.id in defs and sub.id not in seen]
    return seen


@deep_enough
def imported_scopes(source: str, available: dict[str, str]) -> dict[str, tuple[str, frozenset[str] | None]]:
    """The files among ``available`` that ``source`` imports, directly or through each other,
    each with the part of it a rule scan must cover: its top-level code and the functions and
    classes the importers reach (``from sdpa_masks import to_additive_mask`` does not bring in
    ``sdpa_masks.sdpa``), or None — the whole file — when the module is used as a whole."""
    return {module: (text, scope) for module, (text, scope, _) in _imported_scopes(source, tuple(sorted(available.items())))}


def _bound_names(source: str, scope: frozenset[str], taken: set[str], in_import_cycle: bool = False) -> frozenset[str]:
    """The names a fellow file's covered part can use: every name read or called in its
    reached functions and classes and in its top-level statements (but its imports and the
    body of a ``__main__`` guard that never runs), and the names its importers take from it (``taken``). A banned name
    its top-level code imports is a use only when what it binds is among them:
    ``from torch.nn.functional import scaled_dot_product_attention as _sdpa`` in a file whose
    ``sdpa()`` alone calls ``_sdpa`` brings nothing into an importer of its mask helpers."""
    tree = _parse(source)
    guard_runs = main_guard_runs(tree, in_import_cycle)
    names = set(taken)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name not in scope:
            continue
        names.update(sub.id for part in live_parts(node, guard_runs) for sub in _nodes(part) if isinstance(sub, ast.Name))
    return frozenset(names)


@functools.lru_cache(maxsize=64)
def _defined_names(files: tuple[tuple[str, str], ...]) -> frozenset[str]:
    """The names under which the submission's other files' own functions may be called."""
    names: set[str] = set()
    for _, text in files:
        try:
            names |= own_names(_parse(text))
        except NOT_PYTHON:
            continue
    return frozenset(names)


@functools.lru_cache(maxsize=64)
def _imported_scopes(
    source: str, files: tuple[tuple[str, str], ...], cyclic: frozenset[str] = frozenset()
) -> tuple[tuple[str, tuple[str, frozenset[str] | None, frozenset[str] | None]], ...]:
    """``imported_scopes``, once per run for each file and its fellow files, with each covered
    part's ``_bound_names`` (None with the whole file): the tests of a suite check the same
    file with the same rule (every value in it is immutable). ``cyclic``: the modules in an
    import cycle (``tree.import_cycles``), whose main guards may run."""
    available = dict(files)
    uses: dict[str, set[str] | None] = {}

    def merge(found: dict[str, set[str] | None]) -> bool:
        changed = False
        for module, names in found.items():
            current = uses.get(module, set())
            if module not in uses or current is not None and (names is None or not names <= current):
                uses[module] = None if names is None or current is None else current | names
                changed = True
        return changed

    try:
        merge(_module_uses(source, available))
    except NOT_PYTHON:
        return ()
    changed = True
    while changed:
        changed = False
        for module in list(uses):
            try:
                changed |= merge(_module_uses(available[module], available))
            except NOT_PYTHON:
                continue
    out = {}
    for module, names in uses.items():
        try:
            in_cycle = module in cyclic
            scope = None if names is None else frozenset(_reached(available[module], names, in_cycle)) | {MODULE_LEVEL}
            bound = None if scope is None or names is None else _bound_names(available[module], scope, names, in_cycle)
        except NOT_PYTHON:
            scope, bound = None, None
        out[module] = (available[module], scope, bound)
    return tuple(out.items())


#: how the scan names an import it refuses for the module it imports (scanner._import)
_IMPORT_REFUSALS = (
    "(not a module these files may import",
    "(a module for dynamic code or introspection)",
    "(a private module of",
)


def _names_banned(found: str, banned: Iterable[str]) -> bool:
    return any(re.search(rf"\b{re.escape(b)}\b", found) for b in banned)


def _refused_import(found: str) -> bool:
    return found.startswith(("import ", "from ")) and any(reason in found for reason in _IMPORT_REFUSALS)


@deep_enough
def check_no_banned(
    source: str | None,
    file: str,
    banned: Iterable[str],
    *,
    what: str,
    hints: Iterable[str] = (),
    scope: Iterable[str] | None = None,
    imports: dict[str, str] | None = None,
    deferred: Iterable[str] = (),
    api: Iterable[str] = (),
) -> None:
    """Fail with every offending line of the student's file when a banned name appears.
    ``imports`` (module name → source, e.g. ``sub.importable_sources()``): the submission's
    other files; those the file imports are scanned with the same rules — the deny-by-default
    constructs everywhere in them, the banned names in their top-level code and in what the
    file uses of them (``imported_scopes``). ``deferred``: see ``scan``. ``api``: the names the
    grader reads from the file (its functions and classes): a banned import bound to one of
    them counts as read though no code of the file reads it (``facts.names_in_reach``)."""
    if source is None:
        return  # a missing module fails elsewhere, with its own message
    others = {k: v for k, v in (imports or {}).items() if f"{k}.py" != file}
    cyclic = frozenset(import_cycles({**others, file.removesuffix(".py"): source}))
    fellows = _imported_scopes(source, tuple(sorted(others.items())), cyclic)
    # the names anything can read the file's globals by: a banned import none of them reads is never called
    reach = names_in_reach(source, file.removesuffix(".py"), tuple(sorted(others.items())), tuple(sorted(api)))
    files = [(file, source, scope, reach)] + [(f"{name}.py", text, used, bound) for name, (text, used, bound) in sorted(fellows)]
    found: list[tuple[str, Violation]] = []
    theirs = _defined_names(tuple(sorted(others.items()))) if deferred else frozenset()
    for name, text, file_scope, bound in files:
        try:
            in_cycle = name.removesuffix(".py") in cyclic
            alone = name == file and not fellows  # a fellow file is judged as one that has others beside it
            found += [
                (name, v)
                for v in scan(
                    text,
                    banned,
                    scope=file_scope,
                    bound=bound,
                    in_import_cycle=in_cycle,
                    alone=alone,
                    deferred=deferred,
                    fellow_names=theirs,
                )
            ]
        except NOT_PYTHON:
            continue  # a file that does not parse fails elsewhere, with its own message
    if found:
        listing = "; ".join(f"{name}:{v.line}: {v.found}" for name, v in found[:6])
        # the rule's hint says "you called the forbidden function": only where one is named
        names_one = any(_names_banned(v.found, banned) for _, v in found)
        imports_only = all(_refused_import(v.found) for _, v in found)
        if not names_one:
            # an import of a module off the list is no dynamic lookup in the code: say which imports are fine
            named = ["general/import-not-allowed" if imports_only else "general/dynamic-code"]
        elif all(v.found.startswith("the string ") for _, v in found):
            # only strings that name one: nothing was called, and "you called it" would point the wrong way (blind tester R-M)
            named = ["general/banned-name-string"]
        else:
            named = list(hints) or ["general/forbidden-api"]
        raise CheckFailed(
            Feedback(
                check=what,
                problem="constraint",
                detail=(
                    f"{file} uses what this exercise forbids ({listing}){' …' if len(found) > 6 else ''}; "
                    + (
                        "import only what docs/EXERCISES.md lists (a self-test's own imports go inside "
                        'if __name__ == "__main__":, which the grader never runs)'
                        if imports_only and not names_one
                        else "write it from tensor operations, without dynamic lookups"
                        if not names_one or not all(_names_banned(v.found, banned) for _, v in found)
                        else "write it from tensor operations"
                        # torch's own, or imported from a library: no method of the student's (blind tester R-DE)
                        if all(v.found.startswith(("torch.", "from ", "import ")) for _, v in found)
                        # a method of the student's own by a forbidden name, on an object the scan could not
                        # place (blind fairness tester R-CS: the message spoke of dynamic lookups)
                        else "write it from tensor operations (a function of your own by that name: call it on "
                        "self, on an instance of your class, or give it another name)"
                    )
                ),
                hints=named,
                frames=[v.frame(name) for name, v in found[:6]],
            )
        )
