"""The sandbox's fork server, started as early as a grading run's pytest process allows.

Imported by the plugin package, i.e. when pytest loads ``-p autograder.runner.plugin``:
torch is imported, nothing computed, no test collected. Forking the server now (or
earlier: runner/boot.py) lets its warm-up overlap the rest of pytest's start-up instead of
delaying the first test, and workers inherit an imported torch and nothing else of ours
(runner/forkserver.py).
"""

from __future__ import annotations

import sys

from .. import forkserver

#: (pid, socket) of the fork server of this grading run (``--ag-run`` on the command line); None outside one
EARLY_SERVER = forkserver.start() if any(arg.startswith("--ag-run") for arg in sys.argv) else None
