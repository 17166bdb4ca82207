"""How much room correct code has under its CPU-time limits: each correct style of
tests/submissions/styles/ (and the reference, and any folder named) graded in full with the
CPU limits off, and each target's costliest call in each size class set against the limit a
run with the shipped tables would give that call (``Runtime.deadline_for``, this machine's
scale) — the margin, limit ÷ CPU. grading.toml promises ≥ 3× for every correct style
(``[limits] slow_solutions``); docs/time-limits.md keeps the figures.

    .venv/bin/python tests/benchmarks/style_margins.py [--skill custom_backward] [--seed 12]
        [--top 12] [folder ...]

Prints the tightest calls first (target, size class, limit, CPU, style, margin) and exits 1
when one is under 3×. The figures are CPU seconds of the worker, so load moves them less
than wall time, but a busy machine still inflates them: measure quiet.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder.config import load
from autograder.runner import cpu_limits
from autograder.runner.grade import GradeRequest, grade
from autograder.testing.runtime import SIZE_SEP, Runtime

PROMISED = 3.0


def _runtime(config, calibration_s: float) -> Runtime:
    """A Runtime holding only the run's CPU limits: the limits' own arithmetic, nothing else."""
    limits = cpu_limits.run_limits(config, calibration_s)
    no_sandbox = SimpleNamespace(spec=SimpleNamespace(output_bytes=0))  # no call is made through it
    runtime = Runtime(sandbox=no_sandbox, modules={}, call_timeout=float("inf"), budget_deadline=float("inf"))  # type: ignore[arg-type]
    runtime.cpu_limits = {module: (per_call, budget) for module, (per_call, budget) in limits.skills.items()}
    runtime.cpu_call_limits = limits.calls
    return runtime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="submissions (default: solutions/ and every style)")
    parser.add_argument("--skill", action="append", help="only these skills (repeatable)")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--top", type=int, default=12, help="how many of the tightest calls to print")
    args = parser.parse_args()
    config = load(ROOT / "grading.toml").select(args.skill)
    styles = sorted(p for p in (ROOT / "tests/submissions/styles").iterdir() if p.is_dir())
    folders = args.folders or [config.solutions_dir, *styles]
    calibration = cpu_limits.calibrate()
    runtime = _runtime(config, calibration)
    rows = []  # (margin, module.target, size, limit, cpu, style)
    with tempfile.TemporaryDirectory(prefix="style-margins-") as tmp:
        for folder in folders:
            report = Path(tmp) / f"{folder.name}.json"
            results = grade(GradeRequest(config, str(folder), seed=args.seed, keep_report=report, cpu_limits=False))
            print(f"{folder.name}: {results.score:g}/{results.max_score:g}", file=sys.stderr)
            info = json.loads(report.read_text(encoding="utf-8"))["autograder"]
            for module, targets in info.get("slowest_call_cpu_seconds_by_target", {}).items():
                for key, cpu in targets.items():
                    target, _, size = key.partition(SIZE_SEP)
                    _, limit, _ = runtime.deadline_for(module, target, int(size) if size.isdigit() else None)
                    if limit is None or cpu <= 0:
                        continue
                    rows.append((limit / cpu, f"{module}.{target}", size or "all", limit, cpu, folder.name))
    rows.sort()
    tightest: dict[tuple[str, str], tuple] = {}
    for row in rows:
        tightest.setdefault((row[1], row[2]), row)
    print(f"{'target':<46} {'size':>6} {'limit':>7} {'CPU':>7} {'style':<20} margin")
    for margin, target, size, limit, cpu, style in sorted(tightest.values())[: args.top]:
        print(f"{target:<46} {size:>6} {limit:>7.3f} {cpu:>7.4f} {style:<20} {margin:5.1f}×")
    worst = min((row[0] for row in rows), default=float("inf"))
    print(f"least room: {worst:.1f}× (promised ≥ {PROMISED:g}×)")
    return 0 if worst >= PROMISED else 1


if __name__ == "__main__":
    sys.exit(main())
