"""Which names and attributes of a submission surely hold one of its own instances: where a
call of a banned name (``x.softmax(…)``) is the file's own method, not torch's.

A local bound only to ``OwnClass(…)`` is judged by ``tree._instances``; this module adds what
blind fairness tester R-CQ's correct styles needed (each had scored its skill 0): a module-level
instance, a namespace of the file's own functions, and ``self.A`` where the file gives ``A``
nothing but its own instances; and for custom_backward's strict scan, blind fairness tester
R-CS's shapes: an instance made by a factory, held in a literal container or a class attribute
(``_made_instances``), a method inherited from the file's own bases (``tree._own_methods``), and
``ctx.A`` in an ``autograd.Function`` (``with_ctx``). Each is trusted only where nothing else can
be put in its place; the module-level ones, the containers and the attributes only where the
file imports none of the submission's other files (which could store into them).

Where a rule's run-time check refuses a name wherever it runs (row_softmax's softmax kernels,
mha_reshape's attention: banned for the worker's whole life, in C++), the suite passes that
name as ``deferred``: called on an object the scan cannot place, in a submission that defines
its own function by that name (``own_names``), it proves nothing — the call may be the
student's — and the run-time check judges what runs. Blind fairness tester R-CS listed a
factory's, a container's, a base class's, ``super()``'s and a helper module's own ``softmax``,
each of which had scored the skill 0. custom_backward's autograd names are not deferred: its
run-time watch is Python's, and the scan is the layer that held when a red-team round reached
it (R-CH).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Any

from .facts import _function_names
from .tree import _binding_counts, _bound_names, _constructor_assignment, _dotted, _instances, _nodes


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
    counts = _binding_counts(tree)
    stored: set[str] = set()
    for node in _nodes(tree):
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


def _made_instances(tree: ast.AST, methods: dict[str, set[str]], rebound: set[str]) -> dict[str, str]:
    """Expressions that surely give an instance of one of the file's own classes, keyed
    ``call:F`` (``F()``: a module-level function bound nowhere else, undecorated or cached, every
    ``return`` of which is ``OwnClass(…)``), ``item:D`` (``D[…]``: a module-level dict, list or
    tuple literal of ``OwnClass(…)`` values, bound nowhere else and only ever indexed) and
    ``attr:H.A`` (``H.A``: a class body's ``A = OwnClass(…)``, the class never rebound, ``A``
    assigned, stored, named or defined nowhere else) — blind fairness tester R-CS's factory,
    container and class attribute, each of which had scored custom_backward 0."""
    counts = _binding_counts(tree)
    stores: dict[str, int] = {}
    names: set[str] = set()
    uses: dict[str, list[ast.AST]] = {}
    parents = {id(child): node for node in _nodes(tree) for child in ast.iter_child_nodes(node)}
    for node in _nodes(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            stores[node.attr] = stores.get(node.attr, 0) + 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            parent = parents.get(id(node))  # indexed: the value of a subscript, not its index
            uses.setdefault(node.id, []).append(parent if isinstance(parent, ast.Subscript) and parent.value is node else node)

    def made(value: ast.AST | None) -> str | None:
        call = value.func if isinstance(value, ast.Call) else None
        return call.id if isinstance(call, ast.Name) and call.id in methods and call.id not in rebound else None

    out: dict[str, str] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and counts.get(node.name) == 1:
            cached = all(_dotted(d).split(".")[-1] in ("lru_cache", "cache") for d in node.decorator_list)
            scope = [n for n in ast.walk(node) if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Lambda))]
            owners = {made(n.value) if isinstance(n, ast.Return) else None for n in scope}
            if cached and scope and len(owners) == 1 and None not in owners:
                out[f"call:{node.name}"] = str(owners.pop())
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
            items = value.values if isinstance(value, ast.Dict) else value.elts if isinstance(value, ast.List | ast.Tuple) else []
            owners = {made(v) for v in items}
            indexed = all(isinstance(u, ast.Subscript) and isinstance(u.ctx, ast.Load) for u in uses.get(name, []))
            if items and len(owners) == 1 and None not in owners and counts.get(name) == 1 and indexed:
                out[f"item:{name}"] = str(owners.pop())
        elif isinstance(node, ast.ClassDef) and node.name not in rebound:
            defined = [n for item in node.body for n in _bound_names(item)] + [
                t.id for item in node.body if isinstance(item, ast.Assign) for t in item.targets if isinstance(t, ast.Name)
            ]
            for item in node.body:
                if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                    attr, owner = item.targets[0].id, made(item.value)
                    clean = defined.count(attr) == 1 and not stores.get(attr) and attr not in names
                    if owner and clean:
                        out[f"attr:{node.name}.{attr}"] = owner
    return out


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
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id in ("self", "ctx")
            and owner
        ):
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


#: calls that hand on the function they are given first (``partial(_stable, dim=-1)``)
_BINDERS = ("partial", "functools.partial")


def own_names(tree: ast.AST) -> set[str]:
    """The names under which the file's own functions may be called: each def (a method too)
    and name bound to a lambda, and each keyword or attribute the file binds one of them to
    (``types.SimpleNamespace(softmax=_stable)``, ``self.softmax = _stable``, a ``partial`` of
    one)."""
    functions = {name for node in _nodes(tree) for name in _function_names(node)}

    def own(value: ast.AST) -> bool:
        if isinstance(value, ast.Lambda):
            return True
        if isinstance(value, ast.Call) and _dotted(value.func) in _BINDERS and value.args:
            value = value.args[0]
        return isinstance(value, ast.Name) and value.id in functions

    names = set(functions)
    for node in _nodes(tree):
        if isinstance(node, ast.keyword) and node.arg and own(node.value):
            names.add(node.arg)
        elif isinstance(node, ast.Assign) and own(node.value):
            names.update(t.attr for t in node.targets if isinstance(t, ast.Attribute))
    return names


class OwnInstances:
    """The scanner's judgement of a receiver: the file's own class it plainly is, or holds an
    instance of (``self.instances``: per scope, the module's first; ``self.instance_attributes``:
    ``self.A``)."""

    methods: dict[str, set[str]]
    rebound: set[str]
    instances: list[tuple[dict[str, str], set[str]]]
    instance_attributes: dict[str, str]
    plain_classes: set[str]
    made: dict[str, str]  # _made_instances
    class_bodies: list[ast.ClassDef]
    aliases: Any

    def _own_class(self, node: ast.AST) -> str | None:
        """The file's own class that ``node`` plainly is, or is an instance of, if any."""
        key = _made_key(node)
        if key in self.made:
            return self.made[key]
        if isinstance(node, ast.Call):
            node = node.func if isinstance(node.func, ast.Name) and node.func.id in self.methods else node
            return node.id if isinstance(node, ast.Name) and node.id in self.methods and node.id not in self.rebound else None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "ctx"):
            holder = self._own_class(node.value)  # self.A: what the file alone gives A, in a plainly based class
            plain = holder in self.plain_classes or holder == CTX and node.attr not in _ctx_attributes()
            return self.instance_attributes.get(node.attr) if plain else None
        if not isinstance(node, ast.Name):
            return None
        for trusted, bound in reversed(self.instances):  # innermost scope that binds the name decides
            if node.id in bound:
                return trusted.get(node.id)
        return node.id if node.id in self.methods and node.id not in self.rebound else None

    def _autograd_function(self) -> bool:
        """Whether the class being visited is an ``autograd.Function`` of the file's."""
        bases = self.class_bodies[-1].bases if self.class_bodies else []
        return any(self.aliases.path(b) in ("torch.autograd.Function", "torch.autograd.function.Function") for b in bases)

    def _own_method(self, node: ast.Attribute) -> bool:
        if not isinstance(node.ctx, ast.Load):
            return False  # assigning `Rows.softmax = …` is no call of the file's own method
        owner = self._own_class(node.value)
        return owner is not None and node.attr in self.methods.get(owner, ())


def _made_key(node: ast.AST) -> str:
    """``node``'s key among ``_made_instances``' (or "")."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"call:{node.func.id}"
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return f"item:{node.value.id}"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"attr:{node.value.id}.{node.attr}"
    return ""


#: the pseudo-class of an ``autograd.Function`` method's ``ctx`` (no code can name it)
CTX = "<ctx>"


def with_ctx(entry: tuple[dict[str, str], set[str]], function: ast.AST, autograd: bool) -> tuple[dict[str, str], set[str]]:
    """``_instances``' entry of ``function``, with its first parameter, named ``ctx`` and never
    rebound in it, as torch's context object where ``function`` is a method of an
    ``autograd.Function`` of the file's: ``ctx.helper`` set to an own instance in forward and
    called in backward (blind fairness tester R-CS) is that instance."""
    args = getattr(function, "args", None)
    positional = (args.posonlyargs + args.args) if args is not None else []
    if autograd and positional and positional[0].arg == "ctx":
        rebinds = sum(1 for sub in ast.walk(function) for name in _bound_names(sub) if name == "ctx")
        if rebinds == 1:  # the parameter itself
            entry[0]["ctx"] = CTX
    return entry


@functools.cache
def _ctx_attributes() -> frozenset[str]:
    """What torch's context objects have of their own (``saved_tensors``, ``needs_input_grad``…):
    a file's ``ctx.A`` by such a name is torch's, whatever the file stores."""
    import torch.autograd.function as function  # the trusted side's torch, imported already

    return frozenset(n for cls in (function.FunctionCtx, function.BackwardCFunction) for n in dir(cls))
