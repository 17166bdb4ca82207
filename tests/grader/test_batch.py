"""`python -m autograder batch`: a class graded at once, each student exactly as a single
`grade` would, none affecting another; resumable; Gradescope exports; safe names.

One small class (qkv only, short call timeout) is graded once through the real command line
and checked from several sides; the rest are unit checks of the pieces.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from conftest import EXERCISES, ROOT, SEED, SOLUTIONS, SUBMISSIONS, grade, write_config

sys.path.insert(0, str(SUBMISSIONS))
import variants

from autograder.instructor.batch import gsmeta, report
from autograder.instructor.batch.students import Student, discover, safe_key

SKILL = "qkv"
MISTAKE = next(m for m in variants.mistakes(SKILL) if m["id"] == "divide-by-dk")
EVIL_NAME = '=HYPERLINK("evil")+cmd|calc'


def batch(submissions: Path, out: Path, *args: str, config: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "batch",
        str(submissions),
        "--out",
        str(out),
        "--skill",
        SKILL,
        "--seed",
        str(SEED),
        "--config",
        str(config),
        "--no-progress",
        *args,
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=_env())


def _env() -> dict:
    env = {**os.environ, "COLUMNS": "80"}  # as a CI log is read
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def rows(out: Path) -> dict[str, dict]:
    return {row["folder"]: row for row in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8")))}


def scores_by_test(data: dict) -> dict[str, tuple[float, str]]:
    return {t["id"]: (t["score"], t["status"]) for s in data["skills"] for t in s["tests"]}


@pytest.fixture(scope="module")
def klass(tmp_path_factory) -> Path:
    """reference, stubs, one mistake (also zipped, one folder deep), a loop, a crash, a broken zip, a hostile name."""
    root = tmp_path_factory.mktemp("class")
    subs = root / "submissions"
    subs.mkdir()
    shutil.copytree(SOLUTIONS, subs / "reference", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(EXERCISES, subs / "stubs", ignore=shutil.ignore_patterns("__pycache__"))
    mistake = variants.build(subs / "mistake", [MISTAKE])
    with zipfile.ZipFile(subs / "zipped.zip", "w") as zf:
        for module in sorted(mistake.glob("*.py")):
            zf.write(module, f"my-repo/exercises/{module.name}")
    shutil.copytree(SUBMISSIONS / "hostile" / "loop_forever", subs / "loop")
    shutil.copytree(SUBMISSIONS / "hostile" / "self_sigkill", subs / "crash")
    (subs / "broken.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    shutil.copytree(SOLUTIONS, subs / EVIL_NAME, ignore=shutil.ignore_patterns("__pycache__"))
    return subs


@pytest.fixture(scope="module")
def graded(klass, fast_config, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, float]:
    out = tmp_path_factory.mktemp("graded") / "out"
    start = time.monotonic()
    proc = batch(klass, out, "--jobs", "2", config=fast_config)
    return out, proc, time.monotonic() - start


def test_batch_writes_a_row_per_student_with_the_right_status(graded):
    out, proc, _ = graded
    assert proc.returncode == 0, proc.stderr[-2000:]
    book = rows(out)
    assert set(book) == {"reference", "stubs", "mistake", "zipped", "loop", "crash", "broken", safe_key(EVIL_NAME)}
    assert list(csv.reader(io.StringIO((out / "gradebook.csv").read_text())))[0][:6] == [
        "student",
        "sid",
        "folder",
        "total",
        "max",
        SKILL,
    ]
    assert float(book["reference"]["total"]) == float(book["reference"]["max"]) == float(book["reference"][SKILL]) > 0
    assert float(book["stubs"]["total"]) == 0
    assert 0 < float(book["mistake"][SKILL]) < float(book["reference"][SKILL])
    assert book["zipped"][SKILL] == book["mistake"][SKILL]
    assert float(book["loop"]["total"]) == 0 and float(book["crash"]["total"]) == 0
    assert book["broken"]["status"] == "error" and "not a zip archive" in book["broken"]["message"]
    for key in ("reference", "stubs", "mistake", "zipped", "loop", "crash"):
        assert book[key]["status"] == "complete", (key, book[key]["message"])
        assert book[key]["seed"] == str(SEED)
        assert len(book[key]["suite_hash"]) == 64
    for key in book:
        folder = out / key
        assert json.loads((folder / "results.json").read_text())["status"] == book[key]["status"]
        assert (folder / "feedback.md").read_text().strip()
    assert not [p for p in out.rglob("*.tmp")]


def test_hostile_names_cannot_become_formulas_or_paths(graded):
    out, _, _ = graded
    book = rows(out)
    row = book[safe_key(EVIL_NAME)]
    assert row["student"] == "'" + EVIL_NAME  # shown as text in a spreadsheet
    assert float(row["total"]) == float(book["reference"]["total"])
    assert all(p.parent == out for p in out.iterdir())
    text = report.gradebook([report.Row(Student("k", "+1", out / "k"), None)], [], "")
    assert "'+1" in text.splitlines()[1]  # every text cell through escape.csv_text (tests/grader/test_escape.py)


# one grading run per student; the loop runs into the call timeout of every test, so it is slow
@pytest.mark.parametrize("key", ["mistake", "reference", pytest.param("loop", marks=pytest.mark.slow)])
def test_each_score_equals_a_single_grade_with_the_same_seed(graded, klass, fast_config, key):
    out, _, _ = graded
    single = grade(klass / key, "--skill", SKILL, config=fast_config, seed=SEED)
    assert single.rc == 0, single.stderr[-1000:]
    batched = json.loads((out / key / "results.json").read_text())
    assert batched["score"] == single.data["score"], key
    assert batched["seed"] == single.data["seed"] == SEED
    assert batched["suite_hash"] == single.data["suite_hash"]
    # the gradebook and summary of a --skill batch name the release's suites, as the grade does
    # (blind fairness tester R-BP: they named a hash of the selected part alone)
    assert rows(out)[key]["suite_hash"] == single.data["suite_hash"]
    assert single.data["suite_hash"][:12] in (out / "summary.md").read_text(encoding="utf-8")
    assert scores_by_test(batched) == scores_by_test(single.data), key


def test_the_mistake_is_named_in_the_summary(graded):
    out, proc, _ = graded
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert MISTAKE["hint"] in summary
    assert "Score distribution per skill" in summary and "█" in summary
    assert MISTAKE["hint"] in proc.stdout
    assert "8 graded, 0 already done" in proc.stdout
    from rich.cells import cell_len

    wide = [line for line in proc.stdout.splitlines() if cell_len(line) > 80 and not line.startswith("→ ")]
    assert not wide, "batch's terminal output is read in 80-column CI logs (paths alone may run longer):\n" + "\n".join(wide)


# slow: two more batch runs of the class; make test keeps the batch fixture's run and its checks
@pytest.mark.slow
def test_resume_skips_finished_students_and_force_regrades(graded, klass, fast_config):
    out, _, _ = graded
    before = {p: p.stat().st_mtime_ns for p in out.glob("*/results.json")}
    again = batch(klass, out, config=fast_config)
    assert again.returncode == 0, again.stderr[-1000:]
    assert "0 graded, 8 already done" in again.stdout
    assert {p: p.stat().st_mtime_ns for p in out.glob("*/results.json")} == before
    # a student who changes a file is graded again; the others are not
    (klass / "stubs" / "qkv.py").write_text((SOLUTIONS / "qkv.py").read_text())
    changed = batch(klass, out, config=fast_config)
    assert "1 graded, 7 already done" in changed.stdout, changed.stdout + changed.stderr[-1000:]
    assert float(rows(out)["stubs"][SKILL]) == float(rows(out)["reference"][SKILL])
    # the regrade says what changed: old → new, and which tests moved
    (change,) = csv.DictReader(io.StringIO((out / "changes.csv").read_text(encoding="utf-8")))
    assert (
        change["student"] == "stubs"
        and float(change["old"]) == 0
        and float(change["new"]) == float(rows(out)["reference"][SKILL])
    )
    assert f"{SKILL}: test_" in change["tests"] and "0 →" in change["tests"]
    assert "1 student(s) regraded: 1 changed, 0 unchanged" in (out / "summary.md").read_text(encoding="utf-8")


# slow: a class of its own graded twice (--force regrades everyone); the metadata reader itself is
# checked in-process below (test_gradescope_metadata_is_read_by_pyyaml_…)
@pytest.mark.slow
def test_gradescope_export_is_read_and_force_regrades(tmp_path, fast_config):
    export = tmp_path / "export"
    export.mkdir()
    shutil.copytree(SOLUTIONS, export / "submission_101")
    shutil.copytree(EXERCISES, export / "submission_102")
    (export / "submission_metadata.yml").write_text(
        "submission_101:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '9001'\n    :email: ada@example.edu\n"
        "  :created_at: 2026-11-01 10:00:00.000000000 -07:00\n  :score: 0.0\n"
        "submission_102:\n  :submitters:\n  - :name: \"@Bob\"\n    :sid: '9002'\n  - :name: Carol\n    :sid: '9003'\n"
        "  :created_at: 2026-11-01 11:00:00.000000000 -07:00\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    first = batch(export, out, config=fast_config)
    assert first.returncode == 0, first.stderr[-1000:]
    book = rows(out)
    assert book["submission_101"]["student"] == "Ada Lovelace" and book["submission_101"]["sid"] == "9001"
    assert book["submission_102"]["student"] == "'@Bob & Carol" and book["submission_102"]["sid"] == "9002 9003"
    assert float(book["submission_101"]["total"]) > 0 == float(book["submission_102"]["total"])
    stamp = (out / "submission_101" / "results.json").stat().st_mtime_ns
    forced = batch(export, out, "--force", config=fast_config)
    assert "2 graded, 0 already done" in forced.stdout
    assert (out / "submission_101" / "results.json").stat().st_mtime_ns != stamp
    assert rows(out) == book  # the same grades again


_SLEEPS_IN_EVERY_CALL = """import time


def project_qkv(x, w_q, w_k, w_v):
    time.sleep(3600)


def attention_scores(q, k):
    time.sleep(3600)
"""

_WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


# slow: a batch interrupted mid-class and waited for (up to 240 s); resume and the gradebook's
# consistency are proved again by test_resume_… (slow) and every CI run
@pytest.mark.slow
def test_ctrl_c_keeps_finished_results_and_a_consistent_gradebook(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(SOLUTIONS, subs / "a_first")
    # b_ to d_ sleep in every call, under a wall-clock backstop of 60 s a call: the Ctrl-C
    # below lands while b_ is surely mid-grade. A CPU loop (loop_forever) is stopped by its
    # CPU limit within a second or two, so b_ could finish before the signal (seen once in CI).
    for name in ("b_sleep", "c_sleep", "d_sleep"):
        (subs / name).mkdir()
        (subs / name / "qkv.py").write_text(_SLEEPS_IN_EVERY_CALL, encoding="utf-8")
    config = write_config(tmp_path / "grading.toml", call_timeout_s=60, skill_time_s=120)
    out = tmp_path / "out"
    # Ctrl-C as at a terminal: a shell's `&` or nohup (how a test run may be started) leaves
    # SIGINT ignored, which exec keeps and Python then respects; give the batch the default
    cmd = [
        sys.executable,
        "-c",
        _WITH_DEFAULT_SIGINT,
        "-m",
        "autograder",
        "batch",
        str(subs),
        "--out",
        str(out),
        "--skill",
        SKILL,
        "--seed",
        str(SEED),
        "--config",
        str(config),
        "--no-progress",
        "--jobs",
        "1",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (out / "a_first" / "results.json").exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(1.0)  # b_sleep is in its first call now, for up to 60 s
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    book = rows(out)
    assert book["a_first"]["status"] == "complete" and float(book["a_first"]["total"]) > 0
    finished = {p.parent.name for p in out.glob("*/results.json")}
    assert {k for k, r in book.items() if r["status"] != "not graded"} == finished
    assert "b_sleep" not in finished
    time.sleep(0.5)
    assert not _leftovers(str(out.resolve()))


def _leftovers(marker: str) -> list[str]:
    """The batch's server and every run forked from it carry --out in their command line."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in text:
                found.append(f"{entry}: {text[:120]}")
    return found


def test_gradescope_metadata_is_read_by_pyyaml_with_every_scalar_kept_as_written():
    """gsmeta is yaml.safe_load's loader minus implicit types: names, sids and dates stay the text
    Gradescope wrote (an unquoted sid keeps its leading zeros), Ruby object tags and flow
    collections read, and a broken file names its line."""
    pytest.importorskip("yaml")
    text = (
        'submission_1:\n  :submitters:\n  - :name: "Zoë \\"Z\\" O\'Neil"\n    :sid: \'007\'\n    :email: z@example.edu\n'
        "  - :name: 'It''s me'\n    :sid: 0008\n  :created_at: 2026-11-01 10:00:00.000000000 -07:00\n  :score: 3.5\n"
        "  :results:\n    tests:\n    - name: 'a: b'\n      output: |-\n        two\n          lines\n    - {}\n  :status: ~\n"
        "  :owner: !ruby/object:User\n    id: 1\n  :tags: [a, b]\n"
        "submission_2:\n  :submitters:\n  - :name: Plain Name # a comment\n    :sid: '9'\n"
    )
    parsed = gsmeta.parse(text)
    one = parsed["submission_1"]
    assert one["submitters"] == [
        {"name": 'Zoë "Z" O\'Neil', "sid": "007", "email": "z@example.edu"},
        {"name": "It's me", "sid": "0008"},
    ]
    assert one["created_at"] == "2026-11-01 10:00:00.000000000 -07:00" and one["score"] == "3.5"
    assert one["results"] == {"tests": [{"name": "a: b", "output": "two\n  lines"}, {}]}
    assert one["status"] is None and one["owner"] is None and one["tags"] == ["a", "b"]
    assert parsed["submission_2"] == {"submitters": [{"name": "Plain Name", "sid": "9"}]}
    assert gsmeta.parse("") == {}
    with pytest.raises(gsmeta.MetadataError, match="line 3"):
        gsmeta.parse("submission_1:\n    :a: 1\n  :b: 2\n")
    with pytest.raises(gsmeta.MetadataError, match="one mapping per submission"):
        gsmeta.parse("- submission_1\n")
    with pytest.raises(gsmeta.MetadataError, match="one mapping per submission"):  # a null key (blind red-team tester R-BZ)
        gsmeta.parse("~:\n  :a: 1\nsubmission_1:\n  :submitters: []\n")


def test_gradescope_metadata_with_nested_aliases_reads_in_its_size_and_no_field_expands_them():
    """YAML aliases nested ten wide, eight deep: ~10⁸ leaves expanded (blind red-team tester
    R-BZ: 40 s and 4 GB at seven levels); read once each, they are a few hundred nodes. A
    submitter's name or an extra field that is a list stays out of the text fields."""
    pytest.importorskip("yaml")
    import time

    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    text = "\n".join(levels) + "\n"
    start = time.process_time()
    with pytest.raises(gsmeta.MetadataError, match="one mapping per submission"):
        gsmeta.parse(text)
    anchors = "anchors:\n" + "".join(f"  {line}\n" for line in levels)  # a mapping: read as a submission entry
    parsed = gsmeta.parse(anchors + "submission_1:\n  :submitters:\n  - :name: *a8\n    :sid: '1'\n  :score: *a8\n")
    assert time.process_time() - start < 5  # linear in the file, not in the expansion (~10⁸ here)
    assert gsmeta.scalar(parsed["submission_1"]["submitters"][0]["name"]) == ""
    assert gsmeta.scalar("  Zoë ") == "Zoë" and gsmeta.scalar(7) == "7" and gsmeta.scalar(None) == ""


def test_student_keys_are_safe_unique_and_links_are_skipped(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    # every name the batch writes beside the students' folders: a student named after one broke the
    # class's outputs (blind red-team tester R-BZ: items.csv, changes.csv, similarity, shard.json)
    ours = ("summary.md", "Items.csv", "changes.csv", "similarity", "plots", "shard.json", "lms", "gradebook.csv")
    for name in ("a b", "a_b", "-=x", "Zoë", *ours):
        (subs / name).mkdir()
    (subs / "link").symlink_to(SOLUTIONS)
    (subs / ".alice").mkdir()  # hidden: skipped, but said (blind red-team tester R-BZ)
    (subs / ".git").mkdir()
    students, notes = discover(subs)
    keys = [s.key for s in students]
    assert [n for n in notes if "hidden" in n] == [".alice: a hidden folder — skipped (rename it without the dot to grade it)"]
    assert len(set(k.lower() for k in keys)) == len(keys)
    assert all("/" not in k and not k.startswith(".") and k.casefold() not in {n.casefold() for n in ours} for k in keys), keys
    assert "Zoë" in keys
    assert any("link" in n and "symbolic link" in n for n in notes)
    assert "link" not in {s.name for s in students}


def test_a_forked_run_starts_like_a_fresh_process(tmp_path):
    """The preloaded process's child looks, from inside, like the fresh `python -m pytest`
    that runner/process/trusted.py starts: a session of its own, the same open descriptors, signal
    handlers, argv, working folder and environment — and no process of its own yet (a grading
    run's child forks its sandbox fork server, as the Early launcher does, never the preloaded
    process; this probe is no grading run)."""
    from autograder.config import load
    from autograder.runner.process import trusted
    from autograder.runner.process.preloaded_launcher import PYTEST, Preloaded

    config = load(ROOT / "grading.toml")
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import json, os, signal, sys\n"
        "def test_probe():\n"
        "    fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))\n"
        "    print('PROBE' + json.dumps({'fds': fds, 'session_leader': os.getsid(0) == os.getpid(), 'argv': sys.argv[1:],\n"
        "        'signals': {s.name: repr(signal.getsignal(s)) for s in signal.Signals "
        "if s not in (signal.SIGKILL, signal.SIGSTOP)},\n"
        "        'mask': sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])), 'cwd': os.getcwd(), 'env': dict(os.environ),\n"
        "        'children': open(f'/proc/self/task/{os.getpid()}/children').read().split()}))\n",
        encoding="utf-8",
    )
    manifest_r, manifest_w = os.pipe()
    progress_r, progress_w = os.pipe()
    argv = [*PYTEST, "-c", os.devnull, "-p", "no:cacheprovider", "-q", "-s", str(probe)]
    env = trusted.environment(config.root, config.suites_dir)

    def probe_with(launch, log_path: Path) -> dict:
        with open(log_path, "wb") as log:
            run = launch(argv, cwd=config.root, env=dict(env), log=log, pass_fds=(manifest_r, progress_w))
        assert run.wait(120) == 0, log_path.read_text()
        line = next(li for li in log_path.read_text().splitlines() if li.startswith("PROBE"))
        return json.loads(line[len("PROBE") :])

    with Preloaded(config.root, config.suites_dir, [], label="probe") as preloaded:
        forked = probe_with(preloaded.spawn, tmp_path / "forked.log")
        assert preloaded.fallbacks == 0
    fresh = probe_with(trusted.popen, tmp_path / "fresh.log")
    for fd in (manifest_r, manifest_w, progress_r, progress_w):
        os.close(fd)
    assert forked["session_leader"] and {manifest_r, progress_w} <= set(forked["fds"])
    assert not forked["children"]
    assert forked == fresh


_BYTECODE_PROBE = """

def _look(folder, compiled):
    import os

    try:
        listed = "listed " + str(len(os.listdir(folder)))
    except OSError as exc:
        listed = "unlisted " + type(exc).__name__
    try:
        with open(compiled, "rb") as fh:
            read = "read " + str(len(fh.read()))
    except OSError as exc:
        read = "unread " + type(exc).__name__
    print("LOOK " + listed + " " + read)


_look({folder!r}, {compiled!r})
"""


def test_a_batch_compiles_the_suites_once_into_a_private_folder_no_worker_reads_and_removes_it(tmp_path, fast_config):
    """Where Python writes no bytecode (PYTHONDONTWRITEBYTECODE=1, as here and on Gradescope)
    every student's run compiled the suites again (~0.12 CPU s a student): a batch's forked
    runs now compile into the batch's own folder (``Preloaded.bytecode_dir``), which later
    runs read. The folder is the grader's alone (0700), hidden from every worker like the
    suites (the run's ``protect``: a submission that knows its name reads nothing there, on
    the first student's run and on a later one's), and gone when the batch ends."""
    from autograder.config import load
    from autograder.runner.grade import GradeRequest
    from autograder.runner.grade import grade as grade_run
    from autograder.runner.process.preloaded_launcher import Preloaded

    config = load(fast_config).select([SKILL])
    with Preloaded(config.root, config.suites_dir, [], label="bytecode") as preloaded:
        folder = preloaded.bytecode_dir
        visible = (config.suites_dir / SKILL / f"test_{SKILL}_visible.py").resolve()
        visible_pyc = Path(importlib.util.cache_from_source(str(visible))).relative_to(visible.parent / "__pycache__")
        visible_pyc = visible.parent / visible_pyc
        assert folder.is_dir() and (folder.stat().st_mode & 0o777) == 0o700
        submission = tmp_path / "student"
        shutil.copytree(SOLUTIONS, submission)
        with open(submission / "qkv.py", "a", encoding="utf-8") as fh:
            # the name of the visible suite's bytecode there, as the trusted process computes it
            fh.write(_BYTECODE_PROBE.format(folder=str(folder), compiled=str(folder) + str(visible_pyc)))
        looks = []
        for _ in range(2):  # the first run writes the folder, the second reads it
            request = GradeRequest(config, str(submission), protect=list(preloaded.protect), launcher=preloaded)
            results = grade_run(request).to_dict()
            assert results["score"] == results["max_score"], results
            looks += [
                line
                for s in results["skills"]
                for t in s["tests"]
                for p in t.get("printed") or []
                for line in p["text"].splitlines()
                if line.startswith("LOOK ")
            ]
            compiled = {p.name.split(".")[0] for p in folder.rglob("*.pyc")}
            assert {"test_qkv_visible", "test_qkv_hidden"} <= compiled, sorted(compiled)
            assert Path(str(folder) + str(visible_pyc)).is_file()
        assert preloaded.fallbacks == 0
    # the folder is empty or unlistable, its bytecode unreadable, on the first run and the second
    assert looks and all(("listed 0" in line or "unlisted" in line) and "unread" in line for line in looks), looks
    assert not folder.exists()


_STACK_PROBE = """

def _stack_below():
    import traceback

    # below this probe and the graded function, innermost first (as text: exercise code gets
    # no frame object, sandbox/frames.py)
    names = [entry.name for entry in reversed(traceback.extract_stack()[:-2])]
    print("STACK " + " ".join(names))


_scale_scores = scale_scores


def scale_scores(*args, **kwargs):
    _stack_below()
    return _scale_scores(*args, **kwargs)
"""


def _stack_seen(results: dict) -> list[str]:
    texts = [p["text"] for s in results["skills"] for t in s["tests"] for p in t.get("printed") or []]
    line = next(li for text in texts for li in text.splitlines() if li.startswith("STACK "))
    return line.split()[1:]


def test_submission_code_runs_a_few_frames_above_the_workers_start_on_both_paths(tmp_path, fast_config):
    """Every operator a rule-checked call runs records the worker's whole Python stack
    (sandbox/probes DispatchRecorder), so each frame below the submission's code costs every
    such call: the fork server is forked before pytest starts (the Early launcher; a batch's
    forked run), and a worker serves from the server's entry, not from inside its request
    loop (sandbox/zygote._BecomeWorker). Before, a batch's workers ran 35 frames deep. (A
    run started as a fresh ``python -m pytest`` — ``launch.Fresh``: a config of another root,
    ``batch --no-preload`` — still forks its server from the plugin's first hook.)"""
    klass = tmp_path / "class"
    submission = klass / "probe"
    shutil.copytree(SOLUTIONS, submission)
    with open(submission / "qkv.py", "a", encoding="utf-8") as fh:
        fh.write(_STACK_PROBE)
    single = grade(submission, "--skill", SKILL)  # this repository's grading.toml: the Early launcher
    out = tmp_path / "out"
    proc = batch(klass, out, config=fast_config)
    assert proc.returncode == 0, proc.stderr[-2000:]
    batched = json.loads((out / "probe" / "results.json").read_text(encoding="utf-8"))
    for path, names in (("grade", _stack_seen(single.data)), ("batch", _stack_seen(batched))):
        assert len(names) <= 16, (path, names)
        assert not {"spawn", "run", "_multicall", "run_module"} & set(names), (path, names)
    assert single.data["score"] == batched["score"] == single.data["max_score"]


# --------------------------------------------------------------------------- uploads that break a run
def test_reserved_output_names_are_compared_casefolded(tmp_path):
    """macOS and Windows file systems take Gradebook.csv/ and gradebook.csv as one name: a
    student folder spelt like one of the batch's own files in any case gets another key."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("Gradebook.csv", "SUMMARY.md", "Batch.LOG", "ann", "ANN"):
        (subs / name).mkdir()
    students, _ = discover(subs)
    keys = [s.key for s in students]
    assert not [k for k in keys if k.casefold() in {"gradebook.csv", "summary.md", "batch.log", ".work"}], keys
    assert len({k.casefold() for k in keys}) == len(keys) == 5


def _small_config(fast_config):
    from autograder.config import load

    return load(fast_config).select([SKILL])


def test_fingerprint_is_what_is_graded_however_many_other_files(tmp_path, fast_config):
    """2 001 junk files sorted before the modules neither hide a changed module nor change the
    fingerprint; a zip's fingerprint follows its modules, not the rest of the archive."""
    from autograder.instructor.batch.students import Student, fingerprint

    config = _small_config(fast_config)
    folder = tmp_path / "ann"
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for i in range(2001):
        (folder / f"a{i:04d}.txt").write_text(str(i))
    ann = Student(key="ann", name="ann", source=folder)
    first = fingerprint(ann, config)
    (folder / "a0007.txt").write_text("changed junk")
    (folder / "zzz.ipynb").write_text("{}")
    assert fingerprint(ann, config) == first
    (folder / "qkv.py").write_text((EXERCISES / "qkv.py").read_text())
    changed = fingerprint(ann, config)
    assert changed != first
    (folder / "helper_one.py").write_text("X = 1\n")  # a helper module is copied: it counts
    assert fingerprint(ann, config) != changed

    modules = {f"hw/{m.name}": m.read_bytes() for m in sorted(SOLUTIONS.glob("*.py"))}
    zips = []
    for junk in (b"one", b"two"):
        path = tmp_path / f"z{len(zips)}" / "bob.zip"
        path.parent.mkdir()
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in modules.items():
                zf.writestr(name, data)
            zf.writestr("hw/data.bin", junk)
        zips.append(Student(key="bob", name="bob", source=path))
    assert fingerprint(zips[0], config) == fingerprint(zips[1], config)


def test_a_student_the_grader_fails_on_gets_a_row_with_the_reason_and_is_retried(tmp_path, fast_config, monkeypatch):
    from autograder.instructor.batch import run as run_mod

    config = _small_config(fast_config)
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(SOLUTIONS, subs / "ann", ignore=shutil.ignore_patterns("__pycache__"))
    students, _ = discover(subs)
    out = tmp_path / "out"

    def broken(*_args, **_kwargs):
        raise RuntimeError("File is encrypted, password required for extraction")

    monkeypatch.setattr(run_mod, "_grade_one", broken)
    options = run_mod.Options(submissions=subs, out=out, jobs=1, seed=SEED, skills=[SKILL], preload=False)
    outcome = run_mod.run(config, students, options)
    assert outcome.graded == 1 and (out / "summary.md").is_file()
    row = rows(out)["ann"]
    assert row["status"] == "error" and "the grader failed on this submission (RuntimeError" in row["message"]
    again = run_mod.run(config, students, options)  # marked retry: graded again, and again no crash
    assert again.graded == 1 and again.skipped == 0


# slow: three batch runs of a class of its own (first, resumed, one student regraded)
@pytest.mark.slow
def test_a_class_with_an_encrypted_and_a_corrupt_zip_completes_and_names_their_problem(tmp_path, fast_config):
    """One good student (2 001 junk files sorted before the modules), one encrypted zip, one
    zip whose deflate stream is corrupt: exit 0, the summary written, the two bad ones listed
    with the reason and the fix; a rerun keeps all three, and a changed module is regraded."""
    from bad_zips import spoiled

    subs = tmp_path / "subs"
    subs.mkdir()
    good = subs / "good"
    shutil.copytree(SOLUTIONS, good, ignore=shutil.ignore_patterns("__pycache__"))
    for i in range(2001):
        (good / f"a{i:04d}.txt").write_text(str(i))
    members = {f"hw/{m.name}": m.read_bytes() for m in sorted(SOLUTIONS.glob("*.py"))}
    (subs / "locked.zip").write_bytes(spoiled(members, "encrypted"))
    (subs / "mangled.zip").write_bytes(spoiled(members, "corrupt-deflate", only="hw/qkv.py"))
    out = tmp_path / "out"
    first = batch(subs, out, "--jobs", "1", config=fast_config)
    assert first.returncode == 0, first.stdout + first.stderr[-2000:]
    assert "Traceback" not in first.stderr
    assert (out / "summary.md").is_file() and "3 students graded" in (out / "summary.md").read_text()
    assert "3 graded, 0 already done" in first.stdout
    book = rows(out)
    assert book["good"]["status"] == "complete" and float(book["good"][SKILL]) > 0
    assert book["locked"]["status"] == "error" and "'locked.zip' is encrypted" in book["locked"]["message"]
    assert book["mangled"]["status"] == "error" and "'mangled.zip' is damaged: 'hw/qkv.py'" in book["mangled"]["message"]
    for key in ("locked", "mangled"):
        assert "upload the .py files themselves" in book[key]["message"]
        assert float(book[key]["total"]) == 0
        assert json.loads((out / key / "results.json").read_text())["status"] == "error"
    again = batch(subs, out, config=fast_config)
    assert again.returncode == 0 and "0 graded, 3 already done" in again.stdout, again.stdout + again.stderr[-2000:]
    (good / "qkv.py").write_text((EXERCISES / "qkv.py").read_text())
    changed = batch(subs, out, config=fast_config)
    assert "1 graded, 2 already done" in changed.stdout, changed.stdout + changed.stderr[-2000:]
    assert float(rows(out)["good"][SKILL]) == 0


# slow: the class is graded twice, whole and in three shards, to compare the two
@pytest.mark.slow
def test_shards_merged_equal_one_run_over_the_whole_class(tmp_path, fast_config):
    """--shard K/N grades disjoint parts (a Slurm array, a CI matrix); --merge builds the same
    gradebook, LMS files and summary (but its timing) as one machine grading everyone."""
    subs = tmp_path / "class"
    subs.mkdir()
    shutil.copytree(SOLUTIONS, subs / "ana", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(EXERCISES, subs / "bo", ignore=shutil.ignore_patterns("__pycache__"))
    variants.build(subs / "cy", [MISTAKE])
    (subs / "di.zip").write_bytes(b"PK\x03\x04 not a zip")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,folder\n1,Ana,ana\n2,Bo,bo\n3,Cy,cy\n4,Di,di\n5,Ed,ed\n", encoding="utf-8")
    common = ("--jobs", "1", "--roster", str(roster))
    whole = batch(subs, tmp_path / "whole", *common, config=fast_config)
    assert whole.returncode == 0, whole.stderr[-2000:]
    parts = []
    for k in (1, 2, 3):
        proc = batch(subs, tmp_path / f"part{k}", *common, "--shard", f"{k}/3", config=fast_config)
        assert proc.returncode == 0, proc.stderr[-2000:]
        parts.append(str(tmp_path / f"part{k}"))
    assert sorted(len(rows(tmp_path / f"part{k}")) for k in (1, 2, 3)) == [1, 1, 2]  # disjoint, all covered
    merged = batch(subs, tmp_path / "merged", *common, "--merge", *parts, config=fast_config)
    assert merged.returncode == 0, merged.stderr[-2000:]
    for rel in ("gradebook.csv", "lms/canvas.csv", "lms/grades.csv", "lms/unmatched.csv"):
        assert (tmp_path / "merged" / rel).read_bytes() == (tmp_path / "whole" / rel).read_bytes(), rel
    import re

    def untimed(path):
        return re.sub(r" Graded in \d+ s\.", "", path.read_text(encoding="utf-8"))

    assert untimed(tmp_path / "merged" / "summary.md") == untimed(tmp_path / "whole" / "summary.md")
    assert "5 students on the roster: 4 with a submission, 1 missing" in untimed(tmp_path / "merged" / "summary.md")
    bad = batch(subs, tmp_path / "x", "--shard", "4/3", config=fast_config)
    assert bad.returncode == 2 and "1 ≤ K ≤ N" in bad.stderr


def test_summary_lists_every_mistake_course_ones_first_and_says_what_the_mean_counts():
    from autograder.instructor.batch.students import Student

    def row(key, score, hints, status="complete"):
        tests = [{"name": "test_x", "status": "failed", "hints": [{"id": h, "text": h, "section": "Week 7 §1"} for h in hints]}]
        results = {
            "status": status,
            "score": score,
            "max_score": 100,
            "skills": [{"id": "qkv", "score": score, "points": 100, "tests": tests}],
        }
        return report.Row(Student(key, key, Path(key)), results)

    rows = (
        [
            row("a", 90.1234, ["general/dtype-changed", "general/dtype-changed"]),
            row("b", 80, ["general/dtype-changed"]),
            row("c", 70, ["general/todo"]),
        ]
        + [row(f"m{i}", 60, [f"qkv/mistake-{i:02d}"]) for i in range(12)]
        + [row("e", 0, [], "error")]
    )
    summary = report.summarize(rows, ["qkv"], {"qkv": "Q"})
    ids = [m[0] for m in summary.mistakes]
    assert len(ids) == 13 and ids[-1] == "general/dtype-changed" and ids[0].startswith("qkv/")  # all of them, course ones first
    text = report.markdown(summary, suite_hash="0" * 64)
    assert "median 60.0" in text and "94.9688" not in text
    assert "including 1 whose grading did not complete (0 points) and 1 with at least one function still the TODO stub" in text
    assert "over the 15 complete gradings only" in text


def test_a_name_only_roster_matches_folders_named_after_students_and_never_zeroes_silently(tmp_path, fast_config):
    """Folders named "Ana García", "Bob Smith" and a roster with names only: both match by name;
    a zip that matches nobody makes the batch say the counts, exit 3 and leave the missing
    student blank (not 0) in canvas.csv, until --accept-unmatched says 0 is meant."""
    subs = tmp_path / "class"
    subs.mkdir()
    shutil.copytree(SOLUTIONS, subs / "Ana García", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(EXERCISES, subs / "Bob Smith", ignore=shutil.ignore_patterns("__pycache__"))
    (subs / "Zed Q.zip").write_bytes(b"PK\x03\x04 not a zip")  # an error result at once: nothing to grade
    roster = tmp_path / "roster.csv"
    roster.write_text('id,name\n1,Ana García\n2,bob smith\n3,"Díaz, Cy"\n', encoding="utf-8")
    out = tmp_path / "out"
    first = batch(subs, out, "--jobs", "2", "--roster", str(roster), config=fast_config)
    assert first.returncode == 3, first.stdout + first.stderr[-2000:]
    said = " ".join(first.stdout.split())  # the terminal wraps at 80 columns
    assert "roster: 2 matched (2 by name), 1 unmatched submission(s), 1 roster student(s) missing" in said
    assert "'Zed Q'" in first.stderr and "left blank, not 0" in first.stderr and "--accept-unmatched" in first.stderr
    canvas = list(csv.reader(io.StringIO((out / "lms" / "canvas.csv").read_text(encoding="utf-8"))))
    scores = {line[2]: line[-1] for line in canvas[2:]}
    assert float(scores["1"]) > 0 and scores["2"] == "0" and scores["3"] == "", canvas
    unmatched = list(csv.DictReader(io.StringIO((out / "lms" / "unmatched.csv").read_text(encoding="utf-8"))))
    assert [u["folder"] for u in unmatched] == ["Zed Q"]
    accepted = batch(subs, out, "--roster", str(roster), "--accept-unmatched", config=fast_config)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr[-2000:]
    canvas = list(csv.reader(io.StringIO((out / "lms" / "canvas.csv").read_text(encoding="utf-8"))))
    assert {line[2]: line[-1] for line in canvas[2:]}["3"] == "0"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "3"}, (1, 3)),  # --array=0-2
        ({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "3"}, (3, 3)),
        ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, (1, 3)),  # --array=1-3
        ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, (3, 3)),
        (
            {
                "SLURM_ARRAY_TASK_ID": "8",
                "SLURM_ARRAY_TASK_MIN": "4",
                "SLURM_ARRAY_TASK_COUNT": "3",
                "SLURM_ARRAY_TASK_STEP": "2",
            },
            (3, 3),
        ),  # --array=4-8:2
    ],
)
def test_shard_slurm_takes_the_part_from_slurms_own_variables_0_or_1_based(env, expected):
    from autograder.instructor.batch import shards

    assert shards.parse("slurm", env) == expected


def test_shard_slurm_outside_an_array_and_a_0_based_k_say_what_to_pass():
    from autograder.instructor.batch import shards

    with pytest.raises(shards.ShardError, match="SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN not set"):
        shards.parse("slurm", {})
    with pytest.raises(shards.ShardError, match="pass --shard slurm"):
        shards.parse("0/3", {})


def _key(path: Path) -> Path:
    import secrets

    path.write_text(secrets.token_hex(32) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def test_a_merge_of_shards_graded_with_another_course_key_or_missing_a_shard_fails_naming_the_cause(tmp_path, fast_config):
    """Three students whose zips are broken (an error result each, no grading needed) in two
    shards: a shard graded with another key (a node without the key file) stops the merge
    with exit 2 naming that shard and both key ids, never the keys; so does a missing shard;
    the same shard graded again with the course key merges every student."""
    subs = tmp_path / "class"
    subs.mkdir()
    for name in ("ana", "bo", "cy"):
        (subs / f"{name}.zip").write_bytes(b"PK\x03\x04 not a zip")
    course, other = _key(tmp_path / "course.key"), _key(tmp_path / "other.key")
    common = ("--no-preload", "--jobs", "1")
    part1 = batch(subs, tmp_path / "p1", *common, "--shard", "1/2", "--seed-key-file", str(course), config=fast_config)
    part2 = batch(subs, tmp_path / "p2", *common, "--shard", "2/2", "--seed-key-file", str(other), config=fast_config)
    assert part1.returncode == part2.returncode == 0, part1.stderr + part2.stderr
    record = json.loads((tmp_path / "p1" / "shard.json").read_text())
    assert record["shard"] == "1/2" and course.read_text().strip() not in json.dumps(record)
    parts = [str(tmp_path / "p1"), str(tmp_path / "p2")]
    merged = batch(subs, tmp_path / "m", *common, "--merge", *parts, "--seed-key-file", str(course), config=fast_config)
    assert merged.returncode == 2, merged.stdout + merged.stderr
    assert (
        f"{tmp_path / 'p2'} was graded with course key id" in merged.stderr and "this merge uses course key id" in merged.stderr
    )
    assert not (tmp_path / "m" / "gradebook.csv").exists()
    alone = batch(subs, tmp_path / "m", *common, "--merge", parts[0], "--seed-key-file", str(course), config=fast_config)
    assert alone.returncode == 2 and "shard(s) 2/2 missing" in alone.stderr, alone.stderr
    again = batch(subs, tmp_path / "p2", *common, "--shard", "2/2", "--seed-key-file", str(course), config=fast_config)
    assert again.returncode == 0, again.stderr
    merged = batch(subs, tmp_path / "m", *common, "--merge", *parts, "--seed-key-file", str(course), config=fast_config)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "all 3 student(s)" in merged.stdout and len(rows(tmp_path / "m")) == 3


def test_results_of_a_zip_name_the_zip_not_a_temporary_folder(graded):
    out, _proc, _ = graded
    data = json.loads((out / "zipped" / "results.json").read_text())
    assert data["submission"]["path"] == "zipped.zip"
    assert "autograder-batch-" not in (out / "zipped" / "results.json").read_text()


def test_a_run_that_only_resumes_says_what_it_kept_not_graded_in_0_s(tmp_path, fast_config):
    subs = tmp_path / "class"
    subs.mkdir()
    (subs / "ana.zip").write_bytes(b"PK\x03\x04 not a zip")  # an error result at once: nothing to grade
    out = tmp_path / "out"
    first = batch(subs, out, "--no-preload", config=fast_config)
    assert first.returncode == 0, first.stderr
    again = batch(subs, out, "--no-preload", config=fast_config)
    assert again.returncode == 0 and "0 graded, 1 already done" in again.stdout, again.stdout + again.stderr
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "Graded in" not in summary and "1 student(s)' results kept from an earlier run" in summary


def test_an_insight_that_cannot_be_written_is_named_and_costs_nothing_else():
    from autograder.instructor.batch.run import _insight

    def fails():
        raise OSError(36, "File name too long", "similarity/\x1b[31m" + "学" * 200)

    lines = _insight("similarity/", fails)
    assert lines[0].startswith("**`similarity/` was not written** (OSError") and "\x1b[" not in lines[0]
    assert "gradebook and every student's results are complete" in lines[0]
    assert _insight("items.csv", lambda: ["## Items", ""]) == ["## Items", ""]


def test_an_interrupt_while_the_gradebook_is_written_waits_for_it_then_stops_the_run():
    import signal as signals

    from autograder.instructor.batch.run import interrupts_held

    written = []
    before = {s: signals.getsignal(s) for s in (signals.SIGINT, signals.SIGTERM)}

    def raise_on(signum, frame):  # as the batch's own (its SIGTERM is a KeyboardInterrupt): whatever the test runner had
        raise KeyboardInterrupt

    signals.signal(signals.SIGINT, raise_on)
    signals.signal(signals.SIGTERM, raise_on)
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_held():
                os.kill(os.getpid(), signals.SIGINT)
                os.kill(os.getpid(), signals.SIGTERM)
                written.append("gradebook.csv")
        assert written == ["gradebook.csv"]
        assert signals.getsignal(signals.SIGINT) is raise_on and signals.getsignal(signals.SIGTERM) is raise_on  # given back
    finally:
        for signum, handler in before.items():
            signals.signal(signum, handler)
    with interrupts_held():
        written.append("summary.md")  # no signal: no interrupt
    assert written == ["gradebook.csv", "summary.md"]


def test_a_batch_note_shows_a_file_names_control_characters_on_one_line():
    """A file named with a line break and a workflow command (blind red-team tester R-BZ)
    is one line on stderr: nothing in a CI log starts a line with ``::``."""
    import io

    from rich.console import Console

    from autograder.instructor.batch.cli import BatchProgress

    buffer = io.StringIO()
    progress = BatchProgress(Console(file=buffer, width=40, force_terminal=False), enabled=False)
    progress.note("note\n::error file=x::INJECTED\x1b[41mBG.txt: not a folder or a .zip — skipped " + "x" * 80)
    text = buffer.getvalue()
    assert "\x1b" not in text and not any(line.startswith("::") for line in text.splitlines())
    assert text.count("\n") == 1, text
