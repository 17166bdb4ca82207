"""Which names and attributes of a submission surely hold one of its own instances: where a
call of a banned name (``x.softmax(…)``) is the file's own method, not torch's.

A local bound only to ``OwnClass(…)`` is judged by ``tree._instances``; this module adds what
blind fairness tester R-CQ's correct styles needed (each had scored its skill 0): a module-level
instance, a namespace of the file's own functions, and ``self.A`` where the file gives ``A``
nothing but its own instances. Each is trusted only where nothing else can be put in its place.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .tree import _bound_names, _constructor_assignment, _dotted, _instances, _nodes


def _module_instances(tree: ast.AST, methods: dict[str, set[str]], rebound: set[str]) -> tuple[dict[str, str], set[str]]:
    """``_instances`` of the module, and its namespaces of the file's own functions: a name
    bound once in the whole file, to ``types.SimpleNamespace(k=f, …)`` whose every value is a
    function the file defines once at module level, with nothing stored into it, holds those
    functions as ``name.k`` (blind fairness tester R-CQ: ``ops.softmax(…)`` for the file's own
    softmax scored the skill 0). Each such namespace is added to ``methods`` as a class of its
    own, named ``<name>`` (no code can name it)."""
    trusted, bound = _instances(tree, methods, rebound, None)
    if not isinstance(tree, ast.Module):
        return trusted, bound
    makers = {"types.SimpleNamespace"}
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            makers.update(f"{a.asname}.SimpleNamespace" for a in node.names if a.name == "types" and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "types":
            makers.update(a.asname or a.name for a in node.names if a.name == "SimpleNamespace")
    counts: dict[str, int] = {}
    stored: set[str] = set()
    for node in _nodes(tree):
        for name in _bound_names(node):
            counts[name] = counts.get(name, 0) + 1
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(node.value, ast.Name):
            stored.add(node.value.id)
    functions = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, call = node.targets[0].id, node.value
        if not (isinstance(call, ast.Call) and _dotted(call.func) in makers and not call.args) or name in stored:
            continue
        values = [k.value for k in call.keywords]
        own = all(
            k.arg and isinstance(v, ast.Name) and v.id in functions and counts.get(v.id) == 1
            for k, v in zip(call.keywords, values)
        )
        if own and counts.get(name) == 1 and counts.get(_dotted(call.func).split(".")[0]) == 1:  # the import alone
            methods[f"<{name}>"] = {k.arg for k in call.keywords if k.arg}
            trusted[name] = f"<{name}>"
    return trusted, bound


#: nn.Module's ways to give an instance an attribute by a name it is handed
_REGISTERS = ("register_buffer", "register_parameter", "register_module", "add_module", "set_submodule")


def _instance_attributes(tree: ast.AST, methods: dict[str, set[str]], rebound: set[str]) -> dict[str, str]:
    """Attribute name → the file's own class every instance of which it holds wherever the file
    gives any object that attribute: each store or delete of an attribute of that name is
    ``self.A = OwnClass(…)`` (one class), no class of the file defines the name in its body, and
    neither a string equal to it nor a keyword of that name appears (``setattr(self, "A", …)``,
    ``register_buffer("A", …)``); nothing where nn.Module registers an attribute by a computed
    name. Read as ``self.A`` in a method of a class whose bases are the file's own, ``object``
    or nn.Module, it is that instance (blind fairness tester R-CQ: ``self.norm.softmax(…)``, the
    file's own method on its own submodule, was read as torch's softmax: the skill scored 0)."""
    good: dict[str, list[str]] = {}
    stores: dict[str, int] = {}
    spoiled: set[str] = set()
    for node in _nodes(tree):
        target, owner = _constructor_assignment(node, methods, rebound)
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" and owner:
            good.setdefault(target.attr, []).append(owner)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            stores[node.attr] = stores.get(node.attr, 0) + 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            spoiled.add(node.value)
        elif isinstance(node, ast.keyword) and node.arg:
            spoiled.add(node.arg)
        elif isinstance(node, ast.ClassDef):  # a name of the class body: a method, a property, a class attribute
            for item in node.body:
                parts = [item] if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []
                targets = (
                    item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(item, ast.AnnAssign) else []
                )
                spoiled.update(p.name for p in parts)
                spoiled.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _REGISTERS:
            if not (node.args and isinstance(node.args[0], ast.Constant)):
                return {}
    return {
        name: owners[0]
        for name, owners in good.items()
        if len(set(owners)) == 1 and len(owners) == stores.get(name, 0) and name not in spoiled
    }


def _plainly_based(
    tree: ast.AST, methods: dict[str, set[str]], rebound: set[str], path: Callable[[ast.AST], str | None]
) -> set[str]:
    """The file's classes built on its own classes, ``object`` and nn.Module alone (``path``: a
    base's torch path): there ``self.A`` is only what the file gives it, no property of a
    library class (a tensor's ``.T``)."""
    bases = {
        node.name: node.bases
        for node in _nodes(tree)
        if isinstance(node, ast.ClassDef) and node.name in methods and node.name not in rebound
    }
    plain: set[str] = set()

    def ok(base: ast.expr) -> bool:
        if isinstance(base, ast.Name) and (base.id in plain or base.id == "object" and base.id not in rebound):
            return True
        return (path(base) or "") in ("torch.nn.Module", "torch.nn.modules.module.Module")

    while True:
        more = {name for name, listed in bases.items() if name not in plain and all(ok(b) for b in listed)}
        if not more:
            return plain
        plain |= more
