"""What the code inside a call used: the torch functions (``OpRecorder``) and the operators
the dispatcher ran (``DispatchRecorder``), with the submission's line."""

from __future__ import annotations

import functools
import gc
import os
import sys
import types
from typing import Any

import torch
from torch._C._profiler import _ExperimentalConfig, _RecordFunctionFast
from torch.autograd import ProfilerConfig, ProfilerState, _profiler_enabled
from torch.overrides import TorchFunctionMode

from .bans import (
    _DISPATCH_SWITCHES,
    AUTOGRAD_TRIPWIRE,
    DISPATCH_LIBRARY,
    FRAME_HOOKS,
    PROFILER_SWITCHES,
    STANDING_BAN,
    THREAD_BAN,
    KernelBan,
    guarded_dispatch_library,
    own_frame,
)
from .lines import LineMarks

#: bound before any exercise code runs: a recorder is made, switched on and off between the
#: recorded windows, where a module-level lookup would run what the exercise put in its place
#: (blind red-team tester R-BU replaced ``os.urandom`` and built a Jacobian with TorchScript
#: there, before backward's window opened)
_getprofile, _setprofile, _urandom = sys.getprofile, sys.setprofile, os.urandom
_gettrace, _settrace = sys.gettrace, sys.settrace


# --------------------------------------------------------------------------- recorders
class OpRecorder(TorchFunctionMode):
    """Records the name of every torch function the code inside calls, in any spelling:
    ``torch.softmax``, ``F.softmax``, ``Tensor.softmax``, ``torch.special.softmax``,
    ``nn.Softmax``, ``torch._C._VariableFunctions.softmax``, ``torch.ops.aten._softmax``
    all reach ``__torch_function__``. (A TorchDispatchMode would also see C++-internal
    calls, but entering one imports ~800 modules, ~1 s, in every worker.)

    The mode can be switched off from inside (``torch._C.DisableTorchFunction()``, popping
    the mode stack), so a second recorder that torch cannot switch off runs beside it: a
    profile hook that sees every call of a C function made from Python code — the banned
    function itself, however it was looked up — and notes when torch-function handling is
    off or the hook itself was replaced. Those notes (``tampered``) fail the rule check."""

    def __init__(self, names: set[str], tampered: set[str] | None = None, own_files: str = "") -> None:
        super().__init__()
        self.names = names
        self.tampered = tampered if tampered is not None else set()
        self.own_files = own_files  # path prefix of the submission's files: only their calls are judged
        self._previous_profile = None
        self._leaving = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.add(getattr(func, "__name__", None) or type(func).__name__)
        return func(*args, **(kwargs or {}))

    def _profile(self, frame, event, arg):
        # torch's own Python code pops and pushes modes as part of normal dispatch: only
        # calls made by the submission's own code are recorded and judged here
        if event != "c_call" or self._leaving or not frame.f_code.co_filename.startswith(self.own_files):
            return
        name = getattr(arg, "__name__", None)
        if type(name) is str:
            self.names.add(name)
            if name in _PROFILE_SWITCHES:
                self.tampered.add(f"called {name}(), which switches off the grader's recording of calls")
        if _all_disabled():
            self.tampered.add(
                "switched off torch's function handling (torch._C.DisableTorchFunction), which hides calls from the grader"
            )

    def __enter__(self):
        if _all_disabled():
            self.tampered.add(
                "torch's function handling was already switched off when the call began (torch._C.DisableTorchFunction)"
            )
        mode = super().__enter__()
        self._leaving = False
        self._previous_profile = _getprofile()
        self._hook = _hook(self._profile)
        _setprofile(self._hook)
        return mode

    def __exit__(self, *exc):
        self._leaving = True
        if _getprofile() is not self._hook:
            self.tampered.add("replaced the grader's profile hook (sys.setprofile)")
        _setprofile(self._previous_profile)
        if _all_disabled():
            self.tampered.add("left torch's function handling switched off (torch._C.DisableTorchFunction)")
        if not _mode_on_stack(self):
            self.tampered.add("removed the grader's recorder from torch's mode stack")
            return False
        return super().__exit__(*exc)


_PROFILE_SWITCHES = {
    "setprofile",
    "settrace",
    "setprofile_all_threads",
    "settrace_all_threads",
    "_pop_torch_function_stack",
    "_set_torch_function_state",
    "_set_skip_next_torch_function",
    "_skip_one_hop_torch_function",
    "_push_on_torch_function_stack",
}


def _hook(method: Any) -> Any:
    """The profile function a recorder installs: a plain function calling ``method``, not the
    bound method itself, which ``sys.getprofile()`` would hand out — and with it the recorder
    (``copy.deepcopy`` of a bound method copies its object: blind red-team tester R-AE); a
    function is copied as itself."""

    def profile(frame: Any, event: str, arg: Any) -> Any:
        return method(frame, event, arg)

    return profile


def _all_disabled() -> bool:
    check = getattr(torch._C, "_is_torch_function_all_disabled", None)
    return bool(check()) if check is not None else not torch._C._is_torch_function_enabled()


def _mode_on_stack(mode: TorchFunctionMode) -> bool:
    try:
        length = torch._C._len_torch_function_stack()
        return any(torch._C._get_function_stack_at(i) is mode for i in range(length))
    except Exception:  # an older torch without these: assume intact
        return True


#: distinct (phase, operator) entries a call may record: torch registers ~2 000 ATen operators,
#: and a call that needs more than this is filling the record to push what follows out of it
MAX_RECORDED = 2000


_ORIGINAL: dict[str, Any] = {}  # the switches' originals, once seal_switches replaced them


def _switch(name: str) -> Any:
    """torch's own switch ``name`` (the original where the worker sealed them)."""
    return _ORIGINAL.get(name) or getattr(torch._C._autograd, name)


#: (number of modules, the last one's name) at the last ``seal_switches``: the fork server
#: seals before it forks, and a worker whose modules are still those has nothing to redo
_SEALED_AT: tuple[int, str | None] | None = None


def _modules_mark() -> tuple[int, str | None]:
    return len(sys.modules), next(reversed(sys.modules), None)  # an import appends its name


def seal_switches() -> int:
    """Replace every module-level name that holds one of torch's switches or frame hooks with a
    refusal (in the fork server before it forks, and in a worker before any exercise code):
    the number of names replaced. A switch is known by what it is — a C function of
    ``torch._C`` whose own ``__name__`` is a switch's — never by the name a module gives it:
    torch._dynamo keeps ``set_eval_frame`` as ``_maybe_set_eval_frame`` too, which a seal by
    name left to exercise code (blind red-team tester R-CA: the worker's frames and reply key
    from qkv.py, and custom_backward's gradients by autograd in the reply's glue). A pass over
    every name of ~1 600 modules costs ~5 ms; a worker whose modules are the ones the server
    sealed skips it."""
    global _SEALED_AT
    if _modules_mark() == _SEALED_AT:
        return 0
    replaced = 0
    guard = None
    for module in list(sys.modules.values()):
        if not isinstance(module, types.ModuleType):
            continue
        namespace = vars(module)
        for name, value in list(namespace.items()):
            if type(value) is not types.BuiltinFunctionType:
                continue
            own = getattr(value, "__name__", "")
            if not str(getattr(value, "__module__", "") or "").startswith("torch._C"):
                continue
            if own in PROFILER_SWITCHES:
                _ORIGINAL.setdefault(own, value)
                namespace[name] = _refusing(own)
                replaced += 1
            elif own in FRAME_HOOKS:
                namespace[name] = _refusing_frames(own, value)
                replaced += 1
        if namespace.get("_dispatch_library") is DISPATCH_LIBRARY:  # kernels for torch's operators: bans.py
            namespace["_dispatch_library"] = guard = guard or guarded_dispatch_library()
            replaced += 1
    _SEALED_AT = _modules_mark()
    return replaced


def _refusing_frames(name: str, original: Any = None) -> Any:
    """A refusal of the frame hook ``name``. ``set_eval_frame(None)`` alone is let through where
    no callback was set: it installs nothing and hands out nothing, and every function dynamo
    wraps in ``disable`` calls it before and after (once ``torch._dynamo`` is loaded —
    another file's ``import torch.nn.attention.bias`` preloads it — ``torch.manual_seed`` is
    one: blind red-team tester R-CX's correct AttentionHead raised here)."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        if name == "set_eval_frame" and original is not None and len(args) == 1 and args[0] is None and not kwargs:
            prior = original(None)
            if prior is None:
                return None
            original(prior)  # a callback was set (never, in a worker): left as it was, and refused
        raise RuntimeError(f"{name} is not available to exercise code: it hands out frames (see EXERCISES.md, 'No frames')")

    return refuse


def _refusing(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> None:
        recorder = STANDING_BAN.recorder
        if recorder is not None:
            recorder.tampered.add(f"called {name}(), which switches off the grader's recording of operators")
        raise RuntimeError(f"{name} is not available to exercise code: the grader's recording of operators runs on it")

    return refuse


#: ``RecordScope::TORCHSCRIPT_FUNCTION``: the event TorchScript's interpreter opens for a
#: scripted function (its name: ``_helper``, ``fallback_function``, ``<forward op>``) marks a
#: scope, not an operator; every operator that runs inside it is recorded on its own (blind
#: fairness tester R-AI: a ``@torch.jit.script`` helper of a hand-written backward read as
#: autograd's machinery). The scope of a differentiable graph's backward stays recorded:
#: it runs only under autograd's engine, whose own events the rule refuses as well.
_TORCHSCRIPT_FUNCTION = 2
_TORCHSCRIPT_KEPT = frozenset({"<backward op>"})
#: ``RecordScope::BACKWARD_FUNCTION``: a node of the graph run (``MulBackward0``) — recorded
#: as "MulBackward0 (autograd node)", never as the bare name: ``Function.apply`` of a file's own
#: class records the class's name, and a file's ``class MulBackward0(Function)`` made torch's
#: node of that name read as its own apply (blind red-team tester R-AM: 8.5/8.5 with autograd)
_BACKWARD_FUNCTION = 1


_CLASS_DICT = type.__dict__["__dict__"]
_CLASS_MRO = type.__dict__["__mro__"]


def _defined_in(cls: type, name: str, files: str) -> bool:
    """Whether the method ``name`` that ``cls`` has comes from a file under ``files``: read
    from the classes' own dictionaries, so no metaclass code of the exercise's runs."""
    for base in _CLASS_MRO.__get__(cls):
        found = _CLASS_DICT.__get__(base).get(name)
        if found is not None:
            code = getattr(getattr(found, "__func__", found), "__code__", None)
            return type(code) is types.CodeType and code.co_filename.startswith(files)
    return False


class _CollectorHeld:
    """The cyclic garbage collector stays off from the end of one recorded window to the start
    of the next, so no finalizer of the exercise's runs unrecorded. A collection runs each
    cyclic object's ``weakref.finalize`` or ``__del__``, and when it runs is the code's to
    steer: blind red-team tester R-BN kept the count just under the threshold, so that the
    recorder's own bookkeeping set one off after the profiler had stopped, and there ran
    TorchScript's ``backward`` (no Python tripwire sees it) into placeholders its backward had
    returned — custom_backward 18.5/20 with autograd. Garbage made between windows waits for
    the next one, where collecting it is recorded like any other code. (A worker's own
    collector state outside rule-checked calls is untouched: only a window that held it
    gives it back.)"""

    held = False

    @classmethod
    def hold(cls) -> None:
        if gc.isenabled():
            gc.disable()
            cls.held = True

    @classmethod
    def release(cls) -> None:
        if cls.held:
            cls.held = False
            gc.enable()


class DispatchRecorder:
    """Records every operator the dispatcher runs while it is active: the dispatcher's own
    profiling (``RecordFunction``, through torch's CPU profiler without Kineto) sees each op
    at its entry — the composite ones (``aten::softmax``) and what they decompose to
    (``aten::_softmax``), autograd's own operators (``aten::_make_dual``,
    ``aten::_unpack_dual``), the autograd engine and every backward node it or a direct
    ``grad_fn(...)`` call runs (``autograd::engine::evaluate_function: MmBackward0``,
    ``MmBackward0``), custom operators (``mylib::op``) and the ops inside them. Whatever
    Python spelling reached an operator, the operator's name is what is recorded, with the
    innermost frame of the submission's own files on the Python stack at that moment (found
    by ``LineMarks``' markers, not by torch's stack capture).

    (A TorchDispatchMode sees ops only *below* autograd: ``torch.func.grad``'s backward
    reaches it as plain ``mm``/``t``/``sum``, indistinguishable from a hand-written one, and
    forward AD's ``_make_dual`` not at all.)

    ``entries`` maps (phase, operator) → [count, file, line, function]; nothing is judged
    here: the trusted side decides from these names (autograder/testing/dispatch.py). The
    submission can try to switch the profiler or ``RecordFunction`` off: a start and an end
    marker must both be in the recording, the profile hook notes any call of the switches
    from any frame, and a profiler that is already on, or off at the end, is noted — each a
    rule violation (``tampered``)."""

    #: the markers' names end in a secret drawn per recording (``__init__``): a profiler the
    #: exercise switched off and on again, with a start marker of its own, shows no true start
    #: (blind red-team tester R-U paused it through ``functools.partial``, which the profile
    #: hook's ``c_call`` events never see, and forged ``autograder::recording-start``)
    START = "autograder::recording-start"
    END = "autograder::recording-end"

    def __init__(
        self,
        entries: dict,
        tampered: set[str],
        own_files: str,
        phase: str = "call",
        replace: tuple[str, ...] = (),
        autograd_off: bool = False,
    ) -> None:
        self.entries = entries
        self.tampered = tampered
        self.own_files = own_files
        self.phase = phase
        self.replace = tuple(replace)
        self.autograd_off = autograd_off
        self._previous_profile = None
        self._on = False
        self._ban: KernelBan | None = None
        self._grad_was: bool | None = None
        self._modes = (0, 0)  # the lengths of torch's dispatch- and function-mode stacks at the start
        self._lines: LineMarks | None = None  # where the operators came from: see LineMarks
        self._previous_trace = None
        secret = _urandom(8).hex()
        self.START, self.END = f"{DispatchRecorder.START}-{secret}", f"{DispatchRecorder.END}-{secret}"

    def _profile(self, frame, event, arg):
        if event == "c_call" and self._on:
            name = getattr(arg, "__name__", None)
            if type(name) is str and name in _DISPATCH_SWITCHES:
                self.tampered.add(f"called {name}(), which switches off the grader's recording of operators")
        previous = self._previous_profile
        if previous is not None:
            previous(frame, event, arg)

    def __enter__(self):
        self._modes = (torch._C._len_torch_dispatch_stack(), torch._C._len_torch_function_stack())
        THREAD_BAN.gate = self  # a thread attempted from here on is a fact of this call
        STANDING_BAN.recorder = self  # a kernel replaced for good, reached from here on: a fact of this call
        if self.replace and not STANDING_BAN.covers(self.replace):
            self._ban = KernelBan(self.replace, self._refused)
            self._ban.__enter__()
        if self.autograd_off:
            self._grad_was = torch.is_grad_enabled()
            if self._grad_was:
                torch._C._set_grad_enabled(False)
            AUTOGRAD_TRIPWIRE.locked = self
        if _profiler_enabled():
            self.tampered.add("left torch's profiler switched on, which the grader's recording of operators needs")
            return self
        # CPU state (no Kineto), without Python stacks: LineMarks' markers place the operators
        config = ProfilerConfig(ProfilerState.CPU, False, False, False, False, False, _ExperimentalConfig())
        _switch("_enable_profiler_legacy")(config)
        self._lines = LineMarks(self.own_files)
        self._previous_trace = _gettrace()
        _settrace(self._lines.tracer())  # before the profile hook, which notes any call of settrace
        self._previous_profile = _getprofile()
        self._hook = _hook(self._profile)
        _setprofile(self._hook)
        self._on = True
        with _RecordFunctionFast(self.START):
            pass
        _CollectorHeld.release()  # recorded from here: a finalizer a collection runs is seen
        return self

    def __exit__(self, *exc):
        try:
            self._drop_modes_left_on()  # still recorded: what letting them go runs is seen
            return self._stop()
        finally:
            THREAD_BAN.gate = None
            STANDING_BAN.recorder = None
            if self.autograd_off:
                AUTOGRAD_TRIPWIRE.locked = None
                if torch.is_grad_enabled():  # switched on where no tripwire sees it: TorchScript's
                    # ``torch.set_grad_enabled(True)`` is an interpreter instruction (blind red-team tester R-AM)
                    self.tampered.add("switched autograd's grad mode on, which this rule keeps off during the call")
                if self._grad_was:  # as it was, without counting as the code's use of autograd
                    uses, AUTOGRAD_TRIPWIRE.uses = AUTOGRAD_TRIPWIRE.uses, None
                    torch._C._set_grad_enabled(True)
                    AUTOGRAD_TRIPWIRE.uses = uses
            if self._ban is not None:
                self._ban.__exit__()
                self._ban = None

    def _drop_modes_left_on(self) -> None:
        """A ``__torch_dispatch__`` mode the window left on, or a ``__torch_function__`` mode of
        the exercise's own files, is taken off: left on, it ran the exercise's code on every
        operator the grader's glue ran between two windows (the route blind red-team tester
        R-BR took with a kernel of its own). torch's own modes (``set_default_device``) stay."""
        while torch._C._len_torch_dispatch_stack() > self._modes[0]:
            torch._C._pop_torch_dispatch_stack(None)
        kept = []
        while torch._C._len_torch_function_stack() > self._modes[1]:
            mode = torch._C._pop_torch_function_stack()
            if not _defined_in(type(mode), "__torch_function__", self.own_files):
                kept.append(mode)
        for mode in reversed(kept):
            torch._C._push_on_torch_function_stack(mode)

    def _refused(self, op: str) -> None:
        """A replaced kernel was called (by any path: a Python name, ``redispatch``, a
        backward node, TorchScript): a proven use, recorded even if the code catches the error."""
        key = (self.phase, op[:200])
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = [0, "", 0, ""]
        entry[0] += 1
        if not entry[1]:
            entry[1:] = own_frame(self.own_files)

    def _stop(self):
        if not self._on:
            return False
        _CollectorHeld.hold()  # before the recording ends: see _CollectorHeld
        self._on = False
        _settrace(self._previous_trace)  # a call of settrace inside is a fact already (_profile)
        with _RecordFunctionFast(self.END):
            pass
        if _getprofile() is not self._hook:
            self.tampered.add("replaced the grader's profile hook (sys.setprofile)")
        _setprofile(self._previous_profile)
        if not _profiler_enabled():
            self.tampered.add("switched off torch's profiler, which the grader's recording of operators needs")
            return False
        try:
            threads = _switch("_disable_profiler_legacy")()
        except Exception:  # whatever the state, the recording is lost
            self.tampered.add("broke torch's profiler, which the grader's recording of operators needs")
            return False
        DispatchRecorder._collect(self, threads)  # the class's: an attribute set on the object is no collector (R-AE)
        return False

    def _collect(self, threads) -> None:
        names = []
        lines = self._lines
        for events in threads:
            place = ["", 0, ""]  # the location of the last marker of this thread's (see LineMarks)
            for event in events:
                if event.kind() != "push":
                    continue
                name = event.name()
                names.append(name)
                if name in (self.START, self.END) or name.startswith("autograder::"):
                    marked = lines.where(name) if lines is not None else None
                    if marked is not None:
                        place = marked
                    continue
                scope = event.scope()
                if scope == _TORCHSCRIPT_FUNCTION and name not in _TORCHSCRIPT_KEPT:
                    continue  # a scripted function's scope: no operator, what runs in it is recorded
                if scope == _BACKWARD_FUNCTION:  # a node's name is a class name a file can take too
                    name = f"{name} (autograd node)"
                key = (self.phase, name[:200])
                entry = self.entries.get(key)
                if entry is None:
                    if len(self.entries) >= MAX_RECORDED:
                        # what runs after would go unrecorded: blind red-team tester R-E opened 2 100
                        # record_function labels first, then ran autograd unseen (8.5/8.5)
                        self.tampered.add(f"ran more than {MAX_RECORDED} different operators or labels in one call")
                        continue
                    entry = self.entries[key] = [0, "", 0, ""]
                entry[0] += 1
                if not entry[1]:
                    entry[1:] = place
        if self.START not in names or self.END not in names:
            self.tampered.add("switched off torch's recording of operators (RecordFunction) during the call")


class CallWatch:
    """Which of some of the submission's functions ran inside, and inside which of them:
    the facts behind a structure check ("backward calls attention_backward, which calls
    softmax_backward") however the code reached its helpers — a dict of functions, a default
    argument, a ``partial``, a name bound at run time — where a reading of the source proves
    nothing (blind tester R-AV's correct backward called its helper through
    ``_GRADS["attention"]`` and lost a hidden test's part).

    ``functions``: {name: what the module's namespace holds}; each is watched by the code
    object that runs when it is called (a function's code is what runs, whatever name reached
    it): a plain function's own, a bound method's or a ``partial``'s function's, an instance's
    class's ``__call__`` (blind fairness tester R-CV: helpers kept as methods of a module-level
    object, or as callable objects, lost a hidden test's structure part). A code that two of
    the names share (one class's ``__call__`` behind both) says neither and is not watched.
    A profile hook, chained to the one before it, so a ``DispatchRecorder`` entered inside
    still sees every event and still notices its own hook replaced."""

    def __init__(self, functions: dict[str, Any]) -> None:
        codes: dict[int, tuple[str, types.CodeType]] = {}
        shared: set[int] = set()
        for name, f in functions.items():
            code = _called_code(f)
            if code is None:
                continue
            if id(code) in codes and codes[id(code)][0] != name:
                shared.add(id(code))
            codes[id(code)] = (name, code)
        self._codes = {key: found for key, found in codes.items() if key not in shared}
        self.pairs: set[tuple[str, str]] = set()  # (the watched function it ran inside, or "", the function)
        self._previous = None

    def _profile(self, frame, event, arg):
        if event == "call":
            found = self._codes.get(id(frame.f_code))
            if found is not None and found[1] is frame.f_code:
                outer, back = "", frame.f_back
                while back is not None:
                    enclosing = self._codes.get(id(back.f_code))
                    if enclosing is not None and enclosing[1] is back.f_code:
                        outer = enclosing[0]
                        break
                    back = back.f_back
                if len(self.pairs) < 64:
                    self.pairs.add((outer, found[0]))
        previous = self._previous
        if previous is not None:
            previous(frame, event, arg)

    def __enter__(self) -> CallWatch:
        self._previous = _getprofile()
        _setprofile(_hook(self._profile))
        return self

    def __exit__(self, *exc) -> None:
        _setprofile(self._previous)

    def facts(self) -> list[list[str]]:
        """[[outer, function], ...], sorted: the data a probe returns."""
        return [list(pair) for pair in sorted(self.pairs)]


_TYPE_MRO = type.__dict__["__mro__"].__get__
_TYPE_DICT = type.__dict__["__dict__"].__get__


def _called_code(f: Any, depth: int = 0) -> types.CodeType | None:
    """The code object that runs when ``f`` is called, or None where it is not Python code of
    its own (a builtin, a class, a C callable). Read from the objects' C-level fields and the
    class dictionaries only: no attribute lookup of the exercise's runs here (no
    ``__getattr__``, no property, no metaclass)."""
    if depth > 4:
        return None
    kind = type(f)
    if kind is types.FunctionType:
        return f.__code__
    if kind is types.MethodType:
        return _called_code(f.__func__, depth + 1)
    if kind is functools.partial:
        return _called_code(f.func, depth + 1)
    if issubclass(kind, type):  # calling a class makes an instance: its __init__ is not the helper
        return None
    for klass in _TYPE_MRO(kind):
        for key, call in _TYPE_DICT(klass).items():  # no lookup: a key's own __eq__ never runs
            if type(key) is str and key == "__call__":
                if type(call) in (staticmethod, classmethod):
                    call = call.__func__
                return call.__code__ if type(call) is types.FunctionType else None
    return None
