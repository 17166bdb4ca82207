"""How a trusted process starts (runner/process/launch.py): every launcher gives the same
run; the one started early (runner/process/early.py) grades exactly as one started after the
config is read, and a command line that stops before grading leaves neither it nor its run
folder behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, SEED, SOLUTIONS, make_submission, write_config

from autograder.config import load
from autograder.runner.grade import GradeRequest, grade, start
from autograder.runner.process import launch, trusted


def _outcome(results) -> list[tuple]:
    return [(t.id, t.status, t.score) for skill in results.skills for t in skill.tests]


# slow: two full two-skill gradings compared; make test keeps the cheap start-ahead tests
# (no process for a bad config, clean-up when the command line dies)
@pytest.mark.slow
def test_a_run_started_ahead_grades_exactly_like_one_started_after_the_config():
    config = load(ROOT / "grading.toml").select(["qkv", "masks"])
    early = launch.Early(ROOT)
    process = start(config, early)
    assert process.proc is early.proc and early.taken and process.run_dir == early.run_dir
    ahead = grade(GradeRequest(config, str(SOLUTIONS), seed=SEED, process=process))
    after = grade(GradeRequest(config, str(SOLUTIONS), seed=SEED))
    assert ahead.status == after.status == "complete", (ahead.message, after.message)
    assert ahead.score == after.score == ahead.max_score
    assert _outcome(ahead) == _outcome(after) and ahead.seed == after.seed
    assert not early.run_dir.exists()  # the run removed its folder as always


def test_a_process_started_for_another_root_is_stopped_not_used(tmp_path):
    config = load(ROOT / "grading.toml").select(["qkv"])
    early = launch.Early(ROOT)
    early.root = tmp_path  # as if started for a different repository
    process = start(config, early)
    try:
        assert process.proc is not early.proc
        assert early.proc.poll() is not None and not early.run_dir.exists()
    finally:
        process.release()
    assert not process.run_dir.exists()


@pytest.mark.parametrize(
    "args", [["/no/such/submission"], ["--no-such-option"], ["--help"]], ids=["missing-submission", "bad-option", "help"]
)
def test_a_command_line_that_stops_before_grading_leaves_no_process_and_no_folder(tmp_path, args):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", *args, "--format", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 2), proc.stderr
    assert list(scratch.iterdir()) == []
    assert _processes_with(f"TMPDIR={scratch}") == []


@pytest.mark.parametrize("stage", ["before-its-arguments", "before-the-manifest"])
def test_a_process_started_ahead_cleans_up_when_its_command_line_dies(stage):
    """Killed, the command line cleans nothing; the pipe it held closes, and the process it
    started removes the run folder and exits, whether or not it had its pytest arguments."""
    config = load(ROOT / "grading.toml").select(["qkv"])
    early = launch.Early(ROOT)
    proc, run_dir = early.proc, early.run_dir
    if stage == "before-the-manifest":
        process = start(config, early)
        process.taken = True
        os.close(process._progress_read)
        os.close(process._manifest_write)  # what the command line's death does
        process._log_fh.close()
    else:
        early.taken = True  # nobody releases it
        os.close(early.manifest_write)
        os.close(early.progress_read)
        early.log_fh.close()
    returncode = proc.wait(timeout=120)
    assert not run_dir.exists()
    assert stage != "before-its-arguments" or returncode == 0  # no run came: it ran nothing and exited cleanly


def _processes_with(entry: str) -> list[int]:
    """Live processes whose environment holds ``entry`` (every process we start keeps TMPDIR)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.encode() in environ and int(pid) != os.getpid():
            found.append(int(pid))
    return found


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], str(ROOT)),
        (["solutions", "--config", str(ROOT / "grading.toml")], str(ROOT)),
        ([f"--config={ROOT / 'grading.toml'}"], str(ROOT)),
        (["--config", "/elsewhere/grading.toml"], None),
        (["--help"], None),
    ],
)
def test_a_process_is_started_ahead_only_for_the_package_roots_config(argv, expected):
    assert launch.early_root(argv) == expected


# --------------------------------------------------------------------------- how processes start (runner/process)
def test_importing_the_plugin_and_the_preloads_starts_no_process():
    """No work at import time: the grading plugin's entry imports no torch, and neither it nor
    its parts nor everything a trusted process preloads (runner/process/preimport.py) starts a
    process — the sandbox fork server is started by the plugin's first hook, in a grading run."""
    code = (
        "import os, sys\n"
        "import autograder.runner.plugin\n"
        "assert 'torch' not in sys.modules, 'the plugin entry imported torch'\n"
        "from autograder.runner.process import preimport\n"
        "assert preimport.pytest_side() == []\n"
        "assert preimport.torch_side() == []\n"
        "import autograder.runner.plugin.fixtures, autograder.runner.plugin.report\n"
        "print(repr(open(f'/proc/self/task/{os.getpid()}/children').read().split()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def test_a_bad_config_never_starts_a_trusted_process(tmp_path, capsys, monkeypatch):
    """grading.toml is checked in full before the trusted process starts: a config that only
    the full check rejects (a weight names a test its suite file does not define) costs no
    torch start."""
    from autograder import cli
    from autograder.runner import grade as grade_mod

    path = write_config(
        tmp_path / "grading.toml",
        {"test_attention_scores_reproduce_week7_raw_scores = 1\n": "test_attention_scores_reproduce_week7_raw_score = 1\n"},
    )
    started = []
    monkeypatch.setattr(grade_mod, "start", lambda *a, **k: started.append(a) or pytest.fail("a trusted process was started"))
    monkeypatch.setattr(trusted, "popen", lambda *a, **k: started.append(a) or pytest.fail("a process was started"))
    rc = cli.main(
        [
            "grade",
            str(SOLUTIONS),
            "--config",
            str(path),
            "--output",
            str(tmp_path / "r.json"),
            "--format",
            "json",
            "--no-progress",
        ]
    )
    assert rc == 2 and "did you mean 'test_attention_scores_reproduce_week7_raw_scores'" in capsys.readouterr().err
    assert started == []


# --------------------------------------------------------------------------- one way to start a trusted process
#: every place in the package that starts or forks a process, and why it may. A new one
#: fails the test below: a trusted process starts through a launcher (runner/process/launch.py)
PROCESS_STARTS = {
    "runner/process/trusted.py": "Popen: the one fresh start of a trusted process (trusted.popen, used by every launcher)",
    "runner/process/os_spawn.py": "posix_spawn: the Early launcher's start, before the command line imports subprocess",
    "runner/process/early.py": "run_module: pytest's __main__, run by the Early launcher's process and the batch's forks",
    "runner/process/split.py": "fork: a trusted process divides itself after collection (the same run)",
    "runner/policy.py": "fork: a short-lived child checks what an unprivileged uid can read",
    "sandbox/zygote.py": "fork: the sandbox fork server and its workers",
    "sandbox/namespaces.py": "fork: the namespace probe's child",
    "app/gradescope_run.py": "Popen: the Gradescope entry point runs `python -m autograder grade`",
    "runner/process/preloaded_launcher.py": "Popen: the batch's preloaded process (the Preloaded launcher)",
    "runner/process/preloaded.py": "fork: a trusted process per student or warm grade (then early.become_pytest)",
    "runner/process/warm.py": "Popen: a warm grading server (the preloaded process, listening) for the next grade",
}


STARTERS = {
    ("subprocess", "Popen"),
    ("os", "fork"),
    ("os", "posix_spawn"),
    ("os", "posix_spawnp"),
    ("os", "execv"),
    ("os", "execve"),
    ("pytest", "console_main"),
    ("pytest", "main"),
    ("runpy", "run_module"),
}


def _process_starts(tree) -> set[str]:
    import ast

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
            if (owner, node.func.attr) in STARTERS:
                found.add(f"{owner}.{node.func.attr}")
    return found


def test_processes_start_only_where_the_launch_design_says():
    import ast

    package = ROOT / "autograder"
    starts = {}
    for path in sorted(package.rglob("*.py")):
        found = _process_starts(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            starts[path.relative_to(package).as_posix()] = found
    unexpected = {path: sorted(calls) for path, calls in starts.items() if path not in PROCESS_STARTS}
    assert not unexpected, f"a process starts outside the launch design (runner/process/launch.py): {unexpected}"
    assert set(starts) == set(PROCESS_STARTS), f"listed but no longer starting anything: {set(PROCESS_STARTS) - set(starts)}"


def test_the_fresh_and_the_preloaded_launcher_start_the_same_command_for_a_plan(fast_config):
    """A plan gets the same pytest command line, environment and folder from ``Fresh`` and
    from the batch's ``Preloaded`` (the early one sends the same ``trusted.command`` as a
    header; the slow test above compares its grading): they differ only in when the
    interpreter started. A launch that fails leaves no run folder."""
    from autograder.runner.process.preloaded_launcher import PYTEST, Preloaded

    config = load(fast_config)
    plan = trusted.Plan(config.root, config.suites_dir, ("qkv/test_qkv.py",))
    seen = []

    def recording(argv, *, cwd, env, log, pass_fds):
        seen.append((argv, cwd, env, pass_fds))
        raise RuntimeError("recorded, not started")

    preloaded = Preloaded.__new__(Preloaded)  # its launch only: no preloaded process is needed to compare command lines
    preloaded.cwd, preloaded.suites_dir, preloaded.fallbacks, preloaded.spawn = config.root, config.suites_dir, 0, recording
    for launch_one in (lambda: trusted.start(plan, recording), lambda: preloaded.launch(plan)):
        with pytest.raises(RuntimeError, match="recorded"):
            launch_one()
    assert len(seen) == 2 and preloaded.fallbacks == 0

    def per_run(argv):  # the run folder's report path and the pipes' numbers differ from run to run
        report = next(a for a in argv if a.startswith("--json-report-file="))
        return [a for a in argv if not a.startswith(("--json-report-file=", "--ag-run="))], Path(report.split("=", 1)[1])

    (fresh, fresh_report), (forked, forked_report) = (per_run(argv) for argv, *_ in seen)
    assert fresh[: len(PYTEST)] == PYTEST and fresh == forked
    assert seen[0][1:3] == seen[1][1:3]  # cwd, environment
    assert fresh_report.name == "report.json" and not fresh_report.parents[1].exists() and not forked_report.parents[1].exists()


def test_a_plan_for_another_suites_folder_is_not_forked_from_the_batchs_preloaded_process(tmp_path, fast_config):
    from autograder.runner.process.preloaded_launcher import Preloaded

    config = load(fast_config)
    preloaded = Preloaded.__new__(Preloaded)
    preloaded.cwd, preloaded.suites_dir, preloaded.fallbacks = config.root, tmp_path, 0
    preloaded.spawn = lambda *a, **k: pytest.fail("forked for a plan it was not preloaded for")
    process = preloaded.launch(trusted.Plan(config.root, config.suites_dir, ("qkv/test_qkv.py",)))
    try:
        assert preloaded.fallbacks == 1 and process.proc.poll() is None
    finally:
        process.release()
    assert not process.run_dir.exists()


# --------------------------------------------------------------------------- the start with nothing but os (os_spawn.py)
def test_the_early_start_gives_its_child_what_popen_would_and_nothing_more(tmp_path):
    """``os_spawn.posix_spawn`` stands in for ``trusted.popen`` at the Early start: stdin from
    /dev/null, stdout and stderr to the log, the passed descriptors and none we inherited, a
    session of its own, the folder asked for — and the caller's folder unchanged."""
    from autograder.runner.process import os_spawn

    inherited_read, inherited_write = os.pipe()
    passed_read, passed_write = os.pipe()
    os.set_inheritable(inherited_read, True)  # as a make jobserver's pipe would be
    code = (
        "import json, os, sys\n"
        "listed = os.listdir('/proc/self/fd')  # its own descriptor is closed again below\n"
        "print(json.dumps({'fds': sorted(int(f) for f in listed if os.path.exists('/proc/self/fd/' + f)), 'cwd': os.getcwd(),\n"
        "  'session': os.getsid(0) == os.getpid(), 'stdin': sys.stdin.read(),\n"
        "  'passed': os.read(int(sys.argv[1]), 5).decode()}))\n"
        "print('to stderr', file=sys.stderr)\n"
    )
    here = os.getcwd()
    try:
        with open(tmp_path / "child.log", "wb") as log:
            argv = [sys.executable, "-c", code, str(passed_read)]
            child = os_spawn.posix_spawn(argv, cwd=tmp_path, env=dict(os.environ), log=log, pass_fds=(passed_read,))
        os.write(passed_write, b"hello")
        assert child.wait(timeout=60) == 0 and child.poll() == 0
    finally:
        for fd in (inherited_read, inherited_write, passed_read, passed_write):
            os.close(fd)
    assert os.getcwd() == here
    first, second = (tmp_path / "child.log").read_text().splitlines()
    seen = json.loads(first)
    assert second == "to stderr"
    assert seen["cwd"] == str(tmp_path.resolve()) and seen["session"] and seen["stdin"] == "" and seen["passed"] == "hello"
    assert seen["fds"] == [0, 1, 2, passed_read]  # not inherited_read


def test_the_early_starts_handle_waits_times_out_and_reports_a_signal_as_popen_does(tmp_path):
    from autograder.runner.process import os_spawn

    with open(tmp_path / "child.log", "wb") as log:
        child = os_spawn.posix_spawn(
            [sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path, env=dict(os.environ), log=log, pass_fds=()
        )
    assert child.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.05)
    os.killpg(child.pid, signal.SIGKILL)  # its own session: the group is its pid
    assert child.wait(timeout=60) == -signal.SIGKILL and child.returncode == -signal.SIGKILL


def test_a_run_folder_is_made_like_mkdtemps_with_the_grader_only_part_closed(tmp_path, monkeypatch):
    """Whatever the umask: under 077 a folder made with mode 711 would be 700, and workers
    running as another user could not reach their scratch folders."""
    from autograder.runner.process import os_spawn

    for name in ("TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    umask = os.umask(0o077)
    try:
        first, second = Path(os_spawn.new_run_dir()), Path(os_spawn.new_run_dir())
    finally:
        os.umask(umask)
    assert first != second and first.parent == second.parent == tmp_path and first.name.startswith("autograder-")
    modes = {p.relative_to(first).as_posix(): p.stat().st_mode & 0o777 for p in (first, first / "private", first / "scratch")}
    assert modes == {".": 0o711, "private": 0o700, "scratch": 0o711}
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    made = Path(os_spawn.new_run_dir())
    assert made.parent == Path("/tmp")  # the next candidate, as tempfile.gettempdir picks
    for path in (first, second, made):
        os_spawn.remove_tree(str(path))


# ------------------------------------------------------------------ a grade that is killed
#: a qkv.py whose import sleeps: the run stays in its tests (its first call waits for the call's
#: wall-clock backstop, 10 s) until the test's signal comes, however fast the machine
SLEEPS_AT_IMPORT = "import time\n\ntime.sleep(60)\n"


def _as_a_terminal_starts_it() -> None:
    """SIGHUP, SIGTERM and SIGINT as a terminal gives them: a run of the tests under ``nohup``
    (or a script's background job) starts the grade ignoring SIGHUP (SIGINT), and the grader
    keeps a signal it was started ignoring (core/host.py) — the SIGHUP case then graded to the
    end, status 0 (seen twice in this session's timed CI runs, both under nohup)."""
    for signum in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)


def _grade_into_its_tests(tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    """A grade of qkv with ``TMPDIR`` of its own, once its run is in its tests (a worker has
    made its scratch folder, so the manifest was sent) and while its import sleeps: (the
    command line, its temporary folder, its --output file)."""
    tmp, out, err = tmp_path / "tmp", tmp_path / "results.json", tmp_path / "stderr.txt"
    tmp.mkdir()
    qkv = (SOLUTIONS / "qkv.py").read_text(encoding="utf-8") + "\n" + SLEEPS_AT_IMPORT
    submission = make_submission(tmp_path / "submission", {"qkv.py": qkv})
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT), "AUTOGRADER_TIMELINE": str(tmp_path / "marks")}
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograder", "grade", str(submission), "--skill", "qkv", "--format", "json"]
            + ["--no-progress", "--seed", str(SEED), "--output", str(out)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=_as_a_terminal_starts_it,
        )
    deadline = time.monotonic() + 180
    while not any(any(run.joinpath("scratch").iterdir()) for run in tmp.glob("autograder-*") if run.joinpath("scratch").is_dir()):
        assert proc.poll() is None, f"the grade ended before its tests: {err.read_text(errors='replace')[-2000:]}"
        assert time.monotonic() < deadline, "no worker started within 180 s"
        time.sleep(0.01)
    return proc, tmp, out


def _gone(tmp: Path, seconds: float = 120) -> list[str]:
    """What is left in ``tmp`` once every process that keeps it as TMPDIR has ended and, for a
    run forked from a warm server (TMPDIR is a per-run variable: os_spawn.PER_RUN), once the
    server has removed the folder of the run that died (it does so as it reaps the run,
    os_spawn.remove_if_abandoned: a moment after the run's own processes are gone)."""
    deadline = time.monotonic() + seconds
    while _processes_with(f"TMPDIR={tmp}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(f"TMPDIR={tmp}") == [], "a process of the grade outlived it"
    settle = min(deadline, time.monotonic() + 10)
    while any(tmp.iterdir()) and time.monotonic() < settle:
        time.sleep(0.1)
    return sorted(p.name for p in tmp.iterdir())


def test_a_grade_killed_mid_run_leaves_no_run_folder_behind(tmp_path):
    """SIGKILL: the command line removes nothing. Its run finds the progress pipe broken at
    its next event, stops its workers, removes the run folder (with the copy of the
    submission in it) and leaves, before its tests end: grading on for nobody let a sweep
    by the next grade remove the folder, and the report then made it again, for good
    (blind tester L)."""
    proc, tmp, _out = _grade_into_its_tests(tmp_path)
    proc.kill()
    proc.wait()
    assert _gone(tmp) == []
    assert "trusted: tests done" not in (tmp_path / "marks").read_text(encoding="utf-8")


# slow: two grades, each stopped by a signal; the SIGKILL test above keeps the folder's removal in make test
@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_or_a_closed_terminal_stops_a_grade_as_ctrl_c_does(tmp_path, name):
    """``kill`` or a closed terminal (SIGHUP): the run is stopped, the results file says the
    grade was interrupted and by what, and nothing is left behind."""
    proc, tmp, out = _grade_into_its_tests(tmp_path)
    proc.send_signal(getattr(signal, name))
    assert proc.wait(timeout=60) == 130, (tmp_path / "stderr.txt").read_text(errors="replace")[-2000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["status"] == "interrupted" and data["message"] == f"grading was interrupted ({name})", data["message"]
    assert _gone(tmp) == []


def test_only_run_folders_whose_maker_is_gone_are_swept(tmp_path):
    """A folder's maker holds its lock while it lives (os_spawn.ALIVE): a folder whose maker
    died is removed; one whose maker lives, one without the lock file (being made, or an
    older grader's), a link and other names are left."""
    from autograder.runner.process import os_spawn

    make = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from autograder.runner.process import os_spawn; "
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    dead = subprocess.run(
        [sys.executable, "-c", make + "print(os_spawn.new_run_dir())"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    alive = subprocess.Popen(
        [sys.executable, "-c", make + "print(os_spawn.new_run_dir(), flush=True); sys.stdin.read()"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert alive.stdout is not None
        living = alive.stdout.readline().strip()
        unlocked = tmp_path / "autograder-0123456789ab"
        (unlocked / "private").mkdir(parents=True)
        other = tmp_path / "autograder-bytecode-x"
        other.mkdir()
        (tmp_path / "autograder-ba9876543210").symlink_to(dead, target_is_directory=True)
        assert Path(dead, *os_spawn.ALIVE).is_file() and Path(living, *os_spawn.ALIVE).is_file()
        assert os_spawn.sweep_abandoned(str(tmp_path)) == [dead]
        assert os_spawn.sweep_abandoned(str(tmp_path)) == []  # once per folder per process
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [Path(living).name, unlocked.name, other.name, "autograder-ba9876543210"]
        )
    finally:
        assert alive.stdin is not None
        alive.stdin.close()
        alive.wait(timeout=30)
        if alive.stdout is not None:
            alive.stdout.close()
    assert os_spawn.remove_if_abandoned(living)  # its maker has ended now


def _grade_stopped_after(tmp_path: Path, delay: float, signum: int) -> tuple[int, str, dict | None, list[str]]:
    """A grade of the reference's qkv sent ``signum`` ``delay`` seconds after its own code
    began (its first timeline mark; before that the interpreter is still starting, and a
    signal ends it as it ends any program): (exit status, stderr, its --output file's
    results, what it left in its TMPDIR)."""
    tmp, out, err, marks = tmp_path / "tmp", tmp_path / "results.json", tmp_path / "stderr.txt", tmp_path / "marks"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT), "AUTOGRADER_WARM": "0", "AUTOGRADER_TIMELINE": str(marks)}
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograder", "grade", str(SOLUTIONS), "--skill", "qkv", "--format", "json"]
            + ["--no-progress", "--output", str(out)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            # as a terminal starts it: a shell without job control starts a background job with
            # SIGINT ignored, and a Python that inherits that keeps ignoring Ctrl-C (a test run
            # launched as `cmd &` from a script saw every SIGINT case grade to the end)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 60
        while not (marks.exists() and "command line: started" in marks.read_text(encoding="utf-8")):
            assert time.monotonic() < deadline and proc.poll() is None, "the command line never started"
            time.sleep(0.001)
        time.sleep(delay)
        proc.send_signal(signum)
        code = proc.wait(timeout=120)
    data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return code, err.read_text(errors="replace"), data, _gone(tmp)


@pytest.mark.parametrize(
    ("delay", "name"),
    [(0.03, "SIGTERM"), (0.12, "SIGTERM"), (0.4, "SIGTERM")]
    + [pytest.param(d, n, marks=pytest.mark.slow) for d in (0.0, 0.06, 0.09, 0.15, 0.25, 1.0) for n in ("SIGTERM", "SIGINT")],
)
def test_an_interrupt_at_any_moment_ends_as_an_interrupt_with_its_results_file(tmp_path, delay, name):
    """While the command line imports, starts the run ahead, reads the config, checks the
    submission or waits for the tests: one outcome — exit 130, no traceback, a results file
    that says ``interrupted`` and by what (never ``error``, which says the grader broke), and
    nothing left behind (blind tester K found a traceback, then ``error``, then
    ``interrupted``, by timing)."""
    code, stderr, data, left = _grade_stopped_after(tmp_path, delay, getattr(signal, name))
    why = "Ctrl-C" if name == "SIGINT" else name
    assert code == 130, (code, stderr[-2000:])
    assert "Traceback" not in stderr, stderr[-2000:]
    assert data is not None, stderr[-2000:]
    assert (data["status"], data["message"]) == ("interrupted", f"grading was interrupted ({why})"), data["message"]
    assert left == []


def test_a_terminal_that_goes_away_mid_grade_still_leaves_the_results_file(tmp_path):
    """A closed window or lost SSH session: writes to the terminal fail (EIO) and no signal
    need come. The progress display ends, the grade runs on, and --output holds the complete
    results (it was 'the grader itself failed' and no file: blind tester K)."""
    import pty

    tmp, out = tmp_path / "tmp", tmp_path / "results.json"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT), "AUTOGRADER_WARM": "0", "COLUMNS": "80"}
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "autograder",
                "grade",
                str(SOLUTIONS),
                "--skill",
                "qkv",
                "--format",
                "json",
                "--output",
                str(out),
            ],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=follower,
        )
    finally:
        os.close(follower)
    seen = b""
    deadline = time.monotonic() + 180
    while b"grading" not in seen:  # the progress display is up
        assert time.monotonic() < deadline and proc.poll() is None, seen[-2000:]
        try:
            seen += os.read(leader, 4096)
        except OSError:
            break
    os.close(leader)  # the terminal goes away: every later write to it fails with EIO
    code = proc.wait(timeout=180)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["status"] == "complete" and data["score"] == data["max_score"] > 0, (code, data["message"])
    assert code == 0
    assert _gone(tmp) == []


def test_a_file_system_without_locks_still_gets_run_folders_which_are_then_never_swept(tmp_path, monkeypatch):
    """Some network mounts refuse flock (ENOLCK): a grade there must still run. Its folder has
    no lock file, so no sweep can take it for abandoned (only a proven abandonment counts)."""
    import errno
    import fcntl

    from autograder.runner.process import os_spawn

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(fcntl, "flock", no_locks)
    made = Path(os_spawn.new_run_dir())
    assert made.is_dir() and not (made / "private" / "alive").exists() and list((made / "private").iterdir()) == []
    assert not os_spawn.remove_if_abandoned(str(made)) and made.is_dir()
    os_spawn.remove_tree(str(made))
    assert not made.exists()


def test_an_interrupt_python_dropped_still_ends_the_grade_as_interrupted(tmp_path, monkeypatch):
    """A KeyboardInterrupt raised while a finaliser runs is printed and dropped by Python, and
    the run goes on (blind tester L: a SIGTERM once ended in a complete result, exit 0). The
    handler records each interrupt (core/host.RECEIVED); a run that ends after one is
    reported as interrupted, by what the record says."""
    from autograder import cli
    from autograder.core import host

    monkeypatch.setattr(host, "RECEIVED", [KeyboardInterrupt("SIGTERM")])
    monkeypatch.setattr(cli, "interrupt_on_termination", lambda: None)  # this test process keeps its handlers
    out = tmp_path / "r.json"
    rc = cli.main(["grade", str(SOLUTIONS), "--skill", "qkv", "--format", "json", "--no-progress", "--output", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    assert rc == 130 and (data["status"], data["message"]) == ("interrupted", "grading was interrupted (SIGTERM)")


def test_an_interrupt_python_dropped_prints_no_traceback():
    """CI saw "Exception ignored in: <function _get_module_lock.<locals>.cb>" and a traceback
    on stderr when SIGTERM came while importlib's callback ran: the interrupt is recorded and
    reported as the grade's interruption, so Python's own print of it is dropped; any other
    unraisable error still prints."""
    code = (
        f"import gc, os, signal, sys, weakref; sys.path.insert(0, {str(ROOT)!r})\n"
        "from autograder.core import host\n"
        "host.interrupt_on_termination(); host.interrupt_on_termination()\n"
        "class Thing: pass\n"
        "kept = weakref.ref(Thing(), lambda _ref: os.kill(os.getpid(), signal.SIGTERM))\n"
        "gc.collect()\n"
        "other = weakref.ref(Thing(), lambda _ref: 1 / 0)\n"
        "gc.collect()\n"
        "print([str(exc) for exc in host.RECEIVED])\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.split() == ["['SIGTERM']"], (run.stdout, run.stderr)
    assert "KeyboardInterrupt" not in run.stderr and run.stderr.count("Traceback") == 1, run.stderr
    assert "ZeroDivisionError" in run.stderr, run.stderr


def test_an_interrupt_before_the_run_waits_stops_the_trusted_process_before_its_folder_goes(monkeypatch):
    """An interrupt while the submission is read (before the run is waited for) left the
    trusted process running after its folder was removed; under load in CI it left a folder
    behind. It is stopped, and waited for, first."""
    from autograder.runner import grade as grade_module

    config = load(ROOT / "grading.toml").select(["qkv"])
    process = start(config)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt("SIGTERM")

    monkeypatch.setattr(grade_module, "prepare", interrupted)
    results = grade(GradeRequest(config, str(SOLUTIONS), seed=SEED, process=process))
    assert results.status == "interrupted", results.message
    assert process.proc.poll() is not None  # stopped, not left to run on
    assert not process.run_dir.exists()


def test_an_interrupt_while_the_run_is_waited_for_stops_it_once_and_reports_it():
    """The same while the tests run (inside ``wait``, which closes its pipe however it ends):
    stopping the process again closed that pipe twice — "the grader itself failed (EBADF)"
    instead of "interrupted" (CI's slow set)."""
    config = load(ROOT / "grading.toml").select(["qkv"])
    process = start(config)

    def interrupted(event):
        raise KeyboardInterrupt("SIGTERM")

    results = grade(GradeRequest(config, str(SOLUTIONS), seed=SEED, process=process, on_event=interrupted))
    assert (results.status, results.message) == ("interrupted", "grading was interrupted (SIGTERM)"), results.message
    assert process.proc.poll() is not None and not process.run_dir.exists()


def test_a_signal_the_grade_was_started_ignoring_stays_ignored():
    """``nohup make grade`` ignores SIGHUP, a background job SIGINT: the grade keeps them
    ignored (blind tester L: a hangup under nohup interrupted the grade)."""
    code = (
        f"import signal, sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from autograder.core.host import interrupt_on_termination\n"
        "interrupt_on_termination()\n"
        "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN, signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)\n"
    )
    ignoring = subprocess.run(
        [
            sys.executable,
            "-c",
            "import signal, subprocess, sys; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
            "sys.exit(subprocess.run([sys.executable, '-c', sys.argv[1]]).returncode)",
            code,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ignoring.stdout.split() == ["True", "False"], ignoring.stderr
