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

A probe that exercises one target of the submission (a function, or a class whose methods
it calls) names it: ``@probe(target="sdpa")``. The probe's calls and that target's plain
calls then share one fate in a run: once either has timed out, neither is called again
(the function's own tests already fail; a looping function costs its own call limit once,
not once more per probe that reaches it).
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Probe:
    name: str
    source: str
    #: the one submission target (function or class) the probe exercises, or None
    target: str | None = None
    #: how feedback names the call ("AttentionFunction.forward(…) and .backward(…)"), else
    #: the probe's own name, which means nothing to a student
    shows: str | None = None


def probe(fn: Callable | None = None, *, target: str | None = None, shows: str | None = None) -> Any:
    """``@probe`` or ``@probe(target="name", shows="name(…) …")``: the function as a ``Probe``."""
    if fn is None:
        return lambda f: probe(f, target=target, shows=shows)
    if fn.__code__.co_freevars:
        raise TypeError(f"probe {fn.__name__} closes over {fn.__code__.co_freevars}; pass them as arguments")
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    return Probe(fn.__name__, "\n".join(lines) + "\n", target, shows)
