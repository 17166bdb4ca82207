"""Which of torch's own modules a worker cannot import, and what importing each costs: the
list behind ``autograder/sandbox/libraries.py``'s ``WARMED_TORCH_MODULES``. Rerun it when
torch's pin moves.

A worker refuses ``ctypes`` (sandbox/rawmemory.py: it reaches raw memory): the fork server
takes it out of ``sys.modules`` after torch's import, and a worker's ``import ctypes`` fails.
A module of torch that imports ctypes when it is first imported — most load ``torch._dynamo``
— therefore fails in a worker ("No module named 'ctypes'"), and a correct submission that
imports it loses the skill. This script imports torch (and what a fork server preloads),
takes ctypes out as the fork server does, refuses it as a worker does, then imports each
public module of torch (no ``_`` in its path; not ``distributed``, ``cuda``, ``onnx`` and
other device or deployment packages) in a process of its own, forked from that state, and
prints those that fail or take more than ``--slow`` CPU seconds.

    .venv/bin/python tests/benchmarks/worker_imports.py [--slow 0.08] [--prefix torch.nn]

No target: a module attention code may import that fails here belongs in
``WARMED_TORCH_MODULES`` (made in the fork server where a submission imports it).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

#: packages of torch for devices, distribution and deployment: no exercise imports them
SKIPPED = {"distributed", "cuda", "xpu", "mps", "mtia", "onnx", "backends", "testing", "utils.tensorboard", "_inductor"}


def public_modules(prefix: str) -> list[str]:
    """Dotted names of the public modules under torch's folder (read from the files: walking
    the packages would import them here)."""
    import torch

    root = Path(torch.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts[1:]) or ".".join(parts[1:3]) in SKIPPED or (parts[1:2] and parts[1] in SKIPPED):
            continue
        name = ".".join(parts)
        if name.startswith(prefix):
            names.append(name)
    return names


def try_in_a_fork(name: str) -> tuple[float, str]:
    """(CPU seconds, "ok" or the error) of importing ``name`` in a child of this process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        start = time.process_time()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(name)
            result = "ok"
        except BaseException as exc:  # what the worker would see
            result = f"{type(exc).__name__}: {str(exc).splitlines()[0][:70] if str(exc) else ''}"
        os.write(write, f"{time.process_time() - start:.3f} {result}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        text = fh.read().decode()
    os.waitpid(pid, 0)
    seconds, _, result = text.partition(" ")
    return float(seconds or 0), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=float, default=0.08, help="also list modules whose import takes more CPU s than this")
    parser.add_argument("--prefix", default="torch", help="only modules whose name starts with this")
    args = parser.parse_args()

    from autograder.sandbox import libraries, rawmemory, zygote

    for name in zygote.ALWAYS_PRELOAD:  # what every fork server has loaded before its first worker
        try:
            importlib.import_module(name)
        except Exception:
            pass
    names = [n for n in public_modules(args.prefix) if n not in sys.modules]
    rawmemory.remove_ctypes(keep=("autograder.",))
    sys.meta_path.insert(0, rawmemory.NotImportable())
    failing = 0
    for name in names:
        seconds, result = try_in_a_fork(name)
        if result != "ok" or seconds > args.slow:
            failing += result != "ok"
            warmed = " (warmed: WARMED_TORCH_MODULES)" if name in libraries.WARMED_TORCH_MODULES else ""
            print(f"{name:55s} {seconds:6.3f} CPU s  {result}{warmed}")
    print(f"{len(names)} modules not loaded by a fork server tried; {failing} fail in a worker")
    return 0


if __name__ == "__main__":
    sys.exit(main())
