"""Constraint checks on a submitted file's source (AST), done on the trusted side.

"``row_softmax.py`` calls no softmax of torch, in any spelling": the scan flags every
*attribute*, *import* or identifier-like *string literal* naming a banned function
(``torch.softmax``, ``F.softmax``, ``x.softmax``, ``torch.special.softmax``,
``from torch.nn.functional import softmax as s``, ``getattr(torch, "softmax")``,
``"aten::_softmax"``). Bare names are not flagged: a student's own ``def softmax(...)`` is
fine, and docstrings, comments and the names listed in ``__all__`` are never read. Nor is a call of a method the file itself
defines, when the object is plainly one of the file's own classes — ``self.softmax(…)`` or
``cls.softmax(…)`` inside a class that defines ``softmax``, ``Rows(s).softmax()``,
``Rows.softmax(…)``, or a local bound to ``Rows(…)`` in the same function: that runs the
student's own code (whose body is scanned like any other), never torch's. ``x.softmax`` on
anything else stays flagged.

For a module under a rule, the whole file is also scanned, deny by default, for every
construct that can reach a torch function without naming it or switch off the run-time
recorder: dynamic code and lookups (``eval``/``exec``/``compile``/``__import__``,
``vars``/``globals``/``locals``, ``getattr``/``setattr`` with a computed name or used as a
value, ``operator.attrgetter``/``methodcaller``, ``sys.modules``, frame objects), modules
made for that (``importlib``, ``inspect``, ``builtins``, ``ctypes``, ``gc``, threads…),
torch's private namespace (``torch._C``, ``torch.ops.aten._x``, ``from torch._C import …``),
TorchScript compiled from a string or loaded from bytes (``torch.jit.CompilationUnit``,
``torch.jit.load``, ``torch.load``: the JIT interpreter runs it unseen by the recorder),
``DisableTorchFunction`` in any form, and dunder attributes beyond a short list of harmless
ones (``__dict__``, ``__wrapped__``, ``__getattribute__``, ``__builtins__``…). The run-time
check in the worker (``record_ops``) sees what a static scan cannot; together they are the
defence.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .failures import CheckFailed, Feedback

DYNAMIC_CALLS = {"eval", "exec", "compile", "__import__", "vars", "globals", "locals", "breakpoint"}
#: callables that look names up by a value: fine with a constant, flagged with anything else
LOOKUPS = {"getattr", "setattr", "delattr"}
DENIED_MODULES = {
    "importlib",
    "imp",
    "inspect",
    "builtins",
    "__builtin__",
    "ctypes",
    "cffi",
    "gc",
    "sys._getframe",
    "runpy",
    "code",
    "codeop",
    "pkgutil",
    "marshal",
    "pickle",
    "dill",
    "threading",
    "_thread",
    "concurrent",
    "multiprocessing",
    # a name resolved to any object (``pydoc.locate("torch.nn.functional." + "soft" + "max")``)
    "pydoc",
    "zipimport",
    # asyncio, socketserver, logging.handlers (which start threads) are not listed: the worker
    # cannot start a thread at all (seccomp, sandbox/confine.forbid_threads), so importing them
    # proves nothing, and a correct submission may log
}
#: TorchScript built from a string, or code loaded from bytes: it runs in the JIT interpreter,
#: where neither the static scan (no source) nor the run-time recorder (no Python call) sees it
UNSEEN_CODE = {"CompilationUnit"}
UNSEEN_LOADS = {"load"}  # torch.load / torch.jit.load (denied on torch's modules only)
DENIED_NAMES = {
    "attrgetter",
    "methodcaller",
    "_getframe",
    "f_globals",
    "f_locals",
    "f_back",
    "f_builtins",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "ag_frame",
}
ALLOWED_DUNDERS = {
    "__init__",
    "__name__",
    "__qualname__",
    "__class__",
    "__doc__",
    "__version__",
    "__len__",
    "__call__",
    "__module__",
}
#: ``__slots__`` (a class body's attribute list) and ``__debug__`` (a constant) reach nothing
ALLOWED_DUNDER_NAMES = {"__name__", "__file__", "__doc__", "__all__", "__version__", "__annotations__", "__slots__", "__debug__"}
IDENTIFIER_LIKE = re.compile(r"^[A-Za-z_][\w.:]*$")


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
    elif isinstance(node, ast.Subscript):
        parts.append(_dotted(node.value) + "[…]")
    else:
        parts.append("…")
    return ".".join(reversed(parts))


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _private(name: str) -> bool:
    return name.startswith("_") and not (_is_dunder(name) and name in ALLOWED_DUNDERS)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (never scanned)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _export_lists(tree: ast.Module) -> set[int]:
    """ids of the string constants of the module's ``__all__`` (``__all__ = [...]``, ``+=``,
    annotated): export names, never scanned — ``__all__ = ["cross_entropy", …]`` lists the
    file's own functions, and a name there reaches nothing."""
    out = set()
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign))
            else []
        )
        if node_value := getattr(node, "value", None):
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
                node_value, (ast.List, ast.Tuple, ast.Set)
            ):
                out.update(id(e) for e in node_value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return out


def _own_methods(tree: ast.AST) -> dict[str, set[str]]:
    """Class name → the methods its body defines (``def``), for every class the file defines
    once (a name defined twice could be either class)."""
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    names = [node.name for node in classes]
    return {
        node.name: {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for node in classes
        if names.count(node.name) == 1
    }


def _own_scope(node: ast.AST):
    """The nodes of a function's own scope (nested functions, lambdas and classes left out)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        sub = todo.pop()
        yield sub
        if not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(sub))


def _bound_names(node: ast.AST) -> list[str]:
    """Names a node binds: assignment targets, loop/with/except targets, imports, parameters, defs."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.MatchAs) and node.name:
        return [node.name]
    return []


def _rebound_class_names(tree: ast.AST) -> set[str]:
    """Names bound anywhere in the file other than by a ``class`` statement: such a name may
    hold something else than the class at a call, so it proves nothing."""
    return {name for node in ast.walk(tree) for name in _bound_names(node)}


def _instances(
    function: ast.AST, methods: dict[str, set[str]], rebound: set[str], method_of: str | None
) -> tuple[dict[str, str], set[str]]:
    """Locals of ``function`` that surely hold one of the file's own classes or instances —
    every binding in the function's scope is ``name = OwnClass(…)`` (the class name never
    rebound), and ``self``/``cls`` of a method not rebound in it — and every name the
    function's scope binds (a closure sees an outer local only where it binds none itself)."""
    bindings: dict[str, int] = {}
    constructed: dict[str, list[str]] = {}
    for sub in _own_scope(function):
        for name in _bound_names(sub):
            bindings[name] = bindings.get(name, 0) + 1
        if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
            call = sub.value
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id in methods
                and call.func.id not in rebound
            ):
                constructed.setdefault(sub.targets[0].id, []).append(call.func.id)
    out = {
        name: classes[0]
        for name, classes in constructed.items()
        if len(set(classes)) == 1 and len(classes) == bindings.get(name, 0)
    }
    args = function.args if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if method_of is not None and args is not None:
        positional = args.posonlyargs + args.args
        first = positional[0].arg if positional else None
        if first in ("self", "cls") and bindings.get(first, 0) == 1:  # the parameter itself only
            out[first] = method_of
    return out, set(bindings)


def _module_names(tree: ast.AST, package: str) -> set[str]:
    """Names bound to ``package`` or one of its modules by an import anywhere in the file."""
    names = {package}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
            names.update(alias.asname or alias.name for alias in node.names)
    return names


#: torch's modules that reach operators or code by a name, or load code: no exercise needs them
DENIED_TORCH_PATHS = (
    "torch.library",
    "torch.overrides",
    "torch.utils.cpp_extension",
    "torch.hub",
    "torch.package",
    "torch.ops.load_library",
)
#: calls whose string arguments are messages for a person, never names of code
MESSAGE_CALLS = {"print"}
MESSAGE_CLASSES = ("Error", "Exception", "Warning")
MESSAGE_METHODS = {"warn", "warning", "info", "debug", "error", "exception", "critical", "log", "write"}


def _torch_imports(tree: ast.AST) -> dict[str, str]:
    """Names an import binds to torch or one of its modules/objects, with the path:
    ``import torch.nn.functional as F`` → {"F": "torch.nn.functional"},
    ``import torch.nn`` → {"torch": "torch"}, ``from torch import nn`` → {"nn": "torch.nn"}."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "torch":
                    out[alias.asname or "torch"] = alias.name if alias.asname else "torch"
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "torch":
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


class _TorchAliases:
    """Which names of a file hold torch, one of its modules or objects — by import, by
    assignment (``t = torch``, ``a = t.ops.aten``, ``t, u = torch, 1``, ``(t := torch)``), as a
    loop or comprehension variable over a display holding one, a parameter whose default or
    whose argument in a call of the file's own function is one, a container holding one
    (``mods = [torch]``), or a function or lambda returning one (``def get(): return torch``).
    Flow- and scope-insensitive, to a fixed point: a name that holds torch anywhere counts as
    torch everywhere (conservative: what it reaches is torch's). The value of a call of
    torch (a tensor) is not torch's namespace."""

    def __init__(self, tree: ast.AST) -> None:
        self.paths: dict[str, str] = _torch_imports(tree)
        self.returners: dict[str, str] = {}  # own function/lambda name → the torch path it returns
        defs = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                name = getattr(node, "name", None)
                if name is not None:
                    defs.setdefault(name, []).append(node)
        bindings = [
            node
            for node in ast.walk(tree)
            if isinstance(
                node,
                (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension, ast.Call, ast.arguments),
            )
        ]
        returns = {
            name: [sub.value for node in nodes for sub in ast.walk(node) if isinstance(sub, ast.Return) and sub.value]
            for name, nodes in defs.items()
        }
        for _ in range(50):  # a fixed point: each round binds at least one more name, or stops
            before = (dict(self.paths), dict(self.returners))
            for name, values in returns.items():
                for value in values:
                    self._bind_returner(name, value)
            for node in bindings:
                self._bind(node, defs)
            if (self.paths, self.returners) == before:
                break

    def _set(self, name: str, path: str) -> None:
        self.paths.setdefault(name, path)

    def _bind_returner(self, name: str, value: ast.AST) -> None:
        path = self.path(value)
        if path is not None:
            self.returners.setdefault(name, path)

    def _bind_target(self, target: ast.AST, value: ast.AST | None, path: str | None) -> None:
        if isinstance(target, ast.Name):
            if path is not None:
                self._set(target.id, path)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts):
                    self._bind_target(t, v, self.path(v))
            else:
                for t in target.elts:
                    self._bind_target(t, None, path)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, None, path)

    def _bind(self, node: ast.AST, defs: dict) -> None:
        if isinstance(node, ast.Assign):
            if isinstance(node.value, ast.Lambda):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self._bind_returner(target.id, node.value.body)
            for target in node.targets:
                self._bind_target(target, node.value, self.path(node.value))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            self._bind_target(node.target, node.value, self.path(node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._bind_target(node.target, None, self.path(node.iter))
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            for arg, default in zip(positional[len(positional) - len(node.defaults) :], node.defaults):
                self._bind_target(ast.Name(arg.arg), default, self.path(default))
            for arg, default in zip(node.kwonlyargs, node.kw_defaults):
                if default is not None:
                    self._bind_target(ast.Name(arg.arg), default, self.path(default))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for fn in defs.get(node.func.id, ()):
                params = fn.args.posonlyargs + fn.args.args
                offset = 1 if params and params[0].arg in ("self", "cls") and len(node.args) < len(params) else 0
                for arg, value in zip(params[offset:], node.args):
                    self._bind_target(ast.Name(arg.arg), value, self.path(value))
                names = {a.arg for a in params + fn.args.kwonlyargs}
                for keyword in node.keywords:
                    if keyword.arg in names:
                        self._bind_target(ast.Name(keyword.arg), keyword.value, self.path(keyword.value))
                if fn.args.vararg is not None and any(self.path(v) for v in node.args):
                    self._set(fn.args.vararg.arg, "torch")

    def path(self, node: ast.AST | None) -> str | None:
        """The torch path ``node`` evaluates to ("torch.ops.aten", "torch.…" where a part is
        unknown), or None when it is not torch's (as far as the file shows)."""
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return self.paths.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.path(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        if isinstance(node, ast.Subscript):
            base = self.path(node.value)
            return f"{base}.…" if base is not None else None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "getattr" and node.args:
                base = self.path(node.args[0])
                if base is None:
                    return None
                name = node.args[1] if len(node.args) > 1 else None
                return f"{base}.{name.value}" if isinstance(name, ast.Constant) and isinstance(name.value, str) else f"{base}.…"
            if isinstance(func, ast.Name) and func.id in self.returners:
                return self.returners[func.id]
            if isinstance(func, ast.Lambda):
                return self.path(func.body)
            return None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return next((f"{p}" for p in map(self.path, node.elts) if p is not None), None)
        if isinstance(node, ast.Dict):
            return next((p for p in map(self.path, node.values) if p is not None), None)
        if isinstance(node, ast.IfExp):
            return self.path(node.body) or self.path(node.orelse)
        if isinstance(node, ast.BoolOp):
            return next((p for p in map(self.path, node.values) if p is not None), None)
        if isinstance(node, (ast.NamedExpr, ast.Starred)):
            return self.path(node.value)
        if isinstance(node, ast.Lambda):
            return self.path(node.body)
        return None


def _message_strings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are messages for a person: the text of a raised
    exception, an assert's message, what is printed, warned or logged, an f-string's text,
    a string formatted with ``%`` or ``.format`` there — never a name that selects code."""
    out: set[int] = set()

    def message(expr: ast.AST | None) -> None:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            out.add(id(expr))
        elif isinstance(expr, ast.JoinedStr):
            out.update(id(v) for v in expr.values if isinstance(v, ast.Constant))
        elif isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mod, ast.Add)):
            message(expr.left)
            message(expr.right)
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
            message(expr.func.value)

    def arguments(call: ast.AST | None) -> None:
        if isinstance(call, ast.Call):
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                message(arg)
        else:
            message(call)

    for node in ast.walk(tree):
        if isinstance(node, ast.Raise):
            arguments(node.exc)
        elif isinstance(node, ast.Assert):
            message(node.msg)
        elif isinstance(node, ast.JoinedStr):
            message(node)
        elif isinstance(node, ast.Call):
            func = node.func
            named = isinstance(func, ast.Name) and (func.id in MESSAGE_CALLS or func.id.endswith(MESSAGE_CLASSES))
            if named or (isinstance(func, ast.Attribute) and func.attr in MESSAGE_METHODS):
                arguments(node)
    return out


def _loop_constants(tree: ast.AST) -> dict[str, list[str]]:
    """Names bound only as the variable of ``for`` loops over displays of string constants
    (``for name in ("w_q", "w_k"): setattr(self, name, …)``), with every value they take."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        for name in _bound_names(node):
            counts[name] = counts.get(name, 0) + 1
    values: dict[str, list[str]] = {}
    loops: dict[str, int] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.For, ast.comprehension))
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set))
            and node.iter.elts
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.iter.elts)
        ):
            values.setdefault(node.target.id, []).extend(e.value for e in node.iter.elts)
            loops[node.target.id] = loops.get(node.target.id, 0) + 1
    return {name: found for name, found in values.items() if counts.get(name, 0) == loops[name]}


def _plain_modules(tree: ast.AST, aliases: _TorchAliases) -> set[str]:
    """Names bound only by ``import m`` / ``import m as x`` of a module that is not torch's
    (``import rowmath``): ``rowmath.softmax`` is that module's function — the student's own,
    whose file is scanned where it is imported — never torch's."""
    imported = {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name.split(".")[0] != "torch"
    }
    other = {name for node in ast.walk(tree) if not isinstance(node, (ast.Import, ast.ImportFrom)) for name in _bound_names(node)}
    return {name for name in imported - other if name not in aliases.paths}


class _Scanner(ast.NodeVisitor):
    """Banned names (``banned``) are looked for where ``in_scope`` is on; the dynamic,
    deny-by-default constructs (when ``dynamic``) everywhere."""

    def __init__(self, banned: set[str], dynamic: bool, tree: ast.AST, scope: set[str] | None) -> None:
        # "autograd.functional": the name ``functional`` only as an attribute or import of a
        # module path ending in ``autograd`` (never ``torch.nn.functional``)
        self.banned = {name for name in banned if "." not in name}
        self.qualified: dict[str, set[str]] = {}
        for name in banned:
            if "." in name:
                owner, _, last = name.rpartition(".")
                self.qualified.setdefault(last, set()).add(owner)
        self.dynamic = dynamic
        self.scope = scope
        self.found: list[Violation] = []
        self.stack: list[str] = []
        self.docstrings = _docstrings(tree) | (_export_lists(tree) if isinstance(tree, ast.Module) else set())
        self.aliases = _TorchAliases(tree)
        self.torch = set(self.aliases.paths) | set(self.aliases.returners)
        self.plain_modules = _plain_modules(tree, self.aliases)
        self.module_of = {
            alias.asname or alias.name.split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        self.messages = _message_strings(tree)
        self.loop_constants = _loop_constants(tree)
        self.sys = _module_names(tree, "sys")
        self.safe_calls: set[int] = set()  # ids of Name nodes that are the func of an allowed call
        self.rebound = _rebound_class_names(tree)
        self.subclassed = {
            _dotted(base).split(".")[-1] for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for base in node.bases
        }
        self.methods = {name: defs for name, defs in _own_methods(tree).items() if name not in self.torch}
        self.classes: list[str] = []  # the enclosing classes, innermost last
        self.class_bodies: list[ast.ClassDef] = []
        self.parents = {
            id(child): parent for parent in ast.walk(tree) if isinstance(parent, ast.ClassDef) for child in parent.body
        }
        self.bodies = set(self.parents) | {
            id(child) for child in getattr(tree, "body", [])
        }  # statements of a module or class body
        self.instances: list[
            tuple[dict[str, str], set[str]]
        ] = []  # per enclosing function: (local → own class it surely holds, names bound)

    @property
    def in_scope(self) -> bool:
        if self.scope is None:
            return True
        qualified = ".".join(self.stack)  # MODULE_LEVEL ("") at top level: in scope only if listed
        return any(qualified == f or qualified.startswith(f + ".") for f in self.scope)

    def _flag(self, node: ast.AST, text: str) -> None:
        self.found.append(Violation(getattr(node, "lineno", 0), text, ".".join(self.stack) or "<module>"))

    def _banned(self, name: str) -> bool:
        return self.in_scope and name in self.banned

    def _banned_path(self, owner: str, name: str) -> bool:
        """A qualified banned name (``autograd.functional``): ``name`` reached from a module
        path whose end is the qualifier."""
        return self.in_scope and any(owner == q or owner.endswith("." + q) for q in self.qualified.get(name, ()))

    def _banned_attribute(self, node: ast.Attribute) -> bool:
        if self._banned(node.attr):
            # the attribute of the file's own class, or of an imported module that is not
            # torch's (``rowmath.softmax``: the student's helper, scanned where it is used)
            value = node.value
            plain = isinstance(value, ast.Name) and value.id in self.plain_modules
            return not plain and not self._own_method(node)
        if node.attr in self.qualified:
            owner = self.aliases.path(node.value) or _dotted(node.value)
            return self._banned_path(owner, node.attr)
        return False

    def _own_class(self, node: ast.AST) -> str | None:
        """The file's own class that ``node`` plainly is, or is an instance of, if any."""
        if isinstance(node, ast.Call):
            node = node.func if isinstance(node.func, ast.Name) and node.func.id in self.methods else node
            return node.id if isinstance(node, ast.Name) and node.id in self.methods and node.id not in self.rebound else None
        if not isinstance(node, ast.Name):
            return None
        for trusted, bound in reversed(self.instances):  # innermost scope that binds the name decides
            if node.id in bound:
                return trusted.get(node.id)
        return node.id if node.id in self.methods and node.id not in self.rebound else None

    def _own_method(self, node: ast.Attribute) -> bool:
        if not isinstance(node.ctx, ast.Load):
            return False  # assigning `Rows.softmax = …` is no call of the file's own method
        owner = self._own_class(node.value)
        return owner is not None and node.attr in self.methods.get(owner, ())

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.stack.append(node.name)
        # self/cls of a method: an instance of its class or of a subclass — trusted only where the
        # file subclasses it nowhere (a subclass could put torch.Tensor first in the MRO)
        method_of = (
            self.classes[-1]
            if self.classes and self.class_bodies[-1] is self.parents.get(id(node)) and self.classes[-1] not in self.subclassed
            else None
        )
        self.instances.append(_instances(node, self.methods, self.rebound, method_of))
        self.generic_visit(node)
        self.instances.pop()
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> None:
        name = _lambda_name(node) if id(node) in self.bodies else None
        if name is None:
            self.generic_visit(node)
            return
        self.stack.append(name)  # `backward = staticmethod(lambda ctx, d_out: …)` is scoped like its def
        self.generic_visit(node)
        self.stack.pop()

    def visit_If(self, node: ast.If) -> None:
        if self.stack or not _is_main_guard(node):
            self.generic_visit(node)
            return
        self.stack.append(MAIN_GUARD)  # a scope of its own: it never runs when the file is imported
        self.generic_visit(node)
        self.stack.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.classes.append(node.name)
        self.class_bodies.append(node)
        self.generic_visit(node)
        self.class_bodies.pop()
        self.classes.pop()
        self.stack.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        path = self.aliases.path(node) if self.dynamic else None
        if self._banned_attribute(node):
            self._flag(node, _dotted(node))
        elif self.dynamic:
            if "DisableTorch" in node.attr or "disable_torch_function" in node.attr.lower():
                self._flag(node, f"{_dotted(node)} (switches off the recording of torch calls)")
            elif _is_dunder(node.attr) and node.attr not in ALLOWED_DUNDERS:
                self._flag(node, f"{_dotted(node)} (dunder attribute access)")
            elif node.attr in DENIED_NAMES or (node.attr == "modules" and _root(node) in self.sys):
                self._flag(node, f"{_dotted(node)} (dynamic lookup)")
            elif node.attr.startswith("_") and not _is_dunder(node.attr) and (_root(node) in self.torch or path):
                self._flag(node, f"{_dotted(node)} (torch's private namespace{self._alias_note(node, path)})")
            elif node.attr in UNSEEN_CODE or (node.attr in UNSEEN_LOADS and (_root(node) in self.torch or path)):
                self._flag(node, f"{_dotted(node)} (runs code the recorder cannot see)")
            elif path in DENIED_TORCH_PATHS:
                self._flag(node, f"{_dotted(node)} ({path}: reaches operators or code by a name)")
            elif self._denied_module_attribute(node):
                self._flag(node, f"{_dotted(node)} (a module for dynamic code or introspection)")
        self.generic_visit(node)

    def _constant_names(self, node: ast.AST) -> list[str] | None:
        """The names a lookup's name argument can hold: a string constant, or a loop variable
        bound only by ``for name in ("w_q", "w_k", …)`` over string constants; else None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if not isinstance(node, ast.Name):
            return None
        return self.loop_constants.get(node.id)

    def _alias_note(self, node: ast.Attribute, path: str | None) -> str:
        """ ", t is torch" when the object is torch's through a name that is not torch itself."""
        root = _root(node)
        if not path or root is None or root == "torch":
            return ""
        if root in self.aliases.paths:
            return f", {root} is {self.aliases.paths[root].split('.…')[0]}"
        return f", {root}() returns {self.aliases.returners.get(root, 'torch')}"

    def _denied_module_attribute(self, node: ast.Attribute) -> bool:
        """``logging.handlers.QueueListener`` after ``import logging``: a denied module
        reached as an attribute of an imported one."""
        if not isinstance(node.value, (ast.Name, ast.Attribute)):
            return False
        dotted = _dotted(node).split(".")
        module = self.module_of.get(dotted[0]) if dotted[0] in self.plain_modules else None
        if module is None:
            return False
        full = [*module.split("."), *dotted[1:]]
        return ".".join(full) in DENIED_MODULES

    def visit_Name(self, node: ast.Name) -> None:
        if self.dynamic and id(node) not in self.safe_calls:
            if node.id in DYNAMIC_CALLS or node.id in LOOKUPS:
                self._flag(node, f"{node.id} (dynamic lookup or code)")
            elif "DisableTorch" in node.id:
                self._flag(node, f"{node.id} (switches off the recording of torch calls)")
            elif _is_dunder(node.id) and node.id not in ALLOWED_DUNDER_NAMES:
                self._flag(node, f"{node.id} (dunder name)")
            elif node.id in DENIED_NAMES:
                self._flag(node, f"{node.id} (dynamic lookup)")

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or id(node) in self.docstrings or id(node) in self.messages or not self.in_scope:
            return
        text = node.value.strip()
        if IDENTIFIER_LIKE.match(text):
            parts = re.split(r"[.:]+", text)
            hit = next((p for p in parts if p in self.banned), None)
            if hit is not None:
                self._flag(node, f"the string {text[:60]!r} (names {hit})")
            elif self.dynamic and any("DisableTorch" in p or p == "_C" for p in parts):
                self._flag(node, f"the string {text[:60]!r} (names torch internals)")

    def _import(self, node: ast.AST, module: str, name: str | None, asname: str | None) -> None:
        full = f"{module}.{name}" if name else module
        parts = full.split(".")
        # only torch's own names count: ``from rowmath import softmax`` imports the student's
        # function (its file is scanned where it is used)
        torch_path = parts[0] == "torch"
        owner = ".".join(parts[:-1])
        if torch_path and (self._banned(parts[-1]) or self._banned_path(owner, parts[-1])):
            self._flag(node, f"from {module} import {name}" if name else f"import {module}")
        if not self.dynamic:
            return
        label = f"from {module} import {name}" if name else f"import {module}"
        if name == "*" and parts[0] == "torch":
            self._flag(node, f"{label} (wildcard import from torch)")
        elif any(".".join(parts[: i + 1]) in DENIED_MODULES for i in range(len(parts))):
            self._flag(node, f"{label} (a module for dynamic code or introspection)")
        elif parts[0] == "torch" and any(_private(p) for p in parts[1:]):
            self._flag(node, f"{label} (torch's private namespace)")
        elif any(".".join(parts[: i + 1]) in DENIED_TORCH_PATHS for i in range(len(parts))):
            self._flag(node, f"{label} (reaches operators or code by a name)")
        elif name in UNSEEN_CODE or (parts[0] == "torch" and name in UNSEEN_LOADS):
            self._flag(node, f"{label} (runs code the recorder cannot see)")
        elif name is not None and (
            name in DENIED_NAMES or "DisableTorch" in name or _is_dunder(name) or (parts[0] == "sys" and name == "modules")
        ):
            self._flag(node, f"{label} (dynamic lookup)")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name, None, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            self._import(node, module, alias.name, alias.asname)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in LOOKUPS and len(node.args) >= 2:
            name = node.args[1]
            values = self._constant_names(name)
            if values is not None:
                self.safe_calls.add(id(func))
                for value in values:
                    if self._banned(value):
                        self._flag(node, f"{func.id}(…, {value!r})")
                    elif self.dynamic and (
                        _is_dunder(value)
                        or value.startswith("_")
                        and (_root(node.args[0]) in self.torch or self.aliases.path(node.args[0]) is not None)
                        or self.aliases.path(node.args[0]) is not None
                        and f"{self.aliases.path(node.args[0])}.{value}" in DENIED_TORCH_PATHS
                        or "DisableTorch" in value
                    ):
                        self._flag(node, f"{func.id}(…, {value!r}) (private or dunder attribute)")
                if isinstance(name, ast.Constant):
                    self.docstrings.add(id(name))  # a constant attribute name, judged here
            elif self.dynamic:
                self._flag(node, f"{func.id} with a computed name")
                self.safe_calls.add(id(func))
        elif isinstance(func, ast.Name) and func.id in DYNAMIC_CALLS and self.dynamic:
            self._flag(node, f"{func.id}(…) (dynamic lookup or code)")
            self.safe_calls.add(id(func))
        self.generic_visit(node)


@functools.lru_cache(maxsize=32)
def _parse(source: str) -> ast.Module:
    """Suites scan the same file in many tests: parse it once (the tree is never modified)."""
    return ast.parse(source)


def _lambda_name(node: ast.AST) -> str | None:
    """``f = lambda …`` or ``f = staticmethod(lambda …)`` (classmethod too): a function
    written as an assignment; its name, else None."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return None
    value = node.value
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("staticmethod", "classmethod")
        and len(value.args) == 1
    ):
        value = value.args[0]
    return node.targets[0].id if isinstance(value, ast.Lambda) else None


def _definitions(tree: ast.Module) -> list[tuple[str, str, ast.AST]]:
    """(qualified name, plain name, node) of every top-level function and method, ``def`` or
    lambda assignment: "f" / "Class.method"."""
    out = []
    for node in tree.body:
        name = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else _lambda_name(node)
        if name is not None:
            out.append((name, name, node))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                method = item.name if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else _lambda_name(item)
                if method is not None:
                    out.append((f"{node.name}.{method}", method, item))
    return out


def _functions(tree: ast.Module, scope: Iterable[str]) -> list[ast.AST]:
    """The nodes of the named functions ("f" or "Class.method"; a lambda assignment counts)."""
    wanted = set(scope)
    return [node for qualified, _, node in _definitions(tree) if qualified in wanted]


def scan(source: str, banned: Iterable[str], *, scope: Iterable[str] | None = None, dynamic: bool = True) -> list[Violation]:
    """Violations in ``source``: banned names in the whole module (or only in the functions
    of ``scope``), and — when ``dynamic`` — the deny-by-default constructs anywhere in it,
    whatever the scope (a helper at module level can hide what a scoped function calls)."""
    return list(_scan(source, frozenset(banned), frozenset(scope) if scope is not None else None, dynamic))


@functools.lru_cache(maxsize=64)
def _scan(source: str, banned: frozenset[str], scope: frozenset[str] | None, dynamic: bool) -> tuple[Violation, ...]:
    """Several tests of a suite scan the same file with the same rule: keyed by the file's
    content and the rule, a scan runs once per run (a Violation is immutable)."""
    tree = _parse(source)
    scanner = _Scanner(set(banned), dynamic, tree, set(scope) if scope is not None else None)
    scanner.visit(tree)
    found = {(v.line, v.found): v for v in scanner.found}  # one entry per construct and line
    return tuple(sorted(found.values(), key=lambda v: v.line))


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


def imported(source: str, available: dict[str, str]) -> dict[str, str]:
    """The files among ``available`` (module name → source) that ``source`` imports, directly
    or through each other."""
    out: dict[str, str] = {}
    todo = [source]
    while todo:
        try:
            tops = _imported_tops(todo.pop())
        except SyntaxError:
            continue
        for top in tops:
            if top in available and top not in out:
                out[top] = available[top]
                todo.append(available[top])
    return out


MODULE_LEVEL = ""  # the scope name of a module's top-level code (outside any def or class)
MAIN_GUARD = "__main__"  # the pseudo-scope of a module's `if __name__ == "__main__":` block


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

    for node in ast.walk(tree):
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
            id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
        }
        for node in ast.walk(tree):
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


def _is_main_guard(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


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
        isinstance(sub, (ast.Call, ast.NamedExpr, ast.Lambda)) for part in parts if part is not None for sub in ast.walk(part)
    )


def _reached(source: str, names: set[str]) -> set[str]:
    """The top-level functions and classes of ``source`` that an importer can run: those it
    imports (``names``), those the module's top-level code mentions, those that run or hand
    themselves out at import (``_runs_at_import``), and everything any of them mentions
    (calls, references, decorators, defaults), transitively. The ``__main__`` block does not
    run on import and counts for nothing. The rest — a function nobody can reach by name —
    never runs for the importer."""
    tree = _parse(source)
    defs = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    todo = [n for n in names if n in defs] + [n for n, node in defs.items() if _runs_at_import(node)]
    for node in tree.body:
        if node.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) and not _is_main_guard(node):
            todo += [sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and sub.id in defs]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [sub.id for sub in ast.walk(defs[name]) if isinstance(sub, ast.Name) and sub.id in defs and sub.id not in seen]
    return seen


def imported_scopes(source: str, available: dict[str, str]) -> dict[str, tuple[str, frozenset[str] | None]]:
    """The files among ``available`` that ``source`` imports, directly or through each other,
    each with the part of it a rule scan must cover: its top-level code and the functions and
    classes the importers reach (``from sdpa_masks import to_additive_mask`` does not bring in
    ``sdpa_masks.sdpa``), or None — the whole file — when the module is used as a whole.
    Conservative: a module's own imports count wherever they stand in it."""
    return dict(_imported_scopes(source, tuple(sorted(available.items()))))


@functools.lru_cache(maxsize=64)
def _imported_scopes(
    source: str, files: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, tuple[str, frozenset[str] | None]], ...]:
    """``imported_scopes``, once per run for each file and its fellow files: the tests of a
    suite check the same file with the same rule (every value in it is immutable)."""
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
    except SyntaxError:
        return ()
    changed = True
    while changed:
        changed = False
        for module in list(uses):
            try:
                changed |= merge(_module_uses(available[module], available))
            except SyntaxError:
                continue
    out = {}
    for module, names in uses.items():
        try:
            scope = None if names is None else frozenset(_reached(available[module], names)) | {MODULE_LEVEL}
        except SyntaxError:
            scope = None
        out[module] = (available[module], scope)
    return tuple(out.items())


@functools.lru_cache(maxsize=64)
def _imported_tops(source: str) -> tuple[str, ...]:
    """The top-level package of every absolute import in ``source``, in the order found."""
    tops = []
    for node in ast.walk(_parse(source)):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
        tops += [name.split(".")[0] for name in names]
    return tuple(tops)


def check_no_banned(
    source: str | None,
    file: str,
    banned: Iterable[str],
    *,
    what: str,
    hints: Iterable[str] = (),
    scope: Iterable[str] | None = None,
    imports: dict[str, str] | None = None,
) -> None:
    """Fail with every offending line of the student's file when a banned name appears.
    ``imports`` (module name → source, e.g. ``sub.importable_sources()``): the submission's
    other files; those the file imports are scanned with the same rules — the deny-by-default
    constructs everywhere in them, the banned names in their top-level code and in what the
    file uses of them (``imported_scopes``)."""
    if source is None:
        return  # a missing module fails elsewhere, with its own message
    others = {k: v for k, v in (imports or {}).items() if f"{k}.py" != file}
    files = [(file, source, scope)] + [
        (f"{name}.py", text, used) for name, (text, used) in sorted(imported_scopes(source, others).items())
    ]
    found: list[tuple[str, Violation]] = []
    for name, text, file_scope in files:
        try:
            found += [(name, v) for v in scan(text, banned, scope=file_scope)]
        except SyntaxError:
            continue  # a file that does not parse fails elsewhere, with its own message
    if found:
        listing = "; ".join(f"{name}:{v.line}: {v.found}" for name, v in found[:6])
        raise CheckFailed(
            Feedback(
                check=what,
                problem="constraint",
                detail=(
                    f"{file} uses what this exercise forbids ({listing}){' …' if len(found) > 6 else ''}; write it "
                    "from tensor operations, without dynamic lookups"
                ),
                hints=list(hints) or ["general/forbidden-api"],
                frames=[v.frame(name) for name, v in found[:6]],
            )
        )
