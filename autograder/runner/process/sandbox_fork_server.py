"""The sandbox's fork server of a grading run (sandbox/zygote.py), started once per trusted
pytest process, by an explicit call: the grading plugin's first hook
(``pytest_load_initial_conftests`` in runner/plugin/__init__.py), as early as pytest lets a
plugin act — the command line parsed, no test collected, output not captured yet — or,
earlier still, by the Early launcher's process the moment its torch import is done
(early.py), which hands it to the plugin as ``--ag-fork-server PID:FD`` (``adopt``): the
server's first job, importing sympy (``zygote.ALWAYS_PRELOAD``, ~0.6 s), then overlaps
pytest's own start instead of delaying the first test. The server is forked from a process
that has imported torch and computed nothing (so no test module, hidden input or reference
result is in the memory workers inherit, and torch's intra-op thread pool, which does not
survive ``fork()`` once it has run, has never run: docs/ARCHITECTURE.md, *Processes*), and
workers inherit torch and nothing
else of ours but the sandbox modules below.
"""

from __future__ import annotations

import gc
import json
import socket

#: optional conveniences for submissions, imported once here rather than in every worker
PRELOAD = (
    "math",
    "typing",
    "functools",
    "itertools",
    "dataclasses",
    "collections",
    "numbers",
    "warnings",
    "einops",
    "numpy",
    "torch.func",
    "torch.autograd.functional",
)


def imports() -> None:
    """Import what the fork server is forked with (and, with the cyclic collector off, what
    makes it slow): torch, the sandbox's worker side, ``PRELOAD``. Computes nothing."""
    # No cyclic collection while the long-lived modules load: the collector would walk
    # torch's objects again and again (~0.2 s of the import). What they made is frozen just
    # below, before the fork server is forked (see sandbox/zygote._zygote_main), and once the
    # tests are collected, when collection resumes (plugin/report.py).
    gc.disable()
    import torch
    import torch.nn.functional  # imported before the fork server starts, so workers inherit it

    from ...sandbox import probes as _probes  # preloaded for the workers
    from ...sandbox import worker as _worker  # preloaded for the workers
    from ...sandbox import zygote

    for name in PRELOAD:
        try:
            __import__(name)
        except Exception:  # optional conveniences for submissions
            pass


def start() -> tuple[int, socket.socket]:
    """Fork the fork server now: its (pid, control socket). Once per process (the caller keeps it)."""
    imports()
    import torch

    from ...sandbox import channel, zygote
    from ...sandbox.confine import set_dumpable

    set_dumpable(False)  # same-uid processes cannot read our memory via /proc
    gc.freeze()  # the fork server (and every worker) never walks these objects
    server = zygote.start()
    try:  # first thing: its longest import, while this process configures and collects
        channel.send(server[1], json.dumps({"op": "preload", "modules": list(zygote.ALWAYS_PRELOAD)}).encode())
    except OSError:
        pass  # a server that is gone is reported by the first worker request
    # The trusted side's tensors are tiny: one intra-op thread avoids stalls of several ms
    # per op on a loaded machine (and the fork server is already forked, so it is unaffected).
    torch.set_num_threads(1)
    return server


def handed_over(server: tuple[int, socket.socket]) -> str:
    """How a process that started the server (early.py) names it to the plugin of the pytest
    run it becomes: the ``--ag-fork-server`` value ``adopt`` reads."""
    pid, control = server
    return f"{pid}:{control.fileno()}"


def adopt(value: str) -> tuple[int, socket.socket]:
    """The fork server this process started before it became a pytest run (``handed_over``)."""
    pid, fd = (int(part) for part in value.split(":"))
    return pid, socket.socket(fileno=fd)
