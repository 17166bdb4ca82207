"""The portable tier of the sandbox (autograder/sandbox/features.py): where the Linux features
the full tier uses are missing — macOS has no prctl, mount, unshare, Landlock or /proc, and
fork() after threads is unsafe there — a grade still runs, says which protections held, and
gives the same scores, hints and test statuses as on Linux.

Simulated here on Linux by an interpreter whose every process lacks those features
(portable_host.py, tests/fixtures/portable_host/sitecustomize.py); native Windows, which
cannot grade at all, by hiding ``os.fork``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import portable_host
import pytest
from conftest import EXERCISES, ROOT, SEED, SOLUTIONS, grade, rendered
from test_release import dist  # the release build, shared with test_release.py

PORTABLE = "sandbox tier: portable (this system has no prctl, seccomp, Landlock, namespaces, /proc)"


@pytest.fixture(scope="module")
def no_linux_python(tmp_path_factory):
    """The interpreter; the folders' modes as they were afterwards (as root without Landlock
    the grader makes tests/ and solutions/ unreadable to others: runner/policy.py)."""
    modes = {path: path.stat().st_mode for path in (ROOT / "tests", SOLUTIONS)}
    yield portable_host.build(tmp_path_factory.mktemp("no-linux-python"))
    for path, mode in modes.items():
        path.chmod(mode)


def _verdicts(data: dict) -> dict[str, tuple]:
    """What a student sees of each test: status, points, the hints that matched, the summary."""
    return {
        t["id"]: (t["status"], t["score"], t["max_score"], sorted(h["id"] for h in t["hints"]), t["summary"], t["problem"])
        for s in data["skills"]
        for t in s["tests"]
    }


def _graded_without_linux_features(python, submission, folder):
    return grade(
        submission,
        "--reveal-hidden",
        fmt="gradescope",
        output=folder / "gradescope.json",
        results=folder / "results.json",
        python=python,
        env=portable_host.environment(),
    )


def _assert_portable_facts(data: dict) -> None:
    notes = data["sandbox"]
    assert any(n.startswith(PORTABLE) for n in notes), notes
    # the worker itself saw no prctl, no Landlock and no /proc: it was forked from the trusted
    # process (through the fork server), so that process lacked them too
    for fact in ("seccomp=unavailable(no prctl)", "landlock=unavailable", "cmdline-environ=not-scrubbed(no /proc)"):
        assert fact in notes, (fact, notes)
    assert any(n.startswith("rlimits(as=") for n in notes), notes


@pytest.mark.parametrize("which", ["solutions", "stubs"])
def test_without_prctl_mount_unshare_landlock_or_proc_a_grade_scores_as_the_full_tier(
    which, no_linux_python, tmp_path, solutions_graded, stubs_graded
):
    """Every skill, hidden tests included, on the instructors' path: the same verdict for every
    test as the full tier's run of the same files with the same seed, and a line naming the
    protections in force in each student-facing format."""
    submission, full = (SOLUTIONS, solutions_graded) if which == "solutions" else (EXERCISES, stubs_graded)
    portable = _graded_without_linux_features(no_linux_python, submission, tmp_path)
    assert portable.rc == 0, portable.stderr[-2000:]
    assert portable.data is not None and portable.data["status"] == "complete", portable.stderr[-2000:]
    _assert_portable_facts(portable.data)
    assert not any(n.startswith(PORTABLE) for n in full.data["sandbox"]), "this machine runs the full tier"
    assert portable.data["score"] == full.data["score"]
    assert portable.data["score"] == (portable.data["max_score"] if which == "solutions" else 0)
    assert {s["id"] for s in portable.data["skills"]} == {s["id"] for s in full.data["skills"]}
    assert _verdicts(portable.data) == _verdicts(full.data)
    line = "Sandbox: portable (this system has no prctl, seccomp, Landlock, namespaces, /proc) — in force: your code runs"
    gradescope = json.loads(portable.output.read_text(encoding="utf-8"))["output"]  # written by that run
    assert line in gradescope.replace("\\", ""), gradescope[-1500:]  # markdown-escaped there
    for fmt in ("text", "markdown"):  # (the text is 80 columns wide: the line may wrap)
        assert line in " ".join(rendered(portable, fmt).replace("\\", "").split()), fmt
    assert "Sandbox: portable" not in rendered(full, "text")


def test_native_windows_grade_says_to_use_wsl2_instead_of_a_traceback(tmp_path):
    """No ``os.fork`` (native Windows): `python -m autograder grade` names WSL2 and the
    container, exits 2, and starts nothing."""
    for hide in ("del os.fork", "os.name = 'nt'"):
        code = (
            f"import os, runpy, sys; {hide}; sys.argv = ['autograder', 'grade', '--seed', '{SEED}']; "
            "runpy.run_module('autograder', run_name='__main__', alter_sys=True)"
        )
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (hide, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stdout == "", (hide, proc.stderr)
        assert "WSL2" in proc.stderr and "wsl --install" in proc.stderr and ".devcontainer" in proc.stderr, proc.stderr
        assert "grading needs Linux or macOS" in proc.stderr


def test_the_sandbox_modules_import_and_say_unavailable_without_linux_calls(monkeypatch):
    """With no prctl/syscall in the C library (macOS): nothing fails at import or at a call;
    each protection reports itself unavailable, and one that was required is refused."""
    from autograder.sandbox import confine, features, namespaces

    monkeypatch.setattr(features, "libc_function", lambda name: None)
    assert not features.has("prctl") and confine.landlock_abi() == 0
    assert confine.set_parent_death_signal(9) is False and confine.set_dumpable(True) is False
    assert confine.apply_seccomp(required=False) == "seccomp=unavailable(no prctl)"
    with pytest.raises(confine.ConfineError, match="prctl"):
        confine.apply_seccomp(required=True)
    policy = confine.FsPolicy(read=["/usr"], write=["/tmp"], protected=[])
    assert confine.apply_landlock(policy, required=False) == "landlock=unavailable"
    with pytest.raises(confine.ConfineError, match="Landlock"):
        confine.apply_landlock(policy, required=True)
    with pytest.raises(OSError, match="not available"):
        confine.set_child_subreaper()
    assert not namespaces.available() and namespaces.probe("user", "/tmp") is False


def test_without_proc_usage_orphans_and_file_systems_are_unknown_not_errors(monkeypatch, tmp_path):
    """No /proc (macOS): the trusted side cannot see a worker's threads or memory (it is then
    not reused), the fork server finds no orphans, the scratch file system is "unknown"."""
    import os

    from autograder.sandbox import features, namespaces, zygote

    assert features.process_usage(os.getpid()) is not None  # this Linux machine
    monkeypatch.setattr(features, "PROC", str(tmp_path / "no-proc"))
    monkeypatch.setattr(features, "libc_function", lambda name: None)
    assert features.process_usage(os.getpid()) is None
    assert zygote._Server.__new__(zygote._Server)._orphans.__func__  # the method exists
    server = zygote._Server.__new__(zygote._Server)
    server.live = set()
    assert server._orphans() == []
    monkeypatch.setattr(namespaces, "mounts", lambda: (_ for _ in ()).throw(FileNotFoundError("/proc/self/mountinfo")))
    assert namespaces.file_system_of(str(tmp_path)) == "unknown"


def test_rlimits_the_system_refuses_are_named_and_the_others_still_hold(monkeypatch):
    """macOS may refuse RLIMIT_AS: the fact says so, and the CPU, file-size and open-file limits
    are applied all the same (checked in a child, where the limits cannot hurt this process).
    On Linux a refusal stops the worker's start instead."""
    import os
    import resource

    from autograder.sandbox import confine, features

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        real = resource.setrlimit

        def refuse_as(res, value):
            if res == resource.RLIMIT_AS:
                raise ValueError("not allowed")
            real(res, value)

        resource.setrlimit = refuse_as
        limits = confine.Limits(memory_bytes=1 << 32, cpu_seconds=300, file_bytes=1 << 24)
        try:
            confine.apply_rlimits(limits)
            os._exit(3)  # Linux: must not start without its address-space limit
        except confine.ConfineError:
            pass
        features.linux_kernel.cache_clear()
        os.uname = lambda: os.uname_result(("Darwin", "mac", "23.0", "", "arm64"))
        fact = confine.apply_rlimits(limits)
        os.write(write, f"{fact}|{resource.getrlimit(resource.RLIMIT_CPU)[0]}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        data = fh.read()
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, "on Linux a refused limit must stop the start"
    fact, cpu = data.split("|")
    assert fact == "rlimits(cpu=300s,fsize=16MiB,nofile=256);rlimits-refused(as)"
    assert int(cpu) == 300


# --------------------------------------------------------------------------- every laptop's path
def _student_template_files() -> dict[str, bytes]:
    from autograder.config import load
    from autograder.instructor.release.context import ReleaseContext
    from autograder.instructor.release.student import template_files

    config = load(ROOT / "grading.toml")
    ctx = ReleaseContext(repo=ROOT, config=config, out=ROOT / "dist", version="0.0.0-test", commit="0" * 40, suite_hash="test")
    return template_files(ctx)


def test_the_student_release_ships_a_devcontainer_with_the_pinned_cpu_torch():
    """Intel Macs, Chromebooks, lab machines: .devcontainer/ builds Linux + the exact pins of
    requirements.txt (torch's CPU build), and `make grade` there uses that environment."""
    files = _student_template_files()
    container = json.loads(files[".devcontainer/devcontainer.json"])
    assert container["build"] == {"dockerfile": "Dockerfile", "context": ".."}  # the repository: requirements.txt
    dockerfile = files[".devcontainer/Dockerfile"].decode()
    steps = [line for line in dockerfile.splitlines() if line and not line.startswith("#")]
    assert any(line.startswith("FROM python:3.") for line in steps)
    assert "COPY requirements.txt" in dockerfile and "-r /tmp/requirements.txt" in dockerfile
    assert "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu" in dockerfile
    assert "torch" not in " ".join(s for s in steps if "pip install" in s).replace("-r /tmp/requirements.txt", "")
    pins = (ROOT / "requirements.txt").read_text()
    assert "torch==2.13.0" in pins  # the one pin the image installs
    assert "ENV VENV=/opt/venv" in dockerfile and "touch /opt/venv/.requirements.stamp" in dockerfile
    assert "VENV ?= .venv" in (ROOT / "autograder" / "grade.mk").read_text()  # so the image's VENV wins
    assert any(line.startswith("USER ") and "root" not in line for line in steps)  # an ordinary user, as on a laptop
    ignore = [line for line in files[".dockerignore"].decode().splitlines() if line and not line.startswith("#")]
    assert ignore == ["*", "!requirements.txt"]  # the build context: no .venv, no .git


def test_student_readme_gives_each_kind_of_computer_its_path():
    readme = _student_template_files()["README.md"].decode()
    section = readme[readme.index("## Your computer") : readme.index("## What to do")]
    assert "macOS on Apple Silicon" in section and "`make grade`, as on Linux" in section and "Sandbox:" in section
    assert "Intel Macs, Chromebooks, locked-down lab machines" in section and "after torch 2.2.2" in section
    assert "Reopen in Container" in section and "Codespaces" in section
    one_line = next(line.strip() for line in section.splitlines() if line.strip().startswith("docker build"))
    dockerfile = _student_template_files()[".devcontainer/Dockerfile"].decode()
    assert one_line in dockerfile  # the README's line is the one the Dockerfile documents
    assert "make grade" in one_line and "-f .devcontainer/Dockerfile" in one_line
    assert "WSL2" in section and "wsl --install" in section and "/mnt/c/" in section
    assert "official score always comes from" in section and "on Linux" in section


@pytest.mark.parametrize("kind", ["SOCK_SEQPACKET", "SOCK_STREAM"])
def test_control_channel_keeps_messages_and_descriptors_apart_and_sees_the_end(kind):
    """The fork server's control connection (sandbox/channel.py) on Linux (SEQPACKET) and on
    macOS (a framed stream): whole messages in order, each with its descriptors, a large one
    arriving whole, an oversized one refused, and b"" once the other side has closed (how the
    fork server without a parent-death signal learns that its trusted process is gone)."""
    import os
    import socket

    from autograder.sandbox import channel

    a, b = socket.socketpair(socket.AF_UNIX, getattr(socket, kind))
    r, w = os.pipe()
    try:
        big = b"x" * 150_000  # far above macOS's 8 KiB AF_UNIX stream buffer: sent in pieces
        channel.send(a, b'{"op": "spawn"}', [w])
        channel.send(a, b'{"op": "kill"}')
        b.settimeout(60)  # a failure, not a hang
        sender = __import__("threading").Thread(target=channel.send, args=(a, big))
        sender.start()
        data, fds = channel.recv(b, 1 << 20, 4)
        assert data == b'{"op": "spawn"}' and len(fds) == 1
        os.write(fds[0], b"!")
        os.close(fds[0])
        assert os.read(r, 1) == b"!"
        assert channel.recv(b, 1 << 20, 4) == (b'{"op": "kill"}', [])
        assert channel.recv(b, 1 << 20) == (big, [])
        sender.join()
        channel.send(a, b"y" * 100)
        if kind == "SOCK_STREAM":  # (the fork server then ends that connection: the stream is out of step)
            with pytest.raises(ValueError, match="100 bytes"):
                channel.recv(b, 64)
        else:
            assert channel.recv(b, 1 << 20) == (b"y" * 100, [])
            a.close()
            assert channel.recv(b, 1 << 20, 4) == (b"", [])
        c, d = socket.socketpair(socket.AF_UNIX, getattr(socket, kind))
        channel.send(c, b"half")
        c.close()
        assert channel.recv(d, 1 << 20, 4) == (b"half", []) and channel.recv(d, 1 << 20, 4) == (b"", [])
        d.close()
    finally:
        for fd in (r, w):
            os.close(fd)
        a.close()
        b.close()


# --------------------------------------------------------------------------- the student path
@pytest.mark.slow  # a release build (shared with test_release.py), then seven grades through the student Makefile
def test_a_student_release_grades_without_linux_features_through_make_grade_in_every_format(dist, tmp_path):
    """What a student on macOS runs: the built student tree, its own `make grade`, the
    simulated interpreter as its .venv. The stubs score 0 (every test failed on its TODO), the
    solutions every visible point, with the same verdicts as the full tier, in every format."""
    import shutil

    from test_release import _student_grade, _venv_view

    tree = tmp_path / "student"
    shutil.copytree(dist / "student", tree)
    assert not tree.resolve().is_relative_to(ROOT)
    venv = tmp_path / "no-linux-venv"
    portable_host.build(venv)
    stamp = venv / ".requirements.stamp"  # newer than requirements.txt: the Makefile installs nothing
    stamp.write_text("")
    later = __import__("time").time() + 10
    __import__("os").utime(stamp, (later, later))

    def make_grade(fmt: str, out) -> subprocess.CompletedProcess:
        env = {k: v for k, v in portable_host.environment().items() if k not in ("MAKEFLAGS", "MFLAGS")}
        cmd = ["make", "--no-print-directory", "grade", f"VENV={venv}", f"FORMAT={fmt}", f"OUTPUT={out}", "SEED=7"]
        return subprocess.run(cmd, cwd=tree, capture_output=True, text=True, timeout=600, env=env)

    proc = make_grade("json", tmp_path / "stubs.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stubs = json.loads((tmp_path / "stubs.json").read_text(encoding="utf-8"))
    assert stubs["status"] == "complete" and stubs["score"] == 0 and stubs["max_score"] > 0
    assert all(t["status"] == "failed" and "TODO(" in t["summary"] + " " + (t["detail"] or "") for t in _tests(stubs))
    _assert_portable_facts(stubs)

    for module in (SOLUTIONS).glob("*.py"):
        if (tree / "exercises" / module.name).exists():
            shutil.copy(module, tree / "exercises" / module.name)
    outputs = {}
    for fmt in ("json", "text", "gradescope", "markdown", "github"):
        out = tmp_path / f"solved.{fmt}"
        proc = make_grade(fmt, out)
        assert proc.returncode == 0, (fmt, proc.stdout[-2000:] + proc.stderr[-2000:])
        outputs[fmt] = out.read_text(encoding="utf-8")
    solved = json.loads(outputs["json"])
    assert solved["status"] == "complete" and solved["score"] == solved["max_score"] > 0
    _assert_portable_facts(solved)
    line = "Sandbox: portable (this system has no prctl, seccomp, Landlock, namespaces, /proc) — in force: your code runs"
    assert line in " ".join(outputs["text"].split()) and line in outputs["markdown"].replace("\\", "")  # text: 80 columns
    assert line in json.loads(outputs["gradescope"])["output"].replace("\\", "")
    assert "::error" not in outputs["github"]  # nothing to annotate: every visible test passed

    full = _student_grade(tree, _venv_view(tmp_path), tmp_path / "full.json")  # the full tier, same files and seed
    assert not any(n.startswith(PORTABLE) for n in full["sandbox"])
    assert _verdicts(solved) == _verdicts(full) and solved["score"] == full["score"]


def _tests(data: dict) -> list[dict]:
    return [t for s in data["skills"] for t in s["tests"]]


def test_the_tier_note_says_full_or_portable_from_what_is_found(monkeypatch):
    """The results' tier line (runner/policy.tier_note) follows what features.py finds, not the
    system's name: this Linux machine is full; the same code without prctl and /proc is portable."""
    from autograder.runner import policy
    from autograder.sandbox import features

    full = policy.tier_note("user", 6)
    assert full.startswith("sandbox tier: full — ") and full.endswith("plus the seccomp filter, Landlock, namespaces")
    monkeypatch.setattr(features, "libc_function", lambda name: None)
    monkeypatch.setattr(features, "proc_available", lambda: False)
    portable = policy.tier_note("", 0)
    assert portable.startswith(PORTABLE + " — in force: your code runs in a separate worker process")
    assert "not in force: the rules against starting processes, the network and reading other files" in portable
    assert portable.endswith("the official score comes from the course's Linux autograder")
