"""What the worker's confinement costs: time from asking the fork server for a worker to
its first answer, with and without the namespaces (everything else as a real run sets it
up on this machine: identity, Landlock, seccomp). Workers are started one at a time, the
two variants alternately, so machine load affects both alike; prints medians.

    .venv/bin/python tests/benchmarks/worker_start.py [--workers 40]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from autograder.config import load
from autograder.runner.policy import build_worker_spec
from autograder.sandbox.client import Sandbox
from autograder.sandbox.spec import WorkerSpec


def one_module_run(source: str) -> tuple[Path, WorkerSpec, list[str]]:
    """A run folder whose submission is one module ``m`` (``source``), and the worker spec a
    real run of this grading.toml gives it on this machine (with the notes on its confinement).
    The caller removes the folder."""
    run = Path(tempfile.mkdtemp(prefix="autograder-bench-"))
    run.chmod(0o711)
    (run / "submission").mkdir(mode=0o755)
    (run / "submission" / "m.py").write_text(source)
    (run / "scratch").mkdir(mode=0o711)
    spec, notes = build_worker_spec(
        load(ROOT / "grading.toml"), run / "submission", run / "scratch", protected=[ROOT, run / "private"]
    )
    spec.modules = ["m"]
    return run, spec, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=40)
    args = parser.parse_args()
    run, spec, notes = one_module_run("def echo(x):\n    return x\n")
    variants = {"as configured": spec}
    if spec.namespaces:
        variants["without namespaces"] = replace(spec, namespaces="")
    boxes = {name: Sandbox(s) for name, s in variants.items()}
    times: dict[str, list[float]] = {name: [] for name in variants}
    facts: dict[str, list[str]] = {}
    try:
        for _ in range(args.workers):
            for name, box in boxes.items():
                start = time.perf_counter()
                worker = box.worker()
                reply = worker.run(
                    "call", None, [], {"module": "m", "target": "echo", "args": [1], "kwargs": {}}, timeout=30, during="echo"
                )
                times[name].append(time.perf_counter() - start)
                assert reply.ok, reply.error
                facts[name] = worker.facts
                worker.close()
    finally:
        for box in boxes.values():
            box.close()
        shutil.rmtree(run, ignore_errors=True)
    print("\n".join(notes))
    for name in variants:
        ms = sorted(t * 1000 for t in times[name])
        print(
            f"{name:20s} median {statistics.median(ms):6.1f} ms   p90 {ms[int(len(ms) * 0.9) - 1]:6.1f} ms   ({len(ms)} workers)"
        )
        print(f"{'':20s} {', '.join(facts[name])}")


if __name__ == "__main__":
    main()
