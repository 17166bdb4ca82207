"""Which names of a file hold torch, one of its modules or objects (imports, assignments, walrus, loops)."""

from __future__ import annotations

import ast
from collections import deque

from .tree import _bound_names, _nodes, _torch_imports

#: a container's methods that hand back what it holds (a module's attribute of these names is no
#: torch function of the kind the scan judges: torch has none)
CONTENT_METHODS = frozenset({"pop", "popitem", "get", "copy", "setdefault", "popleft", "values", "items", "keys"})


class _TorchAliases:
    """Which names of a file hold torch, one of its modules or objects — by import, by
    assignment (``t = torch``, ``a = t.ops.aten``, ``t, u = torch, 1``, ``(t := torch)``), as a
    loop or comprehension variable over a display holding one, an exception caught where the
    file raises one holding it, a parameter whose default or
    whose argument in a call of the file's own function is one, a container holding one
    (``mods = [torch]``), or a function or lambda returning one (``def get(): return torch``).
    Flow- and scope-insensitive, to a fixed point: a name that holds torch anywhere counts as
    torch everywhere (conservative: what it reaches is torch's). The value of a call of
    torch (a tensor) is not torch's namespace."""

    def __init__(self, tree: ast.AST) -> None:
        self.paths: dict[str, str] = _torch_imports(tree)
        self.returners: dict[str, str] = {}  # own function/lambda name → the torch path it returns
        #: (name, attribute) → the torch path an attribute was given: ``self.lib = torch``, and a
        #: class body's ``lib = torch`` (read as ``Cls.lib`` and ``self.lib``): blind red-team
        #: tester R-CA's ``box._dynamo`` went through a container the scan did not follow
        self.attributes: dict[tuple[str, str], str] = {}
        self._gained: list[str] = []  # identifiers given a binding since the worklist last looked
        self._class_bodies = [
            (node.name, item)
            for node in _nodes(tree)
            if isinstance(node, ast.ClassDef)
            for item in node.body
            if isinstance(item, (ast.Assign, ast.AnnAssign)) and item.value is not None
        ]
        defs = {}
        for node in _nodes(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                name = getattr(node, "name", None)
                if name is not None:
                    defs.setdefault(name, []).append(node)
        bindings = [
            node
            for node in _nodes(tree)
            if isinstance(
                node,
                (
                    ast.Assign,
                    ast.AnnAssign,
                    ast.NamedExpr,
                    ast.For,
                    ast.AsyncFor,
                    ast.comprehension,
                    ast.Call,
                    ast.arguments,
                    ast.withitem,
                ),
            )
        ]
        #: what a ``raise`` hands to every ``except … as e`` of the file (flow-insensitive, like the
        #: rest): ``raise ValueError(torch)`` read back as ``e.args[0]`` is torch (R-CB's open case)
        raises = [node for node in _nodes(tree) if isinstance(node, ast.Raise)]
        self._raised = [value for node in raises for value in (node.exc, node.cause) if value]
        self._caught = [node.name for node in _nodes(tree) if isinstance(node, ast.ExceptHandler) and node.name]
        returns = {
            name: [sub.value for node in nodes for sub in _nodes(node) if isinstance(sub, (ast.Return, ast.Yield)) and sub.value]
            for name, nodes in defs.items()
        }
        # a fixed point, reached by a worklist: a unit (a binding, a return, a class body's
        # assignment, the file's raises) is evaluated again only when a name it reads gained a
        # binding. Rounds over the whole file took one round a step of a chain of aliases, and
        # a cap of 50 rounds left a chain of 61 functions unfollowed (blind red-team tester
        # R-CX: torch's own softmax derivative reached through ``_r60()``, custom_backward
        # 20/20); a round a step is also quadratic in the file. Each unit reads only names
        # and attributes its own expressions spell, so it is queued by those identifiers.
        units: list[tuple] = [("return", name, value) for name, values in returns.items() for value in values]
        units += [("bind", node) for node in bindings if not isinstance(node, ast.Call) or _binds(node, defs)]
        if self._raised and self._caught:
            units.append(("raise",))
        units += [("class", cls, item) for cls, item in self._class_bodies]
        waiting: dict[str, list[int]] = {}
        for number, unit in enumerate(units):
            for identifier in self._read_by(unit):
                waiting.setdefault(identifier, []).append(number)
        queue = deque(range(len(units)))
        queued = set(queue)
        while queue:
            number = queue.popleft()
            queued.discard(number)
            self._evaluate(units[number], defs)
            while self._gained:
                for again in waiting.get(self._gained.pop(), ()):
                    if again not in queued:
                        queued.add(again)
                        queue.append(again)

    def _read_by(self, unit: tuple) -> set[str]:
        """The names and attribute names that evaluating ``unit`` looks up."""
        kind = unit[0]
        if kind == "return":
            expressions = [unit[2]]
        elif kind == "class":
            expressions = [unit[2].value]
        elif kind == "raise":
            expressions = self._raised
        else:
            expressions = _evaluated(unit[1])
        out: set[str] = set()
        for expression in expressions:
            for node in ast.walk(expression):
                if isinstance(node, ast.Name):
                    out.add(node.id)
                elif isinstance(node, ast.Attribute):
                    out.add(node.attr)
        return out

    def _evaluate(self, unit: tuple, defs: dict) -> None:
        kind = unit[0]
        if kind == "return":
            self._bind_returner(unit[1], unit[2])
        elif kind == "bind":
            self._bind(unit[1], defs)
        elif kind == "raise":
            raised = next((p for p in map(self.path, self._raised) if p is not None), None)
            for name in self._caught if raised is not None else ():
                self._set(name, raised)
        else:
            cls, item = unit[1], unit[2]
            path = self.path(item.value)
            for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                if path is not None and isinstance(target, ast.Name):
                    for holder in (cls, "self", "cls"):
                        self._set_attribute((holder, target.id), path)

    def _set(self, name: str, path: str) -> None:
        if name not in self.paths:
            self.paths[name] = path
            self._gained.append(name)

    def _set_attribute(self, key: tuple[str, str], path: str) -> None:
        if key not in self.attributes:
            self.attributes[key] = path
            self._gained.append(key[1])

    def _bind_returner(self, name: str, value: ast.AST) -> None:
        path = self.path(value)
        if path is not None and name not in self.returners:
            self.returners[name] = path
            self._gained.append(name)

    def _bind_target(self, target: ast.AST, value: ast.AST | None, path: str | None) -> None:
        if isinstance(target, ast.Name):
            if path is not None:
                self._set(target.id, path)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            if path is not None:
                self._set_attribute((target.value.id, target.attr), path)
        elif isinstance(target, ast.Subscript) and path is not None:
            # ``box["t"] = torch``: the container holds torch, as ``box = {"t": torch}`` does (blind
            # red-team tester R-CU reached torch._library through an item the scan did not follow)
            holder = target.value
            if isinstance(holder, ast.Name):
                self._set(holder.id, path)
            elif isinstance(holder, ast.Attribute) and isinstance(holder.value, ast.Name):
                self._set_attribute((holder.value.id, holder.attr), path)
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
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind_target(node.optional_vars, None, self.path(node.context_expr))  # with nullcontext(torch) as t
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            for arg, default in zip(positional[len(positional) - len(node.defaults) :], node.defaults):
                self._bind_target(ast.Name(arg.arg), default, self.path(default))
            for arg, default in zip(node.kwonlyargs, node.kw_defaults):
                if default is not None:
                    self._bind_target(ast.Name(arg.arg), default, self.path(default))
        elif isinstance(node, ast.Call) and (holder := _holder(node)) is not None:
            # ``box.append(torch)``, ``box.update(t=torch)``, ``setattr(box, "t", torch)``: box holds torch
            # (blind red-team tester R-CU's dict item, and its kin)
            for value in [*node.args, *(k.value for k in node.keywords)]:
                path = self.path(value) if value is not holder else None
                if path is not None and isinstance(holder, ast.Name | ast.Attribute):
                    self._bind_target(ast.Subscript(holder, ast.Constant(0), ast.Store()), value, path)
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

    @staticmethod
    def _library_torch(node: ast.Attribute) -> str | None:
        """A library module's ``torch`` attribute is torch (``einops.layers.torch`` imported as
        ``elt``: ``elt.torch._C``, blind red-team tester R-CB)."""
        return "torch" if node.attr == "torch" else None

    def path(self, node: ast.AST | None) -> str | None:
        """The torch path ``node`` evaluates to ("torch.ops.aten", "torch.…" where a part is
        unknown), or None when it is not torch's (as far as the file shows)."""
        return self._path(node, {})

    def _path(self, node: ast.AST | None, memo: dict[int, str | None]) -> str | None:
        """``path``, each node of the expression evaluated once (``memo``: by node): a node is
        asked for more than once (a container method's object, then the method), and a chain
        of ``d.copy().copy()…`` cost 2^N (blind red-team tester R-CZ: 32 calls in a lambda
        never run held the trusted process for the whole run's time limit)."""
        if node is None:
            return None
        if id(node) in memo:
            return memo[id(node)]
        memo[id(node)] = found = self._evaluated_path(node, memo)
        return found

    def _evaluated_path(self, node: ast.AST, memo: dict[int, str | None]) -> str | None:
        def walk(child: ast.AST | None) -> str | None:
            return self._path(child, memo)

        if isinstance(node, ast.Name):
            return self.paths.get(node.id)
        if isinstance(node, ast.Attribute):
            base = walk(node.value)
            if base is None and isinstance(node.value, ast.Name):
                return self.attributes.get((node.value.id, node.attr)) or self._library_torch(node)
            if base is None and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                return self.attributes.get((node.value.func.id, node.attr))  # K().m, with a class body's m = torch
            return f"{base}.{node.attr}" if base is not None else self._library_torch(node)
        if isinstance(node, ast.Subscript):
            base = walk(node.value)
            return f"{base}.…" if base is not None else None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "getattr" and node.args:
                base = walk(node.args[0])
                if base is None:
                    return None
                name = node.args[1] if len(node.args) > 1 else None
                return f"{base}.{name.value}" if isinstance(name, ast.Constant) and isinstance(name.value, str) else f"{base}.…"
            if isinstance(func, ast.Name) and func.id in self.returners:
                return self.returners[func.id]
            if isinstance(func, ast.Lambda):
                return walk(func.body)
            if isinstance(func, ast.Attribute) and func.attr in CONTENT_METHODS and walk(func.value) is not None:
                return walk(func.value)  # {torch}.pop(), dict.fromkeys([torch]).popitem(): what the container held
            if walk(func) is None:
                # a function not torch's given torch's namespace may hand it back: dict(m=torch)["m"],
                # next(iter([torch])), SimpleNamespace(m=torch) (blind red-team tester R-CA)
                given = [*node.args, *(k.value for k in node.keywords)]
                return next((p for p in map(walk, given) if p is not None), None)
            return None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return next((f"{p}" for p in map(walk, node.elts) if p is not None), None)
        if isinstance(node, ast.Dict):
            return next((p for p in map(walk, node.values) if p is not None), None)
        if isinstance(node, ast.IfExp):
            return walk(node.body) or walk(node.orelse)
        if isinstance(node, ast.BoolOp):
            return next((p for p in map(walk, node.values) if p is not None), None)
        if isinstance(node, (ast.NamedExpr, ast.Starred)):
            return walk(node.value)
        if isinstance(node, ast.Lambda):
            return walk(node.body)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return walk(node.elt)  # [m for m in [torch]][0]
        if isinstance(node, ast.DictComp):
            return walk(node.value)
        return None


def _binds(call: ast.Call, defs: dict) -> bool:
    """Whether ``_TorchAliases._bind`` can bind anything at ``call``: a storing call, or a call of
    one of the file's own functions (its parameters); any other call binds nothing."""
    return _holder(call) is not None or (isinstance(call.func, ast.Name) and call.func.id in defs)


def _evaluated(node: ast.AST) -> list[ast.AST]:
    """The expressions ``_TorchAliases._bind`` evaluates for a binding node (not its targets, and
    not a loop's body: each binding inside is a unit of its own)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        return [node.value] if node.value is not None else []
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [node.iter]
    if isinstance(node, ast.withitem):
        return [node.context_expr]
    if isinstance(node, ast.arguments):
        return [d for d in [*node.defaults, *node.kw_defaults] if d is not None]
    return [node]  # a call: its function and arguments


def _plain_modules(tree: ast.AST, aliases: _TorchAliases) -> set[str]:
    """Names bound only by ``import m`` / ``import m as x`` of a module that is not torch's
    (``import rowmath``): ``rowmath.softmax`` is that module's function — the student's own,
    whose file is scanned where it is imported — never torch's."""
    imported = {
        alias.asname or alias.name.split(".")[0]
        for node in _nodes(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name.split(".")[0] != "torch"
    }
    other = {name for node in _nodes(tree) if not isinstance(node, (ast.Import, ast.ImportFrom)) for name in _bound_names(node)}
    return {name for name in imported - other if name not in aliases.paths}


#: methods that put what they are given into their object (a container's, a queue's)
_STORING_METHODS = frozenset({"append", "appendleft", "extend", "extendleft", "insert", "add", "update", "setdefault", "put"})


def _holder(call: ast.Call) -> ast.expr | None:
    """What ``call`` puts its arguments into: ``box`` of ``box.append(v)`` and the like, of
    ``setattr(box, name, v)`` and ``object.__setattr__(box, name, v)``; None for any other call."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _STORING_METHODS:
        return func.value
    named = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return call.args[0] if named in ("setattr", "__setattr__") and len(call.args) >= 3 else None
