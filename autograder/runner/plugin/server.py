"""The sandbox's fork server, started as early as a grading run's pytest process allows.

Imported by the plugin package, i.e. when pytest loads ``-p autograder.runner.plugin``:
torch is imported, nothing computed, no test collected. Forking the server now lets its
warm-up overlap the rest of pytest's start-up instead of delaying the first test, and
workers inherit an imported torch and nothing else of ours.
"""

from __future__ import annotations

import gc
import json
import sys

if any(arg.startswith("--ag-run") for arg in sys.argv):
    # No cyclic collection while the long-lived modules load: the collector would walk
    # torch's objects again and again (~0.2 s of the import). What they made is frozen
    # before the fork server is forked (see sandbox/zygote._zygote_main) and once the
    # tests are collected, when collection resumes (plugin/report.py).
    gc.disable()

import torch
import torch.nn.functional  # noqa: F401 - imported before the fork server starts, so workers inherit it

from ...sandbox import probes as _probes  # noqa: F401 - preloaded for the workers
from ...sandbox import worker as _worker  # noqa: F401 - preloaded for the workers
from ...sandbox import zygote
from ...sandbox.confine import set_dumpable

_PRELOAD = ("math", "typing", "functools", "itertools", "dataclasses", "collections", "numbers", "warnings", "einops", "numpy", "torch.func", "torch.autograd.functional")


def _start_server_early() -> tuple[int, object] | None:
    """In a grading run (``--ag-run`` on the command line), fork the fork server now."""
    if not any(arg.startswith("--ag-run") for arg in sys.argv):
        return None
    for name in _PRELOAD:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - optional conveniences for submissions
            pass
    set_dumpable(False)  # same-uid processes cannot read our memory via /proc
    gc.freeze()  # the fork server (and every worker) never walks these objects
    server = zygote.start()
    try:  # first thing: its longest import, while this process configures and collects
        server[1].send(json.dumps({"op": "preload", "modules": list(zygote.ALWAYS_PRELOAD)}).encode())
    except OSError:
        pass  # a server that is gone is reported by the first worker request
    # The trusted side's tensors are tiny: one intra-op thread avoids stalls of several ms
    # per op on a loaded machine (and the fork server is already forked, so it is unaffected).
    torch.set_num_threads(1)
    return server


#: (pid, socket) of the fork server of this grading run; None outside one
EARLY_SERVER = _start_server_early()
