"""How a trusted process starts: one ``Launcher`` protocol, three launchers.

``launch(plan)`` returns a ``TrustedProcess`` (trusted.py) running ``trusted.command`` for
the plan, waiting for its manifest — the same program, arguments, environment and folder
whichever launcher made it; they differ only in when the interpreter started and what it
had imported by then:

- ``Fresh``: a new ``python -m pytest`` (``trusted.popen``), started once grading.toml is
  valid. What every run uses unless told otherwise;
- ``Early``: started by ``python -m autograder grade`` as its first act, before the command
  line has imported anything or read grading.toml (early.py); it imports pytest and torch
  while the command line checks the config and the submission (a bad config is reported at
  once and the process stopped, mid-import if need be) and becomes the plan's process when
  ``launch`` sends it the arguments. A plan for another root (or a process that died, or
  was used) gets a ``Fresh`` one instead;
- ``Preloaded`` (autograder/instructor/batch/launcher.py): forked, one per student, from a
  process that imported pytest and torch once per batch.

The second trusted process of a run on two cores is not launched: the trusted process forks
itself after collection (split.py) and that child stays part of the same run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Protocol

from . import early, trusted
from .trusted import Plan, TrustedProcess


class Launcher(Protocol):
    def launch(self, plan: Plan) -> TrustedProcess:
        """The trusted process for ``plan``, waiting for its manifest."""
        ...


class Fresh:
    """A new ``python -m pytest`` process."""

    def launch(self, plan: Plan) -> TrustedProcess:
        return trusted.start(plan, trusted.popen)


FRESH = Fresh()
EARLY = early.__name__  # run as ``python -m`` (early.main)

#: the package's parent: where ``python -m autograder`` runs from (the grading root of a
#: course repository, a student copy or a Gradescope bundle)
PACKAGE_ROOT = Path(__file__).resolve().parents[3]


def early_root(argv: list[str]) -> Path | None:
    """The root a ``grade`` with these arguments will most likely run in — the package's
    parent, when the config it reads is that folder's grading.toml — or None (``--help``, a
    config elsewhere): there a process started early would only be stopped again, having
    taken a core for its imports."""
    config: str | None = None
    for i, arg in enumerate(argv):
        if arg in ("-h", "--help"):
            return None
        if arg == "--config" and i + 1 < len(argv):
            config = argv[i + 1]
        elif arg.startswith("--config="):
            config = arg.split("=", 1)[1]
    if config is None:
        here = Path.cwd() / "grading.toml"
        config = str(here if here.is_file() else PACKAGE_ROOT / "grading.toml")
    try:
        return PACKAGE_ROOT if Path(config).resolve().parent == PACKAGE_ROOT else None
    except (OSError, RuntimeError):
        return None


class Early:
    """A trusted process started before its plan is known, in a run folder of its own
    (early.py). ``launch`` uses it once, for a plan in ``root``; ``release`` stops it and
    removes the folder when no run took it."""

    def __init__(self, root: Path = PACKAGE_ROOT) -> None:
        self.root = root
        self.run_dir = trusted.new_run_dir()
        self.taken = False
        env = trusted.environment(root, root)
        env["PYTHONPATH"] = str(root)  # the suites folder is added once it is known (early.py)
        try:
            self.proc, self.manifest_write, self.progress_read, self.log_fh, self.child_fds = trusted.spawn_piped(
                self.run_dir,
                lambda manifest_fd, _: [sys.executable, "-s", "-m", EARLY, str(manifest_fd), str(self.run_dir)],
                trusted.popen,
                cwd=root,
                env=env,
            )
        except BaseException:
            trusted.remove_run_dir(self.run_dir)
            raise

    def usable_for(self, plan: Plan) -> bool:
        return not self.taken and plan.root == self.root and self.proc.poll() is None

    def launch(self, plan: Plan) -> TrustedProcess:
        if not self.usable_for(plan):
            self.release()
            return FRESH.launch(plan)
        self.taken = True
        process = TrustedProcess(plan, self.run_dir, self.proc, self.manifest_write, self.progress_read, self.log_fh)
        argv = trusted.command(plan.root, list(plan.test_files), process.report, *self.child_fds)
        # its arguments without "python -s -m pytest", and the import folders
        header = json.dumps({"args": argv[4:], "path": [str(plan.root), str(plan.suites_dir)]}).encode()
        process.send(early.HEADER.pack(len(header)) + header, close=False)  # read by early.read_header
        return process

    def release(self) -> None:
        """Stop it and remove its folder, unless a plan took it."""
        if not self.taken:
            self.taken = True
            trusted.stop(self.proc, self.manifest_write, self.progress_read, self.log_fh)
            trusted.remove_run_dir(self.run_dir)
