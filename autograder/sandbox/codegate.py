"""Only code the rule scan has read runs in a rule-checked worker.

A rule of an exercise ("no torch softmax", "no autograd in backward") is judged from what
the worker records of the submission's calls, and the trusted side's static scan denies the
submission every way to reach those records (frames, gc, dynamic code: testing/source). That
holds only while every line of Python that runs in the worker is one the scan read. Two
kinds of code would not be:

- a submission file that something else imports: ``tensorboard.py`` beside the exercise,
  run by ``import torch.utils.tensorboard`` (torch imports ``tensorboard`` itself), was never
  scanned, walked the frames to the recorders and scrubbed them (blind red-team tester O,
  2026-12-05);
- a string that a library compiles and runs: ``torch.utils.benchmark.Timer(stmt="…")``
  hands the string to ``timeit``, which executes it.

Both run through the interpreter's ``exec`` audit event (PEP 578): every module body that
is imported, and every ``exec`` or ``eval`` of code. ``CodeGate.check`` refuses, in a
worker confined by the trusted side (``confine``, before any submission code runs), a module
of the submission that is not one of the scanned files, and code compiled from a string
unless one of the few library functions that build such code from identifiers or type
expressions made it, and the code is what it should be: ``collections.namedtuple``, a
``dataclasses`` class whose annotations are all identifiers, ``typing``'s evaluation of a
string annotation whose bytecode only loads and subscripts names, ``timeit`` with callables;
or the grader's own probes. The hook cannot be removed (PEP 578), and the gate is reachable
only through the hook's closure: gc's object lists are refused in every worker, and frames
are denied to scanned code. Library modules torch imports lazily run as before. Only skills
whose suites declare ``WORKER_SCANNED`` are confined: elsewhere the submission may run any
code it likes (nothing is judged from records it could reach).
"""

from __future__ import annotations

import _imp
import collections
import dataclasses
import os
import sys
import timeit
import typing
from types import CodeType, FrameType

from . import mainguard
from .typeexpr import TypeForms, is_type_expression

#: ``timeit``'s template with callables (``timeit.timeit(lambda: f(x))``): the names its
#: ``inner`` function may hold; a string statement adds its own names (or code objects)
_TIMEIT_NAMES = frozenset({"_it", "_timer", "_setup", "_stmt", "_t0", "_i", "_t1"})
_IMPORT_MACHINERY = "<frozen importlib._bootstrap>"
#: the files of the import machinery, whose frames run a library module's code
_IMPORTERS = (_IMPORT_MACHINERY, "<frozen importlib._bootstrap_external>")


def _source_file(module: object) -> str:
    path = getattr(module, "__file__", None) or ""
    return path[:-1] if path.endswith(".pyc") else path


class CodeGate:
    """Which code a worker may execute; inactive (everything runs) until ``confine``."""

    def __init__(self, copy_dir: str, grader_dir: str) -> None:
        self.prefix = copy_dir.rstrip("/") + "/"
        self.grader = grader_dir.rstrip("/") + "/"
        self.allowed: frozenset[str] | None = None
        self.executed: set[str] = set()
        self._executed_real: set[str] | None = None  # the same, resolved (``_run_before``)
        # namedtuple builds methods from names it checks are identifiers
        self.builders = {_source_file(collections)}
        self.dataclasses = _source_file(dataclasses)
        self.typing = _source_file(typing)
        self.timeit = _source_file(timeit)
        self.forms = TypeForms()  # what a type expression may subscript: typeexpr.py
        # where library modules lie (_library_roots): found again at ``confine``; found here too,
        # before any exercise code runs, for the workers the gate does not confine (audit.py asks)
        self.libraries: tuple[str, ...] = _library_roots()
        prefix = sys.pycache_prefix
        self.pycache_prefix = os.path.abspath(prefix).rstrip(os.sep) + os.sep if prefix else None

    def confine(self, modules: list[str]) -> None:
        if self.allowed is not None:
            raise RuntimeError("the worker's code is confined once, for its whole life")
        self.libraries = _library_roots()  # before the gate judges anything
        self.forms.snapshot()  # before any exercise code runs
        self.allowed = frozenset(str(m) for m in modules)
        # every library file whose module body has run in this process: a second run of one
        # is a fresh copy of a module whose functions the worker's bans replaced by name
        self.executed = {_source_file(m) for m in list(sys.modules.values())} - {""}

    def in_pycache_prefix(self, path: str) -> bool:
        """Whether ``path`` lies in the folder ``PYTHONPYCACHEPREFIX`` gave the interpreter for
        the bytecode of every module (read when the gate was made, before exercise code ran)."""
        return self.pycache_prefix is not None and os.path.abspath(path).startswith(self.pycache_prefix)

    def is_library_file(self, path: str) -> bool:
        """Whether ``path`` lies under the interpreter's library or an installed package's
        folder (found before any exercise code ran: a folder it puts on ``sys.path`` later is
        none of them), never a folder the worker may write. Its folder is
        resolved, the file itself is not: a link in the scratch folder to a library's file is a
        file of the scratch folder (blind red-team tester R-DI: its ``__pycache__``, written
        beside it, ran as that library file)."""
        real = self._resolved(path)
        return any(real.startswith(root) for root in self.libraries)

    def _run_before(self, path: str) -> bool:
        """Whether the library module at ``path`` has run in this process, under this name or
        another that resolves to the same file (a folder linked to a library's)."""
        if path in self.executed:
            return True
        if self._executed_real is None:  # built once, at the first library module run after confine
            # a folder resolved once (~150 folders hold the ~1600 modules: a realpath each was ~30 ms)
            folders: dict[str, str] = {}
            self._executed_real = {self._resolved(p, folders) for p in self.executed}
        return self._resolved(path) in self._executed_real

    @staticmethod
    def _resolved(path: str, folders: dict[str, str] | None = None) -> str:
        """``path`` with its folder resolved (``folders``: those resolved already)."""
        folder, name = os.path.split(os.path.abspath(path))
        if folders is None:
            return os.path.join(os.path.realpath(folder), name)
        if folder not in folders:
            folders[folder] = os.path.realpath(folder)
        return os.path.join(folders[folder], name)

    def check(self, code: object, caller: str) -> None:
        """Raise unless ``code`` (the ``exec`` event's code object) may run; ``caller`` is the
        file of the frame that executes it."""
        if self.allowed is None or type(code) is not CodeType:  # type, not isinstance: no __class__ of the exercise's
            return
        path = code.co_filename
        if type(path) is not str:  # a subclass's methods would answer the checks below (R-DK)
            raise RuntimeError("code named by anything but a plain str cannot run in this exercise's worker")
        if path.startswith(self.prefix):
            module = os.path.basename(path).removesuffix(".py")
            if module not in self.allowed:
                raise ImportError(
                    f"{module}.py cannot run in this exercise's worker: only files that the exercise imports "
                    f"by name (import {module}) are read by its rule check, and {module}.py was not",
                    name=module,
                )
            if code.co_name == "<module>" and code not in mainguard.COMPILED:  # blind red-team tester R-AC
                raise ImportError(
                    f"{module}.py was compiled with its main guard's body, which its rule check does not read: "
                    "the worker compiles the exercise's files itself",
                    name=module,
                )
            return
        if not path.startswith("<"):
            if caller.startswith(self.prefix):  # a code object under a library's name, run by the exercise's exec
                raise RuntimeError(
                    f"code compiled under another file's name ({path}) cannot be run by exec from the exercise's "
                    "own files in this exercise's worker: its rule check reads only the exercise's files"
                )
            if not self.is_library_file(path):  # a copy of torch's file in the scratch folder (blind red-team tester R-AC)
                raise ImportError(
                    f"{path} is neither the exercise's file nor an installed library's: only those run in this "
                    "exercise's worker, and its rule check reads only the exercise's files"
                )
            if caller not in _IMPORTERS:  # compile(…, "<a library's file>") run by pdb.run, cProfile.run…
                raise RuntimeError(
                    f"code under a library's file name ({path}) runs in this exercise's worker only when Python "
                    "imports that library: its rule check reads only the exercise's files"
                )
            if code.co_name == "<module>":
                if self._run_before(path):  # blind red-team tester R-U: torch.nn.functional run again
                    raise ImportError(
                        f"{path} cannot be run a second time in this exercise's worker: a fresh copy of a "
                        "module would hold the functions its rule switched off"
                    )
                self.executed.add(path)
                if self._executed_real is not None:
                    self._executed_real.add(self._resolved(path))
            return  # a library's module body (torch imports many lazily)
        if caller.startswith(self.grader) or caller in self.builders:
            return  # the grader's probes; namedtuple's methods from identifiers
        if path.startswith("<frozen ") and caller == _IMPORT_MACHINERY and _frozen(code, path):
            return  # a frozen standard-library module, imported
        if caller == self.timeit and _timeit_with_callables(code):
            return
        if caller == self.typing and is_type_expression(code, self.forms, self.typing, self.grader):
            return  # a string annotation that is a type (torch's own modules have them)
        if caller == self.dataclasses and _fields_are_names(self.dataclasses):
            return  # a dataclass's methods, built from its fields' names
        raise RuntimeError(
            f"code from a string ({path}) cannot run in this exercise's worker: its rule check reads only "
            "the exercise's files, so nothing may run code it has not read"
        )


def _library_roots() -> tuple[str, ...]:
    """The folders library modules are imported from: the standard library's (``os``'s own
    folder) and every folder on ``sys.path`` under one of the interpreter's prefixes or named
    ``site-packages``/``dist-packages`` — not the submission's copy, not the scratch folder.
    (Not ``sysconfig``: its data module may not import in a confined worker.)"""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    roots = {os.path.realpath(os.path.dirname(os.__file__))}
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and (
            any(real.startswith(p + os.sep) for p in prefixes) or os.path.basename(real) in ("site-packages", "dist-packages")
        ):
            roots.add(real)
    return tuple(sorted(root.rstrip(os.sep) + os.sep for root in roots))


def _timeit_with_callables(code: CodeType) -> bool:
    """Is this ``timeit``'s module code for callables only (nothing of a string statement)?"""
    inner = [c for c in code.co_consts if isinstance(c, CodeType)]
    if len(inner) != 1 or set(code.co_names) - {"inner", "_setup", "_stmt"}:
        return False
    body = inner[0]
    return (
        not body.co_names and set(body.co_varnames) <= _TIMEIT_NAMES and not any(isinstance(c, CodeType) for c in body.co_consts)
    )


def _fields_are_names(dataclasses_file: str) -> bool:
    """Is the class ``dataclasses`` is building one whose own annotations are all identifiers?
    Its methods are source text with the field names pasted in: a key like ``"x,(code)"``
    (a metaclass's namespace can make one) would be code (blind red-team tester P)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == dataclasses_file and frame.f_code.co_name == "_process_class":
            local = frame.f_locals
            annotations = getattr(local.get("cls"), "__dict__", {}).get("__annotations__", {})
            # every field, inherited ones too, by its key and by the name pasted into the source
            # (``Field.name`` can be written after a class is made: blind red-team tester Q)
            fields = local.get("fields")
            return (
                type(annotations) is dict
                and type(fields) is dict
                and all(_identifier(k) for k in annotations)
                and all(_identifier(k) and _identifier(getattr(f, "name", None)) for k, f in fields.items())
            )
        frame = frame.f_back
    return False


def _identifier(name: object) -> bool:
    return type(name) is str and name.isidentifier()


def _frozen(code: CodeType, path: str) -> bool:
    """Whether ``code``, named ``<frozen NAME>``, is the interpreter's own frozen module NAME:
    a name is any code's to take (blind red-team tester R-DH: a ``.pyc`` compiled as
    "<frozen zzrows>" ran in a rule-checked worker)."""
    name = path[len("<frozen ") : -1]
    try:
        return bool(_imp.is_frozen(name)) and code == _imp.get_frozen_object(name)
    except (ImportError, AttributeError, TypeError, ValueError):
        return False


def caller_file(depth: int = 2) -> str:
    """The file of the frame that raised the audit event being handled (two frames up: the
    hook, then its caller; ``depth`` 3 from a function the hook calls)."""
    try:
        return sys._getframe(depth).f_code.co_filename
    except ValueError:
        return ""
