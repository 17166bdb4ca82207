"""No exercise code runs while a worker encodes its reply.

The reply is taken after the call returns, outside the rule's watch: code that ran then would
be seen by no recorder. Blind red-team tester R-P set ``torch.Tensor.detach`` to a function of
its own, which the encoder calls on every returned tensor, and there computed the gradients
with ``torch.autograd.grad`` into the placeholders its backward had returned: custom_backward
20/20 with autograd in backward. While a reply is encoded (``quiet()``):

- ``torch.Tensor`` and ``torch.nn.Parameter`` hold the attributes they held before any
  exercise code ran (what the exercise set or replaced is put back after, so its own code
  keeps working), so neither a method the encoder calls nor a ``__del__`` of a temporary runs
  the exercise's code;
- ``__torch_function__`` (a subclass's or a mode's) and ``__torch_dispatch__`` modes are off;
- the cyclic garbage collector is off (a finalizer of the exercise's runs at a collection);
- the encoder itself reads a value's type with exact checks and the type's own descriptors
  (protocol.py), never an attribute the value's class can define.

Written here: no library keeps a process's own code from running inside a stretch of it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_MISSING = object()


class PristineClasses:
    """The class dicts of ``classes`` as they were when made (before any exercise code)."""

    def __init__(self, classes: tuple[type, ...] = (torch.Tensor, torch.nn.Parameter)) -> None:
        self.saved = [(cls, dict(vars(cls))) for cls in classes]
        self.torch_names = dict(vars(torch))

    def changed_torch(self) -> list[str]:
        """What the exercise changed of ``torch.Tensor`` or ``torch.nn.Parameter`` (an attribute
        set, replaced or removed) or of ``torch``'s own names (replaced or removed; a submodule
        torch imports later only adds one), as a fact for a rule-checked call: the grader's glue
        between the recorded windows (reading a request, copying an argument) calls them, so a
        replaced one ran the exercise's code unwatched (blind red-team tester R-AS:
        ``torch.Tensor.view``)."""
        changed = [f"{cls.__name__}.{name}" for cls, saved in self.saved for name in self._changes(cls, saved)]
        now = vars(torch)
        changed += [f"torch.{k}" for k, v in self.torch_names.items() if now.get(k, _MISSING) is not v]
        if not changed:
            return []
        return [f"changed torch itself ({', '.join(sorted(changed)[:5])}): the grader calls it between its recordings"]

    def _changes(self, cls: type, saved: dict) -> dict:
        now = vars(cls)
        if len(now) == len(saved) and all(now.get(k, _MISSING) is v for k, v in saved.items()):
            return {}
        changes = {k: now[k] for k in now if k not in saved}  # added: theirs, removed while restored
        changes |= {k: now.get(k, _MISSING) for k, v in saved.items() if now.get(k, _MISSING) is not v}
        return changes

    @contextmanager
    def restored(self) -> Iterator[None]:
        """The classes as saved for the block; what the exercise had set is put back after."""
        undo = []
        for cls, saved in self.saved:
            changes = self._changes(cls, saved)
            for name, theirs in changes.items():
                undo.append((cls, name, theirs))
                _put(cls, name, saved.get(name, _MISSING))
        try:
            yield
        finally:
            for cls, name, theirs in reversed(undo):
                _put(cls, name, theirs)


def _put(cls: type, name: str, value: object) -> None:
    if value is _MISSING:
        if name in vars(cls):
            type.__delattr__(cls, name)
    else:
        type.__setattr__(cls, name, value)


@contextmanager
def _no_dispatch_modes() -> Iterator[None]:
    """The ``__torch_dispatch__`` modes left on, off for the block, then on again in their
    order (torch's own ``_disable_current_modes`` imports modules a serving worker may not
    have loaded: it is not used)."""
    popped = [torch._C._pop_torch_dispatch_stack(None) for _ in range(torch._C._len_torch_dispatch_stack())]
    try:
        yield
    finally:
        for mode in reversed(popped):
            torch._C._push_on_torch_dispatch_stack(mode)


@contextmanager
def quiet(classes: PristineClasses) -> Iterator[None]:
    """No exercise code can run inside the block (see the module's docstring)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        with classes.restored(), torch._C.DisableTorchFunction(), _no_dispatch_modes():
            yield
    finally:
        if collecting:
            gc.enable()
