"""How much CPU time the submission's calls may use: from what the reference needs.

Each skill ships ``tests/suites/<skill>/snapshots/reference_cpu.toml`` (written by
``python -m autograder reference-cpu``, checked by its ``--check`` in ``make check``): the
worker CPU seconds the reference solution's calls into the skill's module used in a full
grade (hidden tests included) — under ``[calls]`` the costliest single call of each target
(a function, a class with the method calls a test makes on it, a rule check's probe
``probe:<name>``, the module's ``import``), and all its calls together — and the CPU seconds
a fixed pure-Python workload (``calibrate``) took on the machine that measured them. A run
then allows

    one call of T  max([limits] call_cpu_floor_s,  cpu_factor × T's costliest call) × scale
    the skill      max([limits] skill_cpu_floor_s, skill_cpu_factor × all calls)   × scale

where ``scale`` = this machine's calibration time over the table's, never below 1 (a slower
CPU gets more, a faster one never less). A limit per target, not per skill: an endless loop
in a function the reference runs in a millisecond is stopped after the floor (a fraction of
a second), not after what the skill's costliest call needs; what a looping submission costs
is the sum of its functions' limits. These limits count the worker's own CPU time, to the
nanosecond (sandbox.client.Worker.request), so a busy machine never reads as slow code; the
wall-clock ``[limits] call_timeout_s`` and ``skill_time_s`` stay as generous backstops (code
that sleeps, or a platform where CPU time cannot be read). A skill without a table keeps the
wall-clock limits alone.

The generator rounds each figure up to two significant digits and keeps a shipped table
while the new figures are within ``SLACK`` × (± ``NOISE_S``) of it either way (``covers``)
and name the same targets: CPU time on a shared machine varies from run to run, so rerunning
it rewrites nothing (byte-stable), and ``--check`` fails only when the reference's cost
really moved.
"""

from __future__ import annotations

import functools
import json
import math
import stat
import threading
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

TABLE_NAME = "reference_cpu.toml"
#: a scale never above this, whatever the calibration measured (a one-off hiccup)
MAX_SCALE = 8.0
#: a shipped figure is kept while a new measurement is within [figure / SLACK, figure × SLACK]
#: (± ``NOISE_S``): CPU time on a shared machine varies that much from run to run, and the
#: limits' factors leave room for it
SLACK = 3.0
#: the absolute noise allowed on top of SLACK: a call of a few milliseconds varies by about
#: this under load (the kernel updates a running thread's time at its scheduler tick)
NOISE_S = 0.01
#: the smallest figure a table holds (the reading is in nanoseconds; below this is noise)
MIN_FIGURE_S = 0.001
#: the calibration loop's size: ~5 ms of one core here, run CALIBRATION_RUNS times (the fastest counts)
CALIBRATION_STEPS = 60_000
CALIBRATION_RUNS = 3
_FIX = "run `python -m autograder reference-cpu` and commit the table"


@dataclass(frozen=True)
class ReferenceCpu:
    """One skill's table: CPU seconds of the reference's costliest call of each target (a
    function, a class — its constructor and the method calls a test makes on it —, a rule
    check's probe ``probe:<name>``, the module's ``import``), of all its calls together,
    and of the calibration workload, on the machine that measured them."""

    calls: Mapping[str, float]
    all_calls_s: float
    calibration_s: float
    #: wall seconds of the reference's own tests of the skill in a full grade, both sides of
    #: each test (pytest-json-report's durations): not a limit, the order in which a run's two
    #: trusted processes take the skills (runner/process/split.py: the costliest first)
    tests_s: float | None = None

    @property
    def slowest_call_s(self) -> float:
        return max(self.calls.values(), default=self.all_calls_s)


class TableError(ValueError):
    """A reference_cpu.toml that cannot be read: the message names the file, the key and the fix."""


def table_path(suites_dir: Path, skill: str) -> Path:
    return suites_dir / skill / "snapshots" / TABLE_NAME


def _figure(path: Path, key: str, value: object) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or value <= 0:  # type: ignore[arg-type, operator]
        raise TableError(f"{path}: {key} = {value!r} must be a number of CPU seconds above 0 — {_FIX}")
    return float(value)  # type: ignore[arg-type]


def load(path: Path) -> ReferenceCpu | None:
    """The table at ``path``; None when there is none (the skill keeps the wall-clock limits).
    A table is read once while its file stays the same (its inode, size and modification
    time): a batch asks for every skill's table twice for each student."""
    try:
        st = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return _load(path, st.st_ino, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _load(path: Path, _inode: int, _size: int, _mtime_ns: int) -> ReferenceCpu:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TableError(f"{path}: not a reference CPU table ({type(exc).__name__}: {exc}) — {_FIX}") from None
    for key in ("all_calls_s", "calibration_s", "calls"):
        if key not in data:
            hint = " (a table from before per-function limits: it had slowest_call_s)" if "slowest_call_s" in data else ""
            raise TableError(f"{path}: no {key}{hint} — {_FIX}")
    calls = data["calls"]
    if type(calls) is not dict or not calls:
        raise TableError(f"{path}: [calls] must name each function, class or probe with its CPU seconds — {_FIX}")
    unknown = sorted(set(data) - {"all_calls_s", "calibration_s", "calls", "tests_s"})
    if unknown:
        raise TableError(f"{path}: unknown key {unknown[0]!r} — {_FIX}")
    return ReferenceCpu(
        # a mapping no caller can change: the table is shared by every run that reads it
        MappingProxyType({str(target): _figure(path, f"calls.{target}", value) for target, value in calls.items()}),
        _figure(path, "all_calls_s", data["all_calls_s"]),
        _figure(path, "calibration_s", data["calibration_s"]),
        _figure(path, "tests_s", data["tests_s"]) if "tests_s" in data else None,
    )


def _toml_key(name: str) -> str:
    return name if name.replace("_", "a").isalnum() and name.isascii() else json.dumps(name)


def render(table: ReferenceCpu, skill: str) -> str:
    lines = [
        f"# generated by `python -m autograder reference-cpu` from solutions/ and tests/suites/{skill}/ — do not edit",
        "# worker CPU seconds of the calls of solutions/ and [limits] slow_solutions in a full grade, the costliest",
        "# of them: all calls, and under [calls] the costliest call of each function, class, probe and the import,",
        '# and as "<target>@<N>" its costliest call with at most N tensor elements in its arguments (N a power of 2)',
        "# (autograder/runner/cpu_limits.py)",
        f"all_calls_s = {table.all_calls_s!r}",
        f"calibration_s = {table.calibration_s!r}",
    ]
    if table.tests_s is not None:
        lines += [
            "# wall seconds of the reference's own tests: not a limit, the order two trusted processes take the skills in",
            f"tests_s = {table.tests_s!r}",
        ]
    lines += ["", "[calls]"]
    lines += [f"{_toml_key(target)} = {seconds!r}" for target, seconds in sorted(table.calls.items(), key=_by_target_then_size)]
    return "\n".join(lines) + "\n"


def _by_target_then_size(item: tuple[str, float]) -> tuple[str, int]:
    """A target's whole figure first, then its size classes (``<target>@<N>``, testing/runtime.py
    sized) in ascending order of N: the name's trailing digits compared as a number."""
    name = item[0]
    stem = name.rstrip("0123456789")
    return (stem, int(name[len(stem) :])) if stem != name else (name, -1)


def without_sizes(data: bytes, skill: str) -> bytes:
    """A table's bytes without its size classes (``<target>@<N>``), for the student tree: the
    sizes of the calls the reference made include the hidden tests' inputs, which stay hidden
    (a student's own grade runs the visible tests, each call then limited by its target's
    costliest call, as before sizes). Bytes that are not a readable table are kept as they
    are: a run names that problem when it loads them."""
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
        calls = {str(t): float(v) for t, v in parsed["calls"].items() if "@" not in str(t)}
        table = ReferenceCpu(calls, float(parsed["all_calls_s"]), float(parsed["calibration_s"]), parsed.get("tests_s"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return data
    return render(table, skill).encode("utf-8")


def round_up(seconds: float) -> float:
    """``seconds`` rounded up to two significant digits (0.123 → 0.13), at least
    ``MIN_FIGURE_S``: no noise digits in the table."""
    seconds = max(seconds, MIN_FIGURE_S)
    unit = 10.0 ** (math.floor(math.log10(seconds)) - 1)
    return round(math.ceil(seconds / unit - 1e-9) * unit, 6)


def covers(shipped: float, measured: float) -> bool:
    """A shipped figure still right for a new measurement: within ``SLACK`` × either way."""
    return measured <= SLACK * shipped + NOISE_S and shipped <= SLACK * measured + NOISE_S


def calibrate() -> float:
    """CPU seconds of a fixed pure-Python workload on this machine, the fastest of
    ``CALIBRATION_RUNS``: this thread's CPU time, so neither waiting for a busy core nor
    another thread of the process (the command line compiles the suites on one while a grade
    starts: runner/process/bytecode.py) counts — with the process's CPU time that thread made
    the scale, and so every limit of the run, ~1.5× too large."""
    best = math.inf
    for _ in range(CALIBRATION_RUNS):
        start = time.thread_time()
        acc, x = 0, 1
        for i in range(CALIBRATION_STEPS):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
            acc += x % (i + 1)
        best = min(best, time.thread_time() - start)
    return max(best, 1e-4)


class MachineSpeed:
    """``calibrate()`` for many runs in one process (a batch): measured on first use and again
    once the last figure is ``max_age_s`` old, so each run's limits still follow the machine
    as its load changes, at a fraction of the cost of a calibration per run. Thread-safe."""

    def __init__(self, max_age_s: float = 30.0) -> None:
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._value: float | None = None
        self._at = 0.0
        self.measured = 0  # how many calibrations ran

    def calibration_s(self) -> float:
        with self._lock:
            now = time.monotonic()
            if self._value is None or now - self._at > self.max_age_s:
                self._value, self._at = calibrate(), now
                self.measured += 1
            return self._value


def scale(table: ReferenceCpu, calibration_s: float) -> float:
    return min(MAX_SCALE, max(1.0, calibration_s / table.calibration_s))


def call_limit(table: ReferenceCpu, limits, by: float, target: str | None = None) -> float:
    """CPU seconds one call of ``target`` may use: max(``call_cpu_floor_s``, ``cpu_factor`` ×
    its own costliest reference call) × ``by`` (the machine's scale); a target the table does
    not name (a test path the reference never took) gets the skill's costliest call's."""
    reference = table.calls.get(target, table.slowest_call_s) if target is not None else table.slowest_call_s
    return round(max(limits.call_cpu_floor_s, limits.cpu_factor * reference) * by, 3)


def limits_for(table: ReferenceCpu, limits, by: float) -> tuple[float, float, dict[str, float]]:
    """(CPU seconds a call of a target the table does not name may use, CPU seconds all the
    skill's calls may use, {target: CPU seconds one call of it may use}), ``limits`` being
    ``[limits]`` (config.Limits) and ``by`` the machine's scale."""
    per_target = {target: call_limit(table, limits, by, target) for target in table.calls}
    per_call = call_limit(table, limits, by)
    budget = max(limits.skill_cpu_floor_s, limits.skill_cpu_factor * table.all_calls_s) * by
    return per_call, round(max(budget, per_call), 3), per_target


def test_seconds(config) -> dict[str, float]:
    """{skill id: its table's ``tests_s``} for the skills whose table has one (a table that
    cannot be read gives none: the limits report it, this only orders the skills)."""
    out = {}
    for skill in config.skills.values():
        try:
            table = load(table_path(config.suites_dir, skill.id))
        except TableError:
            continue
        if table is not None and table.tests_s is not None:
            out[skill.id] = table.tests_s
    return out


@dataclass
class RunCpuLimits:
    """A run's CPU limits: {module: [per call, per skill]} and {module: {target: per call}}."""

    skills: dict[str, list[float]]
    calls: dict[str, dict[str, float]]


def run_limits(config, calibration_s: float | None = None) -> RunCpuLimits:
    """The CPU limits of a run of ``config``'s skills that have a table (``[limits]
    cpu_factor`` 0 turns the CPU limits off: none)."""
    limits = config.limits
    if limits.cpu_factor <= 0:
        return RunCpuLimits({}, {})
    found = {skill.module_name: load(table_path(config.suites_dir, skill.id)) for skill in config.skills.values()}
    tables = {module: table for module, table in found.items() if table is not None}
    if not tables:
        return RunCpuLimits({}, {})
    measured = calibrate() if calibration_s is None else calibration_s
    out = RunCpuLimits({}, {})
    for module, table in tables.items():
        per_call, budget, per_target = limits_for(table, limits, scale(table, measured))
        out.skills[module] = [per_call, budget]
        out.calls[module] = per_target
    return out
