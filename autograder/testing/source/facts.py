"""Facts about a file the scan gathers before it walks it: which names stand for the string
runners, which nodes can never call what they name (isinstance's classes, annotations), which
modules are the interpreter's private ones. Kept apart from the walk itself (scanner.py)."""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Iterable

from .rules import ALLOWED_DUNDER_NAMES, DENIED_ATTRIBUTES, DENIED_MODULES, IDENTIFIER_LIKE, STRING_RUNNERS
from .tree import NOT_PYTHON, _bound_names, _is_dunder, _nodes, _parse, _root, live_parts

#: builtins whose class pattern binds the subject itself (PEP 634): ``case int(n)`` reads no attribute
SELF_MATCHING = frozenset({"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str", "tuple"})


def _private_module(name: str) -> bool:
    """``_pickle``, ``_frozen_importlib_external``, ``_testcapi``: one of the interpreter's own
    modules named with one leading underscore (``__future__`` is not one, and neither is a
    student's helper ``_attn_common.py``: blind tester I wrote one)."""
    if not name.startswith("_") or name.startswith("__"):
        return False
    return name in sys.stdlib_module_names or name in sys.builtin_module_names or name.startswith(("_test", "_xx"))


def _string_runner_names(tree: ast.AST) -> set[str]:
    """Names the file binds to a module of ``STRING_RUNNERS`` or to one of its members."""
    names: set[str] = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            names.update(
                alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name.split(".")[0] in STRING_RUNNERS
            )
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in STRING_RUNNERS and not node.level:
            names.update(alias.asname or alias.name for alias in node.names)
    # and what the file makes with them (``p = cProfile.Profile()``, then ``p.run("…")``)
    for _ in range(3):
        made = {
            target.id
            for node in _nodes(tree)
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _root(node.value) in names
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        if made <= names:
            break
        names |= made
    return names


def _function_names(node: ast.AST) -> list[str]:
    """The names a def, or an assignment of a lambda, binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name]
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    return []


INERT_CALLS = ("isinstance", "issubclass")


def _inert_nodes(tree: ast.AST, bound: set[str]) -> set[int]:
    """ids of the nodes of annotations and of isinstance/issubclass's class argument (where
    the file binds neither name itself): what a banned name there does is never a call."""
    roots: list[ast.AST] = []
    for node in _nodes(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in INERT_CALLS
            and node.func.id not in bound
            and len(node.args) == 2
            and not node.keywords
        ):
            roots.append(node.args[1])
    return {id(sub) for root in roots if _type_expression(root) for sub in ast.walk(root)}


#: what a type expression is made of (``nn.MultiheadAttention | None``, ``tuple[int, ...]``): an
#: annotation is evaluated when the function is defined, so one holding a call runs it
TYPE_EXPRESSION_NODES = (
    ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant, ast.BinOp, ast.BitOr, ast.Load,
)  # fmt: skip


def _type_expression(root: ast.AST) -> bool:
    return all(isinstance(sub, TYPE_EXPRESSION_NODES) for sub in ast.walk(root))


def _only_inert(tree: ast.AST, name: str, inert: set[int]) -> bool:
    """Whether ``name`` (bound by an import) is read somewhere and only in inert places — a
    quoted annotation naming it counts as such a read (fairness tester R-Z: ``ref:
    "MultiheadAttention"`` cost mha_reshape's 15 points where the unquoted one passed)."""
    reads = [n for n in _nodes(tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    return (bool(reads) or _named_in_quoted_annotation(tree, name, inert)) and all(id(n) in inert for n in reads)


def _named_in_quoted_annotation(tree: ast.AST, name: str, inert: set[int]) -> bool:
    """Whether a string inside an inert annotation (``x: "MultiheadAttention | None"``,
    ``Optional["MultiheadAttention"]``) is a type expression naming ``name``."""
    for node in _nodes(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) in inert):
            continue
        try:
            parsed = ast.parse(node.value.strip(), mode="eval")
        except NOT_PYTHON:
            continue
        if _type_expression(parsed.body) and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(parsed)):
            return True
    return False


#: the top-level names of the modules rule-checked files may not use, as attributes too
_DENIED_TOPS = frozenset(name.split(".")[0] for name in DENIED_MODULES) - {"string", "logging", "unittest", "sys"}


def _reaches_in_annotation(text: str) -> bool:
    """A string annotation that names a dunder or the interpreter's machinery (``x.sys``,
    ``.modules``): no type is spelled so."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except NOT_PYTHON:
        return False
    for node in ast.walk(tree):
        # no type is spelled with a dunder or a private attribute (blind red-team tester R-AD:
        # "torch . autograd . Variable . _execution_engine . __class__" gave a grader class)
        if isinstance(node, ast.Attribute) and (node.attr.startswith("_") or node.attr in DENIED_ATTRIBUTES | {"modules"}):
            return True
        if isinstance(node, ast.Name) and _is_dunder(node.id) and node.id not in ALLOWED_DUNDER_NAMES:
            return True
    return False


def _type_checking(test: ast.AST, module_of: dict[str, str], tree: ast.AST) -> bool:
    """``typing.TYPE_CHECKING``, or ``TYPE_CHECKING`` bound only by an import from typing:
    False whenever the file runs, so what its block imports never runs."""
    typing_modules = ("typing", "typing_extensions")
    if isinstance(test, ast.Attribute):
        return (
            test.attr == "TYPE_CHECKING" and isinstance(test.value, ast.Name) and module_of.get(test.value.id) in typing_modules
        )
    if not (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"):
        return False
    bindings = [n for n in _nodes(tree) if "TYPE_CHECKING" in _bound_names(n)]
    return len(bindings) == 1 and isinstance(bindings[0], ast.ImportFrom) and bindings[0].module in typing_modules


@functools.lru_cache(maxsize=64)
def names_in_reach(
    source: str, module: str, others: tuple[tuple[str, str], ...], api: tuple[str, ...] = ()
) -> frozenset[str] | None:
    """Every name under which the exercise file's own globals can be read — by its own code,
    or by those of the submission's other files that name its module (a file that never names
    it cannot import it) — for ``scan``'s ``bound``: a banned import whose name is in none of
    them is never called, and "bans are on calls" (blind tester R-DB: an unused ``from torch.nn
    import MultiheadAttention`` cost mha_reshape 15/15). Wider than what runs. The file's own
    code: any name it reads, attribute names (a class pattern's too), identifier-like strings
    (``globals()["x"]``). Another file: what it reads from the module (``from mod import x``,
    ``mod.x``: ``_read_from``), or, where it takes the module any other way, every name it
    reads as the file's own would; None (every name) where such a file star-imports. Code in
    the body of a top-level main guard reads nothing: a worker compiles every submission file
    without those bodies, whatever the file does to its ``__name__`` or however it is imported
    (sandbox/mainguard.py), and a self-test there may compare with torch's function (blind
    tester R-DE: an import used only there cost row_softmax 15/15; R-DH: so it did where the
    file was in an import cycle). ``api``: the names the grader itself reads from the file (its
    contract's functions and classes), read whatever the code does (blind red-team tester R-DH:
    `from torch.nn.functional import softmax as vocab_probs` was read by no code of the file)."""
    names: set[str] = set(api)
    for text, own in ((source, True), *((text, False) for _, text in others)):
        try:
            tree = _parse(text)
        except NOT_PYTHON:
            continue
        nodes = _live_nodes(tree)
        found = _names_read(nodes, own)
        if own or module in found:
            read = None if own else _read_from(nodes, module)
            if read is None and "*" in found:
                return None
            names |= found if read is None else read
    return frozenset(names)


def _live_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of what runs when the file is imported: all but the bodies of its top-level
    main guards, which a worker never compiles (``tree.live_parts``)."""
    return [node for statement in tree.body for part in live_parts(statement, guard_runs=False) for node in ast.walk(part)]


def _names_read(nodes: list[ast.AST], own: bool) -> set[str]:
    """Every name the file's ``nodes`` read or mention (``_named_by``)."""
    found: set[str] = set()
    for node in nodes:
        found.update(_named_by(node, own))
    return found


def _named_by(node: ast.AST, own: bool) -> Iterable[str]:
    """What one node names itself: a name, an attribute, a class pattern's attributes,
    ``global``/``nonlocal``, the parts of an identifier-like string, and (for another file:
    ``own`` False) the parts of an import, ``*`` for a star import."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        return (node.attr,)
    if isinstance(node, ast.MatchClass):  # ``case object(_s=f)``: reads attribute _s (blind red-team tester R-DC)
        return node.kwd_attrs
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return node.names
    if isinstance(node, (ast.Import, ast.ImportFrom)) and not own:
        star = ["*"] if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names) else []
        module = [part for part in (getattr(node, "module", None) or "").split(".") if part]
        return [*star, *module, *(part for alias in node.names for part in alias.name.split("."))]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and IDENTIFIER_LIKE.match(node.value.strip()):
        return re.split(r"[.:]+", node.value.strip())
    return ()


def _read_from(nodes: list[ast.AST], module: str) -> set[str] | None:
    """The names another file reads from ``module``: those it imports from it (``from mod
    import x``), and the attributes it reads of the names it binds to the module (``import mod
    as m``, then ``m.x``). None where the file may take the module's globals some other way:
    a star import; the module's name anywhere else (a string, an attribute, a name no import
    binds); a bound name used other than as ``m.x`` (``getattr(m, …)``, ``vars(m)``, ``f(m)``).
    Blind red-team tester R-DG: an unused banned import in mha_reshape.py counted as read
    because sdpa_masks.py, which imports a helper from it, names MultiheadAttention itself."""
    read: set[str] = set()
    bound: set[str] = set()
    placed: set[int] = set()  # the nodes an import or ``m.x`` accounts for
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.module == module:
                if any(alias.name == "*" for alias in node.names):
                    return None
                read.update(alias.name for alias in node.names)
            elif module in (node.module or "").split("."):
                return None  # ``from mod.x import …``: not a flat module's way; take no chance
            bound.update(alias.asname or alias.name for alias in node.names if alias.name == module)
            placed.add(id(node))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module:
                    bound.add(alias.asname or alias.name)
                elif module in alias.name.split("."):
                    return None
            placed.add(id(node))
    for node in nodes:  # after every import is seen: ``ast.walk`` goes level by level
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            read.add(node.attr)
            placed.add(id(node.value))
    for node in nodes:
        if id(node) in placed or isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            continue
        if module in _named_by(node, own=True) or isinstance(node, ast.Name) and node.id in bound:
            return None
    return read
