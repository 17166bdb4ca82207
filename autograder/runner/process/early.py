"""The trusted pytest process, started before the command line knows what it will run.

``python -m autograder grade`` starts this module as its very first act (``launch.Early``,
~20 ms after the interpreter starts, instead of ~110 ms: after its own imports and the
parsing of grading.toml). Here torch, pytest and its plugins are imported (preimport.py —
what the batch's preloaded process imports too: nothing computed, no suite, no submission)
while the command line validates grading.toml and checks the submission, ~0.5 s that would
otherwise come before the torch import. A bad config therefore costs at most that much CPU
here, never the user's time: the command line reports it at once and stops this process,
mid-import if need be (``Early.release``).

Torch comes first, with the sandbox's modules, and the sandbox fork server is forked the
moment they are in (sandbox_fork_server.start): its first job, importing sympy (~0.6 s),
then overlaps everything this process still does before the first test — pytest's imports,
its start, the configuration and the collection — and the plugin adopts it
(``--ag-fork-server``) instead of forking its own.

Then it reads, from the manifest pipe, one length-prefixed header (``HEADER``) — the pytest
arguments and the two import folders (root, suites), sent once the config is valid — and
becomes exactly the process ``trusted.command`` starts: same arguments, same ``sys.argv``,
same ``sys.path`` order and ``PYTHONPATH``, the rest of the pipe being the run manifest the
plugin reads. A command line that stops before grading closes the pipe (or dies, which
closes it too); this process then removes the run folder made for it and exits without
running anything (its fork server ends with it: the server's connection closes, and its
parent-death signal is SIGKILL).
"""

from __future__ import annotations

import json
import os
import struct
import sys

#: the length prefix of the header ``launch.Early.launch`` sends
HEADER = struct.Struct(">I")
MAX_HEADER = 1 << 20


def _read_exact(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def read_header(fd: int) -> dict | None:
    """The header ``launch.Early.launch`` sends first; None when the pipe closed instead."""
    raw = _read_exact(fd, HEADER.size)
    if len(raw) < HEADER.size:
        return None
    (size,) = HEADER.unpack(raw)
    if size > MAX_HEADER:
        return None
    data = _read_exact(fd, size)
    return json.loads(data) if len(data) == size else None


def main() -> None:
    fd, run_dir = int(sys.argv[1]), sys.argv[2]
    from . import preimport, sandbox_fork_server

    server = sandbox_fork_server.start()  # torch first: the command line's checks overlap its import
    preimport.pytest_side()  # while the server imports sympy
    preimport.torch_side()  # the plugin's other parts
    header = read_header(fd)
    if header is None:  # the command line stopped before grading (even if it was killed): nothing to run
        import shutil

        shutil.rmtree(run_dir, ignore_errors=True)  # the run folder it made for this process
        os._exit(0)
    root, suites = header["path"]
    # what PYTHONPATH=root:suites gives ``python -m pytest`` (trusted.environment)
    os.environ["PYTHONPATH"] = os.pathsep.join([root, suites])
    at = len(sys.path) - sys.path[::-1].index(root) if root in sys.path else 1  # after PYTHONPATH's root
    sys.path[at:at] = [suites]
    become_pytest([*header["args"], f"--ag-fork-server={sandbox_fork_server.handed_over(server)}"])


def become_pytest(args: list[str]) -> None:
    """Run what ``python -m pytest`` runs (pytest's ``__main__``, with ``sys.argv[0]`` its
    file) with ``args``; it ends by raising SystemExit with pytest's exit code. Also how the
    batch's preloaded process turns a fork into a run (instructor/batch/preloaded.py)."""
    import runpy

    sys.argv = [sys.argv[0], *args]
    runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    raise SystemExit(0)  # unreachable: pytest's __main__ raises SystemExit itself


if __name__ == "__main__":
    main()
