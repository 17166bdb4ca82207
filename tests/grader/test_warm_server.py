"""The warm grading server (autograder/runner/process/warm.py): a grade forked from it scores
what a cold grade scores, and its life — one user's, gone when its grader changes or after
its idle time, started only where it is wanted — holds.

The lifecycle tests run the server's loop (preloaded._Forker) in a small process without the
preload (no torch: a fraction of a second); the scoring test runs the real server."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, SEED, SOLUTIONS, grade, make_submission

from autograder.runner.process import warm

#: the server's loop without its preload: argv = socket path, idle seconds, fresh (1/0)
LOOP = """
import os, socket, sys
sys.path.insert(0, {root!r})
from autograder.runner.process import preloaded
path, idle, fresh = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
listener.bind(path)
listener.listen(4)
print("listening", flush=True)
preloaded._Forker([], listener, {{"ready": True}}, idle, lambda: fresh).loop()
print("left", flush=True)
"""

pytestmark = pytest.mark.skipif(not warm.supported(), reason="no SOCK_SEQPACKET Unix sockets here: no warm server")


@pytest.fixture
def short_tmp():
    """A folder right under the temporary folder: a socket's path must fit in ~100 bytes, and
    another user must be able to reach it (pytest's own folders are mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix="aw-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _loop(tmp_path: Path, idle: float = 30.0, fresh: bool = True, folder_mode: int = 0o700) -> tuple[subprocess.Popen, str]:
    folder = tmp_path / "sock"
    folder.mkdir(mode=folder_mode)
    folder.chmod(folder_mode)
    tmp_path.chmod(0o755 if folder_mode & 0o077 else 0o700)
    path = str(folder / "s.sock")
    proc = subprocess.Popen(
        [sys.executable, "-c", LOOP.format(root=str(ROOT)), path, str(idle), "1" if fresh else "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
    return proc, path


def _stop(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _greeting(path: str) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.settimeout(10)
        sock.connect(path)
        return json.loads(sock.recv(1 << 16))


def test_a_warm_server_whose_grader_changed_refuses_removes_its_socket_and_leaves(short_tmp):
    proc, path = _loop(short_tmp, fresh=False)
    try:
        assert _greeting(path) == {"stale": True}
        assert proc.wait(timeout=10) == 0
        assert not os.path.exists(path), "a stale server's name must be free for a fresh one"
    finally:
        _stop(proc)


def test_a_warm_server_leaves_after_its_idle_time_and_not_while_a_grade_is_connected(short_tmp):
    proc, path = _loop(short_tmp, idle=1.0)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
            sock.connect(path)
            assert json.loads(sock.recv(1 << 16)) == {"ready": True}
            time.sleep(2.0)  # twice the idle time, connected
            assert proc.poll() is None, "a server left while a grade was connected"
        assert proc.wait(timeout=15) == 0  # idle once the grade hung up
        assert not os.path.exists(path)
    finally:
        _stop(proc)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another user")
def test_a_connection_from_another_user_is_refused(short_tmp):
    proc, path = _loop(short_tmp, folder_mode=0o777)  # a folder others can enter: the peer check alone
    os.chmod(path, 0o777)
    try:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the other user
            os.close(read)
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                os.write(write, json.dumps(_greeting(path)).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read) as fh:
            answer = json.loads(fh.read() or "{}")
        os.waitpid(pid, 0)
        assert answer == {"refused": "another user"}
        assert _greeting(path) == {"ready": True}  # and it still serves its own user
    finally:
        _stop(proc)


def test_a_warm_servers_folder_must_be_this_users_and_closed_to_others(short_tmp, monkeypatch):
    tmp_path = short_tmp  # a socket's path must fit in ~100 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    mine = tmp_path / f"autograder-warm-{os.getuid()}"
    assert warm.socket_dir() == str(mine) and (mine.stat().st_mode & 0o777) == 0o700
    mine.chmod(0o755)
    assert warm.socket_dir() is None, "a folder others can enter is not used"
    assert warm.connect(str(ROOT)) is None
    mine.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    mine.symlink_to(tmp_path / "elsewhere")
    assert warm.socket_dir() is None, "a link is not used"


def test_a_folder_too_long_for_a_sockets_path_gives_way_to_the_next(short_tmp, monkeypatch):
    """A Unix socket's path has ~100 bytes: a long ``XDG_RUNTIME_DIR`` (or ``TMPDIR``) gave no
    server, silently (blind tester K, a 150-character TMPDIR); the next folder serves."""
    deep = short_tmp / ("d" * 90)
    deep.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    monkeypatch.setenv("TMPDIR", str(short_tmp))
    assert warm.socket_dir() == str(short_tmp / f"autograder-warm-{os.getuid()}")
    files = warm.names(str(ROOT))
    assert files is not None and files["sock"].startswith(str(short_tmp))


def test_a_server_is_left_only_by_an_interactive_grade_off_ci_where_workers_cannot_open_sockets(monkeypatch):
    from autograder.sandbox import features, seccomp

    full_tier = features.seccomp_possible(seccomp.seccomp_program(0) is not None)
    config = SimpleNamespace(warm_idle_s=600.0, sandbox=SimpleNamespace(seccomp="auto"))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(warm.ENV, raising=False)
    assert warm.wanted(config, interactive=True) == full_tier
    assert not warm.wanted(config, interactive=False)
    monkeypatch.setenv("CI", "true")
    assert not warm.wanted(config, interactive=True)
    monkeypatch.setenv(warm.ENV, "1")
    assert warm.wanted(config, interactive=False) == full_tier  # asked for, still only on the full tier
    assert not warm.wanted(SimpleNamespace(warm_idle_s=600.0, sandbox=SimpleNamespace(seccomp="off")), interactive=True)
    monkeypatch.setenv(warm.ENV, "0")
    assert not warm.wanted(config, interactive=True)
    monkeypatch.delenv(warm.ENV)
    monkeypatch.delenv("CI")
    assert not warm.wanted(SimpleNamespace(warm_idle_s=0.0, sandbox=config.sandbox), interactive=True)


def _masks_edited(tmp_path: Path, old: str, new: str) -> Path:
    """The reference with its masks.py edited once (``old`` → ``new``)."""
    source = (ROOT / "solutions" / "masks.py").read_text(encoding="utf-8")
    edited = source.replace(old, new, 1)
    assert edited != source, f"{old!r} is no longer in solutions/masks.py: pick another anchor"
    return make_submission(tmp_path / "sub", {"masks.py": edited})


def _private_runtime(folder: Path, monkeypatch) -> None:
    """Warm servers in ``folder`` (not the test run's), asked for even under
    ``AUTOGRADER_WARM=0 make test``."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.delenv(warm.ENV, raising=False)


@contextlib.contextmanager
def _server():
    """This repository's warm server, in ``$XDG_RUNTIME_DIR`` (the test's): its log, once it
    listens; stopped at the end."""
    from autograder.config import load
    from autograder.runner.grade import preload_modules

    started = len(warm.STARTED)
    config = load(ROOT / "grading.toml")
    warm.start(config, preload_modules(config))
    files = warm.names(str(ROOT))
    assert files is not None and len(warm.STARTED) == started + 1
    proc = warm.STARTED.pop()
    log = Path(files["log"])
    try:
        deadline = time.monotonic() + 180
        while "listening" not in (log.read_text(encoding="utf-8") if log.is_file() else ""):
            assert time.monotonic() < deadline and proc.poll() is None, "the warm server did not start"
            time.sleep(0.2)
        yield log
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def _forked_runs(log: Path) -> int:
    return log.read_text(encoding="utf-8").count("run forked") if log.is_file() else 0


def test_a_grade_forked_from_a_warm_server_scores_what_a_cold_grade_scores(tmp_path, short_tmp, monkeypatch):
    """A single mistake (masks) and the reference elsewhere: the same tests pass and fail, with
    the same scores and hints, cold and warm; and the warm one was forked by the server."""
    sub = _masks_edited(tmp_path, "torch.tril(", "torch.triu(")
    _private_runtime(short_tmp, monkeypatch)
    cold = grade(sub, "--skill", "masks", "--skill", "qkv", env={**os.environ, warm.ENV: "0"})
    timeline = tmp_path / "hot.timeline"  # a per-run variable (os_spawn.PER_RUN): the same server serves it
    with _server() as log:
        hot = grade(sub, "--skill", "masks", "--skill", "qkv", env={**os.environ, "AUTOGRADER_TIMELINE": str(timeline)})
        assert _forked_runs(log) == 1, "the grade did not use the warm server"
    assert "trusted: forked from the preloaded process" in timeline.read_text(encoding="utf-8")
    assert cold.rc == hot.rc and cold.data and hot.data, cold.stderr + hot.stderr
    assert hot.data["seed"] == cold.data["seed"] == SEED

    def outcome(graded):
        return [(t["name"], t["status"], t["score"], sorted(h["id"] for h in t["hints"])) for t in graded.tests()]

    assert outcome(hot) == outcome(cold)
    assert hot.score("masks") < hot.skill("masks")["points"] and hot.score("qkv") == hot.skill("qkv")["points"]


def test_a_config_that_turns_warm_servers_off_is_obeyed_by_the_next_grade(tmp_path, short_tmp, monkeypatch):
    """``[grader] warm_idle_s = 0`` written while a server runs: the next grade starts its own
    process (the server was started under the old setting, and grading.toml is no module)."""
    from conftest import write_config

    _private_runtime(short_tmp, monkeypatch)
    off = write_config(tmp_path / "grading.toml", text_edits={"warm_idle_s = 600": "warm_idle_s = 0"})
    with _server() as log:
        graded = grade(SOLUTIONS, "--skill", "masks", config=off)
        assert graded.rc == 0 and graded.data and graded.data["score"] == graded.data["max_score"], graded.stderr
        assert _forked_runs(log) == 0


@pytest.mark.slow
def test_a_grade_whose_command_line_dies_leaves_no_run_in_the_warm_server(tmp_path, short_tmp, monkeypatch):
    """Killed mid-run (SIGKILL: it cleans nothing), the command line leaves the run it asked
    the server for with broken pipes and a closed connection: the run and everything in its
    session end (the pipes alone end it, as they end a fresh run; the server also kills a
    closed connection's runs, preloaded._Forker._closed), and the server removes its run
    folder, whose lock nobody holds any more (os_spawn.remove_if_abandoned). The grade's
    ``TMPDIR`` is its own, not the server's (a per-run variable: os_spawn.PER_RUN): its run
    folder is made there, and the run shows it in /proc as its own command line and
    environment (what test_red_team's search for leftover processes reads)."""
    forever = "def causal_mask(*a, **k):\n    while True:\n        pass\n\n\ndef _unused("
    sub = _masks_edited(tmp_path, "def causal_mask(", forever)
    _private_runtime(short_tmp, monkeypatch)
    temporary = tmp_path / "tmp"  # the grade's alone
    temporary.mkdir()
    with _server() as log:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temporary)}
        cli = subprocess.Popen(
            [sys.executable, "-m", "autograder", "grade", str(sub), "--skill", "masks", "--format", "json", "--no-progress"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while _forked_runs(log) < 1:
            assert time.monotonic() < deadline and cli.poll() is None, "the grade did not use the warm server"
            time.sleep(0.1)
        run = int(log.read_text(encoding="utf-8").split("run forked: pid ")[-1].split()[0])
        while not any(any(folder.iterdir()) for folder in temporary.glob("autograder-*/scratch")):
            assert time.monotonic() < deadline and cli.poll() is None, "no worker started"
            time.sleep(0.01)  # into its tests: a worker made its scratch folder (its loop runs to its limit)
        assert cli.poll() is None, "the grade ended before it could be killed"
        shown = {name: Path(f"/proc/{run}/{name}").read_bytes().decode(errors="replace") for name in ("cmdline", "environ")}
        assert "\0--json-report-file=" + str(temporary) in shown["cmdline"], shown["cmdline"]
        assert f"TMPDIR={temporary}\0" in shown["environ"], shown["environ"]
        cli.kill()
        cli.wait()
        deadline = time.monotonic() + 20
        while _alive_in_session(run):
            assert time.monotonic() < deadline, "the run outlived its command line"
            time.sleep(0.1)
        while [p for p in temporary.iterdir() if p.name.startswith("autograder-")]:
            assert time.monotonic() < deadline, f"the run's folder was left: {sorted(temporary.iterdir())}"
            time.sleep(0.1)


def _alive_in_session(sid: int) -> bool:
    """A process of session ``sid`` (the run's: it called setsid) still lives (zombies aside)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            return True
    return False


def test_a_warm_servers_runs_compile_the_suites_once_into_its_folder_that_no_worker_reads(tmp_path, short_tmp, monkeypatch):
    """As a batch's (test_batch.py): where Python writes no bytecode, the server's runs compile
    the suites into the server's own folder (0700, in the user's socket folder) and later runs
    read them; no worker lists or reads it, on the first grade or the second; it goes with
    the server."""
    import importlib.util

    from test_batch import _BYTECODE_PROBE

    _private_runtime(short_tmp, monkeypatch)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    files = warm.names(str(ROOT))
    assert files is not None
    folder = Path(files["bytecode"])
    visible = (ROOT / "tests" / "suites" / "qkv" / "test_qkv_visible.py").resolve()
    compiled = Path(str(folder) + str(visible.parent / Path(importlib.util.cache_from_source(str(visible))).name))
    sub = make_submission(tmp_path / "sub", {})
    with open(sub / "qkv.py", "a", encoding="utf-8") as fh:
        fh.write(_BYTECODE_PROBE.format(folder=str(folder), compiled=str(compiled)))
    looks = []
    with _server() as log:
        assert folder.is_dir() and (folder.stat().st_mode & 0o777) == 0o700
        for _ in range(2):  # the first run writes the folder, the second reads it
            graded = grade(sub, "--skill", "qkv")
            assert graded.rc == 0 and graded.data and graded.data["score"] == graded.data["max_score"], graded.stderr
            looks += [
                line
                for t in graded.tests()
                for p in t.get("printed") or []
                for line in p["text"].splitlines()
                if line.startswith("LOOK ")
            ]
            assert compiled.is_file(), sorted(str(p) for p in folder.rglob("*.pyc"))
        assert _forked_runs(log) == 2
    assert looks and all(("listed 0" in line or "unlisted" in line) and "unread" in line for line in looks), looks
    assert not folder.exists() and not os.path.exists(files["sock"])
