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

The package along its seams: ``rules`` (what is denied or allowed by name), ``tree`` (facts
read off the syntax tree), ``aliases`` (names that hold torch), ``scanner`` (the scan),
``library_changes`` (what holds a library's module, and what changes one), ``checks``
(what suites call). Import from ``autograder.testing.source`` (or
``autograder.testing``).
"""

from __future__ import annotations

from .checks import calls, check_no_banned, imported_scopes, reaches, scan
from .rules import (
    ALLOWED_DUNDER_NAMES,
    ALLOWED_DUNDERS,
    DENIED_MODULES,
    DENIED_NAMES,
    DENIED_TORCH_PATHS,
    DYNAMIC_CALLS,
    IDENTIFIER_LIKE,
    LOOKUPS,
    MESSAGE_CALLS,
    MESSAGE_CLASSES,
    MESSAGE_METHODS,
    UNSEEN_CODE,
    UNSEEN_LOADS,
)
from .tree import MAIN_GUARD, MODULE_LEVEL, Violation, imported

__all__ = [
    "ALLOWED_DUNDERS",
    "ALLOWED_DUNDER_NAMES",
    "DENIED_MODULES",
    "DENIED_NAMES",
    "DENIED_TORCH_PATHS",
    "DYNAMIC_CALLS",
    "IDENTIFIER_LIKE",
    "LOOKUPS",
    "MAIN_GUARD",
    "MESSAGE_CALLS",
    "MESSAGE_CLASSES",
    "MESSAGE_METHODS",
    "MODULE_LEVEL",
    "UNSEEN_CODE",
    "UNSEEN_LOADS",
    "Violation",
    "calls",
    "check_no_banned",
    "imported",
    "imported_scopes",
    "reaches",
    "scan",
]
