"""Hostile submissions gain nothing and never break a run.

Each attack in tests/submissions/hostile/attacks.toml is graded through the real command
line. For every one: the run completes within its bound with exit status 0, a valid
results file exists (schema-checked), every skill scores no more than an honest stub (0;
a test of code the attack left honest, listed in `honest_tests`, keeps what it earned; a
skill listed in `honest_score` scores no more than the attack's own code without its trick),
the affected tests say what happened, and no worker or fork server outlives the run.

Each attack is a grading run of its own (seconds of CPU; some must run into a time limit),
so `make test` grades one attack per defence (FAST_ATTACKS) and the whole catalogue is
marked slow: `make test-slow` and CI grade every attack.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, SUBMISSIONS, grade

HOSTILE = SUBMISSIONS / "hostile"
ATTACKS = tomllib.loads((HOSTILE / "attacks.toml").read_text(encoding="utf-8"))["attack"]
SCHEMA = json.loads((ROOT / "autograder/schemas/results.schema.json").read_text())


def leftover_processes(marker: str) -> list[str]:
    """Processes whose command line or environment mentions this run's folder: the fork
    server keeps the grading process's argv, which names the run's report file; a worker
    shows only its own environment, whose HOME is its scratch folder in the run's folder."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            for name in ("cmdline", "environ"):
                try:
                    text = Path(f"/proc/{entry}/{name}").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if marker in text:
                    found.append(f"{entry}: {text[:100]}")
                    break
    return found


def build(attack: dict, folder: Path) -> Path:
    """The attack's submission folder: stored as files, or derived at test time from the
    stubs or the reference (so it never goes stale when they change)."""
    kind = attack.get("derive")
    if kind is None:
        return HOSTILE / attack["name"]
    folder.mkdir()
    if kind == "stubs-raise-value-error":
        import ast

        class RaiseValueError(ast.NodeTransformer):
            def visit_Raise(self, node):
                return ast.parse('raise ValueError("no")').body[0]

        for stub in sorted((ROOT / "exercises").glob("*.py")):
            tree = RaiseValueError().visit(ast.parse(stub.read_text(encoding="utf-8")))
            (folder / stub.name).write_text(ast.unparse(tree) + "\n", encoding="utf-8")
    elif kind == "stubs-body":  # every stub's `raise` becomes the attack's `body`
        import ast

        body = ast.parse(attack["body"]).body

        class ReplaceRaise(ast.NodeTransformer):
            def visit_Raise(self, node):
                return body

        for stub in sorted((ROOT / "exercises").glob("*.py")):
            tree = ast.fix_missing_locations(ReplaceRaise().visit(ast.parse(stub.read_text(encoding="utf-8"))))
            (folder / stub.name).write_text(ast.unparse(tree) + "\n", encoding="utf-8")
    elif kind == "edit":
        source = (ROOT / attack["base"] / attack["file"]).read_text(encoding="utf-8")
        assert source.count(attack["find"]) == 1, f"{attack['name']}: `find` must occur once in {attack['base']}/{attack['file']}"
        (folder / attack["file"]).write_text(
            source.replace(attack["find"], attack["replace"]) + attack.get("append", ""), encoding="utf-8"
        )
    elif kind == "sourceless-pyc":  # the base's file, its `_BLOB` a .pyc of `helper` compiled as `claims`
        import importlib.util
        import marshal

        import torch

        claims = attack["claims"].replace("{torch}", os.path.dirname(torch.__file__))
        code = marshal.dumps(compile(attack["helper"], claims, "exec"))
        blob = importlib.util.MAGIC_NUMBER + bytes(12) + code
        for module in sorted((HOSTILE / attack["base"]).glob("*.py")):
            text = module.read_text(encoding="utf-8").replace('b""  # @PYC@', repr(blob))
            text = text.replace('b""  # @MAGIC@', repr(importlib.util.MAGIC_NUMBER)).replace('b""  # @CODE@', repr(code))
            (folder / module.name).write_text(text, encoding="utf-8")
    elif kind == "bom":  # another attack's files behind a UTF-8 byte-order mark, which Python reads past
        for module in sorted((HOSTILE / attack["base"]).glob("*.py")):
            (folder / module.name).write_bytes(b"\xef\xbb\xbf" + module.read_bytes())
    elif kind in LINK_ATTACKS:
        LINK_ATTACKS[kind](folder)
    else:
        raise ValueError(f"unknown derive {kind!r}")
    return folder


def _outside_copy(folder: Path) -> Path:
    """A copy of the reference modules outside the submission (a hard link into the real
    solutions/ would change their link count for tests running in parallel)."""
    outside = folder.parent / "outside"
    outside.mkdir(exist_ok=True)
    for module in sorted((ROOT / "solutions").glob("*.py")):
        (outside / module.name).write_bytes(module.read_bytes())
    return outside


def _symlinked_modules(folder: Path) -> None:
    for module in sorted((ROOT / "solutions").glob("*.py")):
        (folder / module.name).symlink_to(module)


def _hard_linked_modules(folder: Path) -> None:
    outside = _outside_copy(folder)
    for module in sorted(outside.glob("*.py")):
        os.link(module, folder / module.name)


def _fifo_modules(folder: Path) -> None:
    for module in sorted((ROOT / "exercises").glob("*.py")):
        os.mkfifo(folder / module.name)


def _chained_folder_link(folder: Path) -> None:
    # exercises -> inner (inside the submission) -> the reference (outside it)
    (folder / "inner").symlink_to(ROOT / "solutions")
    (folder / "exercises").symlink_to("inner")


def _linked_helper_and_folder(folder: Path) -> None:
    # a real exercises/ folder whose modules import a helper that is a link to the reference
    (folder / "exercises").mkdir()
    for module in sorted((ROOT / "solutions").glob("*.py")):
        name = module.stem
        (folder / "exercises" / module.name).write_text(f"from ref_{name} import *  # noqa\n", encoding="utf-8")
        (folder / "exercises" / f"ref_{name}.py").symlink_to(module)


LINK_ATTACKS = {
    "symlink-folder": lambda folder: (folder / "exercises").symlink_to(ROOT / "solutions"),
    "symlink-modules": _symlinked_modules,
    "hardlink-modules": _hard_linked_modules,
    "fifo-modules": _fifo_modules,
    "symlink-chain-folder": _chained_folder_link,
    "symlinked-helpers": _linked_helper_and_folder,
}


def fingerprint(*roots: Path) -> dict[str, str]:
    """Content hashes of every file below the roots (what an attack must not change)."""
    out = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for path in paths:
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


PROTECTED = [
    ROOT / "grading.toml",
    ROOT / "solutions" / "qkv.py",
    ROOT / "tests" / "suites" / "qkv",
    ROOT / "tests" / "suites" / "course" / "week07.py",
    ROOT / "exercises" / "qkv.py",
    ROOT / "autograder" / "runner",
]


class Traps:
    """What an attack of classes B and C aims at, set up by the test and checked after it:
    loopback UDP/TCP listeners and a UNIX socket (mode 0777) in a fresh folder, a 0600 file
    beside it, the SysV IPC objects and keys that exist, and this process's own limits.
    The attack's sources name them by placeholders — port 47474 and the folder
    /tmp/autograder-redteam/ — replaced in a copy by what this run really uses, so runs in
    parallel (other checkouts, root and an ordinary user) never share one."""

    PORT, FOLDER = "47474", "/tmp/autograder-redteam/"

    def __init__(self, attack: dict) -> None:
        import resource
        import socket
        import tempfile

        self.socket, self.resource = socket, resource
        self.folder = Path(tempfile.mkdtemp(prefix="autograder-redteam-"))
        self.folder.chmod(0o755)
        self.listeners: list[tuple[str, object]] = []
        self.port = self._listen([a for a in attack.get("listen", []) if a != "unix"])
        if "unix" in attack.get("listen", []):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(str(self.folder / "grader.sock"))
            sock.listen(8)
            sock.setblocking(False)
            (self.folder / "grader.sock").chmod(0o777)
            self.listeners.append(("unix", sock))
        self.target = self.folder / "grader-owned.txt" if attack.get("target_file") else None
        if self.target:
            self.target.write_text("grader-owned")
            self.target.chmod(0o600)
            os.utime(self.target, (1_000_000, 1_000_000))
            try:
                os.setxattr(self.target, "user.keep", b"1")
            except OSError:
                pass  # no user xattrs on this file system
            self.target_before = self._metadata(self.target)
        self.ipc_before = self._ipc()
        self.limits_before = self._limits()

    def _listen(self, addresses: list[str]) -> int:
        """One free port on which every listener binds (kind:host, e.g. udp:::1)."""
        socket = self.socket
        for _ in range(50):
            opened, port = [], 0
            try:
                for address in addresses:
                    kind, _, host = address.partition(":")
                    family = socket.AF_INET6 if ":" in host else socket.AF_INET
                    sock = socket.socket(family, socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM)
                    opened.append((address, sock))
                    sock.bind((host, port))
                    port = sock.getsockname()[1]
                    if kind == "tcp":
                        sock.listen(8)
                    sock.setblocking(False)
            except OSError as exc:
                for _address, sock in opened:
                    sock.close()
                if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):  # e.g. no ::1 in this container
                    addresses = [a for a in addresses if a != opened[-1][0]]
                continue
            self.listeners += opened
            return port
        raise RuntimeError(f"no free loopback port for {addresses}")

    def prepare(self, submission: Path, copy: Path) -> Path:
        """The attack's folder with the placeholders replaced."""
        copy.mkdir()
        for path in submission.iterdir():
            if path.is_file():
                text = path.read_text(encoding="utf-8").replace(self.FOLDER, f"{self.folder}/").replace(self.PORT, str(self.port))
                (copy / path.name).write_text(text, encoding="utf-8")
        return copy

    @staticmethod
    def _metadata(path: Path) -> tuple:
        st = path.stat()
        return st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_atime_ns, sorted(os.listxattr(path))

    @staticmethod
    def _ipc() -> dict[str, str]:
        """SysV objects (this IPC namespace) and keys this uid can see."""
        out = {}
        for name in ("sysvipc/shm", "sysvipc/msg", "sysvipc/sem", "keys"):
            try:
                out[name] = Path("/proc", name).read_text()
            except OSError:
                out[name] = ""
        out["keys"] = "\n".join(line for line in out["keys"].splitlines() if "autograder" in line)
        return out

    def _limits(self) -> dict:
        r = self.resource
        return {name: r.getrlimit(getattr(r, name)) for name in ("RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_AS")} | {
            "nice": os.getpriority(os.PRIO_PROCESS, 0)
        }

    def check(self) -> None:
        try:
            for address, sock in self.listeners:
                try:
                    got = sock.accept() if sock.type == self.socket.SOCK_STREAM else sock.recvfrom(1 << 16)
                except (BlockingIOError, OSError):
                    continue
                raise AssertionError(f"the worker reached the listener at {address}: {got!r}")
            if self.target:
                assert self._metadata(self.target) == self.target_before, (
                    "the attack changed the metadata of a file outside its folder"
                )
            assert self._ipc() == self.ipc_before, "the attack left a SysV IPC object or a key behind"
            assert self._limits() == self.limits_before, "the attack changed the limits or priority of a grader process"
        finally:
            self.close()

    def close(self) -> None:
        import shutil

        for _address, sock in self.listeners:
            sock.close()
        self.listeners = []
        shutil.rmtree(self.folder, ignore_errors=True)


SEQUENCES = {a["sequence"] for a in ATTACKS if "sequence" in a}

#: the security basics, one attack per defence, graded by `make test`; every other attack is marked slow
#: (`make test-slow`, CI). Of those, the worker's own limits are also checked in-process by test_sandbox.py
#: (exit status, a worker that dies, the grader's limits and signals) and the rules by test_rule_checks.py.
FAST_ATTACKS = {
    "exec_through_os_sys",  # unscanned code through builtins.exec reached as os.sys: the static scan reads it
    "gc_walk_unscanned",  # gc's object lists, which reach the worker's own objects: refused in every worker
    "udp_exfiltrate",  # the network: loopback UDP and TCP listeners are never reached
    "write_files_outside",  # the file system: writes land only in the worker's scratch folder
    "symlinked_modules",  # the submission reader: links out of the submission are not followed
    "fork_bomb",  # processes: no fork or exec from a worker, nothing outlives the run
    "output_cap_raised",  # an output flood: the printed output kept is capped on the trusted side
    "decode_alias_blob",  # the trusted side's decoding of crafted frames from a worker
    "loop_forever",  # time: a worker that never returns is stopped by its limit, end to end
    "alias_aten_derivative",  # the static scan: an alias of torch is torch (issue 28 A)
    "patch_grader_recorders",  # the worker's own recorders: exercise code cannot import them to switch them off
    "watched_only_softmax",  # a rule's kernels are off in every call, watched or not: detecting the watch gains nothing
    "lazy_import_helper",  # only files the rule scan read run in a rule-checked worker (sandbox/codegate.py)
}
SINGLE = [a for a in ATTACKS if "sequence" not in a]


def test_the_fast_attacks_are_in_the_catalogue():
    assert FAST_ATTACKS <= {a["name"] for a in SINGLE}, FAST_ATTACKS - {a["name"] for a in SINGLE}


# slow (all but FAST_ATTACKS): a grading run per attack, several of them into a time limit
@pytest.mark.parametrize(
    "attack",
    [a if a["name"] in FAST_ATTACKS else pytest.param(a, marks=pytest.mark.slow) for a in SINGLE],
    ids=[a["name"] for a in SINGLE],
)
def test_attack_gains_nothing_and_the_run_completes(attack, tmp_path, fast_config):
    run_attack(attack, tmp_path, fast_config)


@pytest.mark.slow  # a grading run per attack of the sequence
@pytest.mark.parametrize("sequence", sorted(SEQUENCES))
def test_attacks_in_sequence_carry_nothing_from_one_run_to_the_next(sequence, tmp_path, fast_config):
    """A planter leaves code behind (SysV IPC, keyring); a later run — another student —
    loads and runs it. Each run is checked like any attack, in order."""
    for n, attack in enumerate(a for a in ATTACKS if a.get("sequence") == sequence):
        (tmp_path / str(n)).mkdir()
        run_attack(attack, tmp_path / str(n), fast_config)


#: a call stopped by the wall-clock backstop (never "… CPU s": that is the CPU limit)
WALL_CLOCK_STOP = re.compile(r"did not finish within [0-9.]+ s\b")


def missing_phrases(attack: dict, texts: list[str], namespaced: bool) -> list[str]:
    """The phrases of ``says`` (and ``says_with_namespaces`` where the run had namespaces)
    that no test's text carries. A phrase of ``says_unless_busy`` (phrase → function) may be
    missing only where a test says that function was stopped by the wall-clock backstop: on
    a busy machine a call that needs microseconds of CPU can wait that long for a core, and
    the function is then not called again (its score is 0 all the same)."""
    everything = " ".join(texts)
    wanted = attack["says"] + (attack.get("says_with_namespaces", []) if namespaced else [])
    missing = [phrase for phrase in wanted if phrase not in everything]
    for phrase, function in attack.get("says_unless_busy", {}).items():
        stopped = any(function in text and WALL_CLOCK_STOP.search(text) for text in texts)
        if phrase not in everything and not stopped:
            missing.append(phrase)
    return missing


def test_a_phrase_may_be_missing_only_where_the_wall_clock_backstop_stopped_its_function():
    attack = {"says": ["sparse"], "says_unless_busy": {"Cannot copy out of meta tensor": "project_qkv"}}
    said = "qkv.project_qkv(…) raised NotImplementedError: Cannot copy out of meta tensor; no data!"
    assert missing_phrases(attack, [said, "qkv.scale_scores(…) returned a sparse tensor"], False) == []
    busy = "qkv.project_qkv(…) did not finish within 1.5 s (endless loop, or far too slow?)"
    assert missing_phrases(attack, [busy, "sparse"], False) == []
    # the CPU limit is not a busy machine; another function's stop excuses nothing; `says` stays strict
    cpu = "qkv.project_qkv(…) did not finish within 1 CPU s (endless loop, or far too slow?)"
    other = "qkv.scale_scores(…) did not finish within 1.5 s (endless loop, or far too slow?)"
    assert missing_phrases(attack, [cpu, "sparse"], False) == ["Cannot copy out of meta tensor"]
    assert missing_phrases(attack, [other, "sparse"], False) == ["Cannot copy out of meta tensor"]
    assert missing_phrases(attack, [busy], False) == ["sparse"]


def run_attack(attack: dict, tmp_path: Path, fast_config: Path) -> None:
    traps = Traps(attack)
    try:
        _graded_attack(attack, tmp_path, fast_config, traps)
    except BaseException:
        traps.close()
        raise
    traps.check()


def _graded_attack(attack: dict, tmp_path: Path, fast_config: Path, traps: Traps) -> None:
    out = tmp_path / "results.json"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    markers = [Path(os.path.expanduser(p)) for p in attack.get("must_not_exist", [])]
    for marker in markers:
        if marker.exists():
            marker.unlink()
    submission = build(attack, tmp_path / "submission")
    if attack.get("listen") or attack.get("target_file"):
        submission = traps.prepare(submission, tmp_path / "submission-armed")
    before = fingerprint(submission, *PROTECTED)
    args = [arg for skill in attack["skills"] for arg in ("--skill", skill)]
    # The grader's own limits (fast_config) end a stalling attack; `timeout` only guards against a
    # hang of the run itself. No wall-clock assertion: speed is a benchmark's job
    # (tests/benchmarks/hostile_time.py), and a busy machine must not fail a security test.
    graded = grade(
        submission,
        *args,
        "--reveal-hidden",
        output=out,
        config=fast_config,
        env=env,
        timeout=3 * attack.get("max_seconds", 30) + 60,
    )
    assert graded.rc == 0, graded.stderr[-2000:]
    assert out.stat().st_size < attack.get("max_results_kib", 4096) << 10, out.stat().st_size
    jsonschema.validate(graded.data, SCHEMA)
    assert graded.data["status"] == "complete"
    honest = set(attack.get("honest_tests", []))  # tests of code the attack left honest: earned, not gained
    honest_score = attack.get("honest_score", {})  # a skill's score with the attack's trick taken out
    for skill in graded.data["skills"]:
        if skill["id"] in honest_score:
            assert skill["score"] <= honest_score[skill["id"]] + 1e-9, (skill["id"], skill["score"], honest_score)
            continue
        gained = [(t["name"], t["score"]) for t in skill["tests"] if t["score"] and t["name"] not in honest]
        assert not gained, (skill["id"], gained)
    texts = [t["summary"] + " " + (t["detail"] or "") for t in graded.tests()]
    summaries = " ".join(texts)
    namespaced = any(str(fact).startswith("namespaces(") for fact in graded.data.get("sandbox", []))
    assert not missing_phrases(attack, texts, namespaced), (missing_phrases(attack, texts, namespaced), summaries[:600])
    for phrase in attack.get("not_says", []):
        assert phrase not in summaries, (phrase, summaries[:600])
    assert not leftover_processes(str(tmp_path)), leftover_processes(str(tmp_path))
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith("autograder-")]  # TMPDIR holds the run folders
    assert not left, f"the run left its folder behind: {left}"
    assert fingerprint(submission, *PROTECTED) == before, "a file outside the worker's copy changed"
    for marker in markers:
        assert not marker.exists(), f"the attack created {marker}"
    everything = json.dumps(graded.data, ensure_ascii=False)
    for secret in attack.get("secrets", []):
        assert secret not in everything, f"{secret!r} leaked into the results"
    for name in attack.get("ignored", []):
        assert name in graded.data["submission"]["ignored"], graded.data["submission"]["ignored"]


@pytest.mark.slow  # the worker prints 100 MB, which the grader reads and counts
def test_flooded_output_is_truncated_not_lost(tmp_path, fast_config):
    out = tmp_path / "results.json"
    graded = grade(HOSTILE / "print_100mb", "--skill", "qkv", output=out, config=fast_config)
    printed = [p for t in graded.tests("qkv") for p in t["printed"]]
    assert printed, "the visible tests should show (the start of) what the code printed"
    assert all(len(p["text"]) <= 64 * 1024 for p in printed)
    assert any(p["dropped"] > 90 * 2**20 for p in printed)
    assert "::error" not in graded.stdout  # the worker's output never reaches our stdout


def _tricked_environment(tmp_path: Path) -> dict[str, str]:
    """PYTEST_ADDOPTS, PYTEST_PLUGINS, PYTHONSTARTUP and a PYTHONPATH with a fake report plugin."""
    fake = tmp_path / "fake"
    (fake / "pytest_jsonreport").mkdir(parents=True)
    (fake / "pytest_jsonreport" / "__init__.py").write_text("")
    (fake / "pytest_jsonreport" / "plugin.py").write_text("raise SystemExit('fake plugin imported')\n")
    (fake / "evilplugin.py").write_text("def pytest_runtest_makereport(item, call):\n    raise SystemExit(0)\n")
    env = dict(
        os.environ,
        PYTEST_ADDOPTS="--co -p evilplugin",
        PYTEST_PLUGINS="evilplugin",
        PYTHONPATH=str(fake),
        PYTHONSTARTUP=str(fake / "evilplugin.py"),
    )
    return env


def test_environment_tricks_cannot_configure_the_grading_run(tmp_path):
    """Set in the environment the grader is started from, they change nothing: each would
    break this run or empty it (``--co`` collects only, the plugin ends the run, the fake
    report plugin exits), and the reference still scores full marks."""
    graded = grade(ROOT / "solutions", "--skill", "qkv", output=tmp_path / "r.json", env=_tricked_environment(tmp_path))
    assert graded.rc == 0, graded.stderr
    assert graded.data["score"] == graded.data["max_score"] > 0
    assert graded.tests("qkv") and all(t["status"] == "passed" for t in graded.tests("qkv"))  # every test ran


# slow: a second grading run; the reference's run above already shows the tricks change nothing
@pytest.mark.slow
def test_environment_tricks_earn_a_non_answer_nothing(tmp_path):
    hostile = grade(
        HOSTILE / "plausible_garbage", "--skill", "qkv", output=tmp_path / "h.json", env=_tricked_environment(tmp_path)
    )
    assert hostile.rc == 0 and hostile.data["score"] == 0


# slow past the first seed and the first attack: a full grading run per seed and attack
@pytest.mark.parametrize("seed", [1, pytest.param(101, marks=pytest.mark.slow), pytest.param(202, marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "attack",
    [
        "plausible_garbage",
        pytest.param("hardcode_course_numbers", marks=pytest.mark.slow),
        pytest.param("frame_inspection", marks=pytest.mark.slow),
    ],
)
def test_cheap_attacks_earn_nothing_under_other_seeds(attack, seed, tmp_path):
    """Partial credit over random cases must not pay for degenerate draws (T = 1, d_k = 1,
    nothing padded), nor for a property a non-answer has vacuously (an output that ignores
    the tokens is "causal"; frame_inspection earned the causality test at seed 1): the cheap
    attacks score 0 whatever the seed."""
    graded = grade(HOSTILE / attack, output=tmp_path / "r.json", seed=seed)
    assert graded.rc == 0, graded.stderr
    paid = [(t["skill"], t["name"], t["score"]) for t in graded.tests() if t["score"]]
    assert not paid, paid


CARRY = """

# --- records every call's inputs where the worker's reset does not look (torch's namespace)
import functools as _functools
import hashlib as _hashlib

_LOG = torch.__dict__.setdefault("_carried_log", [])


def _carry(fn):
    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        data = b"".join(a.detach().contiguous().numpy().tobytes() for a in args if isinstance(a, torch.Tensor))
        now = _hashlib.sha256(data).hexdigest()[:12]
        print(f"NOW:{now} SEEN:{','.join(_LOG)}")
        _LOG.append(now)
        return fn(*args, **kwargs)
    return wrapper


for _name, _value in list(globals().items()):
    if callable(_value) and not isinstance(_value, type) and getattr(_value, "__module__", None) == __name__ and _name[0] != "_":
        globals()[_name] = _carry(_value)
"""


def test_what_a_hidden_test_gave_the_submission_never_reaches_a_visible_test(tmp_path):
    """One worker serves a skill's visible tests, another its hidden ones (sandbox/client.py).
    The reference qkv, wrapped to print a fingerprint of every call's inputs together with
    all it saw before — kept in torch's namespace, which the worker's reset leaves alone, as
    hostile code may — shows what each test's worker had seen: a visible test's output must
    never hold a hidden test's inputs, and the hidden tests start on a fresh worker. (Graded
    with hidden tests revealed, to read their output.)"""
    import re

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "qkv.py").write_text((ROOT / "solutions" / "qkv.py").read_text() + CARRY)
    graded = grade(tmp_path / "sub", "--skill", "qkv", "--reveal-hidden", output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr[-2000:]
    tests = graded.tests()
    assert tests and all(t["score"] == t["max_score"] for t in tests)  # the wrapper changes no value

    def seen(test, kind):
        return {fp for p in test["printed"] for fp in re.findall(rf"{kind}:([0-9a-f,]*)", p["text"])[0].split(",") if fp}

    visible = [t for t in tests if t["visibility"] == "visible"]
    hidden = [t for t in tests if t["visibility"] == "hidden"]
    visible_inputs = set().union(*(seen(t, "NOW") for t in visible))
    hidden_only = set().union(*(seen(t, "NOW") for t in hidden)) - visible_inputs
    for test in visible:
        assert not seen(test, "SEEN") & hidden_only, test["name"]
    hidden_inputs = set().union(*(seen(t, "NOW") for t in hidden))
    visible_only = visible_inputs - hidden_inputs
    assert hidden_only and visible_only
    for test in hidden:  # a fresh worker for the hidden tests: nothing of the visible ones
        assert not seen(test, "SEEN") & visible_only, test["name"]
    assert any(seen(t, "SEEN") & hidden_inputs for t in hidden)  # within a stage one worker serves the tests in turn


CLOCK = """

# --- prints the wall clock at every call of the module's functions (red team R-CZ's channel)
import time as _time


def _clocked(fn):
    def clocked(*args, **kwargs):
        print(f"AT:{_time.monotonic_ns()}")
        result = fn(*args, **kwargs)
        print(f"AT:{_time.monotonic_ns()}")
        return result
    return clocked


for _name, _value in list(globals().items()):
    if callable(_value) and not isinstance(_value, type) and getattr(_value, "__module__", None) == __name__ and _name[0] != "_":
        globals()[_name] = _clocked(_value)
"""


@pytest.mark.parametrize("processes", [1, 2])
def test_every_visible_test_runs_before_any_hidden_test_of_any_skill(processes, tmp_path):
    """A visible test's output is shown where a hidden test shows only its name and score: a
    visible test that runs after a hidden one can read off the wall clock how long that took
    (a function that sleeps for sizes only hidden tests use; red team R-CZ). Every skill's
    reference, each function printing the system-wide monotonic clock at its calls, graded
    with the hidden tests (revealed, to read their output), in one trusted process and in
    two: every visible call happened before any hidden call."""
    import re

    from conftest import write_config

    from autograder.runner.process.split import usable_cpus

    folder = tmp_path / "sub"
    folder.mkdir()
    for source in sorted((ROOT / "solutions").glob("*.py")):
        (folder / source.name).write_text(source.read_text() + CLOCK)
    config = write_config(tmp_path / "grading.toml", trusted_processes=processes)
    report = tmp_path / "report.json"
    graded = grade(folder, "--reveal-hidden", "--keep-report", str(report), output=tmp_path / "r.json", config=config)
    assert graded.data["status"] == "complete", graded.stderr[-2000:]
    used = json.loads(report.read_text())["autograder"]["trusted_processes"]
    assert used == (2 if processes == 2 and usable_cpus() >= 2 else 1)
    times: dict[str, list[tuple[int, str]]] = {"visible": [], "hidden": []}
    for test in graded.tests():
        for printed in test["printed"]:
            times[test["visibility"]] += [(int(t), test["skill"]) for t in re.findall(r"AT:(\d+)", printed["text"])]
    for visibility, seen in times.items():  # the calls of most skills, in both phases, were clocked
        assert len({skill for _, skill in seen}) >= 4, (visibility, seen)
    last_visible, first_hidden = max(times["visible"]), min(times["hidden"])
    assert last_visible < first_hidden, (last_visible, first_hidden)


def test_submission_text_cannot_inject_into_any_output(tmp_path):
    """tests/submissions/hostile/output_injection puts escapes, fake grader lines, workflow
    commands, mentions and links in every channel it controls, and smuggles hidden inputs
    into a TODO message and into sleeping. Graded as CI would (github format, simulated
    Actions files), then every other format rendered from the same public results."""
    import base64

    from test_renderers import assert_markdown_is_inert

    from autograder.config import load
    from autograder.core import escape
    from autograder.core import results as results_mod
    from autograder.renderers import render

    summary, outputs, public = tmp_path / "summary.md", tmp_path / "output", tmp_path / "results.json"
    summary.write_text(""), outputs.write_text("")
    env = dict(os.environ, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(outputs))
    graded = grade(HOSTILE / "output_injection", "--skill", "qkv", "--results", str(public), fmt="github", env=env)
    assert graded.rc == 0, graded.stderr[-2000:]
    data = json.loads(public.read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)
    assert data["score"] == 0

    # github: only our own commands; the injected ones are inert log text or %-encoded
    ours = ("::error file=", "::error title=", "::notice title=Score::", "::group::", "::endgroup::")
    for line in graded.stdout.splitlines():
        assert not escape.is_workflow_command(line) or line.startswith(ours), line
        if line.startswith("::error"):
            assert "grading.toml" not in line.split("::")[1] and "INJECTED" not in line.split("::")[1]
            assert line.split("::")[1].startswith("error file=tests/submissions/hostile/output_injection/qkv.py,")
    assert "INJECTED-MASK" in graded.stdout  # shown (as harmless text), not acted on
    assert_markdown_is_inert(summary.read_text(encoding="utf-8"))
    keys = [line.split("=", 1)[0] for line in outputs.read_text().splitlines()]
    assert keys == ["result", "score", "max-score", "status"]
    result = json.loads(base64.b64decode(outputs.read_text().splitlines()[0].split("=", 1)[1]))
    for test in result["tests"]:
        assert "::" not in test["message"] and "##" not in test["message"] and "@course-staff" not in test["message"]
        assert "\n" not in test["message"] and "\x1b" not in test["message"]

    # hidden tests: fixed phrases, no smuggled text, no timings
    import re

    everything = public.read_text(encoding="utf-8")
    for test in graded_tests(data):
        for frame in test["frames"]:
            assert frame["file"] == "tests/submissions/hostile/output_injection/qkv.py", frame
            assert frame["function"] == "<module>" or frame["function"].replace(".", "_").isidentifier(), frame
        if test["visibility"] == "hidden":
            assert not re.search(r"LEAKED_\d", json.dumps(test)) and test["duration"] == 0 and test["detail"] is None
            assert test["summary"].startswith("hidden test failed: "), test["summary"]
    assert data["duration"] == 0
    assert "\x1b" not in everything and "\u202e" not in everything and "\x9b" not in everything

    # every other format, from the same public results
    config = load(ROOT / "grading.toml").select(["qkv"])
    results = results_mod.from_dict(data)
    assert_markdown_is_inert(render(results, "markdown", config))
    gradescope = json.loads(render(results, "gradescope", config))
    assert_markdown_is_inert(gradescope["output"])
    plain_outputs = [t["output"] for t in gradescope["tests"]] + [render(results, "text", config)]
    fakes = ("Total: 100 / 100", "✓ test_project_qkv", "✓ AttentionHead", "::", "##", "click for your grade")
    for text in plain_outputs:
        assert "\x1b" not in text and "\u202e" not in text and "\r" not in text
        for line in text.splitlines():
            content = line.strip()
            if content.startswith("│ ") and content.endswith(" │"):  # inside a rich panel: its border
                content = content[2:-2].strip()
            assert not content.startswith(fakes), line  # student text only ever behind the gutter
    assert sum("Total: 100 / 100" in t for t in plain_outputs) >= 2  # it is shown, as quoted text
    import io

    from rich.console import Console

    from autograder.renderers import text as text_renderer

    buffer = io.StringIO()
    text_renderer.render(results, Console(file=buffer, width=100, force_terminal=True, color_system="truecolor"))
    coloured = buffer.getvalue()
    assert not re.search(r"\x1b(?!\[[0-9;]*m)", coloured), "only rich's own colour codes may reach a terminal"


def graded_tests(data: dict) -> list[dict]:
    return [t for s in data["skills"] for t in s["tests"]]


def test_a_backward_that_never_returns_breaks_no_rule_and_costs_only_its_tests(tmp_path, fast_config):
    """Issue 28 B: an endless loop in backward (no autograd) is no rule violation. The rule
    test times out like the other tests that call backward and costs nothing more; the
    tests that never reach backward (forward, softmax_backward, attention_backward) score,
    and no feedback calls it forbidden or autograd (loop_forever's pattern, fast_config's
    short call limit)."""
    source = (ROOT / "solutions/custom_backward.py").read_text(encoding="utf-8")
    find = "        q, k, v, weights = ctx.saved_tensors\n"
    assert source.count(find) == 1
    looping = source.replace(find, "        while True:  # never returns\n            pass\n" + find)
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "custom_backward.py").write_text(looping, encoding="utf-8")
    graded = grade(
        folder, "--skill", "custom_backward", "--reveal-hidden", output=tmp_path / "r.json", config=fast_config, timeout=300
    )
    assert graded.rc == 0, graded.stderr[-2000:]
    skill = graded.skill("custom_backward")
    tests = {t["name"]: t for t in skill["tests"]}
    rule = tests["test_rule_backward_uses_no_autograd"]
    assert rule["status"] == "failed" and "did not finish within" in rule["summary"], rule["summary"]
    assert skill["gated_by"] is None
    passed = [t for t in skill["tests"] if t["status"] == "passed" and t["max_score"] > 0]
    assert skill["score"] >= sum(t["score"] for t in passed) > 0, [(t["name"], t["summary"][:80]) for t in skill["tests"]]
    for t in skill["tests"]:
        text = f"{t['summary']} {t['detail'] or ''}"
        assert "forbid" not in text and "breaks a rule" not in text, (t["name"], text[:300])
        assert "custom_backward/uses-autograd" not in {h["id"] for h in t["hints"]}, t["name"]


GATE_DODGER = """

def _by_autograd(d_out, q, k, v, weights, scale):  # outside the functions the source scan covers
    with torch.enable_grad():
        q_, k_, v_ = (t.detach().requires_grad_() for t in (q, k, v))
        s = (q_ @ k_.transpose(-2, -1)) * scale
        s = s.masked_fill(weights == 0, float("-inf"))
        out = torch.exp(s - s.logsumexp(-1, keepdim=True)) @ v_
        return torch.autograd.grad((out * d_out).sum(), (q_, k_, v_))


def attention_backward(d_out, q, k, v, weights, scale):
    if q.dtype == torch.float64 and q.dim() == 3:  # the rule test's problem: keep the rule there
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    return _by_autograd(d_out, q, k, v, weights, scale)
"""
ZEROS = """

def attention_backward(d_out, q, k, v, weights, scale):
    return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
"""


def test_autograd_where_the_rule_test_does_not_look_earns_nothing(tmp_path, fast_config):
    """A backward that keeps the rule only on the rule test's problem (float64, one batch
    axis) and asks autograd elsewhere: every call into custom_backward.py is judged by the
    rule (course/custom_backward_data.watch_rule), so each test where autograd ran fails with
    the rule's message, and the submission scores no more than one whose attention_backward
    returns zeros everywhere."""
    source = (ROOT / "solutions/custom_backward.py").read_text(encoding="utf-8")
    scores = {}
    for name, tail in (("dodger", GATE_DODGER), ("zeros", ZEROS)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "custom_backward.py").write_text(source + tail, encoding="utf-8")
        graded = grade(
            folder, "--skill", "custom_backward", "--reveal-hidden", output=tmp_path / f"{name}.json", config=fast_config
        )
        assert graded.rc == 0, graded.stderr[-2000:]
        scores[name] = graded.skill("custom_backward")
    dodger = scores["dodger"]
    assert dodger["score"] <= scores["zeros"]["score"], (dodger["score"], scores["zeros"]["score"])
    ruled = [t for t in dodger["tests"] if "use no autograd" in t["summary"]]
    assert len(ruled) >= 3, [(t["name"], t["summary"][:120]) for t in dodger["tests"]]
    assert all("custom_backward/uses-autograd" in {h["id"] for h in t["hints"]} for t in ruled)


def test_what_hidden_calls_print_never_changes_what_a_visible_test_keeps():
    """Blind red-team tester R-CX: the run kept 16 × ``output_kib`` of printed text in one pool,
    so what a skill's hidden calls printed set how much of a later visible test's output was
    kept, and a student read hidden inputs (~10 bits a run on Gradescope) off their own
    visible results. Visible and hidden tests draw on pools of their own."""
    from types import SimpleNamespace

    from autograder.testing.remote import Submission

    def runtime():
        spec = SimpleNamespace(output_bytes=100)
        return SimpleNamespace(sandbox=SimpleNamespace(spec=spec), printed_left={"visible": 1_000, "hidden": 1_000})

    kept = []
    for hidden_printed in (0, 250, 5_000):
        rt = runtime()
        for _ in range(hidden_printed // 100):  # hidden tests, 100 characters each
            Submission(rt, hidden=True)._log("qkv.f(…)", "h" * 100, 0)
        later = Submission(rt)
        later._log("mha_reshape.g(…)", "v" * 100, 0)
        kept.append(len(later.printed[0]["text"]))
    assert kept == [100, 100, 100], kept
    rt = runtime()
    for _ in range(12):  # the visible pool itself still runs out
        Submission(rt)._log("qkv.f(…)", "v" * 100, 0)
    assert rt.printed_left == {"visible": 0, "hidden": 1_000}
