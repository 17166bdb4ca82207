"""The worker sandbox, tested directly: what submission code can and cannot do."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
import torch

from autograder.config import load
from autograder.sandbox import confine
from autograder.sandbox.client import Sandbox, WorkerDied, WorkerProtocolError, WorkerTimeout
from autograder.sandbox.policy import build_worker_spec
from conftest import ROOT

LINUX = os.uname().sysname == "Linux"
pytestmark = pytest.mark.skipif(not LINUX, reason="the sandbox's confinement is Linux-only")

MODULE = '''
import os, sys, time, socket, subprocess, threading
import torch

def echo(x):
    return x

def read(path):
    with open(path, "rb") as fh:
        return fh.read(64)

def write(path):
    with open(path, "w") as fh:
        fh.write("pwned")
    return True

def fork():
    return os.fork()

def run(cmd):
    return subprocess.run(cmd, capture_output=True).returncode

def environment():
    return {"env": dict(os.environ), "path": list(sys.path), "cwd": os.getcwd(), "uid": os.getuid()}

def sleep(seconds):
    time.sleep(seconds)
    return seconds

def exit_code(code):
    os._exit(code)

def garbage():
    sock = socket.socket(fileno=[fd for fd in range(3, 64) if _is_socket(fd)][0])
    sock.sendall(b"NOT A FRAME" * 100)
    time.sleep(5)

def _is_socket(fd):
    try:
        return socket.socket(fileno=os.dup(fd)).type == socket.SOCK_STREAM
    except OSError:
        return False

def signal_parent():
    os.kill(os.getppid(), 9)
    return "sent"

def background_thread():
    def spin():
        while True:
            pass
    threading.Thread(target=spin, daemon=True).start()
    return "started"

def subclass():
    class Evil(torch.Tensor):
        pass
    return torch.zeros(2).as_subclass(Evil)
'''


def _spec(run: Path):
    """A run folder laid out as the grader lays it out (copy readable, scratch below), with
    the module above as the only exercise module."""
    run.chmod(0o711)
    copy = run / "submission"
    copy.mkdir(mode=0o755)
    (copy / "m.py").write_text(MODULE)
    (copy / "m.py").chmod(0o644)
    scratch = run / "scratch"
    scratch.mkdir(mode=0o711)
    spec, _ = build_worker_spec(load(ROOT / "grading.toml"), copy, scratch, protected=[ROOT, run / "private"])
    spec.modules = ["m"]
    return spec


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    box = Sandbox(_spec(tmp_path_factory.mktemp("run")))
    yield box
    box.close()


def call(box, fn, *args, timeout=5.0):
    worker = box.worker()
    try:
        return worker, worker.run("call", None, ["m", fn, list(args), {}], {}, timeout=timeout, during=fn)
    except BaseException:
        worker.close()
        raise


def test_data_comes_back_exactly(sandbox):
    worker, reply = call(sandbox, "echo", torch.arange(6.0).reshape(2, 3).t())
    worker.close()
    assert reply.ok and torch.equal(reply.value["value"], torch.arange(6.0).reshape(2, 3).t())


@pytest.mark.skipif(confine.landlock_abi() < 1 and os.geteuid() != 0, reason="needs Landlock, or root for the uid drop")
@pytest.mark.parametrize("path", ["tests/suites/qkv/test_qkv_hidden.py", "solutions/qkv.py", "grading.toml"])
def test_worker_cannot_read_tests_solutions_or_config(sandbox, path):
    worker, reply = call(sandbox, "read", str(ROOT / path))
    worker.close()
    assert not reply.ok and reply.error["type"] == "PermissionError"


@pytest.mark.skipif(confine.landlock_abi() < 1, reason="needs Landlock")
def test_worker_can_write_only_its_scratch_folder(sandbox, tmp_path):
    target = tmp_path / "outside.txt"
    worker, reply = call(sandbox, "write", str(target))
    worker.close()
    assert not reply.ok and not target.exists()
    worker, reply = call(sandbox, "write", "inside.txt")
    worker.close()
    assert reply.ok


@pytest.mark.skipif(confine.seccomp_program() is None, reason="no seccomp table for this CPU")
@pytest.mark.parametrize("fn, args", [("fork", []), ("run", [["/bin/true"]])])
def test_worker_cannot_start_processes(sandbox, fn, args):
    worker, reply = call(sandbox, fn, *args)
    worker.close()
    assert not reply.ok and reply.error["type"] in ("PermissionError", "OSError")


def test_worker_environment_is_scrubbed(sandbox):
    os.environ["PYTEST_ADDOPTS"] = "--evil"
    try:
        worker, reply = call(sandbox, "environment")
    finally:
        os.environ.pop("PYTEST_ADDOPTS")
    worker.close()
    facts = reply.value["value"]
    assert "PYTEST_ADDOPTS" not in facts["env"] and "PYTHONPATH" not in facts["env"]
    assert facts["path"][0] == sandbox.spec.copy_dir
    assert not any(p == str(ROOT) or p.startswith(str(ROOT / "tests")) for p in facts["path"])
    assert facts["cwd"].startswith(sandbox.spec.scratch_root)
    if os.geteuid() == 0 and sandbox.spec.identity == "user":
        assert facts["uid"] != 0


def test_timeout_is_enforced_from_outside(sandbox):
    start = time.monotonic()
    with pytest.raises(WorkerTimeout):
        call(sandbox, "sleep", 30, timeout=0.5)
    assert time.monotonic() - start < 3


def test_exit_status_is_reported(sandbox):
    with pytest.raises(WorkerDied) as info:
        call(sandbox, "exit_code", 3)
    assert info.value.exit.exit_code == 3 and "status 3" in str(info.value)


def test_garbage_on_the_socket_is_a_protocol_error(sandbox):
    with pytest.raises((WorkerProtocolError, WorkerDied)):
        call(sandbox, "garbage")


@pytest.mark.skipif(confine.landlock_abi() < 6 and os.geteuid() != 0, reason="needs Landlock signal scoping or a uid drop")
def test_worker_cannot_kill_the_fork_server(sandbox):
    worker, reply = call(sandbox, "signal_parent")
    worker.close()
    assert not reply.ok and reply.error["type"] == "PermissionError"
    worker, reply = call(sandbox, "echo", 1)  # the server still forks workers
    worker.close()
    assert reply.ok


def test_a_thread_left_running_dies_with_its_worker(sandbox):
    worker, reply = call(sandbox, "background_thread")
    pid = worker.pid
    worker.close()
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.02)
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_tensor_subclasses_do_not_cross(sandbox):
    worker, reply = call(sandbox, "subclass")
    worker.close()
    assert type(reply.value["value"]) is not torch.Tensor and reply.value["value"] != torch.zeros(2)


def test_policy_never_runs_submission_code_with_privileges(sandbox):
    if os.geteuid() == 0:
        assert sandbox.spec.identity in ("user", "nocaps")
        if sandbox.spec.identity == "nocaps":
            assert sandbox.spec.landlock == "require"
    else:
        assert sandbox.spec.identity == "keep"


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop is what a root grader (Gradescope) does")
def test_as_root_the_worker_can_run_as_an_unprivileged_user(tmp_path):
    """The Gradescope path: setuid to `nobody`. (On this image `nobody` cannot read the
    interpreter under /root, so real runs here fall back to uid 0 without capabilities;
    modules already imported before the fork still work, which is all this call needs.)"""
    import pwd
    import tempfile

    run = Path(tempfile.mkdtemp(prefix="autograder-uid-"))  # /tmp: traversable by nobody, unlike pytest's tmp_path
    spec = _spec(run)
    nobody = pwd.getpwnam("nobody")
    spec.identity, spec.uid, spec.gid = "user", nobody.pw_uid, nobody.pw_gid
    box = Sandbox(spec)
    try:
        worker, reply = call(box, "environment")
        worker.close()
        assert reply.ok and reply.value["value"]["uid"] == nobody.pw_uid
        assert any(f.startswith("user(uid=") for f in worker.facts)
        worker, reply = call(box, "read", str(ROOT / "solutions" / "qkv.py"))
        worker.close()
        assert not reply.ok and reply.error["type"] == "PermissionError"
    finally:
        box.close()
        import shutil

        shutil.rmtree(run, ignore_errors=True)
