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
expressions made it (``collections.namedtuple``, ``dataclasses``, ``typing``'s evaluation of
string annotations, ``timeit`` with callables), or the grader's own probes. The hook cannot
be removed (PEP 578), and the gate is reachable only through the hook's closure: gc's object
lists are refused in every worker, and frames are denied to scanned code. Library modules
torch imports lazily run as before. Only skills whose suites declare ``WORKER_SCANNED`` are
confined: elsewhere the submission may run any code it likes (nothing is judged from
records it could reach).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import sys
import timeit
import typing
from types import CodeType

#: ``timeit``'s template with callables (``timeit.timeit(lambda: f(x))``): the names its
#: ``inner`` function may hold; a string statement adds its own names (or code objects)
_TIMEIT_NAMES = frozenset({"_it", "_timer", "_setup", "_stmt", "_t0", "_i", "_t1"})
_IMPORT_MACHINERY = "<frozen importlib._bootstrap>"


def _source_file(module: object) -> str:
    path = getattr(module, "__file__", None) or ""
    return path[:-1] if path.endswith(".pyc") else path


class CodeGate:
    """Which code a worker may execute; inactive (everything runs) until ``confine``."""

    def __init__(self, copy_dir: str, grader_dir: str) -> None:
        self.prefix = copy_dir.rstrip("/") + "/"
        self.grader = grader_dir.rstrip("/") + "/"
        self.allowed: frozenset[str] | None = None
        # namedtuple and dataclasses build methods from identifiers; typing evaluates string
        # annotations (torch's own modules, imported lazily, have them; the rule scan denies
        # code in the submission's, and any evaluator: typing.get_type_hints, ForwardRef)
        self.builders = {_source_file(collections), _source_file(dataclasses), _source_file(typing)}
        self.timeit = _source_file(timeit)

    def confine(self, modules: list[str]) -> None:
        if self.allowed is not None:
            raise RuntimeError("the worker's code is confined once, for its whole life")
        self.allowed = frozenset(str(m) for m in modules)

    def check(self, code: object, caller: str) -> None:
        """Raise unless ``code`` (the ``exec`` event's code object) may run; ``caller`` is the
        file of the frame that executes it."""
        if self.allowed is None or not isinstance(code, CodeType):
            return
        path = code.co_filename
        if path.startswith(self.prefix):
            module = os.path.basename(path).removesuffix(".py")
            if module not in self.allowed:
                raise ImportError(
                    f"{module}.py cannot run in this exercise's worker: only files that the exercise imports "
                    f"by name (import {module}) are read by its rule check, and {module}.py was not",
                    name=module,
                )
            return
        if not path.startswith("<"):
            return  # a library's module body (torch imports many lazily)
        if caller.startswith(self.grader) or caller in self.builders:
            return  # the grader's probes; namedtuple's and dataclass's methods from identifiers
        if path.startswith("<frozen ") and caller == _IMPORT_MACHINERY:
            return  # a frozen standard-library module, imported
        if caller == self.timeit and _timeit_with_callables(code):
            return
        raise RuntimeError(
            f"code from a string ({path}) cannot run in this exercise's worker: its rule check reads only "
            "the exercise's files, so nothing may run code it has not read"
        )


def _timeit_with_callables(code: CodeType) -> bool:
    """Is this ``timeit``'s module code for callables only (nothing of a string statement)?"""
    inner = [c for c in code.co_consts if isinstance(c, CodeType)]
    if len(inner) != 1 or set(code.co_names) - {"inner", "_setup", "_stmt"}:
        return False
    body = inner[0]
    return (
        not body.co_names and set(body.co_varnames) <= _TIMEIT_NAMES and not any(isinstance(c, CodeType) for c in body.co_consts)
    )


def caller_file() -> str:
    """The file of the frame that raised the audit event being handled (two frames up: the
    hook, then its caller)."""
    try:
        return sys._getframe(2).f_code.co_filename
    except ValueError:
        return ""
