"""The ``sub`` fixture: the submission as seen from a trusted test.

    q, k, v = sub.qkv.project_qkv(x, w_q, w_k, w_v)            # a remote call; data comes back
    r = sub.row_softmax.call("softmax_rows", s, record_ops=True) # value + the torch ops it used
    info = sub.qkv.construct("AttentionHead", [4, 2, 8], state=..., calls=[("forward", [x], {})])
    out = sub.custom_backward.run(my_probe, q, k, v)            # a shipped probe

Each test gets a fresh worker on its first call (a new one, or its group's last one made fresh: sandbox.client.Sandbox),
released at teardown. Faults become exceptions from ``failures.py``; the runtime remembers a module that failed to
import and a function that timed out, so later tests fail fast instead of waiting again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.text import first_line
from ..sandbox.client import Worker, WorkerDied, WorkerProtocolError, WorkerTampered, WorkerTimeout
from . import dispatch
from .error_hints import hints_for
from .failures import (
    NOT_CALLED_AGAIN,
    CheckFailed,
    Feedback,
    SubmissionCrashed,
    SubmissionError,
    SubmissionMissing,
    SubmissionProtocolError,
    SubmissionRaised,
    SubmissionTimeout,
    describe_error,
    is_todo_stub,
)
from .probe import Probe
from .runtime import IMPORT_TARGET, PRINTED_ENTRIES, ModuleInfo, Runtime, inputs_shapes, size_class
from .source.tree import read_python_source


@dataclass(frozen=True)
class RuleWatch:
    """An exercise's run-time rule, judged after every call into its module (``watch_rule``)."""

    allows: Callable[[str], bool]
    what: str
    family: str
    hints: tuple[str, ...]
    #: an autograd entry point the worker's tripwire saw used (``reply.autograd``) breaks the
    #: rule by itself: code outside the recorded windows (a result's ``__iter__``, a finalizer)
    #: records no operator (blind red-team tester R-AO)
    autograd: bool = False


@dataclass
class CallResult:
    value: Any
    args: list | None = None
    kwargs: dict | None = None
    ops: set[str] = field(default_factory=set)
    out: str = ""
    #: with ``record_dispatch=True``: {phase: {operator: dispatch.Dispatched}} (see dispatch.py)
    dispatched: dict = field(default_factory=dict)


class Submission:
    def __init__(self, runtime: Runtime, bans: tuple[str, ...] = (), scanned: tuple[str, ...] = (), hidden: bool = False) -> None:
        self._runtime = runtime
        self._printing_pool = "hidden" if hidden else "visible"  # the run's print budget it draws on
        #: ATen name patterns whose kernels the worker replaces for good before any submission
        #: code runs (a suite's ``WORKER_BANS``: sandbox/probes/bans.py ``_StandingBan``)
        self._bans = tuple(bans)
        #: exercise modules under a rule scan (a suite's ``WORKER_SCANNED``): their workers run
        #: only these and the files they import by name, which the scan reads (sandbox/codegate.py)
        self._scanned = tuple(scanned)
        self._worker: Worker | None = None
        self._dead: SubmissionError | None = None
        self._imported: set[str] = set()
        self.printed: list[dict] = []  # what the submission printed, per call
        self.targets: list[str] = []  # names this test called, e.g. "qkv.project_qkv"
        self.autograd_uses: set[str] = set()
        #: every operator recorded by a DispatchRecorder during this test, calls that raised
        #: included: {phase: {operator: dispatch.Dispatched}}
        self.dispatched: dict = {}
        self._last_dispatched: dict = {}
        self._rules: dict[str, RuleWatch] = {}

    def __getattr__(self, name: str) -> RemoteModule:
        if name.startswith("_") or name not in self._runtime.modules:
            raise AttributeError(f"no exercise module {name!r} (known: {', '.join(self._runtime.modules)})")
        return RemoteModule(self, name)

    def watch_rule(
        self,
        module: str,
        allows: Callable[[str], bool],
        *,
        what: str,
        family: str,
        hints: Iterable[str] = (),
        autograd: bool = False,
    ) -> None:
        """Judge the exercise's rule on every call into ``module`` in this test, not only in
        its rule test: each ``call`` records the operators it runs (``record_dispatch``), and
        after every call that recorded any (a probe records its own), one the rule does not
        allow fails the test at once (``dispatch.check``, problem "constraint"). A test then
        passes only on calls shown to keep the rule — code that behaves only while the rule
        test watches (or never returns there) gains nothing elsewhere."""
        self._rules[module] = RuleWatch(allows, what, family, tuple(hints), autograd)

    def _check_rule(self, rule: RuleWatch, apis: Iterable[str], module: str, label: str) -> None:
        """The watched rule on the last call's operators, the autograd functions it used (the worker's
        tripwire) named first; a violation is noted for the run too (``rule_broken_earlier``)."""
        used = sorted(set(apis))
        autograd = f"autograd was used ({', '.join(used)})"  # what the student wrote: said first
        try:
            dispatch.check(self._last_dispatched, None, rule.allows, what=rule.what, family=rule.family, hints=rule.hints)
        except CheckFailed as failed:
            if used:
                failed.feedback.detail = f"{autograd}; {failed.feedback.detail}"
            broken = failed
        else:  # every operator allowed: autograd alone can break an autograd rule
            if not (rule.autograd and used):
                return
            broken = CheckFailed(Feedback(rule.what, "constraint", f"{autograd}: {rule.family}", list(rule.hints)))
        self._runtime.rule_broken.setdefault(module, f"{label}: {broken.feedback.detail}"[:500])
        raise broken

    def rule_broken_earlier(self, module: str) -> str | None:
        """Where a call of this run broke ``module``'s watched rule, or None (Runtime.rule_broken)."""
        return self._runtime.rule_broken.get(module)

    def records_dispatch(self, module: str) -> bool:
        return module in self._rules

    def info(self, module: str) -> ModuleInfo:
        return self._runtime.modules[module]

    def source(self, module: str) -> str | None:
        """The submitted file's text, read on the trusted side (for AST checks)."""
        info = self._runtime.modules[module]
        if info.copy_path is None:
            return None
        return read_python_source(info.copy_path)

    def importable_sources(self) -> dict[str, str]:
        """Every other file the graded module can import (exercise modules, helper modules),
        read on the trusted side: a rule scan of a module must cover what it can import."""
        rt = self._runtime
        if rt.sources is None:
            out = {}
            paths = {name: info.copy_path for name, info in rt.modules.items() if info.copy_path}
            paths.update(rt.importable)
            for name, path in sorted(paths.items()):
                try:
                    out[name] = read_python_source(path)
                except OSError:
                    continue
            rt.sources = out
        return dict(rt.sources)

    def scanned_files(self) -> tuple[str, ...]:
        """The submission's modules a rule scan of ``self._scanned`` reads, and so the only
        ones its workers may run: those modules and every file they import by name, directly
        or through each other (``check_no_banned(..., imports=sub.importable_sources())``)."""
        from .source import imported_scopes

        available = self.importable_sources()
        runnable = set(self._scanned)
        for module in self._scanned:
            source = available.get(module)
            if source is not None:
                runnable.update(imported_scopes(source, {k: v for k, v in available.items() if k != module}))
        return tuple(sorted(runnable))

    # ------------------------------------------------------------------ plumbing
    def _ensure_worker(self) -> Worker:
        if self._worker is None:
            worker = self._runtime.sandbox.worker()
            if self._bans and worker.banned != self._bans:
                worker.ban(self._bans)  # a fresh worker: nothing of the submission has run in it yet
            if self._scanned:
                runnable = self.scanned_files()
                if worker.confined is None:
                    worker.confine(runnable)  # as fresh: before any submission code
                elif worker.confined != runnable:
                    raise RuntimeError(f"a worker confined to {worker.confined} was asked to run {runnable}")
            self._worker = worker
            for fact in self._worker.facts:
                if fact not in self._runtime.facts:
                    self._runtime.facts.append(fact)
        return self._worker

    def _check_usable(self, module: str, label: str, key: tuple[str, str], shares: tuple[str, str] | None = None) -> None:
        rt = self._runtime
        info = rt.modules[module]
        if info.problem:
            raise SubmissionMissing(label, info.problem, error=_static_error(info))
        if module in rt.import_failures:
            raise rt.import_failures[module]
        for timed in (key, shares):
            if timed in rt.timed_out:
                whose = "" if timed == key else f"{timed[1]} "  # the function the probe exercises
                raise SubmissionTimeout(label, f"{whose}{rt.timed_out[timed]} {NOT_CALLED_AGAIN}", hints=["general/timeout"])
        if key in rt.malformed:
            raise SubmissionProtocolError(label, f"{rt.malformed[key]} {NOT_CALLED_AGAIN}")
        if self._dead is not None:
            raise type(self._dead)(label, f"not run: earlier in this test, {self._dead.message}", error=self._dead.error)
        if rt.time_left(module) <= 0:
            raise SubmissionTimeout(label, _budget_message(rt, module), hints=["general/timeout"])
        if time.monotonic() > rt.budget_deadline:
            raise SubmissionTimeout(
                label, "not run: the grading run's time budget ([limits] run_timeout_s) is used up", hints=["general/timeout"]
            )

    def _import(self, module: str) -> None:
        if module in self._imported:
            return
        rt = self._runtime
        info = rt.modules[module]
        label = f"import of {info.display_path}"
        worker = self._ensure_worker()
        timeout, cpu_limit, by_budget = rt.deadline_for(module, IMPORT_TARGET)
        started = time.monotonic()
        try:
            reply = worker.import_module(module, timeout, cpu_limit)
        except WORKER_FAILURES as exc:
            why = (
                _budget_message(rt, module)
                if by_budget
                else f"{info.display_path} did not finish importing within {_limit_text(exc)} (an endless loop at module level?)"
            )
            err = _submission_error(exc, label, why, f" while importing {info.display_path}")
            rt.import_failures[module] = err
            self._dead = err
            raise err from None
        finally:
            rt.charge(module, time.monotonic() - started, worker.last_cpu, target=IMPORT_TARGET)
        self._log(label, reply.out, reply.out_dropped)
        if not reply.ok:
            error = _classified(reply.error, module)
            err = SubmissionMissing(
                label, f"{info.display_path} failed to import: {describe_error(error)}", error=error, hints=hints_for(error)
            )
            rt.import_failures[module] = err
            raise err
        self._imported.add(module)

    def _log(self, label: str, out: str, dropped: int) -> None:
        """Keep what the code printed within the caps (the client already cut each call to
        ``output_bytes``): at most ``output_bytes`` characters per test and ``PRINTED_PER_RUN``
        × that per run, visible and hidden tests apart, whatever the worker claims."""
        if not (out or dropped):
            return
        rt = self._runtime
        cap = rt.sandbox.spec.output_bytes
        room = max(0, min(cap - sum(len(p["text"]) for p in self.printed), rt.printed_left[self._printing_pool]))
        kept = out[:room]
        rt.printed_left[self._printing_pool] -= len(kept)
        dropped += len(out) - len(kept)
        if len(self.printed) >= PRINTED_ENTRIES:
            self.printed[-1]["dropped"] += len(kept) + dropped
            return
        self.printed.append({"call": label, "text": kept, "dropped": dropped})

    def _invoke(
        self,
        module: str,
        probe: str,
        source: str | None,
        args: list,
        kwargs: dict,
        label: str,
        key: tuple[str, str],
        shares: tuple[str, str] | None = None,
    ) -> Any:
        """One request to the worker. ``shares``: the submission target a probe exercises
        (``Probe.target``), whose timing out the probe's call shares, both ways."""
        self._last_dispatched = {}
        target = f"{module}.{key[1]}"
        if target not in self.targets:
            self.targets.append(target)
        self._check_usable(module, label, key, shares)
        self._import(module)
        rt = self._runtime
        worker = self._ensure_worker()
        size = size_class((args, kwargs))
        timeout, cpu_limit, by_budget = rt.deadline_for(module, key[1], size)
        started = time.monotonic()
        own_limit = False  # stopped at its own call limit: not charged to the skill's budget
        try:
            reply = worker.run(probe, source, args, kwargs, timeout, label, cpu_limit)
        except WorkerTampered:
            raise _tampering(
                label,
                "changed the worker's reply on its way to the grader (its signature was wrong); "
                "tampering with the grader's recording counts as breaking the rule",
                _rule_hints(self._rules.get(module)),
            ) from None
        except WORKER_FAILURES as exc:
            if isinstance(exc, WorkerTimeout) and not by_budget:  # later calls of this function fail fast
                rt.timed_out[key] = f"timed out (did not finish within {_limit_text(exc)})"
                if shares is not None:  # and so do the calls of what this probe exercises
                    rt.timed_out[shares] = f"timed out (did not finish within {_limit_text(exc)} in {label})"
                own_limit = True
            elif isinstance(exc, WorkerProtocolError):
                rt.malformed[key] = f"sent a malformed reply ({str(exc).rsplit(': ', 1)[-1][:200]})"
            why = (
                _budget_message(rt, module)
                if by_budget
                else f"did not finish within {_limit_text(exc)}{inputs_shapes((args, kwargs))} (endless loop, or far too slow?)"
            )
            self._dead = _submission_error(exc, label, why)
            raise self._dead from None
        finally:
            rt.charge(module, time.monotonic() - started, worker.last_cpu, timed_out=own_limit, target=key[1], size=size)
        self._log(label, reply.out, reply.out_dropped)
        self.autograd_uses.update(reply.autograd)
        self._last_dispatched = dispatch.parse(reply.dispatched)
        dispatch.merge(self.dispatched, self._last_dispatched)
        rule = self._rules.get(module)
        if rule is not None and not reply.tampered:  # also for a call that raised: what ran, ran
            self._check_rule(rule, reply.autograd, module, label)
        if reply.tampered:
            what = reply.tampered[0]
            one_thread = "runs on one thread" in what
            if not one_thread and "autograd is off" not in what:
                what += "; switching the recording off counts as breaking the rule"
            profiler = "profile hook" in what  # cProfile in a rule-checked file (fairness tester R-AQ): say so, not "autograd"
            if rule is not None and not one_thread and not profiler:  # the sandbox's refusals are not the rule's
                rt.rule_broken.setdefault(module, f"{label}: {what}"[:500])
            hints = ["general/one-thread"] if one_thread else ["general/profiler-while-graded"] if profiler else _rule_hints(rule)
            raise _tampering(label, what, hints)
        if not reply.ok:
            error = _classified(reply.error, module)
            if (
                error.get("type") == "AttributeError"
                and f"'{key[1].split('.')[0]}'" in error.get("message", "")
                and not error.get("frames")
            ):
                raise SubmissionMissing(
                    label,
                    f"{rt.modules[module].display_path} defines no {key[1].split('.')[0]!r}",
                    error=error,
                    hints=["general/missing-name"],
                )
            raise SubmissionRaised(label, describe_error(error), error=error, hints=hints_for(error))
        return reply.value, set(reply.ops), reply.out

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None


class RemoteModule:
    def __init__(self, submission: Submission, name: str) -> None:
        self._sub = submission
        self._name = name

    def __getattr__(self, target: str) -> RemoteFunction:
        if target.startswith("_"):
            raise AttributeError(target)
        return RemoteFunction(self, target)

    def call(
        self,
        target: str,
        *args: Any,
        record_ops: bool = False,
        return_args: bool = False,
        record_dispatch: bool = False,
        replace_ops: tuple[str, ...] = (),
        **kwargs: Any,
    ) -> CallResult:
        label = f"{self._name}.{target}(…)"
        extra = _dispatch_options(record_dispatch or self._sub.records_dispatch(self._name), replace_ops)
        raw, ops, out = self._sub._invoke(
            self._name,
            "call",
            None,
            [],
            dict(
                module=self._name,
                target=target,
                args=list(args),
                kwargs=kwargs,
                record_ops=record_ops,
                return_args=return_args,
                **extra,
            ),
            label,
            (self._name, target),
        )
        result = _as_dict(raw, label)
        return CallResult(result.get("value"), result.get("args"), result.get("kwargs"), ops, out, self._sub._last_dispatched)

    def call_with_grad(
        self,
        target: str,
        *args: Any,
        wrt: list[int],
        grad_output: Any,
        output_index: int | None = None,
        record_ops: bool = False,
        **kwargs: Any,
    ) -> dict:
        label = f"{self._name}.{target}(…) + backward"
        raw, ops, _ = self._sub._invoke(
            self._name,
            "call_with_grad",
            None,
            [],
            dict(
                module=self._name,
                target=target,
                args=list(args),
                kwargs=kwargs,
                wrt=wrt,
                grad_output=grad_output,
                output_index=output_index,
                record_ops=record_ops,
            ),
            label,
            (self._name, target),
        )
        result = _as_dict(raw, label)
        result["ops"] = ops
        return result

    def construct(
        self,
        cls: str,
        init_args: list | tuple = (),
        init_kwargs: dict | None = None,
        *,
        state: dict | None = None,
        calls: list | tuple = (),
        mode: str = "eval",
        grad: dict | None = None,
        record_ops: bool = False,
        describe: bool = True,
        dtype=None,
        record_dispatch: bool = False,
        replace_ops: tuple[str, ...] = (),
    ) -> dict:
        label = f"{self._name}.{cls}(…)"
        extra = _dispatch_options(record_dispatch, replace_ops)
        raw, ops, _ = self._sub._invoke(
            self._name,
            "construct",
            None,
            [],
            dict(
                module=self._name,
                cls=cls,
                init_args=list(init_args),
                init_kwargs=dict(init_kwargs or {}),
                state=state,
                calls=[list(c) for c in calls],
                mode=mode,
                grad=grad,
                record_ops=record_ops,
                describe=describe,
                dtype=dtype,
                **extra,
            ),
            label,
            (self._name, cls),
        )
        result = _as_dict(raw, label)
        result["ops"] = ops
        result["dispatched"] = self._sub._last_dispatched
        return result

    def run(self, probe: Probe, *args: Any, **kwargs: Any) -> Any:
        label = f"{self._name}.{probe.shows}" if probe.shows else f"{self._name}: {probe.name}"
        shares = None if probe.target is None else (self._name, probe.target)
        value, _, _ = self._sub._invoke(
            self._name, probe.name, probe.source, list(args), kwargs, label, (self._name, f"probe:{probe.name}"), shares
        )
        return value


class RemoteFunction:
    def __init__(self, module: RemoteModule, name: str) -> None:
        self._module = module
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._module.call(self._name, *args, **kwargs).value


def _dispatch_options(record_dispatch: bool, replace_ops: tuple[str, ...]) -> dict:
    """The probe's keywords for a rule-checked call: record the operators the dispatcher
    runs and, during the call, replace the kernels of the operators the rule forbids
    (``fnmatch`` patterns of ATen names, see sandbox/probes.KernelBan), so that no path
    past the recording (``OpOverload.redispatch``…) can run them."""
    if not record_dispatch:
        return {}
    return {"record_dispatch": True, "replace_ops": list(replace_ops)} if replace_ops else {"record_dispatch": True}


def _budget_message(rt: Runtime, module: str) -> str:
    if module in rt.cpu_limits and rt.cpu_charged(module) >= rt.cpu_limits[module][1] - 1e-9:
        budget = f"{rt.cpu_limits[module][1]:.3g} CPU s, from the reference's own time; {rt.cpu_charged(module):.1f} CPU s used"
    else:
        budget = f"[limits] skill_time_s = {rt.skill_time:g} s; {rt.spent.get(module, 0.0):.0f} s spent"
    return (
        f"not run: the calls into {rt.modules[module].display_path} have used up this skill's time budget "
        f"({budget}) — endless loops or very slow code earlier in this run"
    )


def _limit_text(exc: Exception) -> str:
    """The limit a call hit, for its message: "1.5 CPU s" or "10 s" (wall clock)."""
    if isinstance(exc, WorkerTimeout):
        return f"{exc.seconds:.3g} {'CPU ' if exc.cpu else ''}s"
    return "its time limit"


WORKER_FAILURES = (WorkerTimeout, WorkerDied, WorkerProtocolError)


def _submission_error(exc: Exception, label: str, timeout_message: str, crash_context: str = "") -> SubmissionError:
    """The test-facing error for a worker that timed out, died or sent a malformed reply."""
    if isinstance(exc, WorkerTimeout):
        return SubmissionTimeout(label, timeout_message, hints=["general/timeout"])
    if isinstance(exc, WorkerDied):
        return SubmissionCrashed(label, exc.exit.describe() + crash_context, hints=["general/exit"])
    return SubmissionProtocolError(label, _protocol_message(exc))


def _protocol_message(exc: WorkerProtocolError) -> str:
    """A malformed reply is the submission's doing (only its process writes to the channel)."""
    return (
        f"{exc} — the process running your code answered with data the grader cannot accept (did the code write to "
        "the grader's channel?); this test fails"
    )


def _as_dict(raw: Any, label: str) -> dict:
    if type(raw) is not dict:
        raise SubmissionProtocolError(label, "the worker's reply was not a probe result")
    return raw


#: an exception class's name as the worker reports it: a dotted Python name, nothing else
CLASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,199}\Z")


def _tampering(label: str, what: str, hints: list[str]) -> CheckFailed:
    """The failure of a call whose recording the code switched off or whose reply it changed:
    a proven violation of the exercise's rule (problem "constraint")."""
    return CheckFailed(
        Feedback(
            check=f"{label}: the grader records which torch functions your code calls (the exercise's rule)",
            problem="constraint",
            detail=f"your code {what}",
            hints=hints,
        )
    )


def _rule_hints(rule: RuleWatch | None) -> list[str]:
    """The hint of a rule-checked call whose recording was tampered with: the rule's own
    (custom_backward: "no autograd in backward"; blind tester I saw the general "library
    function that does the whole job" there), else the general one."""
    return list(rule.hints) if rule is not None and rule.hints else ["general/forbidden-api"]


def _classified(error: dict | None, module: str) -> dict:
    """The worker's exception facts, with the trusted side's own verdict on "TODO stub". The
    class names come from the submission (``__module__``, ``__qualname__``), so one that is
    not a dotted Python name (newlines, box lines: blind red-team tester H) is shown as
    ``ascii()`` writes it, in every output."""
    error = dict(error or {})
    for key in ("type", "base"):
        name = error.get(key)
        if name is not None and not (isinstance(name, str) and CLASS_NAME.match(name)):
            error[key] = ascii(str(name))[:120]
    error["todo"] = is_todo_stub(error, module)
    return error


def _static_error(info: ModuleInfo) -> dict:
    frames = (
        [
            {
                "file": info.copy_path.name if info.copy_path else info.name + ".py",
                "line": info.problem_line,
                "function": "<module>",
            }
        ]
        if info.problem_line
        else []
    )
    return {"type": "StaticCheck", "message": first_line(info.problem or ""), "base": "Exception", "frames": frames}
