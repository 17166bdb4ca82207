"""Fault injection: whatever breaks, the run ends with a clear message and a results file
that says what happened — never a partial pass, never a lost result."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
from conftest import ROOT, SOLUTIONS, grade, make_submission, write_config

from autograder.runner.submission import SubmissionDirError, resolve_root

SCHEMA = json.loads((ROOT / "autograder/schemas/results.schema.json").read_text())
FIXTURES = "tests/fixtures/broken_suites"


def _broken_config(tmp_path, *files):
    weights = {
        "test_grader_bug.py": {"test_raises_type_error": 1, "test_passes": 1, "test_finds_the_answer_wrong": 1},
        "test_import_error.py": {"test_never_runs": 1},
        "test_kills_pytest.py": {"test_first_passes": 1, "test_kills_the_grading_process": 1, "test_after_the_crash": 1},
    }
    block = ""
    for i, name in enumerate(files):
        block += (
            f'\n[skills.broken{i}]\ntitle = "broken suite {i}"\npoints = {sum(weights[name].values())}\n'
            f'module = "broken{i}.py"\nsections = ["Week 7 §1"]\n'
        )
        block += (
            f'[[skills.broken{i}.suites]]\nfile = "{FIXTURES}/{name}"\nvisibility = "visible"\n'
            f"[skills.broken{i}.suites.weights]\n"
        )
        block += "".join(f"{test} = {w}\n" for test, w in weights[name].items())
    path = write_config(tmp_path / "grading.toml")
    path.write_text(path.read_text() + block)
    return path


def test_an_error_in_the_graders_own_test_is_reported_as_such(tmp_path):
    config = _broken_config(tmp_path, "test_grader_bug.py", "test_import_error.py")
    report = tmp_path / "report.json"
    graded = grade(
        SOLUTIONS,
        *("--skill", "broken0", "--skill", "broken1", "--skill", "qkv", "--keep-report", str(report)),
        config=config,
        output=tmp_path / "r.json",
    )
    assert graded.rc == 0, graded.stderr
    jsonschema.validate(graded.data, SCHEMA)
    bug = {t["name"]: t for t in graded.tests("broken0")}
    assert bug["test_raises_type_error"]["status"] == "error" and bug["test_raises_type_error"]["score"] == 0
    assert (
        "not your fault" in bug["test_raises_type_error"]["summary"] and "TypeError" in bug["test_raises_type_error"]["summary"]
    )
    assert bug["test_passes"]["status"] == "passed"
    assert (
        bug["test_finds_the_answer_wrong"]["status"] == "failed"
        and "expected 1, got 2" in bug["test_finds_the_answer_wrong"]["detail"]
    )
    # pytest's report keeps the grader error's traceback, for whoever fixes the suite; a failure
    # the suites classified is its one line (its facts are in the metadata, shown from there)
    calls = {t["nodeid"].rsplit("::", 1)[1]: t["call"] for t in json.loads(report.read_text())["tests"] if "call" in t}
    assert "Traceback (most recent call last)" in calls["test_raises_type_error"]["longrepr"]
    assert "len(None)" in calls["test_raises_type_error"]["longrepr"]
    assert calls["test_finds_the_answer_wrong"]["longrepr"] == "CheckFailed: the answer: expected 1, got 2"
    never = graded.tests("broken1")[0]
    assert (
        never["status"] == "not_run"
        and "could not be loaded" in never["summary"]
        and "a_module_that_does_not_exist" in never["summary"]
    )
    assert graded.score("qkv") == 20  # the other skills still grade


def test_a_crash_of_the_grading_process_is_never_a_partial_pass(tmp_path):
    """The run's message names the crash; the trusted process's last log lines (which can name
    a hidden test, or quote its source) are in it only where the run had no hidden test, and
    on stderr — the course staff's log — otherwise (blind red-team tester R-DA)."""
    config = _broken_config(tmp_path, "test_kills_pytest.py")
    for skills, hidden in ((("broken0", "qkv"), True), (("broken0",), False)):
        graded = grade(SOLUTIONS, *(f"--skill={s}" for s in skills), config=config, output=tmp_path / "r.json")
        assert graded.rc == 1, graded.stderr
        jsonschema.validate(graded.data, SCHEMA)
        assert graded.data["status"] == "error" and graded.data["score"] == 0
        assert "the grading run broke (no report was written)" in graded.data["message"]
        assert all(t["status"] == "not_run" for t in graded.tests())
        staff = "; the grader's log is with the course staff"
        if hidden:
            assert graded.data["message"].endswith(staff) and "its log ends:" in graded.stderr
            from autograder.core import escape

            assert not any(escape.is_workflow_command(line) for line in graded.stderr.splitlines())  # a job log reads it
        else:
            assert graded.data["message"].startswith("the grading run broke (no report was written): ")
            assert staff not in graded.data["message"] and "its log ends:" not in graded.stderr


def test_unwritable_results_path_is_a_clear_usage_error(tmp_path):
    graded = grade(SOLUTIONS, output=tmp_path / "no" / "such" / "folder" / "r.json")
    assert graded.rc == 2 and "does not exist" in graded.stderr and "Traceback" not in graded.stderr
    graded = grade(SOLUTIONS, output=tmp_path)
    assert graded.rc == 2 and "is a directory" in graded.stderr


def test_malformed_config_still_leaves_a_results_file(tmp_path):
    config = tmp_path / "grading.toml"
    config.write_text("[skills.qkv\npoints = 20\n")
    graded = grade(SOLUTIONS, config=config, output=tmp_path / "r.json", fmt="gradescope")
    assert graded.rc == 2 and graded.stderr.startswith("autograder: grading.toml:1: invalid TOML")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["score"] == 0 and "configuration error" in data["output"]


def test_missing_submission_folder_leaves_a_results_file(tmp_path):
    graded = grade(tmp_path / "nowhere", output=tmp_path / "r.json")
    assert graded.rc == 2 and "no such directory" in graded.stderr
    assert graded.data["status"] == "error" and graded.data["score"] == 0 and "no such directory" in graded.data["message"]


def test_a_file_instead_of_a_folder_is_a_usage_error(tmp_path):
    (tmp_path / "qkv.py").write_text("x = 1\n")
    graded = grade(tmp_path / "qkv.py", output=tmp_path / "r.json")
    assert graded.rc == 2 and "is not a directory" in graded.stderr


def test_unreadable_submission_folder_is_reported(tmp_path, monkeypatch):
    def denied(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "listdir", denied)
    with pytest.raises(SubmissionDirError, match="cannot be read"):
        resolve_root(tmp_path, ["qkv.py"])


def test_empty_submission_grades_to_zero_with_every_module_missing(tmp_path):
    (tmp_path / "empty").mkdir()
    graded = grade(tmp_path / "empty", output=tmp_path / "r.json")
    assert graded.rc == 0 and graded.data["score"] == 0
    assert all(
        "is missing" in t["summary"] for t in graded.tests() if t["max_score"] > 0
    )  # rule gates (weight 0) pass: nothing broke a rule


SYNTAX_ERROR_MODULE = "custom_backward"  # the module of the broken-modules run with a syntax error


@pytest.fixture(scope="module")
def broken_modules_graded(tmp_path_factory):
    """One run, one broken module per skill (each used to be a run of its own): qkv not
    UTF-8, masks over the size limit, row_softmax a link, custom_backward a syntax error;
    every other skill full marks. ``output`` is the submission folder."""
    root = tmp_path_factory.mktemp("broken")
    folder = make_submission(root / "sub", {}, base=SOLUTIONS)
    (folder / "qkv.py").write_bytes((SOLUTIONS / "qkv.py").read_bytes() + b"\n# caf\xe9\n")
    (folder / "masks.py").write_text("x = 1\n" + "# padding\n" * 60000)
    (folder / "row_softmax.py").unlink()
    (folder / "row_softmax.py").symlink_to(SOLUTIONS / "row_softmax.py")
    (folder / "junk.bin").write_bytes(os.urandom(1 << 20) * 50)  # 50 MB that is not graded
    source = (SOLUTIONS / f"{SYNTAX_ERROR_MODULE}.py").read_text()
    (folder / f"{SYNTAX_ERROR_MODULE}.py").write_text(source.rstrip("\n") + "\n\n\ndef broken(x):\n    return (x\n")
    graded = grade(folder, output=root / "r.json")
    graded.output = folder
    return graded


def test_non_utf8_huge_and_symlinked_modules_fail_their_skill_only(broken_modules_graded):
    graded = broken_modules_graded
    assert graded.rc == 0
    broken = {
        "qkv": "not valid UTF-8 (byte 0xe9 on line",
        "masks": "exercise modules are limited to 512 KiB",
        "row_softmax": "symbolic link",
    }
    for skill, says in broken.items():
        assert graded.score(skill) == 0, skill
        scored = [t for t in graded.tests(skill) if t["max_score"] > 0]  # rule gates (weight 0) pass: nothing broke a rule
        assert scored and all(says in t["summary"] for t in scored), (
            skill,
            [t["summary"] for t in scored if says not in t["summary"]][:2],
        )
    for skill in graded.data["skills"]:
        if skill["id"] not in broken and skill["id"] != SYNTAX_ERROR_MODULE:
            assert skill["score"] == skill["points"], skill["id"]
    assert "junk.bin" in graded.data["submission"]["ignored"]


def test_syntax_error_names_file_and_line_and_other_skills_still_grade(broken_modules_graded):
    graded, folder = broken_modules_graded, broken_modules_graded.output  # the syntax error is in custom_backward.py
    assert graded.rc == 0 and graded.score(SYNTAX_ERROR_MODULE) == 0
    line = len((folder / f"{SYNTAX_ERROR_MODULE}.py").read_text().splitlines())  # the unclosed parenthesis: the last line
    tests = [t for t in graded.tests(SYNTAX_ERROR_MODULE) if t["max_score"] > 0]  # rule gates (weight 0): nothing broke a rule
    assert tests and all(f"line {line}: SyntaxError" in t["summary"] for t in tests), [t["summary"] for t in tests][:2]
    lost = sum(s["points"] for s in graded.data["skills"] if s["id"] in ("qkv", "masks", "row_softmax", SYNTAX_ERROR_MODULE))
    assert graded.data["score"] == graded.data["max_score"] - lost  # every other skill still grades


def test_stub_run_completes_quickly_and_cleanly(stubs_graded):
    graded = stubs_graded  # the stubs graded once per session (conftest), shared with test_suites_are_right
    assert graded.rc == 0 and graded.data["status"] == "complete" and graded.data["score"] == 0


def test_a_correct_module_saved_with_a_utf8_bom_grades_as_without_it(tmp_path):
    """Windows editors may save UTF-8 with a byte-order mark, and Python imports such a file;
    blind tester I's correct submission saved that way scored 0 ("invalid non-printable
    character U+FEFF"). With a CRLF line end too, as the same editors write."""
    folder = tmp_path / "bom"
    folder.mkdir()
    text = (SOLUTIONS / "qkv.py").read_text(encoding="utf-8")
    (folder / "qkv.py").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    graded = grade(folder, "--skill", "qkv", output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr
    assert graded.score("qkv") == 20 and all(t["status"] == "passed" for t in graded.tests("qkv")), graded.output[-2000:]
