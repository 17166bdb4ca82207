"""A rule-checked worker runs only code its rule scan read (autograder/sandbox/codegate.py):
the submission's files that the exercise imports by name, the libraries' own modules, and
code from a string only where the standard library builds it from identifiers (namedtuple,
dataclasses, typing's annotations, timeit with callables) or the grader's probes made it.
The gate is judged here on real code objects; the red-team attacks lazy_import_helper,
benchmark_timer_string and named_helper_frame_walk (test_red_team.py) prove it in a worker."""

from __future__ import annotations

import collections
import dataclasses
import os
import timeit
import typing

import pytest
import torch

from autograder.sandbox import codegate
from autograder.sandbox.codegate import CodeGate

COPY = "/run/autograder-x/submission"
GRADER = os.path.dirname(os.path.dirname(codegate.__file__))
TORCH_FILE = torch.__file__


def _gate(*modules: str) -> CodeGate:
    gate = CodeGate(COPY, GRADER)
    gate.confine(list(modules))
    return gate


def _module_code(name: str) -> object:
    return compile("X = 1\n", f"{COPY}/{name}.py", "exec")


def test_an_unconfined_worker_runs_anything():
    gate = CodeGate(COPY, GRADER)
    gate.check(_module_code("tensorboard"), TORCH_FILE)
    gate.check(compile("x = 1", "<string>", "exec"), TORCH_FILE)


def test_only_the_scanned_files_of_the_submission_run_and_the_refusal_names_the_fix():
    gate = _gate("custom_backward", "gradmath")
    gate.check(_module_code("custom_backward"), "<frozen importlib._bootstrap>")
    gate.check(_module_code("gradmath"), "<frozen importlib._bootstrap>")
    with pytest.raises(ImportError, match=r"tensorboard\.py cannot run .* by name \(import tensorboard\)") as raised:
        gate.check(_module_code("tensorboard"), "<frozen importlib._bootstrap>")
    assert raised.value.name == "tensorboard"


def test_library_modules_run_whoever_imports_them():
    _gate("custom_backward").check(compile("X = 1\n", TORCH_FILE, "exec"), "<frozen importlib._bootstrap>")


@pytest.mark.parametrize("builder", [collections, dataclasses, typing], ids=lambda m: m.__name__)
def test_code_from_a_string_runs_where_the_standard_librarys_builders_make_it(builder):
    _gate("custom_backward").check(compile("x = 1", "<string>", "exec"), codegate._source_file(builder))


def test_code_from_a_string_is_refused_from_any_other_caller_but_the_graders_probes():
    gate = _gate("custom_backward")
    gate.check(compile("x = 1", "<probe p>", "exec"), os.path.join(GRADER, "sandbox", "worker.py"))
    for caller in (TORCH_FILE, f"{COPY}/custom_backward.py", "<string>", "<frozen importlib._bootstrap>"):
        with pytest.raises(RuntimeError, match=r"code from a string \(<string>\) cannot run"):
            gate.check(compile("x = 1", "<string>", "exec"), caller)


def test_a_frozen_standard_library_module_runs_when_the_import_machinery_runs_it():
    gate = _gate("custom_backward")
    gate.check(compile("x = 1", "<frozen zipimport>", "exec"), "<frozen importlib._bootstrap>")
    with pytest.raises(RuntimeError):
        gate.check(compile("x = 1", "<frozen zipimport>", "exec"), TORCH_FILE)


def test_timeit_runs_with_callables_and_never_a_string_statement():
    gate, caller = _gate("custom_backward"), codegate._source_file(timeit)
    callables = timeit.template.format(stmt="_stmt()", setup="_setup()", init=", _setup=_setup, _stmt=_stmt")
    gate.check(compile(callables, "<timeit-src>", "exec"), caller)
    gate.check(compile(timeit.template.format(stmt="pass", setup="pass", init=""), "<timeit-src>", "exec"), caller)
    for stmt in ("import sys; sys._getframe(0)", "x = 1", "(lambda: 0)()"):
        code = compile(timeit.template.format(stmt=stmt, setup="pass", init=""), "<timeit-src>", "exec")
        with pytest.raises(RuntimeError, match="timeit-src"):
            gate.check(code, caller)


def test_a_worker_is_confined_once():
    gate = _gate("custom_backward")
    with pytest.raises(RuntimeError, match="once"):
        gate.confine(["custom_backward", "tensorboard"])
