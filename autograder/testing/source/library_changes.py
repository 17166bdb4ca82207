"""A rule-checked file changes no library's module or class: the worker's own code calls them
between the recorded windows, where a replaced one would run the file's code unseen (blind
red-team tester R-BU: ``json.dumps`` was handed every reply before it was signed). What the
scan (scanner.py) asks of an attribute store and of ``setattr`` and its kin, and which names
hold a library's module."""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection

from .rules import library_module
from .tree import _nodes, _root

CHANGES_LIBRARY = "changes a library's module or class, which the grader's own code calls too"
#: the setters of an attribute, with how many arguments follow the object in their bound form
ATTRIBUTE_SETTERS = {"setattr": 2, "delattr": 1, "__setattr__": 2, "__delattr__": 1}


def setter_target(call: ast.Call) -> ast.AST | None:
    """The object ``setattr(obj, "x", v)``, ``object.__setattr__(obj, …)`` (unbound: the object
    first) or ``obj.__setattr__("x", v)`` (bound: the method's object) sets an attribute of;
    None for any other call."""
    func = call.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if called not in ATTRIBUTE_SETTERS:
        return None
    if isinstance(func, ast.Name) or len(call.args) == ATTRIBUTE_SETTERS[called] + 1:
        return call.args[0] if call.args else None
    return func.value if isinstance(func, ast.Attribute) else None


#: library functions that read or set attributes by names their caller gives, as getattr and
#: setattr do: (how many positional arguments come before the names, the names' keywords).
#: ``functools.update_wrapper(holder, obj, (), (name,))`` is ``getattr(obj, name)`` by a name
#: built at run time; with its two tuples swapped, ``setattr`` (blind red-team tester R-CF read
#: ``torch.set_num_threads``'s globals this way and switched the rule's recording off). Their
#: defaults (``@functools.wraps(f)``) copy fixed names and stay allowed.
NAME_COPIERS = {"update_wrapper": (2, ("assigned", "updated")), "wraps": (1, ("assigned", "updated"))}
#: an argparse parser's methods, whose ``namespace`` receives ``setattr`` by each argument's ``dest``
NAMESPACE_PARSERS = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args"})
_DEFAULT_COPIED = frozenset({"__module__", "__name__", "__qualname__", "__doc__", "__dict__", "__annotations__"})


def imported_as(tree: ast.AST) -> dict[str, str]:
    """The file's ``from m import name as other``: other → name (``uw`` → ``update_wrapper``)."""
    return {a.asname: a.name for node in _nodes(tree) if isinstance(node, ast.ImportFrom) for a in node.names if a.asname}


def attributes_by_given_names(call: ast.Call, renamed: dict[str, str]) -> str | None:
    """What the scan says of a call that reads or sets attributes by names given at run time
    (``NAME_COPIERS`` given their own names, a parser given a namespace); None for any other.
    ``renamed``: ``imported_as`` of the file."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else None
    if isinstance(func, ast.Name):
        called = renamed.get(func.id, func.id)
    if called in NAME_COPIERS:
        before, keywords = NAME_COPIERS[called]
        names = [*call.args[before:], *(k.value for k in call.keywords if k.arg in keywords or k.arg is None)]
        if any(not _default_names(value) for value in names):
            return f"{called}(…) with attribute names of its own (a lookup by a name)"
    elif called in NAMESPACE_PARSERS and isinstance(func, ast.Attribute):
        if len(call.args) > 1 or any(k.arg in ("namespace", None) for k in call.keywords):
            return f"{called}(…) into a namespace of its own (sets attributes by a name)"
    elif called == "add_argument" and isinstance(func, ast.Attribute):
        # an argument's dest is the name its action sets on whatever namespace it is handed:
        # ``parser.add_argument("--x", dest=name)(parser, obj, value)`` is setattr(obj, name, value)
        given = [*call.args, *(k.value for k in call.keywords if k.arg in ("dest", None))]
        if any(not (isinstance(v, ast.Constant) and isinstance(v.value, str)) for v in given):
            return "add_argument(…) with a name given at run time (its action sets attributes by that name)"
    return None


#: attributes a library class reads as the *name* of another object's attribute, which it then
#: gets and sets: contextlib's redirect_stdout/redirect_stderr keep ``_stream`` ("stdout") and
#: run ``getattr(sys, self._stream)`` and ``setattr(sys, …)`` on entry, so a subclass or an
#: instance given ``_stream = "modules"`` reads any attribute of ``sys`` (found after R-CF)
NAME_FIELDS = frozenset({"_stream"})
REDIRECTS = frozenset({"redirect_stdout", "redirect_stderr", "_RedirectStream"})


def redirect_by_name(node: ast.ClassDef) -> str | None:
    """What the scan says of a class that subclasses contextlib's redirects or gives itself one
    of ``NAME_FIELDS``; None for any other class."""
    based = next((b for b in node.bases if (_dotted_name(b) or "").rpartition(".")[2] in REDIRECTS), None)
    fields = {t.id for item in node.body if isinstance(item, ast.Assign) for t in item.targets if isinstance(t, ast.Name)}
    if based is not None or fields & NAME_FIELDS:
        return f"class {node.name} (a redirect's stream name: gets and sets an attribute of sys by a name)"
    return None


def _dotted_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _default_names(node: ast.AST) -> bool:
    """Names functools copies by default: a literal tuple or list of them, functools'
    ``WRAPPER_ASSIGNMENTS``/``WRAPPER_UPDATES``, or a sum of those."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _default_names(node.left) and _default_names(node.right)
    if isinstance(node, (ast.Name, ast.Attribute)):
        return (node.id if isinstance(node, ast.Name) else node.attr) in ("WRAPPER_ASSIGNMENTS", "WRAPPER_UPDATES")
    return isinstance(node, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Constant) and e.value in _DEFAULT_COPIED for e in node.elts
    )


def library_rooted(node: ast.Attribute, plain_modules: set[str], module_of: dict[str, str]) -> bool:
    """Whether ``node`` is an attribute path from a module the file imports from a library
    (not one of the submission's own files, whose attributes are its own names)."""
    root = _root(node)
    module = module_of.get(root) if root in plain_modules else None
    return module is not None and library_module(module.split(".")[0])


def numpy_rooted(node: ast.AST, module_of: dict[str, str]) -> bool:
    """Whether ``node`` is numpy or one of its modules (``np``, ``numpy.lib.format``)."""
    root = _root(node)
    return root is not None and (module_of.get(root) or root).split(".")[0] == "numpy"


def stores_into_library(node: ast.Attribute, names: frozenset[str], path: str | None, sys: Collection[str]) -> bool:
    """Setting or deleting ``node`` changes a library's module or class (``changes_library``),
    but for the two a program may set for itself, harmlessly here: torch's backend flags
    (``path``, torch's name for it: ``torch.backends.cudnn.deterministic = True``) and
    ``sys.stdout``/``sys.stderr`` (``sys``: the names bound to sys)."""
    if node.attr in NAME_FIELDS:
        return True  # a redirect told which attribute of sys to get and set (NAME_FIELDS)
    if (path or "").startswith("torch.backends."):
        return False
    if isinstance(node.value, ast.Name) and node.value.id in sys and node.attr in ("stdout", "stderr"):
        return False
    return changes_library(node.value, names)


def library_names(tree: ast.AST, is_library: Callable[[str], bool]) -> frozenset[str]:
    """Names that hold a library's module, or an object reached from one by attributes alone:
    what ``import json``, ``import os.path as p`` and ``from json import JSONEncoder`` bind
    (``is_library`` says which top-level modules are a library's, not the submission's own),
    and, to a fixed point, a name assigned one of them or an attribute path from one
    (``m = json``, ``E = json.JSONEncoder``). A call's result is not one: ``torch.zeros(3)``
    is a new object, not the library's."""
    names: set[str] = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name.split(".")[0]) for a in node.names if is_library(a.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and is_library(node.module.split(".")[0]):
            names.update(a.asname or a.name for a in node.names if a.name != "*")
    pairs = []  # (target, value) of every plain binding of a name
    for node in _nodes(tree):
        if isinstance(node, ast.Assign):
            pairs += [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) and node.value is not None:
            pairs.append((node.target.id, node.value))
    grew = True
    while grew:
        grew = False
        for target, value in pairs:
            if target not in names and attribute_root(value) in names:
                names.add(target)
                grew = True
    return frozenset(names)


def attribute_root(node: ast.AST) -> str | None:
    """The name an attribute path starts from (``json.encoder.c_make_encoder`` → "json", ``m`` →
    "m"), or None for anything else on the way (a call, a subscript)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def changes_library(target: ast.AST | None, names: frozenset[str]) -> bool:
    """Whether setting or deleting an attribute of ``target`` changes a library's module or
    class (``names``: ``library_names``): ``json.dumps = f``, ``E.encode = f``, and a class
    reached through an object, ``type(r).setstate = f``, where the object is not the
    method's own (``type(self).count += 1`` is the file's own class)."""
    if target is None:
        return False
    if attribute_root(target) in names:
        return True
    while isinstance(target, ast.Attribute):
        target = target.value
    return (
        isinstance(target, ast.Call)
        and isinstance(target.func, ast.Name)
        and target.func.id == "type"
        and len(target.args) == 1
        and not (isinstance(target.args[0], ast.Name) and target.args[0].id in ("self", "cls"))
    )
