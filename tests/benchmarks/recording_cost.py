"""What the rule checks' recording of operators costs a call: CPU of custom_backward's
``softmax_backward`` and ``attention_backward`` inside a ``DispatchRecorder`` window against
the same call bare, in this process, for the reference, two looping styles and a
``softmax_backward`` that loops over every element (blind fairness tester R-BW's style, the
loop the contract warns about). The call is made ~15 frames deep, as in a worker (its
fork server's, preloaded process's and probe's frames below the submission's).

    .venv/bin/python tests/benchmarks/recording_cost.py [--rounds 5] [--size 64]

Prints, per submission and function, the best of ``--rounds`` CPU milliseconds bare and
recorded and their ratio. For an A/B, run the script of each tree (it imports the
autograder package beside it). Issue 32, point 1: a slow but correct style must finish
within a limit measured on the reference with a factor, so the recording's cost on a loop is
what decides whether such a style keeps its points.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch

from autograder.sandbox.probes import DispatchRecorder

#: a worker's frames below the submission's (measured: ~15 on the stack of a recorded call)
DEPTH = 15

SCALAR_LOOP = """\
import itertools
import torch


def softmax_backward(d_weights, weights):
    out = torch.empty(weights.shape, dtype=weights.dtype)
    for idx in itertools.product(*[range(n) for n in weights.shape[:-1]]):
        a, g = weights[idx], d_weights[idx]
        D = (a * g).sum()
        for j in range(weights.shape[-1]):
            out[idx + (j,)] = a[j] * (g[j] - D)
    return out
"""


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _deep(n: int, fn):
    return fn() if n == 0 else _deep(n - 1, fn)


def _best(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=64, help="L = S of the inputs (the hidden tests draw up to 64)")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    n = args.size
    weights = torch.softmax(torch.randn(2, 3, n, n, dtype=torch.float64), -1)
    d_weights = torch.randn_like(weights)
    q, k, v, d_out = (torch.randn(2, 3, n, 8, dtype=torch.float64) for _ in range(4))

    with tempfile.TemporaryDirectory() as scratch:
        scalar = Path(scratch) / "custom_backward.py"
        scalar.write_text(SCALAR_LOOP)
        subjects = {
            "reference": ROOT / "solutions/custom_backward.py",
            "styles/loops": ROOT / "tests/submissions/styles/loops/custom_backward.py",
            "styles/elementwise": ROOT / "tests/submissions/styles/elementwise/custom_backward.py",
            "scalar loop": scalar,
        }
        print(f"custom_backward on [2, 3, {n}, {n}] float64, best of {args.rounds}, CPU ms ({DEPTH} frames below)")
        print(f"{'submission':<20} {'function':<20} {'bare':>9} {'recorded':>9} {'ratio':>6}")
        for label, path in subjects.items():
            module = _load(path, f"_recording_cost_{label.replace('/', '_').replace(' ', '_')}")
            own = str(path.parent) + "/"
            calls = {"softmax_backward": lambda m=module: m.softmax_backward(d_weights, weights)}
            if hasattr(module, "attention_backward"):
                calls["attention_backward"] = lambda m=module: m.attention_backward(d_out, q, k, v, weights, 0.35)
            for name, call in calls.items():
                call()  # first-use costs out of the figures

                def recorded(call=call, own=own):
                    with torch.no_grad(), DispatchRecorder({}, set(), own, "backward"):
                        _deep(DEPTH, call)

                bare = _best(lambda call=call: _deep(DEPTH, call), args.rounds)
                watched = _best(recorded, args.rounds)
                print(f"{label:<20} {name:<20} {bare:>9.2f} {watched:>9.2f} {watched / bare:>5.1f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
