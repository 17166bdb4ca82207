"""A rule-checked worker runs only code its rule scan read (autograder/sandbox/codegate.py):
the submission's files that the exercise imports by name, the libraries' own modules, and
code from a string only where the standard library builds it from identifiers (namedtuple,
dataclasses, typing's annotations, timeit with callables) or the grader's probes made it.
The gate is judged here on real code objects; the red-team attacks lazy_import_helper,
benchmark_timer_string and named_helper_frame_walk (test_red_team.py) prove it in a worker."""

from __future__ import annotations

import collections
import collections.abc
import os
import shutil
import subprocess
import sys
import textwrap
import timeit
import typing
from pathlib import Path

import pytest
import torch
from conftest import ROOT

from autograder.sandbox import codegate, mainguard
from autograder.sandbox.codegate import CodeGate

COPY = "/run/autograder-x/submission"
GRADER = os.path.dirname(os.path.dirname(codegate.__file__))
TORCH_FILE = torch.__file__
#: a library module no process has imported yet: its first run is an import, as torch's lazy ones
LAZY_FILE = os.path.join(os.path.dirname(TORCH_FILE), "lazily_imported_module.py")


def _gate(*modules: str) -> CodeGate:
    gate = CodeGate(COPY, GRADER)
    gate.confine(list(modules))
    return gate


def _module_code(name: str) -> object:
    return mainguard.compiled("X = 1\n", f"{COPY}/{name}.py")  # as the worker compiles the submission's files


def test_a_submission_file_compiled_with_its_main_guard_never_runs():
    """Blind red-team tester R-AC made a main guard's unscanned body run (enum's ``_convert_``
    renamed the module): the worker compiles the submission's files without those bodies, and
    the gate runs no other module code of theirs."""
    source = 'X = 1\nif __name__ == "__main__":\n    import inspect\nelse:\n    Y = 2\n'
    gate = _gate("custom_backward")
    stripped = mainguard.compiled(source, f"{COPY}/custom_backward.py")
    gate.check(stripped, "<frozen importlib._bootstrap>")
    namespace = {"__name__": "__main__"}
    exec(stripped, namespace)
    assert "inspect" not in namespace and namespace["X"] == 1 and "Y" not in namespace
    with pytest.raises(ImportError, match=r"compiled with its main guard's body"):
        gate.check(compile(source, f"{COPY}/custom_backward.py", "exec"), "<frozen importlib._bootstrap>")


def test_a_library_module_runs_only_from_the_installed_libraries():
    """R-AC imported a copy of torch/nn/functional.py written to the scratch folder: a module
    whose file lies outside the interpreter's library and the installed packages never runs."""
    gate = _gate("mha_reshape")
    with pytest.raises(ImportError, match=r"neither the exercise's file nor an installed library's"):
        gate.check(compile("X = 1\n", "/tmp/scratch-of-a-worker/functional_copy.py", "exec"), "<frozen importlib._bootstrap>")


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
    _gate("custom_backward").check(compile("X = 1\n", LAZY_FILE, "exec"), "<frozen importlib._bootstrap>")


def test_code_the_exercise_compiled_under_a_librarys_name_is_not_run_by_its_exec():
    """Blind red-team tester R-H cut torch's multi_head_attention_forward out of its file and
    ran it with exec(compile(text, F.__file__, "exec"), …): a code object that claims a
    library's file. Only the import machinery runs library bodies; exec from the exercise's
    own files runs nothing that is not one of its scanned files."""
    gate = _gate("mha_reshape")
    forged = compile("X = 1\n", LAZY_FILE, "exec")
    with pytest.raises(RuntimeError, match="under another file's name .* cannot be run by exec from the exercise's own files"):
        gate.check(forged, f"{COPY}/mha_reshape.py")
    with pytest.raises(RuntimeError):
        gate.check(compile("x = 1", "<string>", "exec"), f"{COPY}/mha_reshape.py")
    gate.check(forged, "<frozen importlib._bootstrap>")  # torch importing its own modules, as ever


def test_a_library_module_runs_once_and_a_second_copy_of_it_never():
    """Blind red-team tester R-U ran torch/nn/functional.py again as a module of another name
    (``importlib.util.spec_from_file_location`` + ``exec_module``): the fresh copy held the
    multi_head_attention_forward the worker's standing ban had replaced by name (15/15). A
    library file whose module body ran once — before the gate was confined, or through it —
    runs no second time; one not yet imported runs its first."""
    gate = _gate("mha_reshape")
    functional = torch.nn.functional.__file__
    with pytest.raises(ImportError, match=r"cannot be run a second time"):
        gate.check(compile("X = 1\n", functional, "exec"), "<frozen importlib._bootstrap_external>")
    fresh = os.path.join(os.path.dirname(TORCH_FILE), "not_imported_yet_by_anyone.py")
    gate.check(compile("X = 1\n", fresh, "exec"), "<frozen importlib._bootstrap_external>")
    with pytest.raises(ImportError, match=r"cannot be run a second time"):
        gate.check(compile("X = 1\n", fresh, "exec"), "<frozen importlib._bootstrap_external>")
    gate.check(compile("def f():\n    pass\n", functional, "exec").co_consts[0], "<frozen importlib._bootstrap>")


@pytest.mark.parametrize("runner", ["bdb", "cProfile", "profile", "trace"])
def test_code_under_a_library_files_name_runs_only_when_python_imports_it(runner):
    """compile(<torch's source, edited>, <a library file not yet imported>) handed to a
    library that execs what it is given (``pdb.run``, ``cProfile.run``): no import ran it, so
    it is no library's module body (blind red-team tester R-Y compiled torch's own functions
    again under fresh library paths)."""
    gate = _gate("mha_reshape")
    fresh = os.path.join(os.path.dirname(TORCH_FILE), "not_imported_by_anyone_either.py")
    caller = codegate._source_file(__import__(runner))
    with pytest.raises(RuntimeError, match="only when Python imports that library"):
        gate.check(compile("X = 1\n", fresh, "exec"), caller)
    gate.check(compile("X = 1\n", fresh, "exec"), "<frozen importlib._bootstrap>")  # as an import runs it


def test_code_from_a_string_runs_where_namedtuple_makes_it():
    _gate("custom_backward").check(compile("x = 1", "<string>", "exec"), codegate._source_file(collections))


def _evaluated_by_typing(gate: CodeGate, text: str, namespace: dict) -> None:
    """``gate.check`` of ``text`` as typing's ``ForwardRef._evaluate`` has it checked: from a
    frame of typing's file holding the evaluation's ``globalns`` and ``localns``."""
    helper: dict = {}
    source = "def _evaluate(globalns, localns, check, code, caller):\n    check(code, caller)\n"
    exec(compile(source, codegate._source_file(typing), "exec"), helper)
    helper["_evaluate"](namespace, namespace, gate.check, compile(text, "<string>", "eval"), codegate._source_file(typing))


class _Box(collections.defaultdict):
    pass


TYPE_NAMESPACE = {
    "torch": torch,
    "Tensor": torch.Tensor,
    "Optional": typing.Optional,
    "Literal": typing.Literal,
    "Callable": typing.Callable,
    "Dict": dict,
    "abc": collections.abc,
    "_box": collections.defaultdict(int),
    "Box": _Box,
    "FakeList": type(
        "List", (), {"__module__": "typing", "__class_getitem__": staticmethod(collections.defaultdict(int).__getitem__)}
    ),
    "Meta": type("Meta", (type,), {"__or__": lambda cls, other: other})("M", (), {}),
}


@pytest.mark.parametrize(
    "text",
    [
        "Optional[Tensor]",
        "list[int] | None",
        "torch.Tensor",
        'Literal["a"]',
        "Callable[[int], str]",
        "Dict[str, list[Tensor]]",
        "abc.Sequence[int]",
        "Tensor | int | None",
        "torch.nn.Module",
    ],
)
def test_typing_may_evaluate_a_string_annotation_that_is_a_type(text):
    _evaluated_by_typing(_gate("custom_backward"), text, TYPE_NAMESPACE)


@pytest.mark.parametrize("text", ["BOX.update(x) or int", "(lambda: 0)", "__import__('sys')", "(x := int)"])
def test_typing_may_not_evaluate_a_string_annotation_that_runs_code(text):
    # blind red-team tester P: functools.singledispatch had typing evaluate such a string
    with pytest.raises(RuntimeError, match="cannot run"):
        _evaluated_by_typing(_gate("custom_backward"), text, TYPE_NAMESPACE)


@pytest.mark.parametrize(
    "text",
    [
        "_box[torch.set_num_threads.__globals__['STANDING_BAN']]",  # blind red-team tester R-AB
        "_box[torch.sys]",
        "Box[torch.sys]",
        "FakeList[torch.sys]",  # a class of the exercise's calling itself typing.List
        "Meta | torch.sys",  # a metaclass of the exercise's joins
        "Optional[torch.sys] | _box",
        "torch.Tensor.__dict__['x'][1]",  # a value it cannot know, subscripted
        "torch.autograd.Variable._execution_engine.__class__",  # blind red-team tester R-AD: a grader class
        "torch.Tensor.__class__",
        "__builtins__",
    ],
)
def test_typing_may_not_evaluate_an_annotation_that_hands_what_it_reaches_to_the_exercise(text):
    """A type expression's values leave it only through what it subscripts or joins with ``|``:
    those must be the type forms the worker had before any exercise code ran."""
    with pytest.raises(RuntimeError, match="cannot run"):
        _evaluated_by_typing(_gate("custom_backward"), text, TYPE_NAMESPACE)


@pytest.mark.parametrize("text", ["probes.DispatchRecorder", "torch.Tensor", "int"])
def test_typing_may_not_evaluate_an_annotation_in_a_grader_modules_names(text):
    """typing evaluates an annotation in the globals of the last function of its ``__wrapped__``
    chain, which ``functools.update_wrapper`` points anywhere: blind red-team tester R-CH had
    ``singledispatch`` evaluate ``"probes.DispatchRecorder"`` in the worker's own globals (its
    ``sys.stdout.write``) and took the grader's classes from the registry. Refused in a grader
    module's namespace, whatever the expression; the same types in the exercise's still pass."""
    from autograder.sandbox import worker

    with pytest.raises(RuntimeError, match="cannot run"):
        _evaluated_by_typing(_gate("custom_backward"), text, vars(worker))
    if text != "probes.DispatchRecorder":
        _evaluated_by_typing(_gate("custom_backward"), text, {**TYPE_NAMESPACE, "__name__": "custom_backward"})


def test_dataclasses_build_methods_only_for_fields_named_by_identifiers():
    # in a fresh interpreter: the gate's hook stays for good, as in a worker
    code = textwrap.dedent("""
        import dataclasses, sys
        from autograder.sandbox.codegate import CodeGate, caller_file

        gate = CodeGate("/run/x/submission", "/nonexistent-grader")
        gate.confine(["custom_backward"])
        sys.addaudithook(lambda event, args: gate.check(args[0], caller_file()) if event == "exec" else None)

        @dataclasses.dataclass(frozen=True, order=True)
        class Fine:
            d_k: int
            scale: float = 1.0

        assert Fine(4) < Fine(5)

        @dataclasses.dataclass(frozen=True)
        class Finer(Fine):  # inherited fields, checked again
            name: str = "x"

        assert Finer(4).name == "x"

        @dataclasses.dataclass
        class Options:
            verbose: int = 0

        dataclasses.fields(Options)[0].name = '"+str(print("ran"))+"'  # blind red-team tester Q: renamed after
        try:
            @dataclasses.dataclass(init=False, eq=False)
            class Config(Options):
                seed: int = 0
        except RuntimeError as refused:
            assert "cannot run" in str(refused), refused
        else:
            raise AssertionError("a renamed inherited field became code")

        class Sneaky(dict):  # blind red-team tester P: a metaclass namespace renaming annotation keys
            def __setitem__(self, key, value):
                self.update({key + ",print('ran')": value})

        class Namespace(dict):
            def __missing__(self, key):
                if key == "__annotations__":
                    self.update({key: Sneaky()})
                    return self[key]
                raise KeyError(key)

        class Meta(type):
            @classmethod
            def __prepare__(mcs, name, bases, **kw):
                return Namespace()

        try:
            @dataclasses.dataclass(init=False, repr=False)  # __eq__ compares (self.x,print('ran'),)
            class Thing(metaclass=Meta):
                x: int
        except RuntimeError as refused:
            assert "cannot run" in str(refused), refused
        else:
            raise AssertionError("the injected field name became code")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def test_code_from_a_string_is_refused_from_any_other_caller_but_the_graders_probes():
    gate = _gate("custom_backward")
    gate.check(compile("x = 1", "<probe p>", "exec"), os.path.join(GRADER, "sandbox", "worker.py"))
    for caller in (TORCH_FILE, f"{COPY}/custom_backward.py", "<string>", "<frozen importlib._bootstrap>"):
        with pytest.raises(RuntimeError, match=r"code from a string \(<string>\) cannot run"):
            gate.check(compile("x = 1", "<string>", "exec"), caller)


def test_a_frozen_standard_library_module_runs_when_the_import_machinery_runs_it():
    import _imp

    gate = _gate("custom_backward")
    gate.check(_imp.get_frozen_object("zipimport"), "<frozen importlib._bootstrap>")
    with pytest.raises(RuntimeError):
        gate.check(_imp.get_frozen_object("zipimport"), TORCH_FILE)


@pytest.mark.parametrize("name", ["zzrows", "zipimport"])
def test_code_that_only_calls_itself_frozen_never_runs(name):
    """A name is any code's to take: a sourceless .pyc compiled as "<frozen zzrows>", written to
    the scratch folder and imported, ran unscanned in a rule-checked worker with frames up to
    the worker's own (blind red-team tester R-DH); so would one named after a real frozen
    module with other code. The import machinery unmarshals no such file any more (audit.py),
    and the gate runs frozen code only where it is the interpreter's own."""
    gate = _gate("custom_backward")
    with pytest.raises(RuntimeError, match=rf"code from a string \(<frozen {name}>\) cannot run"):
        gate.check(compile("x = 1", f"<frozen {name}>", "exec"), "<frozen importlib._bootstrap>")


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


@pytest.mark.parametrize(
    "source",
    [
        'X = 1\nif __ｎａｍｅ__ == "__main__":\n    X = 2\n',  # a fullwidth name, NFKC-normalised to __name__
        'X = 1\nif "\\x5f_main__" == __name__:\n    X = 2\n',  # the constant written with an escape
        'X = 1\nif __name__ == "__main__":\n    X = 2\n',
    ],
)
def test_every_spelling_of_a_main_guard_is_compiled_without_its_body(source):
    namespace = {"__name__": "__main__"}
    exec(mainguard.compiled(source.encode(), f"{COPY}/m.py"), namespace)
    assert namespace["X"] == 1


TORCH_DIR = os.path.dirname(TORCH_FILE)


def _cached(module) -> str:
    import importlib.util

    return importlib.util.cache_from_source(module.__file__)


@pytest.mark.parametrize(
    ("where", "data", "allowed"),
    [
        ("library", "its own", True),  # a library's cache, read as it is on disk
        ("library", "other", False),  # a loader of the exercise's own handing other bytes (R-DJ)
        ("scratch", "its own", False),  # compiled code alone, outside the libraries (R-DH, R-DI)
        ("prefix", "its own", True),  # PYTHONPYCACHEPREFIX's folder
    ],
)
def test_the_import_machinery_unmarshals_only_a_librarys_bytecode_as_it_is_on_disk(where, data, allowed, tmp_path):
    """audit.py lets the import machinery's ``_compile_bytecode`` unmarshal a .pyc among the
    installed libraries (or in the interpreter's cache folder), and only the bytes that file
    holds past its header — never one written elsewhere (beside a scratch folder's link to a
    library's file, R-DI), nor other bytes under a library's name (R-DJ)."""
    from autograder.sandbox import audit

    gate = _gate("row_softmax")
    gate.pycache_prefix = str(tmp_path / "prefix") + os.sep
    library = _cached(textwrap)
    if not os.path.isfile(library):
        pytest.skip("no cached bytecode for textwrap here")
    path = {"library": library, "scratch": str(tmp_path / "zz.pyc"), "prefix": str(tmp_path / "prefix" / "zz.pyc")}[where]
    if where != "library":
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(library, path)
    body = Path(path).read_bytes()[16:] if data == "its own" else b"\xe3other"
    namespace = {"hook": lambda: audit._reads_a_librarys_bytecode(gate, (body,))}
    machinery = "def _compile_bytecode(data, name=None, bytecode_path=None, source_path=None):\n    return hook()\n"
    exec(compile(machinery, "<frozen importlib._bootstrap_external>", "exec"), namespace)
    assert namespace["_compile_bytecode"](body, bytecode_path=path, source_path=None) is allowed
    assert not audit._reads_a_librarys_bytecode(gate, (body,))  # from anywhere else: never


def test_a_link_in_the_scratch_folder_to_a_librarys_file_is_no_library_file(tmp_path):
    """Blind red-team tester R-DI linked a library's .py from the scratch folder and wrote a
    __pycache__ beside the link: the gate resolved the link and ran the cached code as the
    library's. A file is judged by the folder it lies in (resolved), not by what it links to;
    a folder linked to a library's holds library files, but none that has run may run again."""
    gate = _gate("row_softmax")
    library_file = os.path.join(TORCH_DIR, "functional.py")
    (tmp_path / "zzlink.py").symlink_to(library_file)
    assert gate.is_library_file(library_file)
    assert not gate.is_library_file(str(tmp_path / "zzlink.py"))
    with pytest.raises(ImportError, match="neither the exercise's file nor an installed library's"):
        gate.check(compile("x = 1", str(tmp_path / "zzlink.py"), "exec"), "<frozen importlib._bootstrap>")
    (tmp_path / "torchlink").symlink_to(TORCH_DIR)
    aliased = str(tmp_path / "torchlink" / "functional.py")
    assert gate.is_library_file(aliased)
    gate.executed.add(library_file)
    with pytest.raises(ImportError, match="cannot be run a second time"):
        gate.check(compile("x = 1", aliased, "exec"), "<frozen importlib._bootstrap>")


def test_a_compiled_extension_loads_only_from_the_installed_libraries(tmp_path):
    """The import machinery names an extension module's file in its ``import`` audit event
    before it loads it; a worker's hook lets only the libraries' load (native code no check
    can see). A copy of one of the standard library's extensions in another folder is refused;
    the library's own loads."""
    import _json

    extension = getattr(_json, "__file__", None)
    if not extension or not extension.endswith(".so"):
        pytest.skip("_json is built into this interpreter")
    copy = tmp_path / os.path.basename(extension)
    shutil.copyfile(extension, copy)
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.sandbox import audit
        from autograder.sandbox.codegate import CodeGate
        audit.forbid_introspection(CodeGate("/nonexistent/copy", {GRADER!r}))
        import _bz2  # a library's own extension
        sys.path.insert(0, {str(tmp_path)!r})
        try:
            import _json
        except ImportError as exc:
            print("REFUSED", exc)
        else:
            print("LOADED", _json.__file__)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REFUSED" in done.stdout and "not an installed library's extension" in done.stdout, done.stdout


def test_code_under_a_library_files_name_is_compiled_only_from_that_files_text(tmp_path):
    """Blind red-team tester R-DJ gave a subclass of the import machinery's loader a
    ``get_data`` of its own: the machinery compiled the exercise's string under an unimported
    library file's name and the gate ran it as that library's module. In a sealed worker,
    ``compile`` under a library file's name takes only that file's text, a syntax tree is
    compiled only by the grader, and a .pyc is unmarshalled only where its bytes are the
    file's. The library's own module still imports."""
    script = textwrap.dedent(
        f"""
        import ast, os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from importlib.machinery import SourceFileLoader
        import types
        from autograder.sandbox import audit
        from autograder.sandbox.codegate import CodeGate
        audit.forbid_introspection(CodeGate("/nonexistent/copy", {GRADER!r}))()  # sealed
        library = os.path.join(os.path.dirname(os.__file__), "antigravity.py")
        def outcome(run):
            try:
                run()
            except RuntimeError as exc:
                return "REFUSED " + str(exc)[:60]
            return "RAN"
        class Mine(SourceFileLoader):
            def get_data(self, path):
                return b"X = 1\\n"
        print("own loader:", outcome(lambda: Mine("zz", library).exec_module(types.ModuleType("zz"))))
        print("wrong text:", outcome(lambda: compile("X = 1", library, "exec")))
        print("syntax tree:", outcome(lambda: compile(ast.parse("X = 1"), "<t>", "exec")))
        print("own text:", outcome(lambda: compile(open(library, "rb").read(), library, "exec")))
        class Name(str):  # R-DK: its methods answered the hook's checks from inside the hook
            def startswith(self, prefix, *args):
                return prefix == "<" or str.startswith(self, prefix, *args)
        print("str subclass:", outcome(lambda: compile("X = 1", Name(library), "exec")))
        class Where:  # a path-like whose __fspath__ is the exercise's: asked again by a check, it may lie
            def __fspath__(self):
                return "/etc/hostname"
        def file_io():  # io.FileIO raises its event with the object, and asks its __fspath__ after
            import io
            try:
                io.FileIO(Where()).close()
            except PermissionError as exc:
                raise RuntimeError(str(exc))
        print("own path-like:", outcome(file_io))
        print("pathlib:", outcome(lambda: open(__import__("pathlib").Path(library)).close()))
        import decimal  # a library module, compiled from its own text or read from its cache
        print("import:", "RAN")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["own loader"].startswith("REFUSED compile: code under a library file's name"), lines
    assert lines["wrong text"].startswith("REFUSED compile: code under a library file's name"), lines
    assert lines["syntax tree"].startswith("REFUSED compile: a syntax tree"), lines
    assert lines["own text"] == "RAN" and lines["import"] == "RAN", lines
    assert lines["str subclass"].startswith("REFUSED compile: a file name is a plain str"), lines
    assert lines["own path-like"].startswith("REFUSED open: a path is a str, bytes or pathlib"), lines
    assert lines["pathlib"] == "RAN", lines


def test_a_frame_check_reads_capture_locals_without_asking_the_value():
    """traceback's walk_stack keeps its frames for text, unless ``capture_locals`` asks for the
    repr of every local up to the worker's serve: the check read the value's truth, which is
    its ``__bool__`` — the exercise's code, run inside the audit hook while its checks are off
    (blind red-team tester R-DK's family of attacks). It is judged without asking."""
    from autograder.sandbox import frames

    asked = []

    class Wants:
        def __bool__(self):
            asked.append(True)
            return False

    namespace: dict = {"sys": sys}
    library = "def walk_stack():\n    return sys._getframe(0)\n\ndef extract(capture_locals):\n    return walk_stack()\n"
    exec(compile(library, os.path.join(os.sep, "lib", "traceback.py"), "exec"), namespace)
    for value, kept in ((None, True), (False, True), (0, True), (True, False), (Wants(), False)):
        assert frames._kept_by_its_library(namespace["extract"](value)) is kept, value
    assert not asked


def test_the_audit_hook_calls_no_method_of_an_events_argument():
    """Exercise code raises audit events with objects of its own (``sys.audit``, or the
    arguments of ``compile``, ``open``, ``getattr``…). The hook must ask them nothing: not
    ``isinstance`` (which reads ``__class__``, a descriptor the class may define: blind
    red-team tester R-DL took the worker's frames from inside the hook with
    ``cached_property(inspect.stack)``), not ``in`` a set or tuple (``__hash__``, ``__eq__``, a
    metaclass's ``__eq__``), not its ``__fspath__``, buffer or truth. Every such call would be
    the exercise's code run inside the hook, with its checks off."""
    script = textwrap.dedent(
        f"""
        import functools, sys
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.sandbox import audit
        from autograder.sandbox.codegate import CodeGate
        gate = CodeGate("/nonexistent/copy", {GRADER!r})
        gate.confine([])
        audit.forbid_introspection(gate)()  # sealed
        asked = []
        def note(name):
            def method(self, *args, **kwargs):
                asked.append(name)
                return NotImplemented if name in ("__eq__", "__ne__") else 0
            return method
        class Meta(type):
            __eq__ = note("metaclass __eq__")
            __hash__ = type.__hash__
        names = ["__hash__", "__eq__", "__ne__", "__fspath__", "__bool__", "__len__", "__iter__", "__index__",
                 "__str__", "__repr__", "__buffer__", "__getattr__", "startswith", "endswith"]
        body = dict((n, note(n)) for n in names)
        body["__class__"] = functools.cached_property(lambda self: asked.append("__class__") or int)
        Spy = Meta("Spy", (), body)
        spy = Spy()
        for event, args in [
            ("row_softmax.note", (spy,)), ("exec", (spy,)), ("import", ("x", spy)), ("open", (spy, "r", 0)),
            ("object.__getattr__", (object(), spy)), ("object.__setattr__", (object(), spy, 1)),
            ("compile", (spy, spy)), ("marshal.loads", (spy,)), ("sys._getframe", (spy,)),
        ]:
            try:
                sys.audit(event, *args)
            except Exception:
                pass
        print("ASKED", sorted(set(asked)))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ASKED []" in done.stdout, done.stdout


def test_inspects_frame_returning_functions_reached_through_a_library_are_refused():
    """Blind red-team tester R-DL: ``functools.cached_property(inspect.stack)`` — the exercise
    called cached_property's ``__get__``, a library function that returns no frames by name,
    which called ``inspect.stack`` and handed back the stack up to the worker's serve. inspect's
    frame-returning functions keep their frames only when inspect itself (or TorchScript's
    resolution callback, whose walk is judged apart) called them."""
    exercise = "/nonexistent/copy/row_softmax.py"
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.sandbox import audit
        from autograder.sandbox.codegate import CodeGate
        audit.forbid_introspection(CodeGate("/nonexistent/copy", {GRADER!r}))()  # sealed
        source = (
            "import functools, inspect\\n"
            "class C:\\n"
            "    frames = functools.cached_property(inspect.stack)\\n"
            "def run():\\n"
            "    return C().frames\\n"
        )
        namespace = {{}}
        exec(compile(source, {exercise!r}, "exec"), namespace)
        try:
            namespace["run"]()
        except RuntimeError as exc:
            print("REFUSED", exc)
        else:
            print("FRAMES")
        # R-DM: numpy.distutils.misc_util.get_frame(level) is sys._getframe(level + 1)
        helper = {{"sys": sys}}
        exec(compile("def get_frame(level=0):\\n    return sys._getframe(level + 1)\\n", "/lib/misc_util.py", "exec"), helper)
        namespace["get_frame"] = helper["get_frame"]
        exec(compile("def grab():\\n    return get_frame(1)\\n", {exercise!r}, "exec"), namespace)
        try:
            namespace["grab"]()
        except RuntimeError as exc:
            print("REFUSED get_frame", exc)
        else:
            print("FRAMES get_frame")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REFUSED" in done.stdout and "frames are not available" in done.stdout, done.stdout
    assert "REFUSED get_frame" in done.stdout, done.stdout
