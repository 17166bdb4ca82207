"""A warm grading server: ``import torch`` once per working session, not once per ``grade``.

A student edits, runs ``make grade``, reads the feedback, edits again. Each cold grade spends
~70 % of its time starting Python and importing torch (docs/PERFORMANCE.md). So an
interactive ``grade`` that found no server leaves one behind when it is done: the batch's
preloaded process (preloaded.py, ``--listen``), started with exactly the environment and
folder a trusted process gets (``trusted.environment``), listening on a socket in a folder
only this user can enter. The next ``grade`` connects before it imports anything else
(``connect``, from ``autograder/__main__.py``) and its trusted process is forked from the
server, as a batch forks each student's (``Preloaded.attach``): the same program, arguments,
environment and folder, so the same score; only the start differs. Nothing of a run stays
in the server: each run is a fork, and the server itself never computes anything (so the
fork is safe after torch's import: docs/ARCHITECTURE.md, *Processes*).

Its life:

- **one per user, Python and grader root** (``names``): the socket's name is a hash of the
  three; another root, suites folder or environment than the plan's makes the grade start
  its own process instead (``Preloaded.launch``/``spawn``: slower, never different);
- **stale → gone**: before it greets a grade, the server checks that no file of a module it
  imported (the grader, pytest, torch) changed since; if one did, it answers ``stale``,
  removes its socket and leaves, and that grade starts its own process (and a new server);
- **idle → gone**: ``[grader] warm_idle_s`` seconds (default 600) after its last grade;
- **started only where it is wanted**: by an interactive ``grade`` (stderr a terminal, no
  ``CI`` variable), when ``warm_idle_s`` > 0 and the sandbox has its full tier (on the
  portable tier a submission's worker could open a socket; on the full tier it cannot open
  any: sandbox/seccomp.py). ``AUTOGRADER_WARM=0`` turns it off for a shell (no server is
  started or used); ``AUTOGRADER_WARM=1`` starts one where it would not be (the grader's own
  tests). A connection from another user is refused (``SO_PEERCRED``, besides the folder's
  mode).

Written here (not a library): a long-lived process that forks a program per request over a
Unix socket is what preloaded.py already is for a batch; the lifecycle around it is ~100 lines.
Imported by ``__main__`` before anything heavy: this module imports only ``os``, ``socket``,
``hashlib`` and ``json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import sys

#: 0/off: no warm server is used or started; 1/on: one is started even where it would not be
ENV = "AUTOGRADER_WARM"
#: how long a ``grade`` waits for a server's greeting (it answers at once; a server that does
#: not is stuck or busy elsewhere, and the grade starts its own process)
HELLO_TIMEOUT_S = 2.0
#: macOS allows 104 bytes for a socket's path, Linux 108
MAX_PATH = 100


#: the servers this process started (kept referenced: the command line leaves without waiting
#: for them; a long-lived caller, the grader's own tests, stops them itself)
STARTED: list = []


def setting() -> str | None:
    """``AUTOGRADER_WARM`` as "on", "off" or None (not set: the config decides)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("0", "off", "no", "false"):
        return "off"
    if value in ("1", "on", "yes", "true"):
        return "on"
    return None


def socket_dir() -> str | None:
    """This user's folder for warm servers, made mode 0700 if need be: under
    ``$XDG_RUNTIME_DIR`` (a per-user tmpfs on most Linux desktops), else the temporary
    folder, else /tmp — the first where a socket's path fits (a Unix socket's path has ~100
    bytes: a long ``TMPDIR`` gave no server at all). None when it is not a real folder of
    ours that only we can enter."""
    uid = os.getuid()
    bases = [os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("TMPDIR"), "/tmp"]
    folders = [os.path.join(base, f"autograder-warm-{uid}") for base in bases if base]
    fits = [f for f in folders if len(os.path.join(f, "0" * 16 + ".sock").encode()) <= MAX_PATH]
    if not fits:
        return None
    path = fits[0]
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        return None  # someone else's, a link, or open to others: no warm server here
    return path


def names(root: str) -> dict[str, str] | None:
    """The socket, lock and log files of the server for this Python, grader root and
    environment (what of it a trusted process keeps: ``os_spawn.environment``; a shell with
    another ``LANG`` or ``PYTHONDONTWRITEBYTECODE`` gets a server of its own)."""
    from . import os_spawn

    folder = socket_dir()
    if folder is None:
        return None
    env = os_spawn.environment(root, root)
    del env["PYTHONPATH"]  # root and suites: the plan's, checked at launch (Preloaded.launch)
    for name in os_spawn.PER_RUN:  # each run's own
        env.pop(name, None)
    key = "\0".join(
        [os.path.realpath(sys.executable), sys.version, os.path.realpath(root), str(os.getuid()), json.dumps(env, sort_keys=True)]
    )
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    files = {kind: os.path.join(folder, f"{name}.{kind}") for kind in ("sock", "lock", "log", "bytecode")}
    return files if len(files["sock"].encode()) <= MAX_PATH else None


def supported() -> bool:
    return hasattr(socket, "AF_UNIX") and hasattr(socket, "SOCK_SEQPACKET") and hasattr(socket, "send_fds")


def connect(root: str):
    """A launcher (preloaded_launcher.Preloaded, attached) for this root's warm server, or
    None: none running, a stale one, another user's, or ``AUTOGRADER_WARM=0``."""
    if setting() == "off" or not supported():
        return None
    files = names(root)
    if files is None or not os.path.exists(files["sock"]):
        return None
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:  # macOS has the constant, not the socket type
        return None
    try:
        sock.settimeout(HELLO_TIMEOUT_S)
        sock.connect(files["sock"])
        hello = json.loads(sock.recv(1 << 20) or b"{}")
        if not hello.get("ready"):
            raise OSError("not ready")
        sock.settimeout(None)
    except (OSError, ValueError):
        sock.close()
        return None
    from .preloaded_launcher import Preloaded

    return Preloaded.attach(sock, hello)


def allowed(config) -> bool:
    """Whether a warm server may run for this config here: asked for (``warm_idle_s`` > 0, not
    ``AUTOGRADER_WARM=0``), possible (Unix sockets of this type), and safe — the sandbox's full
    tier, where no worker can open a socket (sandbox/seccomp.py) to ask it for anything."""
    if setting() == "off" or not supported() or config.warm_idle_s <= 0:
        return False
    from ...sandbox import features, seccomp

    return config.sandbox.seccomp != "off" and features.seccomp_possible(seccomp.seccomp_program(0) is not None)


def wanted(config, interactive: bool) -> bool:
    """Whether a ``grade`` that used no warm server should leave one behind: where it is
    allowed, after an interactive grade off CI, or wherever ``AUTOGRADER_WARM=1`` asks."""
    if setting() != "on" and (not interactive or os.environ.get("CI")):
        return False
    return allowed(config)


def _running(lock: str) -> bool:
    """A server holds this name's lock: one listens, or one is still preloading (a grade that
    came before it listened started its own process, and leaves no second server)."""
    import fcntl

    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock if we took it
    return False


def start(config, preload: list[str]) -> bool:
    """Start this root's warm server in the background (it preloads, then listens); False when
    it cannot be, or when one runs or is starting already. ``preload``: what every run's fork
    server imports (runner/grade.py ``preload_modules``), imported once by the server instead,
    as a batch's preloaded process does. (Two grades racing here start two; the second finds
    the lock taken and leaves at once.)"""
    import subprocess

    from . import trusted

    files = names(str(config.root))
    if files is None or _running(files["lock"]):
        return False
    argv = [sys.executable, "-s", "-m", "autograder.runner.process.preloaded", "--listen"]
    argv += [files["sock"], files["lock"], f"{config.warm_idle_s:g}", str(config.root), str(config.suites_dir), files["bytecode"]]
    argv.append(",".join(preload))
    try:
        with open(files["log"], "ab") as log:
            os.chmod(files["log"], 0o600)
            STARTED.append(
                subprocess.Popen(
                    argv,
                    cwd=config.root,
                    env=trusted.environment(config.root, config.suites_dir),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,  # outlives this command line and its terminal's Ctrl-C
                )
            )
    except OSError:
        return False
    return True


def stop_all(wait_s: float = 10.0) -> list[int]:
    """Stop every warm server in this user's socket folder (``socket_dir``), whichever grade
    started it (an interactive one, or nbgrader's ScoreFromGrader for a class): each greets
    a connection with its pid, and SIGTERM lets it remove its socket and bytecode folder.
    Waits up to ``wait_s`` for them to leave; returns the pids signalled. (The grader's own
    tests stop theirs with it; a server nobody stops leaves after ``warm_idle_s``.)"""
    import signal
    import time

    folder = socket_dir()
    if folder is None or not supported():
        return []
    pids = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".sock"):
            continue
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
                sock.settimeout(HELLO_TIMEOUT_S)
                sock.connect(os.path.join(folder, name))
                pid = json.loads(sock.recv(1 << 20) or b"{}").get("pid")
        except (OSError, ValueError):
            continue  # gone, stale (it leaves by itself), or not a server
        if isinstance(pid, int) and pid > 1:
            try:
                os.kill(pid, signal.SIGTERM)
                pids.append(pid)
            except OSError:
                pass
    deadline = time.monotonic() + wait_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.05)
    return pids
