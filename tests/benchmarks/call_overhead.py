"""What one sandboxed call costs apart from the submission's own work: CPU seconds per call
on the trusted side (this process's thread) and in the worker (read from /proc by the
client), for a plain call, a rule-watched call (``record_dispatch``) and a rule-watched call
with replaced kernels (``replace_ops``). The function called is tiny (a softmax of a 4×8
tensor), so what is measured is the round trip: encoding, the socket, the worker's
dispatch, the recorders, the CPU-time readings.

    .venv/bin/python tests/benchmarks/call_overhead.py [--calls 300] [--rounds 3]

Variants are run in turn, round after round, so machine load affects all alike; prints the
median over rounds of each figure (microseconds per call).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch
from worker_start import one_module_run  # this folder: the script's own (sys.path[0])

from autograder.sandbox.client import Sandbox

VARIANTS = {
    "plain call": {},
    "record_dispatch": {"record_dispatch": True},
    "record_dispatch + replace_ops": {"record_dispatch": True, "replace_ops": ["*scaled_dot_product*", "_make_dual"]},
}


def one_round(box: Sandbox, extra: dict, calls: int) -> tuple[float, float]:
    """(trusted CPU µs per call, worker CPU µs per call) for ``calls`` calls on a fresh worker."""
    worker = box.worker()
    worker.import_module("m", 30.0)
    x = torch.randn(4, 8)
    kwargs = dict(module="m", target="f", args=[x], kwargs={}, **extra)
    worker.run("call", None, [], kwargs, 30.0, "warm-up", 30.0)  # first use: caches, registrations
    trusted = worker_cpu = 0.0
    for _ in range(calls):
        start = time.thread_time()
        reply = worker.run("call", None, [], kwargs, 30.0, "call", 30.0)
        trusted += time.thread_time() - start
        worker_cpu += worker.last_cpu or 0.0
        assert reply.ok, reply.error
    worker.close()
    return trusted / calls * 1e6, worker_cpu / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    run, spec, _ = one_module_run("def f(x):\n    return x.softmax(-1)\n")
    try:
        box = Sandbox(spec)
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
        try:
            for _ in range(args.rounds):
                for name, extra in VARIANTS.items():
                    figures[name].append(one_round(box, extra, args.calls))
        finally:
            box.close()
        print(f"{args.calls} calls × {args.rounds} rounds; CPU µs per call (median of rounds)")
        print(f"{'variant':<32} {'trusted':>9} {'worker':>9} {'total':>9}")
        for name, rows in figures.items():
            trusted = statistics.median(r[0] for r in rows)
            worker = statistics.median(r[1] for r in rows)
            print(f"{name:<32} {trusted:>9.0f} {worker:>9.0f} {trusted + worker:>9.0f}")
    finally:
        shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
