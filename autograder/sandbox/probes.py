"""Trusted procedures that run *inside* the worker and call into the submission.

A probe is ``def probe(ctx, *args, **kwargs) -> data``: ``ctx.module("qkv")`` gives a
submission module, ``ctx.watch_ops()`` records the torch functions/aten operators used,
``ctx.watch_autograd()`` records any autograd use. What a probe returns crosses back as
data only. The grader never trusts a probe's result more than the submission it ran:
expected values are always computed on the trusted side.

Suites can ship their own probes (``autograder.testing.probe``); their source is sent to
the worker and may be read by the submission, so a probe holds glue, never answers.
"""

from __future__ import annotations

import fnmatch
import functools
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode


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
        self._previous_profile = sys.getprofile()
        sys.setprofile(self._profile)
        return mode

    def __exit__(self, *exc):
        self._leaving = True
        if sys.getprofile() != self._profile:
            self.tampered.add("replaced the grader's profile hook (sys.setprofile)")
        sys.setprofile(self._previous_profile)
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


def _all_disabled() -> bool:
    check = getattr(torch._C, "_is_torch_function_all_disabled", None)
    return bool(check()) if check is not None else not torch._C._is_torch_function_enabled()


def _mode_on_stack(mode: TorchFunctionMode) -> bool:
    try:
        length = torch._C._len_torch_function_stack()
        return any(torch._C._get_function_stack_at(i) is mode for i in range(length))
    except Exception:  # an older torch without these: assume intact
        return True


class DispatchRecorder:
    """Records every operator the dispatcher runs while it is active: the dispatcher's own
    profiling (``RecordFunction``, through torch's CPU profiler without Kineto) sees each op
    at its entry — the composite ones (``aten::softmax``) and what they decompose to
    (``aten::_softmax``), autograd's own operators (``aten::_make_dual``,
    ``aten::_unpack_dual``), the autograd engine and every backward node it or a direct
    ``grad_fn(...)`` call runs (``autograd::engine::evaluate_function: MmBackward0``,
    ``MmBackward0``), custom operators (``mylib::op``) and the ops inside them. Whatever
    Python spelling reached an operator, the operator's name is what is recorded, with the
    innermost frame of the submission's own files on the Python stack at that moment.

    (A TorchDispatchMode sees ops only *below* autograd: ``torch.func.grad``'s backward
    reaches it as plain ``mm``/``t``/``sum``, indistinguishable from a hand-written one, and
    forward AD's ``_make_dual`` not at all.)

    ``entries`` maps (phase, operator) → [count, file, line, function]; nothing is judged
    here: the trusted side decides from these names (autograder/testing/dispatch.py). The
    submission can try to switch the profiler or ``RecordFunction`` off: a start and an end
    marker must both be in the recording, the profile hook notes any call of the switches
    from any frame, and a profiler that is already on, or off at the end, is noted — each a
    rule violation (``tampered``)."""

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

    def _profile(self, frame, event, arg):
        if event == "c_call" and self._on:
            name = getattr(arg, "__name__", None)
            if type(name) is str and name in _DISPATCH_SWITCHES:
                self.tampered.add(f"called {name}(), which switches off the grader's recording of operators")
        previous = self._previous_profile
        if previous is not None:
            previous(frame, event, arg)

    def __enter__(self):
        from torch._C._profiler import _ExperimentalConfig, _RecordFunctionFast
        from torch.autograd import ProfilerConfig, ProfilerState, _enable_profiler_legacy, _profiler_enabled

        THREAD_BAN.gate = self  # a thread attempted from here on is a fact of this call
        if self.replace:
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
        # CPU state (no Kineto), with the Python stack of each event: its file(line): function
        config = ProfilerConfig(ProfilerState.CPU, False, False, True, False, False, _ExperimentalConfig())
        _enable_profiler_legacy(config)
        self._previous_profile = sys.getprofile()
        sys.setprofile(self._profile)
        self._on = True
        with _RecordFunctionFast(self.START):
            pass
        return self

    def __exit__(self, *exc):
        try:
            return self._stop()
        finally:
            THREAD_BAN.gate = None
            if self.autograd_off:
                AUTOGRAD_TRIPWIRE.locked = None
                if self._grad_was:  # as it was, without counting as the code's use of autograd
                    uses, AUTOGRAD_TRIPWIRE.uses = AUTOGRAD_TRIPWIRE.uses, None
                    torch._C._set_grad_enabled(True)
                    AUTOGRAD_TRIPWIRE.uses = uses
            if self._ban is not None:
                self._ban.__exit__()
                self._ban = None

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
        from torch._C._profiler import _RecordFunctionFast
        from torch.autograd import _disable_profiler_legacy, _profiler_enabled

        if not self._on:
            return False
        self._on = False
        with _RecordFunctionFast(self.END):
            pass
        if sys.getprofile() != self._profile:
            self.tampered.add("replaced the grader's profile hook (sys.setprofile)")
        sys.setprofile(self._previous_profile)
        if not _profiler_enabled():
            self.tampered.add("switched off torch's profiler, which the grader's recording of operators needs")
            return False
        try:
            threads = _disable_profiler_legacy()
        except Exception:  # whatever the state, the recording is lost
            self.tampered.add("broke torch's profiler, which the grader's recording of operators needs")
            return False
        self._collect(threads)
        return False

    def _collect(self, threads) -> None:
        names = []
        for events in threads:
            for event in events:
                if event.kind() != "push":
                    continue
                name = event.name()
                names.append(name)
                if name in (self.START, self.END) or name.startswith("autograder::"):
                    continue
                key = (self.phase, name[:200])
                entry = self.entries.get(key)
                if entry is None:
                    if len(self.entries) >= 2000:
                        continue
                    entry = self.entries[key] = [0, "", 0, ""]
                entry[0] += 1
                if not entry[1]:
                    entry[1:] = self._own_frame(event)
        if self.START not in names or self.END not in names:
            self.tampered.add("switched off torch's recording of operators (RecordFunction) during the call")

    def _own_frame(self, event) -> list:
        """The innermost frame of the submission's files on the event's Python stack, as
        [file relative to the submission, line, function] (torch formats each frame
        ``path(line): function``), or ["", 0, ""]."""
        try:
            for text in event.stack():
                if text.startswith(self.own_files):
                    location, _, function = text[len(self.own_files) :].partition(": ")
                    file, _, line = location.rpartition("(")
                    return [file, int(line.rstrip(")")), function]
        except Exception:  # no location is fine, the operator's name decides
            pass
        return ["", 0, ""]


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
#: computes nothing (shapes only), and torch refuses a Python kernel there for composite ops
_SKIPPED_KEYS = frozenset({"Meta"})


def kernel_registrations() -> list[tuple[str, str]]:
    """Every (ATen operator with its overload, dispatch key) with a kernel registered for
    that key — backends, alias keys (``CompositeExplicitAutograd``: the kernel of every
    backend without one of its own), autograd, functorch, autocast. Read once from torch's
    registry; the fork server computes it before forking (``zygote._warm_up``)."""
    global _REGISTRATIONS
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
    return _REGISTRATIONS


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
        matched: dict[str, bool] = {}
        out = []
        for name, key in kernel_registrations():
            hit = matched.get(name)
            if hit is None:
                base = _aten_base(name)
                hit = matched[name] = any(fnmatch.fnmatchcase(base, p) for p in self.patterns)
            if hit:
                out.append((name, key))
        _TARGETS[self.patterns] = out
        return out

    def _kernel(self, op: str) -> Callable[..., Any]:
        on_use = self.on_use

        def refuse(*args, **kwargs):
            on_use(op)
            raise RuntimeError(f"{op} is switched off during this call: the exercise's rule forbids it")

        return refuse

    def __enter__(self):
        import warnings

        self._lib = torch.library.Library("aten", "IMPL")
        self.failed: list[tuple[str, str]] = []  # none on torch 2.13 (tests/grader/test_kernel_replacement.py)
        kernels: dict[str, Callable[..., Any]] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": that is the point
            for name, key in self.targets():
                op = name.split(".", 1)[0]
                kernel = kernels.get(op) or kernels.setdefault(op, self._kernel(op))
                try:
                    self._lib.impl(name.split("::", 1)[1], kernel, key)
                except RuntimeError:  # a key torch will not take a Python kernel for
                    self.failed.append((name, key))
        return self

    def __exit__(self, *exc):
        if self._lib is not None:
            self._lib._destroy()
            self._lib = None
        return False


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
        self.gate: DispatchRecorder | None = None
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
                    setattr(module, name, self.refuse)
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


def remove_kernel_handles() -> None:
    """Before any submission code: torch's one binding that hands out a kernel as a callable
    (``torch.library.get_kernel`` calls it) is replaced. A handle taken before a rule check
    would call the C++ kernel directly, past KernelBan's replacement; no other reference to
    the binding exists (only torch._C's dict holds it), so none can be recovered."""
    name = "_dispatch_get_computed_kernel_for_dispatch_key"
    if hasattr(torch._C, name):
        setattr(torch._C, name, _no_kernel_handles)


def _no_kernel_handles(*args, **kwargs):
    raise RuntimeError("the grader's worker hands out no kernel functions: call the operator itself")


#: C functions that switch the recording of operators off (called from any frame while it runs)
_DISPATCH_SWITCHES = {
    "_enable_record_function",
    "_disable_profiler_legacy",
    "_enable_profiler_legacy",
    "_disable_profiler",
    "_enable_profiler",
    "_prepare_profiler",
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
        self.locked: DispatchRecorder | None = None

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
            if tripwire.uses is not None:
                if attr != "_set_grad_enabled" or (args and args[0]):
                    tripwire.uses.add(label)
            if tripwire.locked is not None and attr == "_set_grad_enabled" and args and args[0]:
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
        if engine is None or isinstance(engine, _WatchedEngine):
            return
        Variable._execution_engine = _WatchedEngine(engine, self)

    def install(self) -> None:
        if self.installed:
            return
        import torch.autograd.functional as agf
        import torch.autograd.graph as agg
        import torch.func as tfunc

        self._wrap(torch.autograd, "grad", "torch.autograd.grad")
        self._wrap(torch.autograd, "backward", "torch.autograd.backward")
        self._wrap(torch.Tensor, "backward", "Tensor.backward")
        self._wrap(agg, "_engine_run_backward", "autograd engine")
        self._wrap(torch._C, "_set_grad_enabled", "enable_grad")
        for name in ("vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"):
            self._wrap(agf, name, f"torch.autograd.functional.{name}")
        for name in ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"):
            self._wrap(tfunc, name, f"torch.func.{name}")
        self._watch_engine()
        self.installed = True


class _WatchedEngine:
    """Stands in for autograd's engine object: records a backward run while armed."""

    def __init__(self, engine: Any, tripwire: _AutogradTripwire) -> None:
        self._engine = engine
        self._tripwire = tripwire

    def run_backward(self, *args, **kwargs):
        if self._tripwire.uses is not None:
            self._tripwire.uses.add("autograd engine (a backward pass)")
        return self._engine.run_backward(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


AUTOGRAD_TRIPWIRE = _AutogradTripwire()


# --------------------------------------------------------------------------- helpers
class PlainFunctionCtx:
    """Stands in for autograd's ``ctx`` when a probe calls ``Function.forward``/``backward``
    directly, outside the autograd engine."""

    def __init__(self, needs_input_grad: tuple[bool, ...] = (True, True, True, False)) -> None:
        self.needs_input_grad = needs_input_grad
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *args: Any) -> None:
        pass

    def mark_dirty(self, *args: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


def resolve(module: Any, target: str) -> Any:
    obj = module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def describe_module(module: torch.nn.Module) -> dict:
    """Structure of an nn.Module as data: submodules, parameters, buffers, state_dict keys."""
    non_persistent: set[str] = set()
    for prefix, sub in module.named_modules():
        for name in getattr(sub, "_non_persistent_buffers_set", ()):
            non_persistent.add(f"{prefix}.{name}" if prefix else name)
    return {
        "type": type(module).__name__,
        "modules": [
            {
                "name": name,
                "type": f"{type(sub).__module__}.{type(sub).__qualname__}",
                "in_features": getattr(sub, "in_features", None) if type(sub) is torch.nn.Linear else None,
                "out_features": getattr(sub, "out_features", None) if type(sub) is torch.nn.Linear else None,
                "bias": (sub.bias is not None) if type(sub) is torch.nn.Linear else None,
            }
            for name, sub in module.named_modules()
            if name
        ],
        "parameters": [
            {"name": n, "shape": list(p.shape), "dtype": str(p.dtype).replace("torch.", ""), "requires_grad": p.requires_grad}
            for n, p in module.named_parameters()
        ],
        "buffers": [
            {
                "name": n,
                "shape": list(b.shape),
                "dtype": str(b.dtype).replace("torch.", ""),
                "persistent": n not in non_persistent,
                "value": b.detach().clone() if b.numel() <= 1 << 16 else None,
            }
            for n, b in module.named_buffers()
        ],
        "state_dict": list(module.state_dict().keys()),
        "training": module.training,
    }


def _vjp_loss(out: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
    """⟨out, grad_output⟩: its gradient is the vector-Jacobian product autograd.grad(out,
    x, grad_output) would give, without the grad_outputs path whose first use imports sympy."""
    if type(grad_output) is not torch.Tensor or grad_output.shape != out.shape:
        raise ValueError(f"output has shape {list(out.shape)}, expected {list(getattr(grad_output, 'shape', []))}")
    return (out * grad_output.to(out.dtype)).sum()


def _requires_grad(values: list, wrt: list[int]) -> list:
    out = list(values)
    for i in wrt:
        out[i] = out[i].detach().clone().requires_grad_(True)
    return out


# --------------------------------------------------------------------------- builtin probes
# Keyword-only: the trusted side (testing/remote.py) names every field it sends.
def call(
    ctx,
    *,
    module: str,
    target: str,
    args: list,
    kwargs: dict,
    record_ops: bool = False,
    return_args: bool = False,
    record_dispatch: bool = False,
    replace_ops: list | None = None,
) -> dict:
    """Call ``module.target(*args, **kwargs)``; optionally record ops (torch functions, and
    with ``record_dispatch`` the dispatcher's operators, the kernels of those matching
    ``replace_ops`` replaced: see KernelBan) and return the arguments as they are
    afterwards (to detect in-place modification)."""
    fn = resolve(ctx.module(module), target)
    with ctx.watch_ops(record_ops), ctx.watch_dispatch("call", record_dispatch, replace_ops or ()):
        value = fn(*args, **kwargs)
    result = {"value": value}
    if return_args:
        result["args"] = list(args)
        result["kwargs"] = dict(kwargs)
    return result


def call_with_grad(
    ctx,
    *,
    module: str,
    target: str,
    args: list,
    kwargs: dict,
    wrt: list[int],
    grad_output: Any,
    output_index: int | None = None,
    record_ops: bool = False,
) -> dict:
    """Forward through the submission, then autograd back to the arguments listed in
    ``wrt`` with the given upstream gradient. Unused inputs get ``None``."""
    fn = resolve(ctx.module(module), target)
    args = _requires_grad(list(args), wrt)
    with ctx.watch_ops(record_ops):
        value = fn(*args, **kwargs)
    out = value[output_index] if output_index is not None else value
    if type(out) is not torch.Tensor or not out.requires_grad:
        return {"value": value, "grads": None, "why": "output does not require grad"}
    grads = torch.autograd.grad(_vjp_loss(out, grad_output), [args[i] for i in wrt], allow_unused=True)
    return {"value": value, "grads": list(grads)}


def construct(
    ctx,
    *,
    module: str,
    cls: str,
    init_args: list,
    init_kwargs: dict,
    state: dict | None = None,
    calls: list | None = None,
    mode: str = "eval",
    grad: dict | None = None,
    record_ops: bool = False,
    describe: bool = True,
    dtype: torch.dtype | None = None,
    record_dispatch: bool = False,
    replace_ops: list | None = None,
) -> dict:
    """Build ``module.cls(*init_args, **init_kwargs)``, optionally load a state_dict
    (non-strict; missing/unexpected keys are returned under ``load``), run
    ``calls`` (a list of ``[method, args, kwargs]``) and optionally backprop ``grad``
    (``{"call": i, "output_index": j|None, "grad_output": t, "wrt": [arg indices]}``)."""
    obj = resolve(ctx.module(module), cls)(*init_args, **init_kwargs)
    result: dict[str, Any] = {}
    is_module = isinstance(obj, torch.nn.Module)
    if is_module and dtype is not None:
        obj = obj.to(dtype)  # before loading the state, so float64 weights keep their precision
    if is_module and describe:
        result["describe"] = describe_module(obj)
    if state is not None:
        incompatible = obj.load_state_dict(state, strict=False)
        result["load"] = {"missing": list(incompatible.missing_keys), "unexpected": list(incompatible.unexpected_keys)}
    if is_module:
        obj.train(mode == "train")
    outputs = []
    inputs_with_grad: list = []
    for i, (method, args, kwargs) in enumerate(calls or []):
        args = list(args)
        if grad is not None and grad.get("call") == i:
            args = _requires_grad(args, grad.get("wrt", []))
            inputs_with_grad = [args[j] for j in grad.get("wrt", [])]
        with ctx.watch_ops(record_ops), ctx.watch_dispatch("call", record_dispatch, replace_ops or ()):
            outputs.append(getattr(obj, method)(*args, **kwargs))
    result["outputs"] = outputs
    if grad is not None:
        out = outputs[grad["call"]]
        if grad.get("output_index") is not None:
            out = out[grad["output_index"]]
        params = [p for _, p in obj.named_parameters()] if is_module else []
        names = [n for n, _ in obj.named_parameters()] if is_module else []
        if type(out) is torch.Tensor and out.requires_grad:
            grads = torch.autograd.grad(_vjp_loss(out, grad["grad_output"]), inputs_with_grad + params, allow_unused=True)
            result["input_grads"] = list(grads[: len(inputs_with_grad)])
            result["param_grads"] = dict(zip(names, grads[len(inputs_with_grad) :]))
        else:
            result["input_grads"] = None
            result["param_grads"] = None
    return result


BUILTIN: dict[str, Callable[..., Any]] = {
    "call": call,
    "call_with_grad": call_with_grad,
    "construct": construct,
}
