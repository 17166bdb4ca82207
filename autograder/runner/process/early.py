"""The trusted pytest process, started before the command line knows what it will run.

``python -m autograder grade`` starts this module as its very first act (``Early``, with
nothing imported but ``os`` and ``struct``: ~30 ms after the command line started, where importing the
launcher's modules first took ~0.1 s, and reading grading.toml first more). Here torch,
pytest and its plugins are imported (preimport.py — what the batch's preloaded process
imports too: nothing computed, no suite, no submission) while the command line validates
grading.toml and checks the submission, ~0.5 s that would otherwise come before the torch
import. A bad config therefore costs at most that much CPU
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

import os
import struct
import sys

from . import os_spawn

#: the length prefix of the header ``Early.launch`` sends
HEADER = struct.Struct(">I")
MAX_HEADER = 1 << 20

#: the package's parent: where ``python -m autograder`` runs from (the grading root of a
#: course repository, a student copy or a Gradescope bundle)
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))
MODULE = __spec__.name if __spec__ is not None else "autograder.runner.process.early"  # run as ``python -m`` (main)


def early_root(argv: list[str]) -> str | None:
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
        here = os.path.join(os.getcwd(), "grading.toml")
        config = here if os.path.isfile(here) else os.path.join(PACKAGE_ROOT, "grading.toml")
    try:
        return PACKAGE_ROOT if os.path.dirname(os.path.realpath(config)) == PACKAGE_ROOT else None
    except (OSError, ValueError):
        return None


class Early:
    """One of launch.py's launchers: a trusted process started before its plan is known, in
    a run folder of its own, by ``python -m autograder grade`` as its first act — with
    nothing imported but ``os`` and ``struct`` (os_spawn.py), so this module's own process starts ~30 ms
    after the command line does. ``launch`` uses it once, for a plan in ``root``; ``release``
    stops it and removes the folder when no run took it."""

    def __init__(self, root=PACKAGE_ROOT) -> None:
        self.root = root
        self._run_dir = os_spawn.new_run_dir()
        self.taken = False
        env = os_spawn.environment(root, root)
        env["PYTHONPATH"] = str(root)  # the suites folder is added once it is known (main)
        try:
            self.proc, self.manifest_write, self.progress_read, self.log_fh, self.child_fds = os_spawn.spawn_piped(
                self._run_dir,
                lambda manifest_fd, _: [sys.executable, "-s", "-m", MODULE, str(manifest_fd), self._run_dir],
                os_spawn.posix_spawn,
                cwd=root,
                env=env,
            )
        except BaseException:
            os_spawn.remove_tree(self._run_dir)
            raise

    @property
    def run_dir(self):
        from pathlib import Path

        return Path(self._run_dir)

    def usable_for(self, plan) -> bool:
        return not self.taken and str(plan.root) == str(self.root) and self.proc.poll() is None

    def launch(self, plan):
        """The plan's ``TrustedProcess`` (trusted.py): this process, sent its arguments, or a
        fresh one when this one cannot serve the plan (stopped then)."""
        import json

        from . import trusted

        if not self.usable_for(plan):
            self.release()
            return trusted.start(plan, trusted.popen)  # what launch.Fresh does
        self.taken = True
        process = trusted.TrustedProcess(plan, self.run_dir, self.proc, self.manifest_write, self.progress_read, self.log_fh)
        argv = trusted.command(plan.root, list(plan.test_files), process.report, *self.child_fds)
        # its arguments without "python -s -m pytest", and the import folders
        fields = {"args": argv[4:], "path": [str(plan.root), str(plan.suites_dir)]}
        if sys.dont_write_bytecode:  # no .pyc written: compile this run's modules on this process's idle core
            from . import bytecode

            fields["bytecode"] = os.path.join(self._run_dir, "private", "bytecode")
            bytecode.compile_ahead(fields["bytecode"], str(plan.root), str(plan.suites_dir))
        header = json.dumps(fields).encode()
        process.send(HEADER.pack(len(header)) + header, close=False)  # read by read_header
        return process

    def release(self) -> None:
        """Stop it and remove its folder, unless a plan took it."""
        if not self.taken:
            self.taken = True
            from . import trusted

            trusted.stop(self.proc, self.manifest_write, self.progress_read, self.log_fh)
            trusted.remove_run_dir(self.run_dir)


def _read_exact(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def read_header(fd: int) -> dict | None:
    """The header ``Early.launch`` sends first; None when the pipe closed instead."""
    raw = _read_exact(fd, HEADER.size)
    if len(raw) < HEADER.size:
        return None
    (size,) = HEADER.unpack(raw)
    if size > MAX_HEADER:
        return None
    data = _read_exact(fd, size)
    import json

    return json.loads(data) if len(data) == size else None


def main() -> None:
    fd, run_dir = int(sys.argv[1]), sys.argv[2]
    from ...core import timeline
    from . import preimport, sandbox_fork_server

    timeline.mark("trusted: started")
    server = sandbox_fork_server.start()  # torch first: the command line's checks overlap its import
    timeline.mark("trusted: torch imported, fork server forked")
    # the header was sent long ago (~0.3 s after the start, torch takes ~1.4 s): read now, the
    # modules compiled ahead (bytecode.py) serve the plugin's imports too; else read it below
    header = read_header(fd) if _readable(fd) else _NOT_YET
    _use_compiled_ahead(header)
    preimport.pytest_side()  # while the server imports sympy
    preimport.torch_side()  # the plugin's other parts
    timeline.mark("trusted: pytest and the plugin imported")
    if header is _NOT_YET:
        header = read_header(fd)
        _use_compiled_ahead(header)
    if header is None:  # the command line stopped before grading (even if it was killed): nothing to run
        os_spawn.remove_tree(run_dir)  # the run folder made for this process
        os._exit(0)
    root, suites = header["path"]
    # what PYTHONPATH=root:suites gives ``python -m pytest`` (trusted.environment)
    os.environ["PYTHONPATH"] = os.pathsep.join([root, suites])
    at = len(sys.path) - sys.path[::-1].index(root) if root in sys.path else 1  # after PYTHONPATH's root
    sys.path[at:at] = [suites]
    become_pytest([*header["args"], f"--ag-fork-server={sandbox_fork_server.handed_over(server)}"])


_NOT_YET: dict = {}


def _readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0)[0])


def _use_compiled_ahead(header: dict | None) -> None:
    if header and header.get("bytecode"):
        from . import bytecode

        root, suites = header["path"]
        bytecode.install(header["bytecode"], bytecode.roots(root, suites))


def become_pytest(args: list[str]) -> None:
    """Run what ``python -m pytest`` runs (pytest's ``__main__``, with ``sys.argv[0]`` its
    file) with ``args``; it ends by raising SystemExit with pytest's exit code. Also how the
    batch's preloaded process turns a fork into a run (preloaded.py)."""
    import runpy

    sys.argv = [sys.argv[0], *args]
    runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    raise SystemExit(0)  # unreachable: pytest's __main__ raises SystemExit itself


if __name__ == "__main__":
    main()
