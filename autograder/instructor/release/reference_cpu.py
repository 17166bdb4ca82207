"""``python -m autograder reference-cpu [--check]``: measure the worker CPU time the
reference solutions' calls — and those of ``[limits] slow_solutions``, correct submissions
written slowly on purpose — take in a full grade (hidden tests included) and write each
skill's ``tests/suites/<skill>/snapshots/reference_cpu.toml``, the table a run's CPU-time
limits come from (autograder/runner/cpu_limits.py). ``--check`` (``make check``) writes
nothing and names every table that is missing or no longer right for the reference.

Each is graded ``RUNS`` times with the CPU limits off (only the wall-clock backstops), and
the largest figure of each target (function, class, probe, import) over all of them counts:
a limit from the reference alone would be no limit for a correct function written with
Python loops over elements, 30–60 × slower than the reference's (docs/time-limits.md). A shipped table is kept while the new
figures are within cpu_limits.SLACK × of it (cpu_limits.covers) and its calibration within
``CALIBRATION_SLACK`` of this machine's, so running this twice writes the same bytes.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

from ...config import Config
from ...runner import cpu_limits
from ...runner.grade import GradeRequest, grade

RUNS = 2
CALIBRATION_SLACK = 2.0


def measure(config: Config, runs: int = RUNS) -> dict[str, cpu_limits.ReferenceCpu]:
    """{skill id: the figures of the reference and slow_solutions, rounded up (cpu_limits.round_up)}."""
    slowest: dict[str, dict[str, float]] = {}
    total: dict[str, float] = {}
    tests: dict[str, float] = {}  # the reference's own tests, wall seconds by skill: the least of the runs
    calibration = cpu_limits.calibrate()
    with tempfile.TemporaryDirectory(prefix="autograder-reference-cpu-") as tmp:
        for run, (submission, what) in enumerate(_measured(config) * runs):
            report_path = Path(tmp) / f"report-{run}.json"
            results = grade(GradeRequest(config, str(submission), seed=run, keep_report=report_path, cpu_limits=False))
            if results.status != "complete" or results.score < results.max_score:
                raise RuntimeError(
                    f"{what} scored {results.score:g}/{results.max_score:g} ({results.status}): "
                    "fix it (`make check`, `make test`) before measuring its CPU time"
                )
            report = json.loads(report_path.read_text(encoding="utf-8"))
            if submission == config.solutions_dir:
                for skill_id, seconds in _test_seconds(config, report).items():
                    tests[skill_id] = min(tests.get(skill_id, seconds), seconds)
            info = report["autograder"]
            for module, targets in info.get("slowest_call_cpu_seconds_by_target", {}).items():
                mine = slowest.setdefault(module, {})
                for target, seconds in targets.items():
                    mine[target] = max(mine.get(target, 0.0), seconds)
            for module, seconds in info.get("call_cpu_seconds", {}).items():
                total[module] = max(total.get(module, 0.0), seconds)
            calibration = min(calibration, cpu_limits.calibrate())
    out = {}
    for skill in config.skills.values():
        module = skill.module_name
        if module in total and slowest.get(module):
            out[skill.id] = cpu_limits.ReferenceCpu(
                {target: cpu_limits.round_up(seconds) for target, seconds in sorted(slowest[module].items())},
                cpu_limits.round_up(total[module]),
                float(f"{calibration:.3g}"),
                cpu_limits.round_up(tests[skill.id]) if skill.id in tests else None,
            )
    return out


def _test_seconds(config: Config, report: dict) -> dict[str, float]:
    """{skill id: wall seconds of its tests in ``report``} (setup, call and teardown of each)."""
    from ...runner.manifest import RunManifest

    manifest = RunManifest.plan(config)
    out: dict[str, float] = {}
    for test in report.get("tests", []):
        spec = manifest.test(test.get("nodeid", ""))
        if spec is not None:
            seconds = sum(float((test.get(stage) or {}).get("duration", 0.0)) for stage in ("setup", "call", "teardown"))
            out[spec.skill] = out.get(spec.skill, 0.0) + seconds
    return out


def _measured(config: Config) -> list[tuple[Path, str]]:
    """solutions/ and ``[limits] slow_solutions``: (folder, how a message names it)."""
    out = [(config.solutions_dir, "the reference solutions")]
    for rel in config.limits.slow_solutions:
        folder = config.root / rel
        if not folder.is_dir():
            raise RuntimeError(f"grading.toml [limits] slow_solutions: {rel!r} is not a folder — fix the path or remove it")
        out.append((folder, f"[limits] slow_solutions {rel!r} (a correct submission)"))
    return out


def still_right(shipped: cpu_limits.ReferenceCpu, new: cpu_limits.ReferenceCpu) -> bool:
    """The shipped table names the same targets, each figure within cpu_limits.SLACK of the
    new measurement (cpu_limits.covers), and the calibration within CALIBRATION_SLACK."""
    ratio = shipped.calibration_s / new.calibration_s
    return (
        set(shipped.calls) == set(new.calls)
        and all(cpu_limits.covers(shipped.calls[target], seconds) for target, seconds in new.calls.items())
        and cpu_limits.covers(shipped.all_calls_s, new.all_calls_s)
        and 1 / CALIBRATION_SLACK <= ratio <= CALIBRATION_SLACK
        # tests_s only orders the skills (wall time: load moves it): present is right enough
        and (shipped.tests_s is not None or new.tests_s is None)
    )


def _why_stale(shipped: cpu_limits.ReferenceCpu, new: cpu_limits.ReferenceCpu) -> str:
    """What moved, naming the keys: the first few."""
    moved = [f"calls.{t}: new" for t in sorted(set(new.calls) - set(shipped.calls))]
    moved += [f"calls.{t}: no longer called" for t in sorted(set(shipped.calls) - set(new.calls))]
    moved += [
        f"calls.{t}: ships {shipped.calls[t]:g} s, measures {new.calls[t]:g}"
        for t in sorted(set(shipped.calls) & set(new.calls))
        if not cpu_limits.covers(shipped.calls[t], new.calls[t])
    ]
    if not cpu_limits.covers(shipped.all_calls_s, new.all_calls_s):
        moved.append(f"all_calls_s: ships {shipped.all_calls_s:g} s, measures {new.all_calls_s:g}")
    if shipped.tests_s is None and new.tests_s is not None:
        moved.append("tests_s: new")
    if not 1 / CALIBRATION_SLACK <= shipped.calibration_s / new.calibration_s <= CALIBRATION_SLACK:
        moved.append(f"calibration_s: ships {shipped.calibration_s:g} s, this machine {new.calibration_s:g}")
    return "; ".join(moved[:4]) + (f"; {len(moved) - 4} more" if len(moved) > 4 else "")


def plan(config: Config, skills: list[str] | None = None) -> tuple[list[tuple[Path, str]], list[str]]:
    """(the tables to write, with their text; one line per table that is missing or stale),
    for ``skills`` (every skill: None; only those are graded)."""
    writes, problems = [], []
    for skill, new in measure(config.select(skills)).items():
        path = cpu_limits.table_path(config.suites_dir, skill)
        rel = path.relative_to(config.root)
        try:
            shipped = cpu_limits.load(path)
        except cpu_limits.TableError as exc:
            shipped = None
            problems.append(str(exc))
        if shipped is None:
            if path.exists():
                pass  # named above
            else:
                problems.append(f"{rel}: missing — run `python -m autograder reference-cpu` and commit")
        elif still_right(shipped, new):
            continue
        else:
            problems.append(f"{rel}: stale ({_why_stale(shipped, new)}) — run `python -m autograder reference-cpu` and commit")
            if still_right(replace(shipped, tests_s=new.tests_s), new):
                new = replace(shipped, tests_s=new.tests_s)  # only tests_s was missing: the limits stay as shipped
        writes.append((path, cpu_limits.render(new, skill)))
    return writes, problems


def stale(config: Config, skills: list[str] | None = None) -> list[str]:
    return plan(config, skills)[1]


def write(config: Config, skills: list[str] | None = None) -> list[Path]:
    written = []
    for path, text in plan(config, skills)[0]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
