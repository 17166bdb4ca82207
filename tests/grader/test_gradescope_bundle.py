"""dist/autograder.zip, run end to end the way Gradescope runs it.

The bundle is built, unpacked into a temporary folder laid out like Gradescope's
(``source/`` = the zip, ``submission/`` = the upload, ``results/``) and its own
``run_autograder`` is run with ``GRADESCOPE_AUTOGRADER_ROOT`` pointing there and
``GRADESCOPE_PYTHON`` = this virtual environment's Python (setup.sh's install step needs
network and is only checked for syntax). Every results.json must validate against
Gradescope's schema, whatever happened.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from bad_zips import KINDS, long_listing, spoiled
from conftest import EXERCISES, MODULES, ROOT, SOLUTIONS, TOTAL_POINTS, write_config

from autograder.app import upload
from autograder.app.upload import UploadError, locate, locate_zip
from autograder.config import ConfigError, load
from autograder.instructor.release import ReleaseContext, gradescope
from autograder.runner.grade import suite_hash

SCHEMA = json.loads((ROOT / "autograder" / "schemas" / "gradescope-results.schema.json").read_text())
VERSION = "1.2.3"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
KEY = b"test course key: 0123456789abcdef0123456789abcdef"  # stands for the course's random key


def _context(out: Path, config_path: Path = ROOT / "grading.toml"):
    config = load(config_path)
    return ReleaseContext(
        repo=ROOT, config=config, out=out, version=VERSION, commit=COMMIT, suite_hash=suite_hash(config), seed_key=KEY
    )


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    path = gradescope.build(_context(out))[0]  # the whole course (the assignments' bundles follow)
    return path


def _unpack(bundle: Path, root: Path) -> Path:
    """Gradescope's layout: the zip unpacked in source/ with its permission bits."""
    source = root / "source"
    with zipfile.ZipFile(bundle) as zf:
        for info in zf.infolist():
            target = source / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod(stat.S_IMODE(info.external_attr >> 16))
    (root / "submission").mkdir()
    (root / "results").mkdir()
    return root


def _run(root: Path, python: str = sys.executable, timeout: float = 300) -> tuple[dict, subprocess.CompletedProcess]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADESCOPE_", "AUTOGRADER_", "PYTEST_"))}
    env.update(GRADESCOPE_AUTOGRADER_ROOT=str(root), GRADESCOPE_PYTHON=python)
    # Gradescope starts run_autograder in /autograder; it must not rely on that
    proc = subprocess.run(
        [str(root / "source" / "run_autograder")], cwd=root, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)
    assert data["extra_data"]["release"]["version"] == VERSION
    assert data["extra_data"]["release"]["commit"] == COMMIT
    assert _leftovers(root) == []
    return data, proc


def _graded(data: dict) -> list[dict]:
    """results.json's graded tests: not the 0-point summary that shows the hidden figures after the due date."""
    from autograder.renderers.gradescope import SUMMARY_TAG

    return [t for t in data["tests"] if t["tags"][0] != SUMMARY_TAG]


def _leftovers(root: Path) -> list[str]:
    """Processes still running from this bundle (the machine may be running other gradings)."""
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(root) in cmd:
            out.append(f"{entry}: {cmd[:200]}")
    return out


def _copy_modules(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for module in MODULES.values():
        shutil.copyfile(src / module, dst / module)


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


# --------------------------------------------------------------------------- the zip itself
def test_bundle_is_byte_identical_when_built_twice(bundle, tmp_path):
    again = gradescope.build(_context(tmp_path))[0]
    assert again.read_bytes() == bundle.read_bytes()


def test_bundle_has_executable_setup_and_run_autograder_at_its_root_and_valid_bash(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        for name in ("setup.sh", "run_autograder"):
            assert stat.S_IMODE(infos[name].external_attr >> 16) == 0o755, name
            assert zf.read(name).startswith(b"#!/usr/bin/env bash\n")
            (tmp_path / name).write_bytes(zf.read(name))
            check = subprocess.run(["bash", "-n", str(tmp_path / name)], capture_output=True, text=True)
            assert check.returncode == 0, check.stderr
        assert {i.date_time for i in infos.values()} == {(1980, 1, 1, 0, 0, 0)}
        assert not [n for n in infos if "__pycache__" in n or n.endswith(".pyc")]
        setup = zf.read("setup.sh").decode()
        release = json.loads(zf.read("release.json"))
    assert "torch==2.13.0" in setup and gradescope.TORCH_INDEX in setup and f"uv=={gradescope.UV_VERSION}" in setup
    assert release["version"] == VERSION and release["commit"] == COMMIT and release["torch"] == "2.13.0"


def test_bundle_carries_every_configured_suite_and_the_solutions(bundle):
    config = load(ROOT / "grading.toml")
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
    assert {s.file for skill in config.skills.values() for s in skill.suites} <= names
    assert {f"solutions/{m}" for m in MODULES.values()} <= names
    assert "requirements.txt" in names and "autograder/__main__.py" in names


def test_bundle_grading_toml_has_the_gradescope_limits_and_the_same_tests(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    repo, packed = load(ROOT / "grading.toml"), load(root / "source" / "grading.toml")
    assert packed.limits == repo.gradescope_release.limits
    assert packed.limits.run_timeout_s < repo.gradescope_release.time_budget_s
    # half a CPU and 768 MB: one trusted process (two would run two submission workers at once)
    assert packed.limits.trusted_processes == 1
    assert [t.node_id for t in packed.tests] == [t.node_id for t in repo.tests]
    assert f"BUDGET={int(repo.gradescope_release.time_budget_s)} " in (root / "source" / "run_autograder").read_text()


def test_seed_key_is_the_course_key_in_every_release_and_a_bundle_without_one_is_refused(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as zf:
        key = zf.read("seed.key").strip()
    assert key == KEY  # the course's key, not derived from any file a TA or a leaked copy holds
    ctx = _context(tmp_path)
    other = gradescope.bundle_files(
        ReleaseContext(ctx.repo, ctx.config, ctx.out, "9.9.9", ctx.commit, ctx.suite_hash, seed_key=KEY)
    )
    assert other["seed.key"].strip() == key  # the same across releases: a re-release keeps every seed
    for missing in (None, b"short"):
        with pytest.raises(ValueError, match="seed key"):
            gradescope.bundle_files(
                ReleaseContext(ctx.repo, ctx.config, ctx.out, VERSION, ctx.commit, ctx.suite_hash, seed_key=missing)
            )


def test_release_values_that_would_break_the_scripts_are_refused(tmp_path):
    ctx = _context(tmp_path)
    bad = ReleaseContext(ctx.repo, ctx.config, ctx.out, '1.0"; rm -rf /', ctx.commit, ctx.suite_hash, seed_key=KEY)
    with pytest.raises(ValueError, match="version"):
        gradescope.bundle_files(bad)


def test_with_limits_replaces_values_keeps_comments_and_adds_missing_keys():
    from autograder.config import Limits

    text = '[grader]\nseed = 1\n\n[limits]\ncall_timeout_s = 10   # why\nmemory_mib = 4096\n\n[sandbox]\nuser = "x"\n'
    out = gradescope.with_limits(text, Limits(call_timeout_s=5, memory_mib=1024))
    assert "call_timeout_s = 5   # why\nmemory_mib = 1024\n" in out
    assert "run_timeout_s = 900\n" in out.split("[sandbox]")[0]
    assert out.endswith('[sandbox]\nuser = "x"\n')


# --------------------------------------------------------------------------- grading.toml
@pytest.mark.parametrize(
    "edit, message",
    [
        ({"time_budget_s = 480": "time_budget_s = 590"}, "release.gradescope.time_budget_s: is 590 s, but Gradescope stops"),
        (
            {"run_timeout_s = 360 ": "run_timeout_s = 500 "},
            "release.gradescope.limits.run_timeout_s: is 500 s but must be below time_budget_s",
        ),
        ({"memory_mib = 800 ": "memory_mib = 700 "}, "release.gradescope.limits.memory_mib: must be at least 768"),
        (
            {"time_budget_s = 480": "time_budget = 480"},
            "release.gradescope.time_budget: unknown key — did you mean 'time_budget_s'?",
        ),
    ],
)
def test_release_gradescope_settings_are_validated(tmp_path, edit, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("?", r"\?")):
        load(write_config(tmp_path / "grading.toml", edit))


# --------------------------------------------------------------------------- finding the modules
def test_locate_finds_modules_at_the_top_in_a_repository_and_in_a_zipped_folder(tmp_path):
    modules = list(MODULES.values())
    flat = tmp_path / "flat"
    _copy_modules(SOLUTIONS, flat)
    assert locate(flat, modules, tmp_path, 1 << 20)[0] == flat
    repo = tmp_path / "repo"  # GitHub-linked: the student's repository, modules under exercises/
    _copy_modules(SOLUTIONS, repo / "attention-main" / "exercises")
    (repo / "attention-main" / "README.md").write_text("x")
    (repo / "attention-main" / "tests").mkdir()
    shutil.copyfile(SOLUTIONS / "qkv.py", repo / "attention-main" / "tests" / "qkv.py")  # fewer modules: loses
    assert locate(repo, modules, tmp_path, 1 << 20)[0] == repo / "attention-main" / "exercises"


def test_locate_takes_only_the_modules_out_of_an_uploaded_zip(tmp_path):
    modules = list(MODULES.values())
    upload = tmp_path / "upload"
    upload.mkdir()
    members = {f"work/exercises/{m}": (SOLUTIONS / m).read_bytes() for m in modules}
    members["../escape.py"] = b"x = 1\n"
    members["work/notes.txt"] = b"hello"
    _zip(upload / "submission.zip", members)
    work = tmp_path / "work"
    work.mkdir()
    folder, note = locate(upload, modules, work, 1 << 20)
    assert sorted(p.name for p in folder.iterdir()) == sorted(modules)
    assert (folder / "qkv.py").read_bytes() == (SOLUTIONS / "qkv.py").read_bytes()
    assert "submission.zip" in note and not (tmp_path / "escape.py").exists()


def test_a_zips_helper_whose_name_no_import_could_use_is_left_in_the_zip(tmp_path):
    """A helper `.py` named past a file name's 255 bytes, or not a Python identifier, cannot be
    imported: it stays in the zip, and the modules are graded (a 300-character helper's name
    failed the copy and gave 0 as a grader error, every run: blind red-team tester R-BZ)."""
    modules = list(MODULES.values())
    upload = tmp_path / "upload"
    upload.mkdir()
    members = {m: (SOLUTIONS / m).read_bytes() for m in modules}
    members |= {
        "h" * 300 + ".py": b"x = 1\n",
        "注" * 90 + ".py": b"x = 2\n",
        "my-helper.py": b"x = 3\n",
        "helpers.py": b"y = 1\n",
    }
    _zip(upload / "submission.zip", members)
    work = tmp_path / "work"
    work.mkdir()
    folder, _note = locate(upload, modules, work, 1 << 20)
    assert sorted(p.name for p in folder.iterdir()) == sorted([*modules, "helpers.py"])


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda up: (up / "notes.txt").write_text("hi"), "no exercise modules in the upload: expected qkv.py"),
        (
            lambda up: _zip(up / "outer.zip", {"inner.zip": _zip(up.parent / "inner.zip", {"qkv.py": b"x"}).read_bytes()}),
            "a zip inside a zip is not unpacked",
        ),
        (lambda up: (up / "broken.zip").write_bytes(b"PK\x03\x04 not really"), "is not a zip archive that can be read"),
        (lambda up: (_zip(up / "a.zip", {"x.txt": b""}), _zip(up / "b.zip", {"y.txt": b""})), "holds 2 zip files"),
        (lambda up: _zip(up / "empty.zip", {"readme.md": b"# hi"}), "holds no exercise modules"),
    ],
)
def test_locate_explains_uploads_it_cannot_grade(tmp_path, setup, message):
    upload = tmp_path / "upload"
    upload.mkdir()
    setup(upload)
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(UploadError, match=message):
        locate(upload, list(MODULES.values()), work, 1 << 20)


REASONS = {  # what the student is told, per way a zip breaks
    "encrypted": "is encrypted (a password protects",
    "strong-encryption": "is encrypted (a password protects",
    "corrupt-deflate": "is damaged:",
    "bad-crc": "is damaged:",
    "truncated": "is damaged:",
    "corrupt-bzip2": "is damaged:",
    "corrupt-lzma": "is damaged:",
    "unknown-method": "uses a compression method that cannot be unpacked",
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", ["flat", "repository"])
def test_an_unreadable_zip_is_the_uploads_problem_with_the_file_and_the_fix(tmp_path, kind, layout):
    """Every way reading a zip fails (a password, a damaged or truncated stream, a bad CRC, a
    method no Python unpacks) is an UploadError naming the zip, the member and what to upload
    instead — never a RuntimeError or zlib.error from the grader; nothing is left in work/."""
    modules = list(MODULES.values())
    prefix = "" if layout == "flat" else "attention-main/exercises/"
    members = {f"{prefix}{m}": (SOLUTIONS / m).read_bytes() for m in modules}
    upload = tmp_path / "upload"
    where = upload if layout == "flat" else upload / "attention-main" / "hand-in"  # GitHub-linked: a zip inside the repository
    where.mkdir(parents=True)
    (where / "work.zip").write_bytes(spoiled(members, kind, only=f"{prefix}qkv.py"))
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(UploadError) as caught:
        locate(upload, modules, work, 1 << 20)
    message = str(caught.value)
    assert REASONS[kind] in message, message
    assert "work.zip" in message and f"{prefix}qkv.py" in message
    assert "upload the .py files themselves" in message and "qkv.py" in message
    assert list(work.iterdir()) == []


def test_a_zip_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path):
    modules = list(MODULES.values())
    fifo = tmp_path / "student.zip"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    with pytest.raises(UploadError, match="is not a regular file"):
        locate_zip(fifo, modules, tmp_path, 1 << 20)


@pytest.mark.parametrize("zip64", [False, True])
def test_a_zip_listing_too_many_entries_is_refused_before_its_directory_is_read(tmp_path, monkeypatch, zip64):
    """zipfile parses every entry of the central directory before the grader can count them:
    blind tester R-CO's 120 MB zip of two million entries took 30 s and 1 GB of the trusted
    process (a batch reads each zip up to three times). The end records state the count and
    the size: above the limits, the zip is the upload's problem before anything is parsed."""
    modules = list(MODULES.values())
    monkeypatch.setattr(upload, "MAX_ZIP_LISTED", 50)
    archive = tmp_path / "student.zip"
    archive.write_bytes(long_listing(60, zip64))
    parsed, real = [], zipfile.ZipFile
    monkeypatch.setattr(upload.zipfile, "ZipFile", lambda *a, **k: parsed.append(a) or real(*a, **k))
    with pytest.raises(UploadError, match="lists 60 entries .*too many to read — zip only the exercise modules"):
        locate_zip(archive, modules, tmp_path, 1 << 20)
    assert parsed == []
    archive.write_bytes(long_listing(40, zip64))  # under the limit: read as before
    with pytest.raises(UploadError, match="holds no exercise modules"):
        locate_zip(archive, modules, tmp_path, 1 << 20)
    assert len(parsed) == 1


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_a_module_given_twice_in_a_zip_counts_once_and_backslash_names_keep_the_module_name(tmp_path):
    modules = list(MODULES.values())
    archive = tmp_path / "s.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(len(modules) + 1):  # one module listed more often than there are modules
            zf.writestr("a/qkv.py", f"v = {i}\n")
        for m in modules:
            zf.writestr(f"win\\dows\\{m}", (SOLUTIONS / m).read_bytes())
    work = tmp_path / "work"
    work.mkdir()
    folder, note = locate_zip(archive, modules, work, 1 << 20)
    assert "win/dows" in note  # all the modules beat a folder holding one, however often it is listed
    assert sorted(p.name for p in folder.iterdir()) == sorted(modules)


# --------------------------------------------------------------------------- end to end
def test_reference_solutions_score_full_marks_with_hidden_tests(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    _copy_modules(SOLUTIONS, root / "submission")
    data, proc = _run(root)
    assert data["score"] == TOTAL_POINTS
    assert all(t["status"] == "passed" for t in data["tests"])
    assert "hidden" in {t["tags"][1] for t in data["tests"]}
    assert data["extra_data"]["release"]["suite_hash"] == suite_hash(load(ROOT / "grading.toml"))
    assert f"release {VERSION}" in data["output"]
    assert "[run_autograder] score 100" in proc.stdout
    assert "leftover" not in proc.stdout + proc.stderr  # the run's processes end on their own: none is killed
    assert stat.S_IMODE((root / "source" / "seed.key").stat().st_mode) == 0o600  # submission code runs as another user
    assert data["extra_data"]["seed_source"] == "content"  # derived with the bundle's key, not the public default
    assert data["execution_time"] > 1  # the run's wall time, not 0.0


def test_bundle_seed_key_is_long_enough_and_not_the_public_default(bundle, tmp_path):
    from autograder.runner import seeding

    with zipfile.ZipFile(bundle) as zf:
        key = zf.read("seed.key").strip()
    assert len(key) >= seeding.MIN_KEY_BYTES and key != seeding.DEFAULT_KEY


# slow: a full Gradescope run of every skill; finding the modules in a repository's layout is
# checked in-process (test_locate_finds_modules_at_the_top_in_a_repository_and_in_a_zipped_folder)
@pytest.mark.slow
def test_stubs_in_a_github_repository_layout_score_zero(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    _copy_modules(EXERCISES, root / "submission" / "exercises")
    (root / "submission" / "README.md").write_text("my repo")
    data, _ = _run(root)
    assert data["score"] == 0 and data["tests"]
    assert all(t["score"] == 0 for t in data["tests"])
    assert data["extra_data"]["status"] == "complete"


def test_upload_without_modules_scores_zero_and_says_so(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    (root / "submission" / "answers.ipynb").write_text("{}")
    data, _ = _run(root)
    assert data["score"] == 0 and len(_graded(data)) == len(load(ROOT / "grading.toml").tests)
    output = data["output"].replace("\\", "")  # markdown escapes
    assert "no exercise modules in the upload" in output and "answers.ipynb" in output


# slow: an upload refused by locate() takes the same path through run_autograder as the upload without
# modules above (an UploadError: score 0, the reason in the output); detecting a zip inside a zip is
# checked in-process (test_locate_explains_uploads_it_cannot_grade)
@pytest.mark.slow
def test_zip_inside_a_zip_scores_zero_and_says_so(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    inner = _zip(tmp_path / "inner.zip", {m: (SOLUTIONS / m).read_bytes() for m in MODULES.values()})
    _zip(root / "submission" / "submission.zip", {"inner.zip": inner.read_bytes()})
    data, _ = _run(root)
    assert data["score"] == 0
    assert "a zip inside a zip" in data["output"]


# slow: the same UploadError path end to end as the upload without modules; every way a zip fails to
# read (a password included) is an UploadError in-process (test_an_unreadable_zip_is_the_uploads_problem_...)
@pytest.mark.slow
def test_an_encrypted_zip_scores_zero_and_tells_the_student_why(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    members = {f"hw/{m}": (SOLUTIONS / m).read_bytes() for m in MODULES.values()}
    (root / "submission" / "hw.zip").write_bytes(spoiled(members, "encrypted"))
    data, proc = _run(root)
    assert data["score"] == 0 and len(_graded(data)) == len(load(ROOT / "grading.toml").tests)
    assert all(t["score"] == 0 for t in data["tests"])
    assert "your upload cannot be graded: 'hw.zip' is encrypted" in data["output"].replace("\\", "")  # markdown escapes
    assert "upload the .py files themselves" in data["output"].replace("\\", "")
    assert "autograder itself failed" not in data["output"] and "internal error" not in proc.stdout


# slow: one more run_autograder round trip; the syntax-error line itself is proved in make test
# by test_fairness (one import failure, one panel per skill) and test_faults
@pytest.mark.slow
def test_syntax_error_names_the_file_and_line(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    (root / "submission" / "qkv.py").write_text("def project_qkv(x, w_q, w_k, w_v):\n    return (x @ w_q\n")
    data, _ = _run(root)
    assert data["score"] == 0
    qkv = [t for t in data["tests"] if t["tags"][0] == "qkv"]
    assert qkv and all("qkv.py, line 2: SyntaxError" in t["output"] for t in qkv)
    masks = [t for t in data["tests"] if t["tags"][0] == "masks"]
    assert all("masks.py" in t["output"] and "missing" in t["output"] for t in masks)


@pytest.mark.slow  # a run that must be stopped by its time budget
def test_a_run_over_its_budget_is_stopped_and_scores_zero(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    _copy_modules(SOLUTIONS, root / "submission")
    script = root / "source" / "run_autograder"
    text = script.read_text()
    script.write_text(text.replace(f"BUDGET={int(load(ROOT / 'grading.toml').gradescope_release.time_budget_s)} ", "BUDGET=2 "))
    data, proc = _run(root)
    assert data["score"] == 0 and all(t["score"] == 0 for t in data["tests"])
    assert "longer than this assignment's budget of 2 s" in data["output"].replace("\\", "")  # markdown escapes


def test_missing_python_still_leaves_valid_results(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    _copy_modules(SOLUTIONS, root / "submission")
    data, _ = _run(root, python=str(tmp_path / "no-python-here"))
    assert data["score"] == 0 and data["tests"] == []
    assert "Python 3.11 is missing" in data["output"]


def test_a_hanging_interpreter_is_stopped_by_the_shell(bundle, tmp_path):
    """The last resort: the Python side itself never returns (here: a fake interpreter that
    passes the version check and then sleeps); the shell's own timeout writes the results."""
    root = _unpack(bundle, tmp_path)
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\ncase "$2" in *version_info*) exit 0;; esac\nexec sleep 600\n')
    fake.chmod(0o755)
    script = root / "source" / "run_autograder"
    script.write_text(script.read_text().replace("HARD_STOP=$((BUDGET + 20))", "HARD_STOP=2"))
    data, _ = _run(root, python=str(fake), timeout=60)
    assert data["score"] == 0
    assert "took longer than 2 seconds" in data["output"]


def test_broken_bundle_config_still_leaves_valid_results(bundle, tmp_path):
    root = _unpack(bundle, tmp_path)
    _copy_modules(SOLUTIONS, root / "submission")
    toml = root / "source" / "grading.toml"
    toml.write_text(toml.read_text().replace("points = 20", "points = 21", 1))
    data, _ = _run(root)
    assert data["score"] == 0
    assert "configuration is broken" in data["output"]


def test_setup_pins_python_to_a_patch_version_and_retries_every_download(tmp_path):
    files = gradescope.bundle_files(_context(tmp_path))
    setup = files["setup.sh"].decode()
    assert re.search(r'python install "3\.\d+\.\d+"', setup), "the image must get the same Python next month"
    for download in ("apt-get update", "uv==", "python install", "--index-url", '-r "$SOURCE/requirements.txt"'):
        line = next(line for line in setup.splitlines() if download in line and not line.lstrip().startswith("#"))
        assert line.lstrip().startswith("retry "), line
    proc = subprocess.run(["bash", "-n"], input=setup, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- one bundle per assignment
# slow: builds every assignment's bundle and runs one four times (reference, stubs, a mistake, and grade --assignment)
@pytest.mark.slow
def test_each_assignment_gets_a_bundle_with_its_skills_and_points(tmp_path):
    """[release.assignments]: week7's bundle grades and shows only qkv, masks and row_softmax,
    out of their points; the reference scores them in full, the stubs 0; and a mistake scores
    what `grade --assignment week7` gives with the same course key."""
    import tomllib

    from autograder.config import load as load_config

    config = load(ROOT / "grading.toml")
    assert "week7" in config.assignments
    ctx = _context(tmp_path / "dist")
    paths = gradescope.build(ctx)
    week7 = tmp_path / "dist" / "assignments" / "week7" / "autograder.zip"
    assert week7 in paths and all((tmp_path / "dist" / "assignments" / a / "autograder.zip") in paths for a in config.assignments)
    with zipfile.ZipFile(week7) as zf:
        packed = tomllib.loads(zf.read("grading.toml").decode())
        release = json.loads(zf.read("release.json"))
        names = zf.namelist()
    skills = config.assignments["week7"]
    points = sum(config.skills[s].points for s in skills)
    assert list(packed["skills"]) == list(skills) and "assignments" not in packed["release"]
    assert release["assignment"] == "week7" and release["points"] == points
    assert not [n for n in names if n.startswith("solutions/") and n[len("solutions/") : -3] not in skills]
    for name, source, want in (("reference", SOLUTIONS, points), ("stubs", EXERCISES, 0)):
        root = _unpack(week7, tmp_path / name)
        _copy_modules(source, root / "submission")
        data, _ = _run(root)
        assert data["score"] == want, name
        assert {t["tags"][0] for t in _graded(data)} == set(skills)
    # the same code, graded locally as that assignment with the course key: the same score
    root = _unpack(week7, tmp_path / "mistake")
    _copy_modules(SOLUTIONS, root / "submission")
    masks = root / "submission" / "masks.py"
    masks.write_text(masks.read_text().replace('float("-inf"), dtype=scores.dtype', "0.0, dtype=scores.dtype", 1))
    data, _ = _run(root)
    key = tmp_path / "course.key"
    key.write_bytes(KEY)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(root / "submission"),
            "--assignment",
            "week7",
            "--format",
            "json",
            "--no-progress",
            "--seed-key-file",
            str(key),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    local = json.loads(proc.stdout)
    assert 0 < data["score"] < points and local["score"] == data["score"] and local["seed"] == data["extra_data"]["seed"]
    assert load_config(ROOT / "grading.toml").for_assignment("week7").exercise_modules == tuple(
        config.skills[s].module for s in skills
    )
