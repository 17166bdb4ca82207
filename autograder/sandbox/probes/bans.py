"""What cannot run at all during a rule-checked call: replaced kernels (``KernelBan``), a
second thread (``THREAD_BAN``), autograd (``AUTOGRAD_TRIPWIRE``); the submission's frame."""

from __future__ import annotations

import ctypes  # the standing ban's library handle is kept alive with it (a worker has no other)
import fnmatch
import functools
import re
import sys
import types
from collections.abc import Callable
from typing import Any

import torch


def own_frame(own_files: str) -> list:
    """[file relative to the submission, line, function] of the innermost frame of the
    submission's files on the current Python stack, or ["", 0, ""]."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(own_files):
            return [name[len(own_files) :], frame.f_lineno, frame.f_code.co_name]
        frame = frame.f_back
    return ["", 0, ""]


_REGISTRATIONS: list[tuple[str, str]] | None = None
_NAMES: list[tuple[str, str]] | None = None
#: computes nothing (shapes only), and torch refuses a Python kernel there for composite ops
_SKIPPED_KEYS = frozenset({"Meta"})


def kernel_registrations() -> list[tuple[str, str]]:
    """Every (ATen operator with its overload, dispatch key) with a kernel registered for
    that key — backends, alias keys (``CompositeExplicitAutograd``: the kernel of every
    backend without one of its own), autograd, functorch, autocast. Read once from torch's
    registry; the fork server computes it before forking (``zygote._warm_up``)."""
    global _REGISTRATIONS, _NAMES
    if _REGISTRATIONS is None:
        found = []
        for key in torch._C.DispatchKey.__members__:
            if key in _SKIPPED_KEYS:
                continue
            try:
                names = torch._C._dispatch_get_registrations_for_dispatch_key(key)
            except (RuntimeError, ValueError):  # not a key one can register for
                continue
            found += [(name, key) for name in names if name.startswith("aten::")]
        _REGISTRATIONS = found
        _NAMES = [(name, _aten_base(name)) for name in dict.fromkeys(name for name, _ in found)]
    return _REGISTRATIONS


def _registered_names() -> list[tuple[str, str]]:
    """(name, ``_aten_base`` of it) for the distinct operator names of
    ``kernel_registrations``, in its order (read with it, so a worker's first ban matches
    its patterns against names already cut to their base: ~5 ms less per worker)."""
    kernel_registrations()
    return _NAMES or []


def _aten_base(qualified: str) -> str:
    """``aten::_softmax.out`` → ``_softmax``; an in-place ``add_`` → ``add``."""
    name = qualified.split("::", 1)[1].split(".", 1)[0]
    return name[:-1] if name.endswith("_") and not name.endswith("__") and len(name) > 1 else name


#: patterns → their (operator, key) registrations: a worker runs a rule's calls several times
_TARGETS: dict[tuple[str, ...], list[tuple[str, str]]] = {}


class KernelBan:
    """While active, the kernels of the ATen operators whose name matches one of
    ``patterns`` (``fnmatch`` on the name without namespace and overload: ``*softmax*``,
    ``_make_dual``) are *replaced* process-wide, on every dispatch key they have a kernel
    for: whoever calls such an operator, however (a Python name, ``torch.ops``,
    ``OpOverload.redispatch`` past ``RecordFunction``, a backward node, TorchScript, a custom
    operator's body), runs ``refuse``, which records the use and raises. Leaving restores
    torch's kernels (the registrations are undone; the dispatcher falls back to the earlier
    kernel of each key)."""

    def __init__(self, patterns: tuple[str, ...], on_use: Callable[[str], None]) -> None:
        self.patterns = patterns
        self.on_use = on_use
        self._lib = None

    def targets(self) -> list[tuple[str, str]]:
        cached = _TARGETS.get(self.patterns)
        if cached is not None:
            return cached
        # one regular expression for all patterns (fnmatch's own translation), tried once per
        # operator name, not once per (name, key) and pattern: ~10 000 registrations, ~2 500 names
        match = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in self.patterns)).match
        hits = {name for name, base in _registered_names() if match(base)}
        out = [(name, key) for name, key in kernel_registrations() if name in hits]
        _TARGETS[self.patterns] = out
        return out

    def _kernel(self, op: str) -> Callable[..., Any]:
        on_use = self.on_use

        def refuse(*args, **kwargs):
            on_use(op)
            raise RuntimeError(f"{op} is switched off during this call: the exercise's rule forbids it")

        return refuse

    def __enter__(self):
        self._lib, register = _aten_library()
        # none fail on torch 2.13 (tests/grader/test_kernel_replacement.py)
        self.failed = _replace(self.targets(), self._kernel, register)
        return self

    def __exit__(self, *exc):
        if self._lib is not None:
            self._lib.reset()  # its registrations go (torch.library.Library._destroy does the same)
            self._lib = None
        return False


def _replace(
    targets: list[tuple[str, str]], kernel_for: Callable[[str], Callable[..., Any]], register: Callable[[str, str, Any], Any]
) -> list[tuple[str, str]]:
    """Register ``kernel_for(op)`` for every (operator, key) of ``targets`` through
    ``register(name without namespace, key, kernel)``, one kernel per operator; the
    registrations torch refused (a key it takes no Python kernel for)."""
    import warnings

    kernels: dict[str, Callable[..., Any]] = {}
    failed = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": that is the point
        for name, key in targets:
            op = name.split(".", 1)[0]
            kernel = kernels.get(op) or kernels.setdefault(op, kernel_for(op))
            try:
                register(name.split("::", 1)[1], key, kernel)
            except RuntimeError:
                failed.append((name, key))
    return failed


#: torch's own entry for a library of kernels (``torch.library.Library`` calls it), taken when
#: this module is imported — before any exercise code — for the grader's bans; in a worker every
#: module's name for it is the guard below (``recorders.seal_switches``)
DISPATCH_LIBRARY = torch._C._dispatch_library


def _aten_library() -> tuple[Any, Callable[[str, str, Any], None]]:
    """A library of kernels for ``aten`` (the grader's, through the original entry), and how
    ``_replace`` registers one kernel in it (operator name without namespace, key, kernel)."""
    lib = DISPATCH_LIBRARY("IMPL", "aten", "", "", 0)

    def register(name: str, key: str, kernel: Any) -> None:
        lib.impl(name, key, kernel, False)  # type: ignore[call-arg]  # torch's stub lacks with_keyset

    return lib, register


def guarded_dispatch_library() -> Callable[..., Any]:
    """``torch._C._dispatch_library`` for exercise code: a library of its own namespace
    (``torch.library.Library("mylib", "DEF")``) as before; none in a namespace torch's
    operators live in (``aten``, ``prims``, …). A kernel of the exercise's for ``aten::clone`` ran
    whenever the grader's own glue copied an input between two recorded windows, and there
    built the Jacobian with autograd (blind red-team tester R-BR: custom_backward 20/20)."""
    taken = frozenset(name.split("::", 1)[0] for name in torch._C._dispatch_get_all_op_names())

    def dispatch_library(kind: Any, ns: Any, *args: Any, **kwargs: Any) -> Any:
        if type(ns) is not str or ns in taken:
            raise RuntimeError(
                f"kernels for torch's own operators ({ns}::…) cannot be registered by exercise code: "
                "write the computation as a function"
            )
        return DISPATCH_LIBRARY(kind, ns, *args, **kwargs)

    return dispatch_library


class _StandingBan:
    """Kernels replaced for the whole life of a worker (``install``, the worker's ``ban``
    request), before any submission code is imported: an exercise whose rule forbids some
    operators (row_softmax: torch's softmax; mha_reshape: SDPA) cannot run them in *any*
    call, watched or not, so code that behaves while the rule test watches and cheats
    elsewhere (or crashes only when watched) gains nothing. The replacement raises wherever
    the operator is reached (see ``KernelBan``) and tells the rule-checked call that is
    running, if any (``recorder``), which records a proven use. Nothing can undo it: the
    library handle that holds the registrations is kept alive with no Python reference to it
    (torch's ``_DispatchModule`` is not tracked by the garbage collector either), so
    ``reset()`` cannot be reached; registering another kernel on top only replaces ours with
    the caller's own code (the original kernel is out of reach: ``remove_kernel_handles``)."""

    def __init__(self) -> None:
        self.patterns: tuple[str, ...] = ()
        self.recorder: Any = None  # the DispatchRecorder of the rule-checked call running

    def covers(self, patterns: tuple[str, ...]) -> bool:
        """Whether every one of ``patterns`` is already replaced for good."""
        return set(patterns) <= set(self.patterns)

    def _kernel(self, op: str, shown: str | None = None) -> Callable[..., Any]:
        """What replaces ``op``: records a proven use and raises, naming it as ``shown``."""
        standing = self

        def refuse(*args, **kwargs):
            recorder = standing.recorder
            if recorder is not None:
                recorder._refused(op)
            raise RuntimeError(f"{shown or op} is switched off in this exercise: its rule forbids it (docs/EXERCISES.md)")

        return refuse

    def install(self, patterns: tuple[str, ...]) -> int:
        """Replace the kernels of every operator matching ``patterns`` (once per worker);
        the number of (operator, key) registrations replaced."""
        if self.patterns:
            raise RuntimeError("this worker's kernels are already replaced")
        targets = KernelBan(tuple(patterns), lambda op: None).targets()
        lib, register = _aten_library()
        failed = _replace(targets, self._kernel, register)
        # alive for the worker's life, and once this returns referenced by nothing any code could reach
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(lib))
        self.patterns = tuple(patterns)
        return len(targets) - len(failed) + self._replace_functions(tuple(patterns))

    def _replace_functions(self, patterns: tuple[str, ...]) -> int:
        """torch's *Python* functions of the rule, replaced in their modules as the kernels are:
        ``torch._refs.softmax`` is a softmax made of allowed kernels (amax, exp, sum, div), and
        ``F.multi_head_attention_forward`` runs only linear, bmm and _softmax with
        ``need_weights=True`` (blind red-team tester R-D reached both by name and kept every
        point), so no kernel ban sees them. Any name that reaches the module attribute now gets
        a function that records a proven use and raises. The modules are imported by
        ``import torch`` already; none is imported here."""
        replaced = 0
        for module_name in PYTHON_RULE_MODULES:
            module = sys.modules.get(module_name)
            for name, value in list(vars(module).items()) if module is not None else []:
                if callable(value) and not isinstance(value, type) and any(fnmatch.fnmatchcase(name, p) for p in patterns):
                    setattr(module, name, self._kernel(f"python::{module_name}.{name}", f"{module_name}.{name}"))
                    replaced += 1
        # classes of the rule (any case: ``MultiheadAttention``, ``SoftmaxTransform``): their
        # ``__init__`` and every other function of their own refuse (``forward``, ``_call``…),
        # wherever the class object is found — a quantizable MultiheadAttention taken from a
        # dict of torch's classes computed attention from linear, bmm and softmax (blind
        # red-team tester R-E: 6/6), and one made with ``object.__new__``, no ``__init__``
        # run, computed it too (tester R-F: 15/15)
        replaced += self._replace_decompositions(patterns) + self._guard_custom_ops(patterns)
        lowered = [p.lower() for p in patterns]
        for module_name in PYTHON_RULE_CLASS_MODULES:
            module = sys.modules.get(module_name)
            for name, value in list(vars(module).items()) if module is not None else []:
                if isinstance(value, type) and any(fnmatch.fnmatchcase(name.lower(), p) for p in lowered):
                    refuse = self._kernel(f"python::{module_name}.{name}", f"{module_name}.{name}")
                    own = [k for k, v in vars(value).items() if isinstance(v, types.FunctionType)]
                    for attribute in {"__init__", *own}:
                        setattr(value, attribute, refuse)
                    replaced += 1
        return replaced

    def _guard_custom_ops(self, patterns: tuple[str, ...]) -> int:
        """torch's own custom operators of the rule (``torch.library.custom_op``: a cross-entropy,
        an attention) run a Python body of allowed kernels, which ``OPDEFS[name]._init_fn`` hands
        out to be called directly, past every kernel ban (blind red-team tester R-CU: the chunked
        linear cross-entropy gave softmax as its gradient, row_softmax 15/15; ONNX's Attention-23
        reference, mha_reshape 15/15). Their bodies refuse, now and for every such operator
        registered later (``OPDEFS`` is replaced by a table that guards what it is given); a
        dispatched call of one is recorded under its own namespace (``dispatch.denies_parts``)."""
        custom = sys.modules.get("torch._library.custom_ops")
        opdefs = getattr(custom, "OPDEFS", None)
        if opdefs is None:
            return 0
        lowered = tuple(p.lower() for p in patterns)

        def guard(opdef: Any) -> int:
            name = str(getattr(opdef, "_qualname", "")).split("::")[-1].split(".")[0].lower()
            module = str(getattr(getattr(opdef, "_init_fn", None), "__module__", "") or "")
            # torch's own: an exercise's custom operator of its own, by any name, is its own code
            if not (module == "torch" or module.startswith("torch.")) or not any(fnmatch.fnmatchcase(name, p) for p in lowered):
                return 0
            opdef._init_fn = self._kernel(f"python::{opdef._qualname}", opdef._qualname)
            return 1

        class GuardedOpdefs(type(opdefs)):  # type: ignore[misc]
            def __setitem__(self, key: Any, value: Any) -> None:
                guard(value)
                super().__setitem__(key, value)

        replaced = sum(guard(v) for v in list(opdefs.values()))
        guarded = GuardedOpdefs()
        for key, value in list(opdefs.items()):
            guarded[key] = value  # guarded above: a body that is the ban's own is left as it is
        custom.OPDEFS = guarded
        return replaced

    def _replace_decompositions(self, patterns: tuple[str, ...]) -> int:
        """The entries of torch's decomposition tables (``torch._decomp``: operator → a Python
        function computing it from other operators) for an operator of the rule, or holding a
        function of the rule's name: the tables keep the functions themselves, not their module's
        names, so ``_softmax`` stayed reachable there after its module's name was replaced
        (blind red-team tester R-J reached the table through raw memory and kept 15/15)."""
        decomp = sys.modules.get("torch._decomp")
        tables = [getattr(decomp, "decomposition_table", None)]
        tables += list(getattr(decomp, "global_decomposition_table", {}).values())
        replaced = 0
        for table in {id(t): t for t in tables if isinstance(t, dict)}.values():
            for op, fn in list(table.items()):
                qualified = str(op.name()) if callable(getattr(op, "name", None)) else ""
                op_name = _aten_base(qualified) if "::" in qualified else ""
                fn_name = getattr(fn, "__name__", "")
                if any(fnmatch.fnmatchcase(n, p) for n in (op_name, fn_name) if n for p in patterns):
                    shown = op_name or fn_name
                    table[op] = self._kernel(f"python::torch._decomp.{fn_name or op_name}", f"torch._decomp's {shown}")
                    replaced += 1
        return replaced


#: modules whose Python functions a standing ban replaces by name (``_replace_functions``):
#: the functional API and torch's Python reference implementations and decompositions
PYTHON_RULE_MODULES = (
    "torch.nn.functional",
    "torch._refs",
    "torch._refs.nn.functional",
    "torch._refs.special",
    "torch._decomp.decompositions",
)
#: modules whose classes a standing ban refuses to build when their name matches (any case)
PYTHON_RULE_CLASS_MODULES = (
    "torch.nn.modules.activation",
    "torch.nn.modules.adaptive",
    "torch.nn.modules.transformer",
    "torch.ao.nn.quantizable.modules.activation",
    "torch.distributions.transforms",
    "torch.distributions.categorical",
    "torch.distributions.one_hot_categorical",
    "torch.distributions.relaxed_categorical",
    "torch.distributions.multinomial",
)


STANDING_BAN = _StandingBan()


class _ThreadBan:
    """Python's way to start a thread, removed from the worker before any submission code
    is imported (``install``): ``_thread.start_new_thread`` and every alias of it are
    replaced by ``refuse``, which starts nothing, notes the attempt and raises the error
    CPython raises when the system refuses a thread. The seccomp filter
    (``seccomp.thread_program``) refuses threads to C code too; this layer keeps the
    worker single-threaded where seccomp is unavailable, and makes an attempt a fact even
    when the code catches the error: during a rule check (``gate``) it is a violation."""

    def __init__(self) -> None:
        self.own_files = ""
        self.gate: Any = None  # a recorders.DispatchRecorder, or None (it imports this module)
        self.installed = False

    def refuse(self, *args, **kwargs):
        file, line, function = own_frame(self.own_files)
        where = f" at {file}:{line} ({function})" if file else ""
        if self.gate is not None:
            self.gate.tampered.add(
                f"tried to start a thread{where}: exercise code runs on one thread, and trying to run part of it "
                "elsewhere during the rule check counts as breaking the rule"
            )
        raise RuntimeError("can't start new thread")

    def install(self, own_files: str) -> None:
        """Once per worker, before the submission is imported. torch's own thread counts
        are fixed at one (the fork server set them); a request for more is accepted and
        ignored, as honest code that asks for speed must not fail."""
        import _thread
        import threading

        self.own_files = own_files
        if self.installed:
            return
        originals = {id(getattr(_thread, n)) for n in dir(_thread) if n.startswith("start_")}
        for module in (_thread, threading):
            for name, value in list(vars(module).items()):
                if id(value) in originals:
                    setattr(module, name, _refuse_thread)
        for owner in (torch, torch._C):
            for name in ("set_num_threads", "set_num_interop_threads"):
                if hasattr(owner, name):
                    setattr(owner, name, _one_thread)
        self.installed = True


def _one_thread(n: int) -> None:
    """torch.set_num_threads / set_num_interop_threads in the worker: checked like torch's,
    then ignored (the worker runs on one thread)."""
    if type(n) is not int and not hasattr(n, "__index__"):
        raise TypeError(f"set_num_threads expected an int, got {type(n).__name__}")
    if int(n) < 1:
        raise RuntimeError("Number of threads must be positive")


THREAD_BAN = _ThreadBan()


def _refuse_thread(*args: Any, **kwargs: Any) -> None:
    """What ``_thread.start_new_thread`` and its aliases are in a worker: a plain function, not
    the ban's bound method, which handed the ban out (``copy.deepcopy(method, memo)`` leaves
    the method's object in the memo: blind red-team tester R-AD reached the live recording
    through its ``gate``); a function is copied as itself."""
    THREAD_BAN.refuse(*args, **kwargs)


def remove_kernel_handles() -> None:
    """Before any submission code: torch's one binding that hands out a kernel as a callable
    (``torch.library.get_kernel`` calls it) is replaced. A handle taken before a rule check
    would call the C++ kernel directly, past KernelBan's replacement; no other reference to
    the binding exists (only torch._C's dict holds it), so none can be recovered."""
    name = "_dispatch_get_computed_kernel_for_dispatch_key"
    if hasattr(torch._C, name):
        setattr(torch._C, name, _no_kernel_handles)


def remove_op_loaders() -> None:
    """Before any submission code: ``torch.ops.import_module`` and ``load_library`` refuse. They
    import any of torch's modules (or a shared library) by a string they are given — one whose
    custom operators compute a rule's forbidden function from allowed kernels (blind red-team
    tester R-CU); no exercise needs them, and torch calls neither on its own in a worker."""
    ops = type(torch.ops)
    for name in ("import_module", "load_library"):
        if hasattr(ops, name):
            setattr(ops, name, _no_op_loading)


def _no_op_loading(*args, **kwargs):
    raise RuntimeError("the grader's worker loads no modules or libraries by name for exercise code: import what you need")


def _no_kernel_handles(*args, **kwargs):
    raise RuntimeError("the grader's worker hands out no kernel functions: call the operator itself")


#: torch's switches of its profiler and of RecordFunction, which the recording runs on: in a
#: worker every module's name for them is replaced before any exercise code runs
#: (``recorders.seal_switches``) and the recording keeps the originals. Called through a C
#: function (``map``, ``functools.partial``), a switch raises no ``c_call`` event for the
#: profile hook: blind red-team tester R-V switched RecordFunction off and on around autograd.
PROFILER_SWITCHES = (
    "_enable_record_function",
    "_disable_profiler_legacy",
    "_enable_profiler_legacy",
    "_disable_profiler",
    "_enable_profiler",
    "_prepare_profiler",
    # pauses the recording's RecordFunction callbacks while the profiler stays on (blind
    # red-team tester R-BK: the end marker then went missing, read as tampering; sealed all the same)
    "_toggle_collection_dynamic",
)
#: torch's frame-evaluation hooks (``torch._C._dynamo.eval_frame``, re-exported by torch._dynamo):
#: ``set_eval_frame``'s callback is handed each frame Python evaluates next — the worker's own
#: too, with ``f_globals``, ``f_locals`` and ``f_back`` — and the others hand out frames or a
#: frame's value stack the same way. Exercise code gets no frame (audit.py): sealed as the
#: profiler's switches are, in every module that holds them (recorders.seal_switches)
FRAME_HOOKS = (
    "set_eval_frame",
    "set_guard_error_hook",
    "set_guard_complete_hook",
    "set_bytecode_debugger_callback",
    "set_code_exec_strategy",
    "_get_frame_value_stack_with_depth",
    "get_eval_frame_callback",  # hands back the callback set, with what it holds
    "reset_code",
    "register_breakpoint_code",
)
#: C functions that switch the recording of operators off (called from any frame while it runs)
_DISPATCH_SWITCHES = {
    *PROFILER_SWITCHES,
    "setprofile",
    "settrace",
    "setprofile_all_threads",
    "settrace_all_threads",
    "_set_profiler_node_id",
}


class _AutogradTripwire:
    """Wraps autograd's entry points once, before any submission module is imported, so
    that even ``from torch.autograd import grad`` at import time gets the wrapped name.
    Pass-through unless armed; while armed, every use is recorded."""

    def __init__(self) -> None:
        self.uses: set[str] | None = None
        self.installed = False
        #: a DispatchRecorder with ``autograd_off``: grad mode cannot be switched on while set
        self.locked: Any = None  # a recorders.DispatchRecorder, or None

    def arm(self, uses: set[str]) -> None:
        self.uses = uses

    def disarm(self) -> None:
        self.uses = None

    def _wrap(self, owner: Any, attr: str, label: str) -> None:
        original = getattr(owner, attr, None)
        if original is None or getattr(original, "_autograder_tripwire", False):
            return
        tripwire = self

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            switch = attr in _GRAD_SWITCHES
            enables = switch and _switches_grad_on(attr, args, kwargs)
            if tripwire.uses is not None:
                if not switch or enables:
                    tripwire.uses.add(label)
            if tripwire.locked is not None and enables:
                tripwire.locked.tampered.add(
                    "switched grad mode on (torch.enable_grad / torch.set_grad_enabled) where autograd is off: "
                    "no autograd graph can be built there"
                )
                raise RuntimeError("grad mode cannot be switched on here: this exercise computes gradients by hand")
            return original(*args, **kwargs)

        wrapper._autograder_tripwire = True  # type: ignore[attr-defined]
        del wrapper.__wrapped__  # functools.wraps would hand out the unwatched original
        setattr(owner, attr, wrapper)

    def _watch_engine(self) -> None:
        """Every backward pass run from Python goes through ``Variable._execution_engine``
        (``grad``, ``backward``, and their unwrapped originals alike): watch it there."""
        from torch.autograd.variable import Variable

        engine = Variable.__dict__.get("_execution_engine")
        if engine is None or getattr(type(engine), "_autograder_watched", False):
            return
        Variable._execution_engine = _watched_engine(engine, self)

    def install(self) -> None:
        if self.installed:
            return
        import torch.autograd.forward_ad as fwad
        import torch.autograd.functional as agf
        import torch.autograd.graph as agg
        import torch.func as tfunc

        self._wrap(torch.autograd, "grad", "torch.autograd.grad")
        self._wrap(torch.autograd, "backward", "torch.autograd.backward")
        self._wrap(torch.Tensor, "backward", "Tensor.backward")
        self._wrap(agg, "_engine_run_backward", "autograd engine")
        self._wrap(torch._C, "_set_grad_enabled", "enable_grad")
        # inference_mode(False) inside no_grad switches grad mode on too (blind red-team tester R-AE)
        self._wrap(torch._C, "_InferenceMode", "inference_mode(False)")
        for name in ("vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"):
            self._wrap(agf, name, f"torch.autograd.functional.{name}")
        # forward-mode AD works under no_grad and runs no engine: a Jacobian built in a gap
        # between two recorded windows went unseen (blind red-team tester R-AP); dual_level's
        # __enter__ calls the module's enter_dual_level, so the wrapped one
        for name in ("enter_dual_level", "make_dual", "unpack_dual"):
            self._wrap(fwad, name, f"torch.autograd.forward_ad.{name}")
        for name in ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"):
            self._wrap(tfunc, name, f"torch.func.{name}")
        self._watch_engine()
        self.installed = True


#: the switches that can turn grad mode on: judged by their arguments (``_switches_grad_on``)
_GRAD_SWITCHES = ("_set_grad_enabled", "_InferenceMode")


def _switches_grad_on(attr: str, args: tuple, kwargs: dict) -> bool:
    """``_set_grad_enabled(True)``; ``_InferenceMode(False)`` where grad mode is off (it turns
    it on: ``with torch.no_grad(): with torch.inference_mode(False): …``)."""
    if attr == "_set_grad_enabled":
        return bool(args and args[0])
    mode = args[0] if args else kwargs.get("enabled", kwargs.get("mode", True))
    return not mode and not torch.is_grad_enabled()


def _watched_engine(engine: Any, tripwire: _AutogradTripwire) -> Any:
    """Stands in for autograd's engine object: records a backward run while armed. The engine
    and the tripwire live in the closure, not in attributes: ``Variable._execution_engine`` is
    in torch's namespace, and an attribute of it handed the tripwire (and, through its lock,
    the recording) to blind red-team tester R-AE."""

    class WatchedEngine:
        __slots__ = ()
        _autograder_watched = True

        def run_backward(self, *args, **kwargs):
            if tripwire.uses is not None:
                tripwire.uses.add("autograd engine (a backward pass)")
            return engine.run_backward(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(engine, name)

    return WatchedEngine()


AUTOGRAD_TRIPWIRE = _AutogradTripwire()
