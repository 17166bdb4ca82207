"""The sandbox's fork server of a grading run, started once, as early as the trusted
process allows.

The trusted pytest process calls ``start`` when its plugin is imported
(runner/plugin/server.py), or before that: a process started ahead of its run
(runner/boot.py) calls it right after ``import torch``, so the server's warm-up and
preloads (sympy, ~0.25 s) overlap the rest of pytest's start-up instead of delaying the
first worker. Either way the server is forked from a process that has imported torch and
computed nothing, with no test collected (so no test module, hidden input or reference
result is in the memory workers inherit), and workers inherit torch and nothing else of
ours but the sandbox modules below.
"""

from __future__ import annotations

import gc
import json

#: optional conveniences for submissions, imported once here rather than in every worker
PRELOAD = ("math", "typing", "functools", "itertools", "dataclasses", "collections", "numbers", "warnings", "einops", "numpy", "torch.func", "torch.autograd.functional")

_SERVER: tuple[int, object] | None = None


def start() -> tuple[int, object]:
    """Fork the fork server now, unless this process already did; its (pid, control socket)."""
    global _SERVER
    if _SERVER is not None:
        return _SERVER
    # No cyclic collection while the long-lived modules load: the collector would walk
    # torch's objects again and again (~0.2 s of the import). What they made is frozen just
    # below, before the fork server is forked (see sandbox/zygote._zygote_main), and once the
    # tests are collected, when collection resumes (plugin/report.py).
    gc.disable()
    import torch
    import torch.nn.functional  # noqa: F401 - imported before the fork server starts, so workers inherit it

    from ..sandbox import probes as _probes  # noqa: F401 - preloaded for the workers
    from ..sandbox import worker as _worker  # noqa: F401 - preloaded for the workers
    from ..sandbox import zygote
    from ..sandbox.confine import set_dumpable

    for name in PRELOAD:
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
    _SERVER = server
    return server
