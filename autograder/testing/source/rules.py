"""What the rule checks deny or allow by name: dynamic code, modules, dunders, torch's private paths."""

from __future__ import annotations

import functools
import importlib.util
import re
import sys

#: ``breakpoint`` is not here: a worker's ``sys.breakpointhook`` does nothing whatever the
#: environment names (sandbox/worker.py), and the hook itself is a DENIED_NAMES entry
DYNAMIC_CALLS = {"eval", "exec", "compile", "__import__", "vars", "globals", "locals"}
#: callables that look names up by a value: fine with a constant, flagged with anything else
LOOKUPS = {"getattr", "setattr", "delattr", "__setattr__"}  # object.__setattr__(self, "x", v): a frozen dataclass's field
DENIED_MODULES = {
    "importlib",
    "imp",
    "inspect",
    "builtins",
    "__builtin__",
    "ctypes",
    "cffi",
    "gc",
    "sys._getframe",
    "runpy",
    "code",
    "codeop",
    "pkgutil",
    "marshal",
    "pickle",
    "dill",
    "threading",
    "_thread",
    "concurrent",
    "multiprocessing",
    # a name resolved to any object (``pydoc.locate("torch.nn.functional." + "soft" + "max")``)
    "pydoc",
    # the same through a format field (``string.Formatter().get_field("0.nn.functional.soft" +
    # "max", (torch,), {})``) or logging's dict configuration (``BaseConfigurator.resolve``):
    # red-team attacks of blind tester G, 2026-12-04
    "string.Formatter",
    "logging.config",
    # the same through a patcher's target (``mock.patch("torch.nn.functional.multi_head_attention_"
    # "forward").get_original()``, ``mock.patch.object(frame, "f_back")``): blind red-team tester
    # R-D, 2026-12-05, reached a banned function, frames and the worker's globals this way
    "unittest.mock",
    "mock",
    # the grader's own modules: the worker's recorders live beside the submission (a worker
    # refuses the import too: sandbox/worker.hide_grader)
    "autograder",
    "zipimport",
    # modules that compile and run a string of code: doctest (code in docstrings, which the scan
    # skips), rlcompleter's eval, sympy.sympify / parse_expr (blind red-team tester H ran
    # unscanned code through builtins.exec reached as os.sys.modules["builtins"]; these are the
    # same door). timeit, pdb, cProfile, profile and trace are STRING_RUNNERS instead.
    "doctest",
    # numpy's old build tooling: its misc_util.get_frame(level) is sys._getframe(level + 1), a
    # frame at any height handed to the caller (blind red-team tester R-DM reached the worker's
    # serve); no exercise builds extensions
    "numpy.distutils",
    "bdb",
    "rlcompleter",
    "sympy",
    "shelve",
    "copyreg",
    "sys.modules",
    # not sys.path (tester J: a module the code writes, then imports): a rule-checked worker runs
    # no file the scan did not read (sandbox/codegate.py, attack written_module_on_sys_path), and
    # `sys.path.insert(0, os.path.dirname(__file__))` is a common, correct line (blind tester R-DE)
    "sys.settrace",
    "sys.setprofile",
    "sys._current_frames",
    # asyncio, socketserver, logging.handlers (which start threads) are not listed: the worker
    # cannot start a thread at all (seccomp, sandbox/confine.forbid_threads), so importing them
    # proves nothing, and a correct submission may log
}
#: modules a student imports to time or debug (``timeit.timeit(lambda: f(x))``,
#: ``pdb.set_trace()``) that also run a string of code (``timeit.timeit("…")``,
#: ``cProfile.run("…")``): importing them is fine; a call of theirs may take only functions
#: (a lambda, a def of the file, ``obj.method``) and numbers, never a string or a value built
#: at run time
STRING_RUNNERS = {"timeit", "pdb", "cProfile", "profile", "trace"}
#: their functions and methods that run one argument as code: (keyword names, how many
#: leading positional arguments); the rest of their arguments are data
RUNNER_CODE_PARAMETERS = {
    "timeit": (("stmt", "setup"), 2),
    "repeat": (("stmt", "setup"), 2),
    "Timer": (("stmt", "setup"), 2),
    "run": (("statement", "cmd"), 1),
    "runctx": (("statement", "cmd"), 1),
    "runeval": (("expression",), 1),
    "runcall": (("func", "function"), 1),
    "runfunc": (("func",), 1),
}
#: their methods that take no code at all (a profile's report, a debugger's entry)
RUNNER_DATA_METHODS = frozenset(
    {"Profile", "enable", "disable", "create_stats", "snapshot_stats", "print_stats", "dump_stats", "getstats"}
    | {"set_trace", "default_timer", "Trace", "results", "write_results"}
)
#: TorchScript built from a string, or code loaded from bytes: it runs in the JIT interpreter,
#: where neither the static scan (no source) nor the run-time recorder (no Python call) sees it
UNSEEN_CODE = {"CompilationUnit"}
UNSEEN_LOADS = {"load"}  # torch.load / torch.jit.load (denied on torch's modules only)
#: a code object's fields (``co_consts`` holds the functions of a compiled file)
CODE_FIELDS = frozenset(
    {"co_code", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_filename", "co_name"}
    | {"co_qualname", "co_flags", "co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals"}
    | {"co_stacksize", "co_firstlineno", "co_linetable", "co_lnotab", "co_exceptiontable"}
)
DENIED_NAMES = {
    "attrgetter",
    # string annotations evaluated: typing.get_type_hints("exec(…)"), a ForwardRef (tester J)
    "get_type_hints",
    "ForwardRef",
    # a function built from a code object: code the scan never read (a torch file's
    # compiled again, its function taken out of ``co_consts``: blind red-team tester R-V)
    "FunctionType",
    "LambdaType",  # FunctionType's other name
    "CodeType",
    # a generator's or coroutine's code object, and the fields ``code.replace(…)`` rewrites (blind
    # red-team tester R-Y renamed ``co_names`` and ``co_filename``); the worker refuses building
    # code at run time whatever the spelling (sandbox/audit.py CODE_EVENTS)
    "gi_code",
    "cr_code",
    "ag_code",
    *CODE_FIELDS,
    # what breakpoint() calls: the default one imports and calls what PYTHONBREAKPOINT names
    "breakpointhook",
    "__breakpointhook__",
    "setprofile",  # the recorder watches calls with a profile function: switching it is tampering
    "settrace",
    "getprofile",  # and reading it hands out what the recorder installed (blind red-team tester R-AE)
    "gettrace",
    "decomp_table",  # a decomposition table, however it was reached (R-AF)
    "default_decompositions",
    "py_kernels",
    "dispatch_table",  # copy's and copyreg's: a deepcopy that hands every object it copies to the file
    "_current_frames",
    "addaudithook",  # an audit hook is handed the frames libraries ask for (refused in the worker: sandbox/audit.py)
    "methodcaller",
    "_getframe",
    "f_globals",
    "f_locals",
    "f_back",
    "f_builtins",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "ag_frame",
}
#: attributes that reach the interpreter's machinery from any module: ``os.sys`` (then
#: ``.modules["builtins"].exec``), ``x.exec`` (never a method an exercise calls)
DENIED_ATTRIBUTES = {"sys", "exec", "importlib"}  # torch.importlib: blind red-team tester R-U
#: keyword arguments that run code stored as data (``numpy.load(…, allow_pickle=True)``), also
#: as a string (``**{"allow_pickle": True}``: blind red-team tester J)
DENIED_KEYWORDS = {"allow_pickle"}
#: numpy's protocols for an array over memory an object points to: an object of the file's own
#: that exposes one can make numpy read and write any address (sandbox/rawmemory.py), as a
#: method, a keyword (``SimpleNamespace(__array_interface__=…)``) or a string
RAW_MEMORY_NAMES = {"__array_interface__", "__array_struct__"}
#: what a file may not define (or name in a string: ``type("M", (type,), {"__instancecheck__": f})``):
#: numpy's raw-memory protocols, and the type-check hooks Python hands the object checked to
#: (``isinstance(vars(os)["x"], Mine)`` gave a hook the value: blind red-team tester R-AM)
DENIED_DEFINITIONS = {
    **dict.fromkeys(RAW_MEMORY_NAMES, "numpy's array over raw memory"),
    **dict.fromkeys(("__instancecheck__", "__subclasscheck__", "__subclasshook__"), "a type check handed the object"),
    # copy.copy(obj) calls what obj's __reduce_ex__ returns, then setattr on the result by the
    # names it returns: a setattr by names given at run time on any object (found after R-CF)
    **dict.fromkeys(("__reduce__", "__reduce_ex__"), "copy calls what it returns and sets attributes by its names"),
}
#: numpy's loaders unpickle (``np.load``, ``np.lib.format.read_array``): no exercise reads files
NUMPY_LOADS = {"load", "loads", "read_array", "fromfile"}
#: the interpreter's private (underscore) modules are denied (facts._private_module): C twins
#: of denied ones or worse — ``_pickle.loads(b"cbuiltins\nexec\n.")`` gave builtins.exec,
#: ``_frozen_importlib_external`` loads source files (blind red-team tester J) — but these
ALLOWED_PRIVATE_MODULES: set[str] = set()
ALLOWED_DUNDERS = {
    "__init__",
    "__name__",
    "__qualname__",
    "__class__",
    "__doc__",
    "__version__",
    "__len__",
    "__call__",
    "__module__",
    # the protocol methods an operator or builtin calls (``super().__repr__()``, ``object.__hash__``,
    # ``super().__post_init__()``, an Enum's ``__members__``): what ``repr(x)`` or ``x == y``
    # reaches anyway (blind fairness tester R-AL: each cost a correct file its skill)
    *("__str__", "__repr__", "__format__", "__hash__", "__bool__", "__iter__", "__next__", "__contains__"),
    *("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__post_init__", "__members__"),
}
#: ``__slots__`` (a class body's attribute list) and ``__debug__`` (a constant) reach nothing.
#: ``__annotations__`` is not here: written by hand (``__annotations__["a=…"] = int``, or as a
#: string key of ``type(…)``'s namespace), its keys become code in the methods ``dataclasses``
#: builds from source (sandbox/codegate.py lets dataclasses run such code)
ALLOWED_DUNDER_NAMES = {
    *("__name__", "__file__", "__doc__", "__all__", "__version__", "__slots__", "__debug__", "__hash__"),
    # a module's metadata strings (``__author__ = "…"``): assigned, they reach nothing (blind tester R-X)
    *("__author__", "__email__", "__license__", "__date__", "__credits__", "__copyright__"),
    *("__maintainer__", "__status__"),
}
#: identifier-like strings that name such a namespace entry
DENIED_STRINGS = {"__annotations__"}
IDENTIFIER_LIKE = re.compile(r"^[A-Za-z_][\w.:]*$")

#: torch's modules that reach operators or code by a name, or load code: no exercise needs them
DENIED_TORCH_PATHS = (
    # torch's Python reference implementations and decompositions: softmax written in allowed
    # kernels (amax, exp, sum, div), which no kernel ban sees (blind red-team tester R-D)
    "torch._refs",
    "torch._decomp",
    "torch._prims",
    "torch.library",
    "torch.overrides",
    "torch.utils.cpp_extension",
    "torch.hub",
    "torch.package",
    "torch.ops.load_library",
    # imports any of torch's modules by a string it is given: one whose custom ops compute a
    # cross-entropy or an attention from allowed kernels (blind red-team tester R-CU)
    "torch.ops.import_module",
    # torch's own lookups of an attribute path by a string (``torch.ao.quantization.utils.
    # getattr_from_fqn(torch, "distri" + "butions…")``: blind red-team tester R-V, 50 points),
    # fx's ``fetch_attr``/``_copy_attr``; no exercise needs quantization or fx
    "torch.ao",
    "torch.fx",
    "torch.onnx",  # its decomposition tables hold attention (blind red-team tester R-W)
    # torch.export.default_decompositions() re-exports torch._decomp's table: the softmax
    # derivative as a plain Python function (blind red-team tester R-AF, custom_backward 20/20)
    "torch.export",
    "torch.compiler",
    # BlockMask's pytree flattening hands back a callable's globals, closure cells and code
    # (``_extract_callable_pytree``): given one of the grader's installed functions, the grader's
    # namespace and the tripwire (blind red-team tester R-CI, custom_backward 20/20 with autograd)
    "torch.nn.attention.flex_attention",
    "torch.distributed",  # re-exports BlockMask (pipelining.microbatch); no exercise is distributed
)
#: what a rule-checked file may import, beside the submission's own files: the standard
#: library's everyday modules and the libraries an exercise computes with. Any other module
#: the grader's Python can import is refused by name (an allow-list, where deny-lists kept
#: meeting new libraries that look things up by a string: jinja2's ``Environment().getattr``,
#: traitlets' ``import_item``, pytest's ``monkeypatch.resolve`` — blind red-team testers R-U,
#: R-W); a module it cannot import fails in the worker as any missing import does.
ALLOWED_IMPORTS = frozenset(
    {
        *("torch", "numpy", "einops", "typing_extensions"),
        *("__future__", "abc", "argparse", "array", "bisect", "cmath", "collections", "contextlib", "copy"),
        *("cProfile", "csv", "dataclasses", "datetime", "decimal", "enum", "fractions", "functools", "hashlib"),
        *("heapq", "io", "itertools", "json", "keyword", "logging", "math", "numbers", "operator", "os"),
        *("pathlib", "pdb", "pprint", "profile", "pstats", "random", "re", "statistics", "string", "struct"),
        *("sys", "textwrap", "time", "timeit", "trace", "traceback", "types", "typing", "unicodedata"),
        *("warnings", "weakref", "base64", "calendar", "difflib", "glob", "graphlib", "html", "locale"),
        *("platform", "queue", "reprlib", "secrets", "shutil", "tempfile", "uuid", "zlib", "zoneinfo"),
        *("asyncio", "socketserver"),  # they start threads, which a worker cannot: importing proves nothing
    }
)
#: a library's function whose name holds one of these is a lookup by a string
#: (``getattr_from_fqn``, ``safe_getattr``, ``fetch_attr``), imported or reached as an
#: attribute of a library module; the builtins of that name are LOOKUPS, judged by their
#: arguments, and the file's own names (``use_getattr = False``) are its own (blind tester R-X)
LOOKUP_PARTS = ("getattr", "setattr", "delattr", "fetch_attr", "copy_attr")
#: calls whose string arguments are messages for a person, never names of code
MESSAGE_CALLS = {"print", "pprint", "pp"}
MESSAGE_CLASSES = ("Error", "Exception", "Warning")
MESSAGE_METHODS = {"warn", "warning", "info", "debug", "error", "exception", "critical", "log", "write"}


@functools.lru_cache(maxsize=256)
def library_module(name: str) -> bool:
    """Whether ``name`` is a module the grader's Python would import from its standard library
    or an installed package (not the submission's own file, which is never on this path): the
    allow-list applies to those. A module no one here can import fails in the worker anyway."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = (spec.origin or "") if spec is not None else ""
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return any(part in path for path in [origin, *locations] for part in ("site-packages", "dist-packages"))
