"""``python -m autograder reference-cpu [--check]``: measure the worker CPU time the
reference solutions' calls take in a full grade (hidden tests included) and write each
skill's ``tests/suites/<skill>/snapshots/reference_cpu.toml``, the table a run's CPU-time
limits come from (autograder/runner/cpu_limits.py). ``--check`` (``make check``) writes
nothing and names every table that is missing or no longer right for the reference.

The reference is graded ``RUNS`` times with the CPU limits off (only the wall-clock
backstops), and the largest figure of each counts. A shipped table is kept while the new
figures are within cpu_limits.SLACK × of it (cpu_limits.covers) and its calibration within
``CALIBRATION_SLACK`` of this machine's, so running this twice writes the same bytes.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ...config import Config
from ...runner import cpu_limits
from ...runner.grade import GradeRequest, grade

RUNS = 2
CALIBRATION_SLACK = 2.0


def measure(config: Config, runs: int = RUNS) -> dict[str, cpu_limits.ReferenceCpu]:
    """{skill id: the reference's figures, rounded up (cpu_limits.round_up)}."""
    slowest: dict[str, float] = {}
    total: dict[str, float] = {}
    calibration = cpu_limits.calibrate()
    with tempfile.TemporaryDirectory(prefix="autograder-reference-cpu-") as tmp:
        for run in range(runs):
            report_path = Path(tmp) / f"report-{run}.json"
            results = grade(GradeRequest(config, str(config.solutions_dir), seed=run, keep_report=report_path, cpu_limits=False))
            if results.status != "complete" or results.score < results.max_score:
                raise RuntimeError(
                    f"the reference solutions scored {results.score:g}/{results.max_score:g} ({results.status}): "
                    "fix them (`make check`) before measuring their CPU time"
                )
            info = json.loads(report_path.read_text(encoding="utf-8"))["autograder"]
            for module, seconds in info.get("slowest_call_cpu_seconds", {}).items():
                slowest[module] = max(slowest.get(module, 0.0), seconds)
            for module, seconds in info.get("call_cpu_seconds", {}).items():
                total[module] = max(total.get(module, 0.0), seconds)
            calibration = min(calibration, cpu_limits.calibrate())
    out = {}
    for skill in config.skills.values():
        module = skill.module_name
        if module in total:
            out[skill.id] = cpu_limits.ReferenceCpu(
                cpu_limits.round_up(slowest.get(module, 0.0)),
                cpu_limits.round_up(total[module]),
                float(f"{calibration:.3g}"),
            )
    return out


def _still_right(shipped: cpu_limits.ReferenceCpu, new: cpu_limits.ReferenceCpu) -> bool:
    ratio = shipped.calibration_s / new.calibration_s
    return (
        cpu_limits.covers(shipped.slowest_call_s, new.slowest_call_s)
        and cpu_limits.covers(shipped.all_calls_s, new.all_calls_s)
        and 1 / CALIBRATION_SLACK <= ratio <= CALIBRATION_SLACK
    )


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
        elif _still_right(shipped, new):
            continue
        else:
            problems.append(
                f"{rel}: stale (ships slowest call {shipped.slowest_call_s:g} s, all calls {shipped.all_calls_s:g} s, "
                f"calibration {shipped.calibration_s:g} s; the reference now measures {new.slowest_call_s:g}, "
                f"{new.all_calls_s:g}, {new.calibration_s:g}) — run `python -m autograder reference-cpu` and commit"
            )
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
