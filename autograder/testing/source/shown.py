"""Namespaces a student only shows: ``locals()``, ``globals()`` and ``vars(x)`` read inside the
builtin ``print`` and used there for nothing but display.

Why: a rule-checked file may not look names up by value (``vars(F)[name](x)`` reaches what a
rule forbids without naming it), so the scan denies these three. But students print them
to debug, in many spellings: ``print(locals())``, ``print(f"{locals()}")``,
``print(sorted(vars(self)))``, ``print(locals()["scores"].shape)``,
``print([k for k in globals() if not k.startswith("_")])`` (blind
testers M and R-A: each cost a correct file its whole skill). A namespace is *shown* when
every path from it to the printed argument only formats, copies, counts, reads by a constant
key or an explicit method name, or iterates: no value read from it is ever called, passed
to a function that is not a display builtin, or bound to a name outside a comprehension. A
name a comprehension binds from it is followed the same way. Anything else stays a lookup.
"""

from __future__ import annotations

import ast
import string

#: builtins that only turn what they are given into text, a count or a plain copy
DISPLAY_CALLS = {
    *("str", "repr", "ascii", "format", "sorted", "reversed", "len", "list", "tuple", "dict", "set", "type", "id"),
    # tests and reductions that read values and call none (map and filter call a function: not here)
    *("isinstance", "issubclass", "callable", "hash", "bool", "int", "float", "round", "abs", "min", "max", "sum"),
    *("any", "all", "enumerate", "zip"),
}
#: torch's predicates that only test what they are given, as ``isinstance`` does: a print's
#: ``torch.is_tensor(v)`` on a value read from ``locals()`` is display (blind tester R-BY:
#: ``print({k: (v.shape if torch.is_tensor(v) else v) for k, v in locals().items()})`` cost a
#: correct sdpa_masks 1.65 points). The scan passes the ids of the calls whose function is
#: torch's own (``aliases.path``), never a name the file may have bound itself.
TORCH_PREDICATES = {"torch.is_tensor", "torch.is_floating_point", "torch.is_complex"}
#: a namespace's own methods that only read it (a method of a value read from it is called
#: by its written name, which the scan reads as any name)
READ_METHODS = {"items", "keys", "values", "get", "copy"}
#: how a value flows into its parent without being called or passed on: containers,
#: f-strings, operators, comparisons, conditionals, unpacking into a display call
_CARRIERS = (
    ast.FormattedValue,
    ast.JoinedStr,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.BoolOp,
    ast.IfExp,
    ast.Starred,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.keyword,
)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def shows(call: ast.Call, print_is_builtin: bool) -> bool:
    """Is this the builtin ``print`` (the file binds no name ``print`` of its own:
    ``print_is_builtin``), with no name bound inside the call (``print(d := locals())`` keeps
    the dict)? print turns its arguments into text itself; ``pprint`` and logging hand the
    objects to code the file may have replaced (a ``logging.Handler`` of its own kept the
    namespace: blind red-team tester R-D), so a namespace there is no display."""
    func = call.func
    return (
        print_is_builtin
        and isinstance(func, ast.Name)
        and func.id == "print"
        and not any(isinstance(sub, ast.NamedExpr) for sub in ast.walk(call))
    )


def binds_print(tree: ast.AST) -> bool:
    """Does the file bind the name ``print`` anywhere (a def, a class, an assignment, an
    import, a parameter, a loop or with target, an except name)? Then ``print(…)`` may be its
    own function (R-D: ``def print(*a): return a[0]``, then ``print(vars(F))[…]``)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "print":
            return True
        if isinstance(node, ast.Name) and node.id == "print" and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == "print":
            return True
        if isinstance(node, ast.arg) and node.arg == "print":
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == "print":
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and "print" in node.names:
            return True
    return False


def namespace_call(node: ast.AST) -> bool:
    """``locals()``, ``globals()``, ``vars(x)`` or ``x.__dict__`` (``vars(x)`` as an attribute:
    ``print(self.__dict__)`` cost a correct file its skill, blind fairness tester R-AL)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__" and isinstance(node.ctx, ast.Load)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords):
        return False
    name = node.func.id
    return (name in ("locals", "globals") and not node.args) or (name == "vars" and len(node.args) <= 1)


def _mark(node: ast.AST) -> ast.AST:
    """The node the scan lets pass for a shown namespace: a call's function, or ``.__dict__``."""
    return node.func if isinstance(node, ast.Call) else node


def predicate_calls(node: ast.AST, torch_path) -> frozenset[int]:
    """The ids of the calls under ``node`` of one of ``TORCH_PREDICATES``, as ``torch_path``
    (the scan's ``aliases.path``: a node's torch path, or None) reads their function."""
    return frozenset(id(c) for c in ast.walk(node) if isinstance(c, ast.Call) and torch_path(c.func) in TORCH_PREDICATES)


def shown_namespaces(call: ast.Call, predicates: frozenset[int] = frozenset()) -> list[ast.AST]:
    """The namespace reads in the arguments of a showing ``call`` that are only shown (``_mark``);
    ``predicates``: ids of the calls in it of one of ``TORCH_PREDICATES``."""
    args = [*call.args, *(k.value for k in call.keywords)]
    parents: dict[int, ast.AST] = {}
    for arg in args:
        for node in ast.walk(arg):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
    roots = {id(arg) for arg in args}
    return [
        _mark(node)
        for arg in args
        for node in ast.walk(arg)
        if namespace_call(node) and _only_shown(node, parents, roots, predicates=predicates)
    ]


def formatted_namespaces(text: ast.JoinedStr, predicates: frozenset[int] = frozenset()) -> list[ast.AST]:
    """The namespace calls in an f-string that it only turns into text, wherever the text goes
    (``warnings.warn(f"{locals()}")``, ``log.debug(f"state {vars(self)}")``: fairness tester
    R-Z): the f-string is the display, and binds nothing (no ``:=`` inside)."""
    if any(isinstance(sub, ast.NamedExpr) for sub in ast.walk(text)):
        return []
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(text):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return [
        _mark(node)
        for node in ast.walk(text)
        if namespace_call(node) and _only_shown(node, parents, {id(text)}, predicates=predicates)
    ]


def _only_shown(
    node: ast.AST,
    parents: dict[int, ast.AST],
    roots: set[int],
    stop: ast.AST | None = None,
    itself: bool = True,
    predicates: frozenset[int] = frozenset(),
) -> bool:
    """Every step from ``node`` (a namespace, or a value read from one) up to a printed
    argument (or to ``stop``, a comprehension's own element) keeps it a value that is only
    shown. ``itself``: ``node`` may be the namespace dict itself, whose own methods change it
    (``globals().update``) — also inside a container and taken out again
    (``(globals(),)[0].update(__name__=…)``, ``[g for g in [globals()]][0]``); ``holds``: the
    value is a container that may hold the namespace, and a read from it may be the namespace."""
    holds = False
    while id(node) not in roots and node is not stop:
        parent = parents.get(id(node))
        if parent is None:
            return False
        if isinstance(parent, ast.Call):
            if parent.func is node:
                if not isinstance(node, ast.Attribute):
                    return False  # a value read from the namespace, called
                if node.attr not in READ_METHODS and _may_be_namespace(node.value, itself):
                    return False  # the namespace itself changed: globals().update(…)
                # the namespace's own read methods give its keys, values or a copy; a container that
                # may hold it may hand it out ([globals()].pop(), {1: globals()}.get(1), .values())
                itself = holds = holds
            elif _plain_template_format(parent):
                itself, holds = False, False  # "f got {}".format(locals()): text (fairness tester R-AQ)
            elif _constant_attribute_read(parent, node):
                itself, holds = False, False  # hasattr(v, "shape"), getattr(v, "shape", v): an attribute by its written name
            elif id(parent) in predicates and parent.args == [node] and not parent.keywords:
                itself, holds = False, False  # torch.is_tensor(v): a truth value, as isinstance gives
            elif not (isinstance(parent.func, ast.Name) and parent.func.id in DISPLAY_CALLS):
                return False  # handed to a function that may call it
            elif any(k.arg == "key" for k in parent.keywords):
                return False  # max(vars(F).values(), key=lambda f: f(x)) calls every value
            elif not _display_call_keeps_it(parent, node):
                return False  # round(c, vars(os)), sorted([c, vars(os)]): handed to another object's method
            else:  # list((globals(),)) still holds it; str(…) or len(…) is text or a number, dict(…) a copy
                itself, holds = False, itself or holds
        elif isinstance(parent, ast.Attribute):
            # an attribute read, or a method called by its written name (scanned as any name):
            # the Call above judges a method of the namespace itself
            node = parent
            continue
        elif isinstance(parent, ast.Subscript):
            if parent.value is not node or not isinstance(parent.slice, ast.Constant):
                return False  # only a read by a constant key
            itself, holds = holds, False  # an item of the namespace, or what a container holding it held
        elif isinstance(parent, ast.comprehension):
            # iterating the namespace gives its keys; iterating a container that holds it, the namespace
            if parent.iter is not node or not _targets_shown(parent, parents, roots, holds, predicates):
                return False
            parent = parents.get(id(parent))  # the comprehension: a container of shown values
            if parent is None:
                return False
            itself, holds = False, holds
        elif isinstance(parent, (ast.IfExp, ast.BoolOp)):
            pass  # the value itself, passed on
        elif isinstance(parent, (ast.Compare, ast.BinOp)) and not _against_constants(parent, node):
            # ``vars(os) == c`` and ``vars(os) | c`` hand the namespace to c's own method
            # (``c.__eq__``, ``c.__ror__``): blind red-team tester R-AM kept it, then its builtins
            return False
        elif isinstance(parent, (ast.FormattedValue, ast.JoinedStr, ast.Compare)):
            itself, holds = False, False  # text, or a truth value
        elif isinstance(parent, (*_CARRIERS, *_COMPREHENSIONS)):
            itself, holds = False, itself or holds  # a container (or an operator's new one) that may hold it
        else:
            return False
        node = parent
    return True


#: display builtins that compare or add the items of what they are given: only a namespace's
#: keys (strings) or items (tuples led by distinct keys) may meet there, never its values
_COMBINING = {"sorted", "min", "max", "sum"}
#: display builtins whose other arguments are only types the check asks about
_TYPE_CHECKS = {"isinstance", "issubclass"}


def _constant_like(node: ast.AST) -> bool:
    """A literal: a constant, or a tuple, list, set or dict of them (``x.shape == (2, 3)``,
    ``vars(self) == {}``: fairness tester R-AQ)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_constant_like(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _constant_like(k) for k in node.keys) and all(_constant_like(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _constant_like(node.operand)
    return isinstance(node, ast.Constant)


def _against_constants(parent: ast.Compare | ast.BinOp, node: ast.AST) -> bool:
    """A comparison or an operator meets ``node`` with literals only (``is`` calls nothing)."""
    if isinstance(parent, ast.BinOp):
        return _constant_like(parent.right if parent.left is node else parent.left)
    if all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
        return True
    return all(_constant_like(o) for o in [parent.left, *parent.comparators] if o is not node)


def _display_call_keeps_it(call: ast.Call, node: ast.AST) -> bool:
    """A display builtin's other arguments are literals (``round(v, 3)``, ``enumerate(d, 1)``)
    — ``zip`` calls nothing on what it pairs, a type check's second argument is a type (the
    scan refuses a file's own ``__instancecheck__``) — and one that compares or adds items
    gets a namespace's keys or items, not its values."""
    name = call.func.id if isinstance(call.func, ast.Name) else ""
    if name in _COMBINING and not (
        namespace_call(node)
        or isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("keys", "items")
        and namespace_call(node.func.value)
    ):
        return False
    if name == "zip" or (name in _TYPE_CHECKS and node is call.args[0]):
        return True
    return all(_constant_like(a) for a in [*call.args, *(k.value for k in call.keywords)] if a is not node)


def _may_be_namespace(node: ast.AST, itself: bool) -> bool:
    """Whether the object a method is called on may be the namespace dict itself: the path
    state, or a namespace call written right there."""
    return itself or namespace_call(node)


def _plain_template_format(call: ast.Call) -> bool:
    """``"text {} {name}".format(…)`` on a written template whose fields only place values: a
    field may also read an attribute or an item by a name (``"{0.__globals__}"``), so a
    template with ``.`` or ``[`` in a field, or a nested field, does not count."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant)):
        return False
    template = func.value.value
    if not isinstance(template, str):
        return False
    try:
        fields = [(name, spec) for _, name, spec, _ in string.Formatter().parse(template) if name is not None]
    except ValueError:
        return False
    return all(not any(c in name for c in ".[") and "{" not in (spec or "") for name, spec in fields)


def _constant_attribute_read(call: ast.Call, node: ast.AST) -> bool:
    """``hasattr(value, "name")`` or ``getattr(value, "name"[, default])`` with ``node`` as the
    value or the default: what ``value.name`` reads, by a name written out (blind tester R-Q:
    ``print({n: getattr(v, "shape", v) for n, v in locals().items()})``, the guard that the
    docs' own example needs once a local is ``self`` or ``None``)."""
    func, args = call.func, call.args
    if not (isinstance(func, ast.Name) and func.id in ("hasattr", "getattr") and not call.keywords):
        return False
    if not (2 <= len(args) <= (2 if func.id == "hasattr" else 3)):
        return False
    name = args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier()):
        return False
    return node is args[0] or (len(args) == 3 and node is args[2])


def _targets_shown(
    generator: ast.comprehension,
    parents: dict[int, ast.AST],
    roots: set[int],
    holds: bool = False,
    predicates: frozenset[int] = frozenset(),
) -> bool:
    """The names a comprehension binds from a namespace are used only as shown values
    (``holds``: it iterates a container that may hold the namespace itself)."""
    names = {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
    comp = parents.get(id(generator))
    if not isinstance(comp, _COMPREHENSIONS):
        return False
    elements = [comp.key, comp.value] if isinstance(comp, ast.DictComp) else [comp.elt]
    parts = [*elements, *(i for g in comp.generators for i in g.ifs), *(g.iter for g in comp.generators if g is not generator)]
    for part in parts:
        for node in ast.walk(part):
            if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
                if not _only_shown(node, parents, roots | {id(p) for p in parts}, stop=comp, itself=holds, predicates=predicates):
                    return False
    return True
