"""CPU of the trusted side's own work that grows with a submission, apart from its calls:
the static rule scans of the exercise files, the text rendering of long feedback, and what
a batch redoes for each student (the suite identity, the reference CPU tables).

    .venv/bin/python tests/benchmarks/trusted_cpu.py [--rounds 5]

Each figure is the best of ``--rounds`` rounds of process CPU time, with every cache
cleared at the start of a round, so it is what one run pays the first time:

* scan: every Python file of solutions/ and tests/submissions/styles/, each scanned as the
  suites do (a deny-list of names over the whole file, one scoped to a function, and the
  imports a rule must follow);
* render: the text format of a results file whose every field holds 32 KiB of text (a
  submission's long message or printed output);
* batch, per student: the suite identity (``identity.identify``) and both reads of the
  skills' reference CPU tables (``test_seconds``, ``run_limits``), as a batch runs them for
  each student — the first student pays the parses, a later one (shown) what is left.

Compare two checkouts by running this script from each (the figures are of the tree it
sits in); docs/PERFORMANCE.md has the figures of each change.
"""

from __future__ import annotations

import argparse
import glob
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "grader"))


def best(rounds: int, clear, work) -> float:
    times = []
    for _ in range(rounds):
        clear()
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def scan_figure(rounds: int) -> tuple[int, float]:
    from autograder.testing.source import checks, tree

    files = sorted(glob.glob(str(ROOT / "solutions" / "*.py"))) + sorted(glob.glob(str(ROOT / "tests/submissions/styles/*/*.py")))
    sources = [Path(f).read_text(encoding="utf-8") for f in files]
    available = {Path(f).stem: s for f, s in zip(files[:6], sources[:6])}

    def clear() -> None:
        for cached in (checks._scan, tree._parse, getattr(checks, "_imported_scopes", None)):
            if hasattr(cached, "cache_clear"):
                cached.cache_clear()

    def work() -> None:
        for source in sources:
            checks.scan(source, {"softmax", "scaled_dot_product_attention", "autograd.grad"})
            checks.scan(source, {"softmax"}, scope=["softmax_rows"], dynamic=False)
            checks.imported_scopes(source, available)

    return len(sources), best(rounds, clear, work)


def render_figure(rounds: int) -> float:
    import test_writers

    from autograder import cli
    from autograder.config import load

    config = load(ROOT / "grading.toml").select(["qkv"])
    results = test_writers._results(config, "x" * (1 << 15))
    return best(rounds, lambda: None, lambda: cli._render_safely(results, "text", config))


def batch_figure(rounds: int) -> tuple[float, float]:
    from autograder.config import load
    from autograder.runner import cpu_limits, identity

    config = load(ROOT / "grading.toml")

    def clear() -> None:
        for function in (identity.code_text, getattr(cpu_limits, "_load", None)):  # the base has neither cache
            cached = getattr(function, "cache_clear", None)
            if cached is not None:
                cached()

    def student() -> None:
        identity.identify(config)
        cpu_limits.test_seconds(config)
        cpu_limits.run_limits(config, calibration_s=0.01)

    first = best(rounds, clear, student)
    later = best(rounds, lambda: None, student)
    return first, later


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    count, scan = scan_figure(args.rounds)
    print(f"scan: {count} files, {scan * 1000:.0f} ms ({scan / count * 1000:.1f} ms a file)")
    print(f"render: text of a 32 KiB-per-field results file, {render_figure(args.rounds) * 1000:.0f} ms")
    first, later = batch_figure(args.rounds)
    print(f"batch, per student: suite identity and reference CPU tables, first {first * 1000:.0f} ms, later {later * 1000:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
