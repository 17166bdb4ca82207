"""Ship a small trusted procedure to the worker.

    @probe
    def loss_gradient(ctx, x, w_q):
        import torch
        attention = ctx.module("custom_backward").attention
        ...
        return {"loss": loss.detach(), "grad": w_q.grad}

    result = sub.custom_backward.run(loss_gradient, x, w_q)

The function's source is sent to the worker and compiled there, so it must be
self-contained (imports inside the body) and must not close over variables. The
submission can read a probe's source: put glue in probes, never expected values.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Probe:
    name: str
    source: str


def probe(fn: Callable) -> Probe:
    if fn.__code__.co_freevars:
        raise TypeError(f"probe {fn.__name__} closes over {fn.__code__.co_freevars}; pass them as arguments")
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    return Probe(fn.__name__, "\n".join(lines) + "\n")
