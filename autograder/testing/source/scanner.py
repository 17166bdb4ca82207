"""The scan itself: every banned name and every deny-by-default construct, with its line."""

from __future__ import annotations

import ast
import re

from . import library_changes as changes
from . import shown
from .aliases import _plain_modules, _TorchAliases
from .facts import (
    _DENIED_TOPS,
    SELF_MATCHING,
    _function_names,
    _inert_nodes,
    _only_inert,
    _private_module,
    _reaches_in_annotation,
    _string_runner_names,
    _type_checking,
)
from .instances import OwnInstances, _instance_attributes, _made_instances, _module_instances, _plainly_based, own_names, with_ctx
from .rules import (
    ALLOWED_DUNDER_NAMES,
    ALLOWED_DUNDERS,
    ALLOWED_IMPORTS,
    ALLOWED_PRIVATE_MODULES,
    CODE_FIELDS,
    DENIED_ATTRIBUTES,
    DENIED_DEFINITIONS,
    DENIED_KEYWORDS,
    DENIED_MODULES,
    DENIED_NAMES,
    DENIED_STRINGS,
    DENIED_TORCH_PATHS,
    DYNAMIC_CALLS,
    IDENTIFIER_LIKE,
    LOOKUPS,
    NUMPY_LOADS,
    RUNNER_CODE_PARAMETERS,
    RUNNER_DATA_METHODS,
    STRING_RUNNERS,
    UNSEEN_CODE,
    UNSEEN_LOADS,
    library_module,
)
from .tree import (
    MAIN_GUARD,
    Violation,
    _called_unbound,
    _code_in_annotation,
    _constant_names,
    _docstrings,
    _dotted,
    _export_lists,
    _instances,
    _is_dunder,
    _is_main_guard,
    _lambda_name,
    _looks_up,
    _loop_constants,
    _message_strings,
    _module_names,
    _nodes,
    _own_methods,
    _private,
    _rebound_class_names,
    _root,
)


class _Scanner(OwnInstances, ast.NodeVisitor):
    """Banned names (``banned``) are looked for where ``in_scope`` is on; the dynamic,
    deny-by-default constructs (when ``dynamic``) everywhere."""

    def __init__(
        self,
        banned: set[str],
        dynamic: bool,
        tree: ast.AST,
        scope: set[str] | None,
        bound: frozenset[str] | None = None,
        in_import_cycle: bool = False,
        alone: bool = True,
        deferred: frozenset[str] = frozenset(),
        fellow_names: frozenset[str] = frozenset(),
    ) -> None:
        # "autograd.functional": the name ``functional`` only as an attribute or import of a
        # module path ending in ``autograd`` (never ``torch.nn.functional``)
        self.banned = {name for name in banned if "." not in name}
        self.qualified: dict[str, set[str]] = {}
        for name in banned:
            if "." in name:
                owner, _, last = name.rpartition(".")
                self.qualified.setdefault(last, set()).add(owner)
        self._dynamic = dynamic
        self.scope = scope
        # the names the file's covered part uses (a fellow file: checks._bound_names), or by which its
        # globals can be read at all (the exercise file: facts.names_in_reach); None: every name
        self.bound = bound
        self.found: list[Violation] = []
        self.stack: list[str] = []
        self.docstrings = _docstrings(tree) | (_export_lists(tree) if isinstance(tree, ast.Module) else set())
        self.aliases = _TorchAliases(tree)
        self.torch = set(self.aliases.paths) | set(self.aliases.returners)
        self.plain_modules = _plain_modules(tree, self.aliases)
        self.module_of = {
            alias.asname or alias.name.split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0]
            for node in _nodes(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        self.messages = _message_strings(tree)
        #: strings passed straight to a call of something not torch's (a helper of the file,
        #: ``str.format``, a method): a name there selects no code — what could turn it into
        #: torch's function (getattr, vars, __dict__, importlib…) is denied on its own
        self.plain_args: set[int] = set()
        self.loop_constants = _loop_constants(tree)
        self.runners = _string_runner_names(tree)  # names bound to timeit, pdb, … or their members
        self.functions = {name for node in _nodes(tree) for name in _function_names(node)}  # a string runner's by name
        # banned names left to the run-time checks where the submission has its own by that name (instances.py)
        self.deferred = deferred & (own_names(tree) | fellow_names)
        self.sys = _module_names(tree, "sys")
        self.library_names = changes.library_names(tree, library_module)  # what holds a library's module or class
        self.renamed = changes.imported_as(tree)
        self.safe_calls: set[int] = set()  # ids of Name nodes that are the func of an allowed call
        self.print_is_builtin = not shown.binds_print(tree)
        self.rebound = _rebound_class_names(tree)
        self.class_names = {node.name for node in _nodes(tree) if isinstance(node, ast.ClassDef)}
        self.subclassed = {
            _dotted(base).split(".")[-1] for node in _nodes(tree) if isinstance(node, ast.ClassDef) for base in node.bases
        }
        self.methods = {name: defs for name, defs in _own_methods(tree).items() if name not in self.torch}
        self.called_unbound = _called_unbound(tree, self.methods)
        self.classes: list[str] = []  # the enclosing classes, innermost last
        self.class_bodies: list[ast.ClassDef] = []
        self.parents = {id(child): parent for parent in _nodes(tree) if isinstance(parent, ast.ClassDef) for child in parent.body}
        self.bodies = set(self.parents) | {id(child) for child in getattr(tree, "body", [])}  # of a module or class body
        # ``alone``: no other file of the submission imported, to rebind its names or store into its objects
        module = [_module_instances(tree, self.methods, self.rebound)] if isinstance(tree, ast.Module) and alone else []
        self.instances: list[tuple[dict[str, str], set[str]]] = module  # per scope: (name → own class it holds, names bound)
        self.instance_attributes = _instance_attributes(tree, self.methods, self.rebound) if alone else {}
        self.plain_classes = _plainly_based(tree, self.methods, self.rebound, self.aliases.path) if alone else set()
        self.made = _made_instances(tree, self.methods, self.rebound) if alone else {}
        # A banned name here is never called (blind tester R-K lost mha_reshape's 15 points to
        # `isinstance(m, nn.MultiheadAttention)` and to an annotation): annotations (kept as
        # data only typing's denied resolvers turn back into objects) and the classes that
        # isinstance/issubclass compare with, where the file rebinds neither builtin.
        self.tree = tree
        self.inert = _inert_nodes(tree, self.rebound | self.class_names)
        # the main guard's body never runs on import, unless the file rebinds __name__ or an
        # import cycle hands its half-imported module to code that renames it
        self.for_type_checkers = False  # in an `if TYPE_CHECKING:` block (visit_If)
        self.main_guard_runs = in_import_cycle or "__name__" in self.rebound | self.class_names  # tree.main_guard_runs

    @property
    def in_main_guard(self) -> bool:
        """In the body of a main guard that never runs (``visit_If`` pushes it only then)."""
        return self.stack[:1] == [MAIN_GUARD]

    @property
    def dynamic(self) -> bool:
        """Whether the deny-by-default constructs are judged here: in a rule-checked file, all
        but the body of a main guard that never runs, where a student's self-test may use
        doctest, unittest or matplotlib and print globals() (fairness tester R-Z)."""
        return self._dynamic and not self.in_main_guard

    @property
    def in_scope(self) -> bool:
        if self.in_main_guard:
            return False  # a self-test against torch.softmax (Day 1 §B's 对拍) is never run by the grader
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
            # the attribute of the file's own class, or reached from an imported module that is not
            # torch's (``rowmath.softmax``: the student's helper, scanned where it is used); a store
            # calls nothing (what is stored is judged itself)
            value = node.value
            if not isinstance(node.ctx, ast.Load) or _root(value) in self.plain_modules or self._own_method(node):
                return False
            # a name the run-time checks refuse wherever it runs, and the submission's own too: on an object
            # the scan cannot place, proven only by what runs (R-CS; instances.py)
            return node.attr not in self.deferred or _root(value) in self.torch or self.aliases.path(value) is not None
        if node.attr in self.qualified:
            owner = self.aliases.path(node.value) or _dotted(node.value)
            return self._banned_path(owner, node.attr)
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if self.dynamic and node.name in DENIED_DEFINITIONS:
            self._flag(node, f"def {node.name} ({DENIED_DEFINITIONS[node.name]})")
        self._annotation(node.returns)
        self.stack.append(node.name)
        # self/cls of a method: an instance of its class or of a subclass — trusted only where the
        # file subclasses it nowhere (a subclass could put torch.Tensor first in the MRO) and calls
        # none of its methods through the class (``Run.push(tensor, g)``: self is a tensor, R-CH)
        inside = bool(self.classes) and self.class_bodies[-1] is self.parents.get(id(node))
        method_of = self.classes[-1] if inside and self.classes[-1] not in self.subclassed | self.called_unbound else None
        self.instances.append(
            with_ctx(_instances(node, self.methods, self.rebound, method_of), node, inside and self._autograd_function())
        )
        self.generic_visit(node)
        self.instances.pop()
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_arg(self, node: ast.arg) -> None:
        self._annotation(node.annotation)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        # ``Optional["…"]`` in a type alias: typing evaluates the string when an annotation holding it is
        if self.dynamic:
            for part in node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]:
                self._annotation(part, built=False)  # an index may be built: d["a" + "b"]
        self.generic_visit(node)

    def _annotation(self, node: ast.AST | None, built: bool = True) -> None:
        """Strings in an annotation (``built``: a real one, where a string made of parts is flagged too)."""
        if not self.dynamic or node is None:
            return
        for sub in ast.walk(node):  # the annotation itself, or a string inside it (``Optional["…"]``)
            if built and (isinstance(sub, ast.JoinedStr) or (isinstance(sub, ast.BinOp) and not isinstance(sub.op, ast.BitOr))):
                self._flag(sub, "an annotation built from parts (a string that typing evaluates)")  # "torch.distri" + …: R-AG
            if not (isinstance(sub, ast.Constant) and isinstance(sub.value, str)):
                continue
            if _code_in_annotation(sub.value):
                self._flag(sub, f"the annotation {sub.value[:60]!r} (code in a string that typing evaluates)")
            elif _reaches_in_annotation(sub.value):  # "_box[torch.set_num_threads.__globals__['…']]" (R-AB)
                self._flag(sub, f"the annotation {sub.value[:60]!r} (reaches the interpreter in a string that typing evaluates)")

    def visit_Assign(self, node: ast.Assign) -> None:
        name = _lambda_name(node) if id(node) in self.bodies else None
        if name is None:
            self.generic_visit(node)
            return
        self.stack.append(name)  # `backward = staticmethod(lambda ctx, d_out: …)` is scoped like its def
        self.generic_visit(node)
        self.stack.pop()

    def visit_If(self, node: ast.If) -> None:
        if not self.stack and _type_checking(node.test, self.module_of, self.tree):
            # imports for type checkers only (fairness tester R-Z: an unused one cost mha_reshape 15 points)
            self.for_type_checkers = True
            for statement in node.body:
                self.visit(statement)
            self.for_type_checkers = False
            for statement in node.orelse:  # what runs instead
                self.visit(statement)
            return
        if self.stack or not _is_main_guard(node) or self.main_guard_runs:
            self.generic_visit(node)
            return
        self.visit(node.test)
        self.stack.append(MAIN_GUARD)  # a scope of its own: it never runs when the file is imported
        for statement in node.body:
            self.visit(statement)
        self.stack.pop()
        for statement in node.orelse:  # the else branch is what runs on import
            self.visit(statement)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if self.dynamic and (redirect := changes.redirect_by_name(node)):
            self._flag(node, redirect)
        self.stack.append(node.name)
        self.classes.append(node.name)
        self.class_bodies.append(node)
        self.generic_visit(node)
        self.class_bodies.pop()
        self.classes.pop()
        self.stack.pop()

    def visit_Match(self, node: ast.Match) -> None:
        """A class pattern reads attributes: ``case object(softmax=sm)`` is ``getattr(subject,
        "softmax")``, and its names are plain strings of the tree (``MatchClass.kwd_attrs``),
        which no visit reaches (blind red-team tester R-F took torch.distributions, frames
        and ``object.__new__`` through them: 100/100 with three rules broken). Each keyword
        attribute is judged as the attribute ``subject.name`` it reads, nested patterns as
        attributes of it; a positional sub-pattern reads the attributes ``__match_args__``
        names, which the scan cannot see (the self-matching builtins excepted: ``case int(n)``
        binds the subject itself)."""
        self.visit(node.subject)
        for case in node.cases:
            self._pattern(case.pattern, node.subject)
            if case.guard is not None:
                self.visit(case.guard)
            for statement in case.body:
                self.visit(statement)

    def _self_matching(self, cls: ast.expr) -> bool:
        """A builtin whose class pattern binds the subject itself, or ``torch.Size`` (a tuple:
        ``case torch.Size([b, t, c])``, in any spelling the file's torch aliases give)."""
        if isinstance(cls, ast.Name) and cls.id in SELF_MATCHING:  # the builtin itself: never bound in the file
            return cls.id not in self.rebound and cls.id not in self.class_names
        return isinstance(cls, ast.Attribute) and cls.attr == "Size" and self.aliases.path(cls) == "torch.Size"

    def _pattern(self, pattern: ast.pattern, owner: ast.expr | None) -> None:
        """Visit ``pattern`` matched against ``owner`` (None: a value the scan cannot name)."""
        if isinstance(pattern, ast.MatchClass):
            self.visit(pattern.cls)
            if pattern.patterns and self.dynamic and not self._self_matching(pattern.cls):
                self._flag(pattern, f"{_dotted(pattern.cls)}(…) (a class pattern: reads the attributes __match_args__ names)")
            for sub in pattern.patterns:
                self._pattern(sub, None)
            for name, sub in zip(pattern.kwd_attrs, pattern.kwd_patterns):
                base = owner if owner is not None else ast.Name(id="<matched value>", ctx=ast.Load())
                read = ast.copy_location(ast.Attribute(value=base, attr=name, ctx=ast.Load()), pattern)
                self.visit_Attribute(read)
                self._pattern(sub, read)
        elif isinstance(pattern, ast.MatchAs):
            if pattern.pattern is not None:
                self._pattern(pattern.pattern, owner)
        elif isinstance(pattern, ast.MatchOr):
            for sub in pattern.patterns:
                self._pattern(sub, owner)
        elif isinstance(pattern, ast.MatchSequence):
            for sub in pattern.patterns:
                self._pattern(sub, None)
        elif isinstance(pattern, ast.MatchMapping):
            for key in pattern.keys:
                self.visit(key)
            for sub in pattern.patterns:
                self._pattern(sub, None)
        elif isinstance(pattern, ast.MatchValue):
            self.visit(pattern.value)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        path = self.aliases.path(node) if self.dynamic else None
        if id(node) not in self.inert and self._banned_attribute(node):
            self._flag(node, _dotted(node))
        elif self.dynamic:
            if isinstance(node.ctx, (ast.Store, ast.Del)) and changes.stores_into_library(
                node, self.library_names, path, self.sys
            ):
                self._flag(node, f"{_dotted(node)} ({changes.CHANGES_LIBRARY})")
            elif "DisableTorch" in node.attr or "disable_torch_function" in node.attr.lower():
                self._flag(node, f"{_dotted(node)} (switches off the recording of torch calls)")
            elif _is_dunder(node.attr) and node.attr not in ALLOWED_DUNDERS and id(node) not in self.safe_calls:
                self._flag(node, f"{_dotted(node)} (dunder attribute access)")
            elif node.attr in LOOKUPS and id(node) not in self.safe_calls:
                self._flag(node, f"{_dotted(node)} (a lookup by a name, kept to call later)")
            elif node.attr not in LOOKUPS and _looks_up(node.attr) and (_root(node) in self.plain_modules or path):
                self._flag(node, f"{_dotted(node)} (a library's lookup by a name)")
            elif (node.attr in DENIED_NAMES and id(node) not in self.inert) or (
                node.attr == "modules" and _root(node) in self.sys
            ):
                self._flag(node, f"{_dotted(node)} (dynamic lookup)")
            elif node.attr in DENIED_ATTRIBUTES:
                self._flag(node, f"{_dotted(node)} (reaches the interpreter: modules, builtins, code)")
            elif node.attr.startswith("_") and not _is_dunder(node.attr) and (_root(node) in self.torch or path):
                self._flag(node, f"{_dotted(node)} (torch's private namespace{self._alias_note(node, path)})")
            elif node.attr in UNSEEN_CODE or (node.attr in UNSEEN_LOADS and (_root(node) in self.torch or path)):
                self._flag(node, f"{_dotted(node)} (runs code the recorder cannot see)")
            elif path in DENIED_TORCH_PATHS:
                self._flag(node, f"{_dotted(node)} ({path}: reaches operators or code by a name)")
            elif self._denied_module_attribute(node):
                self._flag(node, f"{_dotted(node)} (a module for dynamic code or introspection)")
            elif changes.library_rooted(node, self.plain_modules, self.module_of) and (
                node.attr in _DENIED_TOPS or node.attr.startswith("_")
            ):
                # asyncio.events.threading._start_new_thread: a denied module, or a library's private
                # name, reached through another library's attributes (blind red-team tester R-AD)
                self._flag(node, f"{_dotted(node)} (a library's private name or a module it may not use)")
        self.generic_visit(node)

    def _code_arguments(self, func: ast.AST, call: ast.Call) -> list[ast.AST]:
        """The arguments of a string runner's call that it runs as code: ``timeit.timeit``'s
        ``stmt`` and ``setup``, ``run``'s statement, ``runcall``'s function — not a count, a
        timer, a tensor passed on to the function, or a sort key (fairness tester R-Z:
        ``timeit.timeit(lambda: f(x), number=n)`` and ``Profile().runcall(f, x)`` had cost
        whole skills); every argument of a call the list does not know."""
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        of_module = isinstance(func, ast.Name) or (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and self.module_of.get(func.value.id, "").split(".")[0] in STRING_RUNNERS
        )
        if name in ("timeit", "repeat", "autorange") and not of_module:
            return []  # a Timer's own methods take counts
        if name in RUNNER_CODE_PARAMETERS:
            keywords, count = RUNNER_CODE_PARAMETERS[name]
            return [*call.args[:count], *(k.value for k in call.keywords if k.arg in keywords or k.arg is None)]
        if name in RUNNER_DATA_METHODS:
            return []
        return [*call.args, *(k.value for k in call.keywords)]

    def _runnable(self, node: ast.AST) -> bool:
        """What a string runner's call may be given: a lambda, a function of the file by its
        name, a method (``obj.forward``), a number, True/False/None."""
        if isinstance(node, (ast.Lambda, ast.Attribute)):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.functions
        if isinstance(node, ast.Call) and _dotted(node.func) in ("partial", "functools.partial") and node.args:
            return self._runnable(node.args[0])  # functools.partial(softmax_rows, x): a function still
        return isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes))

    def _alias_note(self, node: ast.Attribute, path: str | None) -> str:
        """ ", t is torch" (or "get() returns torch", "box's attribute holds torch") for a name not torch itself."""
        root = _root(node)
        if not path or root is None or root == "torch":
            return ""
        if root in self.aliases.paths:
            return f", {root} is {self.aliases.paths[root].split('.…')[0]}"
        return f", {root}() returns {r}" if (r := self.aliases.returners.get(root)) else f", torch reached through {root}"

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
            elif node.id in DENIED_NAMES and id(node) not in self.inert:
                self._flag(node, f"{node.id} (dynamic lookup)")

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or id(node) in self.docstrings or id(node) in self.messages or not self.in_scope:
            return
        text = node.value.strip()
        if IDENTIFIER_LIKE.match(text):
            parts = re.split(r"[.:]+", text)
            hit = None if id(node) in self.plain_args | self.inert else next((p for p in parts if p in self.banned), None)
            if hit is not None:
                self._flag(node, f"the string {text[:60]!r} (names {hit})")
            elif self.dynamic and any("DisableTorch" in p or p == "_C" for p in parts):
                self._flag(node, f"the string {text[:60]!r} (names torch internals)")
            elif self.dynamic and text in DENIED_KEYWORDS:
                self._flag(node, f"the string {text!r} (runs code stored as data)")
            elif self.dynamic and text in DENIED_DEFINITIONS:
                self._flag(node, f"the string {text!r} ({DENIED_DEFINITIONS[text]})")
            elif self.dynamic and text in DENIED_STRINGS:
                self._flag(node, f"the string {text!r} (names becoming code in generated methods)")

    def _import(self, node: ast.AST, module: str, name: str | None, asname: str | None) -> None:
        full = f"{module}.{name}" if name else module
        parts = full.split(".")
        # only torch's own names count: ``from rowmath import softmax`` imports the student's
        # function (its file is scanned where it is used)
        torch_path = parts[0] == "torch"
        owner = ".".join(parts[:-1])
        binds = asname or (name if name else parts[0])
        # a top-level import of a banned name counts only where what it binds is used (``bound``: in a
        # fellow file, by its covered part; in the exercise file, by any file); a name used only in
        # annotations and isinstance checks is never called
        unused = self.bound is not None and not self.stack and binds not in self.bound
        # every part of the path: ``from torch.distributions.transforms import SoftmaxTransform``
        # names a banned module on the way (blind red-team tester R-E)
        banned = (
            torch_path
            and not unused
            and not self.for_type_checkers
            and (any(self._banned(p) for p in parts[1:]) or self._banned_path(owner, parts[-1]))
        )
        if banned and not _only_inert(self.tree, binds, self.inert):  # the tree walked only for a banned import
            self._flag(node, f"from {module} import {name}" if name else f"import {module}")
        if not self.dynamic:
            return
        label = f"from {module} import {name}" if name else f"import {module}"
        if name == "*" and parts[0] == "torch":
            self._flag(node, f"{label} (wildcard import from torch)")
        elif any(".".join(parts[: i + 1]) in DENIED_MODULES for i in range(len(parts))):
            self._flag(node, f"{label} (a module for dynamic code or introspection)")
        elif _private_module(parts[0]) and parts[0] not in ALLOWED_PRIVATE_MODULES:
            self._flag(node, f"{label} (a private module of the interpreter)")
        elif not module.startswith(".") and parts[0] not in ALLOWED_IMPORTS and library_module(parts[0]):
            self._flag(node, f"{label} (not a module these files may import: docs/EXERCISES.md lists them)")
        elif name is not None and name not in LOOKUPS and _looks_up(name) and parts[0] in ALLOWED_IMPORTS:
            self._flag(node, f"{label} (a library's lookup by a name)")
        elif parts[0] == "torch" and any(_private(p) for p in parts[1:]):
            self._flag(node, f"{label} (torch's private namespace)")
        elif any(".".join(parts[: i + 1]) in DENIED_TORCH_PATHS for i in range(len(parts))):
            self._flag(node, f"{label} (reaches operators or code by a name)")
        elif name in UNSEEN_CODE or (parts[0] == "torch" and name in UNSEEN_LOADS):
            self._flag(node, f"{label} (runs code the recorder cannot see)")
        elif name is not None and (
            name in DENIED_NAMES
            or name in DENIED_ATTRIBUTES
            or "DisableTorch" in name
            or _is_dunder(name)
            or (parts[0] == "sys" and name == "modules")
        ):
            self._flag(node, f"{label} (dynamic lookup)")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name, None, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            self._import(node, module, alias.name, alias.asname)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        if self.dynamic:  # f"{locals()}" is text wherever it goes (shown.py)
            predicates = shown.predicate_calls(node, self.aliases.path)
            self.safe_calls.update(id(mark) for mark in shown.formatted_namespaces(node, predicates))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if self.dynamic and shown.shows(node, self.print_is_builtin):  # print(locals()) and the like (shown.py)
            predicates = shown.predicate_calls(node, self.aliases.path)
            self.safe_calls.update(id(mark) for mark in shown.shown_namespaces(node, predicates))
        # a method named like the builtin is judged as it is (``jinja2.Environment().getattr(torch,
        # "…")``, ``monkeypatch.setattr(…)``: blind red-team tester R-U), whatever its object
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        lookup = called in LOOKUPS or (isinstance(func, ast.Name) and func.id in DYNAMIC_CALLS)
        if not lookup and _root(func) not in self.torch and self.aliases.path(func) is None:
            self.plain_args.update(
                id(arg)
                for arg in [*node.args, *(k.value for k in node.keywords)]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
        if called in LOOKUPS and (len(node.args) >= 2 or (isinstance(func, ast.Attribute) and self.dynamic)):
            name = node.args[1] if len(node.args) >= 2 else None
            values = _constant_names(name, self.loop_constants)
            if values is not None:
                self.safe_calls.add(id(func))
                for value in values:
                    if self._banned(value):
                        self._flag(node, f"{called}(…, {value!r})")
                    elif self.dynamic and (
                        _is_dunder(value)
                        or value.startswith("_")
                        and (_root(node.args[0]) in self.torch or self.aliases.path(node.args[0]) is not None)
                        or self.aliases.path(node.args[0]) is not None
                        and f"{self.aliases.path(node.args[0])}.{value}" in DENIED_TORCH_PATHS
                        or "DisableTorch" in value
                        or value in DENIED_NAMES
                        or value in DENIED_ATTRIBUTES
                        or (value == "modules" and _root(node.args[0]) in self.sys)
                    ):
                        self._flag(node, f"{called}(…, {value!r}) (private or dunder attribute)")
                if isinstance(name, ast.Constant):
                    self.docstrings.add(id(name))  # a constant attribute name, judged here
            elif self.dynamic:
                self._flag(node, f"{_dotted(func) if isinstance(func, ast.Attribute) else called} with a computed name")
                self.safe_calls.add(id(func))
        elif isinstance(func, ast.Name) and func.id in DYNAMIC_CALLS and self.dynamic and id(func) not in self.safe_calls:
            self._flag(node, f"{func.id}(…) (dynamic lookup or code)")
            self.safe_calls.add(id(func))
        if self.dynamic and changes.changes_library(changes.setter_target(node), self.library_names):  # setattr(json, "dumps", f)
            self._flag(node, f"{_dotted(func) if isinstance(func, ast.Attribute) else called}(…) ({changes.CHANGES_LIBRARY})")
        if self.dynamic and (copier := changes.attributes_by_given_names(node, self.renamed)):
            self._flag(node, copier)
        if self.dynamic and _root(func) in self.runners:
            if any(not self._runnable(arg) for arg in self._code_arguments(func, node)):
                self._flag(node, f"{_dotted(func)}(…) with a value that is not a function (it runs a string of code)")
        if self.dynamic:
            for keyword in node.keywords:
                if keyword.arg in DENIED_KEYWORDS and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value):
                    self._flag(node, f"{_dotted(func)}(…, {keyword.arg}=…) (runs code stored as data)")
                if keyword.arg in DENIED_DEFINITIONS:
                    self._flag(node, f"{_dotted(func)}(…, {keyword.arg}=…) ({DENIED_DEFINITIONS[keyword.arg]})")
                if keyword.arg in CODE_FIELDS:
                    self._flag(node, f"{_dotted(func)}(…, {keyword.arg}=…) (rewrites a code object)")
            if isinstance(func, ast.Attribute) and func.attr in NUMPY_LOADS and changes.numpy_rooted(func.value, self.module_of):
                self._flag(node, f"{_dotted(func)}(…) (numpy's loaders can unpickle code)")
        self.generic_visit(node)
