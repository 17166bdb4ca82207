"""The session-wide state every test's ``Submission`` shares (remote.py): the graded
modules, what their calls may still take (wall-clock and CPU budgets, per-call CPU limits,
from runner/cpu_limits.py) and what they took, functions that timed out, modules that
failed to import, the printed output the run may still keep."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox.client import Sandbox
from .failures import SubmissionError

#: printed output kept per run, in multiples of ``[limits] output_kib`` (per call and per test
#: the cap is ``output_kib`` itself); and the number of printed entries kept per test
PRINTED_PER_RUN = 16
PRINTED_ENTRIES = 20
#: the name a module's import has among its call targets (CPU limits, reference_cpu.toml):
#: a keyword, so no function of the module can have it
IMPORT_TARGET = "import"


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
    #: other files the submission's code can import (sibling exercise modules not graded in
    #: this run, helper modules): name → read-only copy
    importable: dict[str, Path] = field(default_factory=dict)
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
    #: the skill's costliest call needs
    cpu_call_limits: dict[str, dict[str, float]] = field(default_factory=dict)
    cpu_spent: dict[str, float] = field(default_factory=dict)  # module → worker CPU seconds its calls used
    cpu_slowest: dict[str, float] = field(default_factory=dict)  # module → CPU seconds of its costliest call
    #: module → target → CPU seconds of its costliest call (what the reference-cpu tables record)
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
    printed_left: int = 0  # characters of printed output the rest of the run may still keep

    def __post_init__(self) -> None:
        self.printed_left = PRINTED_PER_RUN * self.sandbox.spec.output_bytes

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

    def deadline_for(self, module: str, target: str | None = None) -> tuple[float, float | None, bool]:
        """(wall seconds this call of ``target`` may take, CPU seconds it may use or None,
        whether the skill's budget rather than the per-call limit sets them)."""
        wall_left = self.skill_time - self.spent.get(module, 0.0)
        wall, by_budget = (wall_left, True) if wall_left < self.call_timeout else (self.call_timeout, False)
        if module not in self.cpu_limits or module in self.cpu_unread:
            return wall, None, by_budget
        per_call, budget = self.cpu_limits[module]
        per_call = self.cpu_call_limits.get(module, {}).get(target or "", per_call)
        cpu_left = budget - self.cpu_charged(module)
        if cpu_left < per_call:
            return wall, cpu_left, True
        return wall, per_call, by_budget

    def charge(self, module: str, seconds: float, cpu: float | None, timed_out: bool = False, target: str | None = None) -> None:
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
            by_target[target] = max(by_target.get(target, 0.0), used)
        if timed_out:
            self.cpu_timed_out[module] = self.cpu_timed_out.get(module, 0.0) + used
