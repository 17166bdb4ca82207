"""How a trusted process starts: one ``Launcher`` protocol, three launchers.

``launch(plan)`` returns a ``TrustedProcess`` (trusted.py) running ``trusted.command`` for
the plan, waiting for its manifest — the same program, arguments, environment and folder
whichever launcher made it; they differ only in when the interpreter started and what it
had imported by then:

- ``Fresh``: a new ``python -m pytest`` (``trusted.popen``), started once grading.toml is
  valid. What every run uses unless told otherwise;
- ``Early`` (early.py): started by ``python -m autograder grade`` as its first act, before the
  command line has imported anything but ``os`` and ``struct`` or read grading.toml; it imports pytest and torch
  while the command line checks the config and the submission (a bad config is reported at
  once and the process stopped, mid-import if need be) and becomes the plan's process when
  ``launch`` sends it the arguments. A plan for another root (or a process that died, or
  was used) gets a ``Fresh`` one instead;
- ``Preloaded`` (preloaded_launcher.py): forked from a process that imported pytest and
  torch once — one per student of a batch, or each later ``grade`` of a working session from
  the warm server the first one left (warm.py).

The second trusted process of a run on two cores is not launched: the trusted process forks
itself after collection (split.py) and that child stays part of the same run.
"""

from __future__ import annotations

from typing import Protocol

from . import trusted
from .early import Early, early_root  # the Early launcher lives with the process it starts
from .trusted import Plan, TrustedProcess

__all__ = ["FRESH", "Early", "Fresh", "Launcher", "early_root"]


class Launcher(Protocol):
    def launch(self, plan: Plan) -> TrustedProcess:
        """The trusted process for ``plan``, waiting for its manifest."""
        ...


class Fresh:
    """A new ``python -m pytest`` process."""

    def launch(self, plan: Plan) -> TrustedProcess:
        return trusted.start(plan, trusted.popen)


FRESH = Fresh()
