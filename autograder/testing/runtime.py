"""The session-wide state every test's ``Submission`` shares (remote.py): the graded
modules, what their calls may still take (wall-clock and CPU budgets, per-call CPU limits,
from runner/cpu_limits.py) and what they took, functions that timed out, modules that
failed to import, the printed output the run may still keep."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sandbox.client import Sandbox
from .failures import SubmissionError

#: printed output kept per run, in multiples of ``[limits] output_kib`` (per call and per test
#: the cap is ``output_kib`` itself); and the number of printed entries kept per test
PRINTED_PER_RUN = 16
PRINTED_ENTRIES = 20
#: the name a module's import has among its call targets (CPU limits, reference_cpu.toml):
#: a keyword, so no function of the module can have it
IMPORT_TARGET = "import"
#: joins a target and a size class in a key of the CPU tables: ``"attention_backward@4096"``
#: is the costliest call of ``attention_backward`` whose arguments held 2049–4096 tensor
#: elements (size_class); "@" cannot be part of a Python name or a probe's name
SIZE_SEP = "@"
#: how deep size_class looks into nested arguments (lists, tuples, dicts)
_SIZE_DEPTH = 6


def size_class(value: object) -> int:
    """The number of tensor elements in a call's arguments (lists, tuples and dicts looked
    into), rounded up to a power of two; 0 when they hold none. A call's CPU limit comes from
    the reference's costliest call of the same function in the same size class or the next
    one up (``Runtime.deadline_for``): what the reference needs for *that* call, so an
    endless loop on a small input stops at a small input's limit."""
    n = 0
    for tensor in _tensors(value, _SIZE_DEPTH):
        try:
            n += int(tensor.numel())
        except (TypeError, ValueError, RuntimeError):
            pass
    return 0 if n <= 0 else 1 << (n - 1).bit_length()


def inputs_shapes(value: object, most: int = 4) -> str:
    """`` on inputs of shapes [2, 4, 64, 40], [2, 4, 40, 16]`` for the tensors in a call's
    arguments (looked into as ``size_class`` does; at most ``most``, then "…"), "" for none:
    a timeout names the input that was too slow, where the case's label names only its kind
    (blind tester R-BX could not tell which of a case's draws ran out of time)."""
    found = []
    for tensor in _tensors(value, _SIZE_DEPTH):
        try:
            found.append(str([int(n) for n in tensor.shape]))
        except (TypeError, ValueError):
            pass
    if not found:
        return ""
    return " on inputs of shapes " + ", ".join(found[:most]) + (" …" if len(found) > most else "")


def _tensors(value: object, depth: int) -> Iterator[Any]:
    """The tensors (the trusted side's own inputs) in a call's arguments, lists, tuples and
    dicts looked into ``depth`` levels deep."""
    if depth < 0:
        return
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v, depth - 1)
    elif callable(getattr(value, "numel", None)) and hasattr(value, "shape"):
        yield value


def sized(target: str, size: int) -> str:
    """The table key of ``target``'s calls in size class ``size``."""
    return f"{target}{SIZE_SEP}{size}"


@dataclass
class ModuleInfo:
    name: str
    display_path: str  # as the student knows it, e.g. "exercises/qkv.py"
    copy_path: Path | None  # in the read-only copy; None when missing
    problem: str | None = None  # static problem found before grading (missing, syntax, …)
    problem_line: int | None = None


@dataclass
class Runtime:
    """Session-wide state shared by every test's ``Submission``."""

    sandbox: Sandbox
    modules: dict[str, ModuleInfo]
    call_timeout: float
    budget_deadline: float  # time.monotonic() after which calls fail fast
    import_failures: dict[str, SubmissionError] = field(default_factory=dict)
    timed_out: dict[tuple[str, str], str] = field(default_factory=dict)
    facts: list[str] = field(default_factory=list)
    #: module → where its watched rule (``Submission.watch_rule``) was first shown broken in
    #: this run, "label: what ran". Every test judges the rule on its own calls; the rule test
    #: reads this too (``rule_broken_earlier``): code that broke it only in a test it failed
    #: anyway, and kept what it computed for later tests, breaks it as surely (red team R-BU)
    rule_broken: dict[str, str] = field(default_factory=dict)
    #: other files the submission's code can import (sibling exercise modules not graded in
    #: this run, helper modules): name → read-only copy
    importable: dict[str, Path] = field(default_factory=dict)
    #: the text of every importable file (``Submission.importable_sources``), read once a run:
    #: the copies are read-only, and rule scans and the code gate ask for them in every test
    sources: dict[str, str] | None = None
    #: wall-clock seconds each exercise module's calls (imports included) may take in all,
    #: per run ([limits] skill_time_s): only a backstop (code that sleeps, no /proc); the CPU
    #: budget below is what stops endless loops and very slow code
    skill_time: float = float("inf")
    spent: dict[str, float] = field(default_factory=dict)  # module → wall seconds its calls took
    #: module → (CPU seconds one call may use, CPU seconds all its calls may use): from the
    #: reference's own CPU time (runner/cpu_limits.py); a module not listed has no CPU limit.
    #: The first is for a call whose target has no limit of its own in ``cpu_call_limits``.
    cpu_limits: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: module → target (function, class, "probe:<name>", "import") → CPU seconds one call of
    #: it may use: from that target's own costliest reference call, so a function the
    #: reference runs in a millisecond loops for a fraction of a second, not for the limit
    #: the skill's costliest call needs; and under ``sized(target, N)`` from its costliest
    #: call in size class N (size_class), so a small call gets a small call's limit
    cpu_call_limits: dict[str, dict[str, float]] = field(default_factory=dict)
    cpu_spent: dict[str, float] = field(default_factory=dict)  # module → worker CPU seconds its calls used
    cpu_slowest: dict[str, float] = field(default_factory=dict)  # module → CPU seconds of its costliest call
    #: module → target, and sized(target, N) → CPU seconds of its costliest call (of those in
    #: size class N): what the reference-cpu tables record
    cpu_slowest_by_target: dict[str, dict[str, float]] = field(default_factory=dict)
    #: module → CPU seconds of its calls stopped at their per-call limit: counted in cpu_spent
    #: (the report's figure) but not against the budget. A function that loops costs its own
    #: call limit once (it is not called again: ``timed_out``) and never the budget the
    #: skill's other, perhaps correct, functions need; what loops cost is bounded by one call
    #: limit per function.
    cpu_timed_out: dict[str, float] = field(default_factory=dict)
    #: modules a call of which ran where the worker's CPU time cannot be read (no /proc: macOS):
    #: their CPU limits and budget no longer apply (a wall second is not a CPU second: a busy
    #: laptop must not read as slow code), the wall-clock backstops do
    cpu_unread: set[str] = field(default_factory=set)
    malformed: dict[tuple[str, str], str] = field(default_factory=dict)  # sent a bad reply once
    #: characters of printed output the rest of the run may still keep, visible tests' and
    #: hidden tests' apart: with one pool, what hidden calls printed set how much of a later
    #: visible test's output was kept, and a student read hidden inputs off their own visible
    #: results (blind red-team tester R-CX: ~10 bits a run on Gradescope, exact counts in JSON)
    printed_left: dict[str, int] = field(default_factory=dict)
    #: (module, target) → [(size class, CPU limit)] ascending, from cpu_call_limits' sized keys
    _by_size: dict[tuple[str, str], list[tuple[int, float]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.printed_left = dict.fromkeys(("visible", "hidden"), PRINTED_PER_RUN * self.sandbox.spec.output_bytes)

    def time_left(self, module: str) -> float:
        """What is left of the module's budget, as a fraction of it (≤ 0: used up)."""
        wall = 1 - self.spent.get(module, 0.0) / self.skill_time
        if module not in self.cpu_limits or module in self.cpu_unread:
            return wall
        return min(wall, 1 - self.cpu_charged(module) / self.cpu_limits[module][1])

    def cpu_charged(self, module: str) -> float:
        """CPU seconds counted against the module's budget: its calls that finished (or
        raised, or used up the budget itself), not those stopped at their own call limit."""
        return self.cpu_spent.get(module, 0.0) - self.cpu_timed_out.get(module, 0.0)

    def deadline_for(self, module: str, target: str | None = None, size: int | None = None) -> tuple[float, float | None, bool]:
        """(wall seconds this call of ``target`` may take, CPU seconds it may use or None,
        whether the skill's budget rather than the per-call limit sets them); ``size``: the
        call's size_class."""
        wall_left = self.skill_time - self.spent.get(module, 0.0)
        wall, by_budget = (wall_left, True) if wall_left < self.call_timeout else (self.call_timeout, False)
        if module not in self.cpu_limits or module in self.cpu_unread:
            return wall, None, by_budget
        per_call, budget = self.cpu_limits[module]
        per_call = self.cpu_call_limits.get(module, {}).get(target or "", per_call)
        if target is not None and size is not None:
            per_call = self._sized_limit(module, target, size, per_call)
        cpu_left = budget - self.cpu_charged(module)
        if cpu_left < per_call:
            return wall, cpu_left, True
        return wall, per_call, by_budget

    def _sized_limit(self, module: str, target: str, size: int, whole: float) -> float:
        """The limit of a call of ``target`` in size class ``size``: the largest limit of its
        size classes up to the smallest measured one that is not smaller than ``size`` (a
        larger input never gets less than a smaller one). A call larger than every measured
        one, or of a target measured without sizes, gets ``whole``: the target's costliest."""
        key = (module, target)
        if key not in self._by_size:
            prefix = target + SIZE_SEP
            self._by_size[key] = sorted(
                (int(name[len(prefix) :]), seconds)
                for name, seconds in self.cpu_call_limits.get(module, {}).items()
                if name.startswith(prefix) and name[len(prefix) :].isdigit()
            )
        limit = None
        for measured, seconds in self._by_size[key]:
            limit = seconds if limit is None else max(limit, seconds)
            if measured >= size:
                return limit
        return whole

    def charge(
        self,
        module: str,
        seconds: float,
        cpu: float | None,
        timed_out: bool = False,
        target: str | None = None,
        size: int | None = None,
    ) -> None:
        """A call took ``seconds`` of wall time and ``cpu`` seconds of the worker's CPU time
        (None where it cannot be read: the wall time counts instead); ``timed_out``: it was
        stopped at its own per-call limit (not the budget's), so its CPU time is not charged
        to the skill's budget (``cpu_charged``). The wall clock, a backstop for code that
        sleeps, counts every call."""
        self.spent[module] = self.spent.get(module, 0.0) + seconds
        if cpu is None:
            self.cpu_unread.add(module)
        used = seconds if cpu is None else cpu  # the report's figure
        self.cpu_spent[module] = self.cpu_spent.get(module, 0.0) + used
        self.cpu_slowest[module] = max(self.cpu_slowest.get(module, 0.0), used)
        if target is not None:
            by_target = self.cpu_slowest_by_target.setdefault(module, {})
            for name in (target,) if size is None else (target, sized(target, size)):
                by_target[name] = max(by_target.get(name, 0.0), used)
        if timed_out:
            self.cpu_timed_out[module] = self.cpu_timed_out.get(module, 0.0) + used
