"""What a string annotation may do when typing evaluates it in a rule-checked worker.

typing evaluates string annotations (``functools.singledispatch`` asks it, TorchScript does),
and the code gate (codegate.py) lets it, since torch's own modules hold such strings — but
only for code that is a *type expression*: it loads names, attributes and constants,
subscripts, builds tuples and lists, and takes ``|``. Blind red-team tester R-AB made such an
expression carry grader objects out: ``"_box[torch.set_num_threads.__globals__['STANDING_BAN']]"``,
where ``_box`` is a ``defaultdict`` of the exercise's, keeps every key it is subscripted with
(custom_backward 20/20 with autograd in backward: the recording emptied, the tripwire off).
Whatever the expression reaches, it leaves only through what it subscripts or joins with
``|``: a container of the exercise's (a dict that stores keys, a class whose
``__class_getitem__`` is a stored method, a metaclass's ``__getitem__`` or ``__or__``). So an
expression passes only where everything it subscripts is one of the type forms the worker had
before any exercise code ran — builtins' and typing's generics, ``collections.abc``'s, a form
such an expression made — and everything it joins with ``|`` is ``None``, such a form, or a
class whose metaclass is one of those classes. Found by following the bytecode with the
names the evaluation sees (the namespaces of typing's evaluating frame); a value that cannot
be known without running code is never subscripted or joined. Written here: no library
evaluates an annotation within limits of this kind.
"""

from __future__ import annotations

import builtins
import collections.abc
import dis
import sys
import types
import typing
from types import CodeType, FrameType, ModuleType
from typing import Any

#: the bytecode of a type expression (``Optional[Tensor]``, ``list[int] | None``,
#: ``torch.Tensor``, ``Literal["a"]``): never a call, an import or a store (blind red-team
#: tester P: a string that ``functools.singledispatch`` had typing evaluate walked the frames)
TYPE_OPS = frozenset(
    {"RESUME", "NOP", "CACHE", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_CONST", "LOAD_FAST", "LOAD_DEREF"}
    | {"BINARY_SUBSCR", "BUILD_TUPLE", "BUILD_LIST", "BINARY_OP", "RETURN_VALUE", "RETURN_CONST", "PUSH_NULL"}
    | {"LOAD_FROM_DICT_OR_GLOBALS", "LOAD_FROM_DICT_OR_DEREF", "COPY_FREE_VARS", "LOAD_SMALL_INT", "LOAD_FAST_BORROW"}
)
#: libraries whose classes' metaclasses may join a ``|`` (imported before the worker serves)
_LIBRARIES = ("torch", "torch.nn", "numpy", "enum", "abc")
_UNKNOWN = object()  # a value the check cannot know without running code
_FORM = object()  # what subscripting a trusted form gives: a form again (``list[int]``, ``Optional[X]``)


class TypeForms:
    """The subscriptable type forms present before any exercise code runs (``snapshot``, at
    the gate's confinement): their identity, never their name, decides — a class of the
    exercise's can call itself ``typing.List``."""

    def __init__(self) -> None:
        self.forms: frozenset[int] = frozenset()
        self.metaclasses: frozenset[int] = frozenset()

    def snapshot(self) -> None:
        forms: set[int] = set()
        metaclasses: set[int] = {id(type)}
        for module in (builtins, typing, types, collections.abc):
            for value in list(vars(module).values()):
                if isinstance(value, type):
                    forms.add(id(value))
                    metaclasses.add(id(type(value)))
                elif type(value).__module__ == "typing":
                    forms.add(id(value))  # Optional, Union, List, Literal: typing's own instances
        for name in _LIBRARIES:  # ``Tensor | None``: torch's classes have a metaclass of torch's
            library = sys.modules.get(name)
            for value in list(vars(library).values()) if library is not None else ():
                if isinstance(value, type):
                    metaclasses.add(id(type(value)))
        self.forms = frozenset(forms)
        self.metaclasses = frozenset(metaclasses)

    def subscriptable(self, value: object) -> bool:
        return value is _FORM or id(value) in self.forms

    def joinable(self, value: object) -> bool:
        if value is None or value is _FORM or id(value) in self.forms:
            return True
        return isinstance(value, type) and id(type(value)) in self.metaclasses


def is_type_expression(code: CodeType, forms: TypeForms, typing_file: str, grader: str = "") -> bool:
    """Whether ``code``, which typing is about to evaluate, is a type expression that
    subscripts and joins only trusted forms (``TypeForms``), with the names of typing's
    evaluating frame — never the names of one of the grader's own modules (``grader``: its
    folder)."""
    if any(isinstance(c, CodeType) for c in code.co_consts):
        return False
    instructions = list(dis.get_instructions(code))
    if any(i.opname not in TYPE_OPS for i in instructions):
        return False
    if any(_hidden_name(i) for i in instructions):
        return False  # no type is spelled with a private attribute or a dunder (blind red-team tester R-AD)
    namespaces = _evaluating_namespaces(typing_file)
    if namespaces is not None and any(_graders(namespace, grader) for namespace in namespaces[:2]):
        return False
    if not any(i.opname in ("BINARY_SUBSCR", "BINARY_OP") for i in instructions):
        return True  # nothing subscripted or joined: what it reaches stays with typing
    return namespaces is not None and _follows(instructions, namespaces, forms)


def _graders(namespace: dict, grader: str) -> bool:
    """A module namespace of the grader's own. typing evaluates a function's annotations in the
    globals of the last function of its ``__wrapped__`` chain, which ``functools.update_wrapper``
    sets to anything: blind red-team tester R-CH wrapped the worker's ``sys.stdout.write``, had
    ``singledispatch`` evaluate ``"probes.DispatchRecorder"`` in the worker's globals, and got
    the grader's classes back from its registry (custom_backward 20/20 with autograd)."""
    name = namespace.get("__name__")
    path = namespace.get("__file__")
    return (type(name) is str and name.split(".")[0] == "autograder") or (
        bool(grader) and type(path) is str and path.startswith(grader)
    )


def _hidden_name(op: dis.Instruction) -> bool:
    """An attribute that is private or a dunder (``Variable._execution_engine.__class__`` led
    to a grader class that ``singledispatch``'s registry handed out), or a dunder name
    (``__builtins__``); a private name of the file's own (``_Config``) is fine."""
    name = op.argval if isinstance(op.argval, str) else ""
    if op.opname == "LOAD_ATTR":
        return name.startswith("_")
    return op.opname.startswith("LOAD_") and name.startswith("__") and name.endswith("__")


def _evaluating_namespaces(typing_file: str) -> tuple[dict, dict, dict] | None:
    """(locals, globals, builtins) of typing's frame that calls ``eval`` (``ForwardRef._evaluate``
    passes ``globalns`` and ``localns``); None where they are not plain dicts."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != typing_file:
        frame = frame.f_back
    if frame is None:
        return None
    local = frame.f_locals
    globalns, localns = local.get("globalns"), local.get("localns")
    if type(globalns) is not dict or type(localns) is not dict:
        return None
    found = globalns.get("__builtins__", builtins)
    namespace = vars(found) if type(found) is ModuleType else found
    return (localns, globalns, namespace) if type(namespace) is dict else None


def _follows(instructions: list[dis.Instruction], namespaces: tuple[dict, dict, dict], forms: TypeForms) -> bool:
    """Follow the stack: a name is what the namespaces hold (plain dict reads), an attribute
    of a module what its namespace holds, anything else unknown; every subscript's container
    and every ``|``'s operands must be trusted."""
    localns, globalns, names = namespaces
    stack: list[Any] = []
    for op in instructions:
        name = op.opname
        if name in ("LOAD_NAME", "LOAD_GLOBAL", "LOAD_FROM_DICT_OR_GLOBALS"):
            if name == "LOAD_FROM_DICT_OR_GLOBALS" and stack:
                stack.pop()
            key = op.argval
            order = (localns, globalns, names) if name == "LOAD_NAME" else (globalns, names)
            stack.append(next((ns[key] for ns in order if key in ns), _UNKNOWN))
        elif name == "LOAD_ATTR":
            value = stack.pop() if stack else _UNKNOWN
            stack.append(vars(value).get(op.argval, _UNKNOWN) if type(value) is ModuleType else _UNKNOWN)
        elif name in ("LOAD_CONST", "RETURN_CONST", "LOAD_SMALL_INT"):
            stack.append(op.argval)
        elif name in ("LOAD_FAST", "LOAD_FAST_BORROW", "LOAD_DEREF", "LOAD_FROM_DICT_OR_DEREF"):
            stack.append(_UNKNOWN)
        elif name == "BINARY_SUBSCR" or (name == "BINARY_OP" and op.argrepr == "[]"):
            if len(stack) < 2 or not forms.subscriptable(stack[-2]):
                return False
            del stack[-2:]
            stack.append(_FORM)
        elif name == "BINARY_OP":
            if op.argrepr not in ("|", "|=") or len(stack) < 2 or not all(forms.joinable(v) for v in stack[-2:]):
                return False
            del stack[-2:]
            stack.append(_FORM)
        elif name in ("BUILD_TUPLE", "BUILD_LIST"):
            count = op.arg or 0
            if count:
                del stack[-count:]
            stack.append(_UNKNOWN)  # a tuple or list is subscripted by nothing here
    return True
