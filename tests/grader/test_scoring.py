"""Scoring is computed only from the report and grading.toml: fixed list of expected
tests, weight × fraction for partial credit, exact sums, 0 and a reason for what did not
run, grader errors never blamed on (or credited to) the student."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from autograder.config import load
from autograder.core import results as results_mod
from autograder.runner import scoring
from autograder.runner.manifest import ModuleEntry, RunManifest


@pytest.fixture(scope="module")
def config():
    return load(ROOT / "grading.toml").select(["qkv"])


def entry(nodeid, outcome, kind=None, fraction=None, feedback=None, error=None):
    meta = {"seed": 7}
    if kind:
        meta["result"] = {"kind": kind}
        if feedback:
            meta["result"]["feedback"] = feedback
        if error:
            meta["result"]["error"] = error
    if fraction is not None:
        meta["credit"] = {"passed": 1, "total": 4, "fraction": fraction, "failed": []}
    return {
        "nodeid": nodeid,
        "outcome": outcome,
        "metadata": meta,
        "setup": {"duration": 0.001},
        "call": {"duration": 0.002},
        "teardown": {"duration": 0.0},
    }


FEEDBACK = {
    "check": "project_qkv: Q",
    "problem": "values",
    "detail": "first mismatch at index [0, 0, 0]: expected 1, got 2",
    "hints": [{"id": "qkv/swapped-projections", "text": "t", "section": "s"}],
    "grids": [],
    "frames": [],
    "error": None,
}


def test_all_passed_gives_exactly_the_points(config):
    report = {"tests": [entry(t.node_id, "passed", "passed") for t in config.tests]}
    res = scoring.build(RunManifest.plan(config), report, {})
    assert res.score == res.max_score == 20
    assert all(t.status == "passed" for t in res.tests)


def test_partial_credit_is_weight_times_fraction_and_sums_exactly(config):
    tests = config.tests
    report = {"tests": [entry(t.node_id, "failed", "check", fraction=0.25, feedback=FEEDBACK) for t in tests]}
    res = scoring.build(RunManifest.plan(config), report, {})
    for outcome, spec in zip(res.tests, tests):
        assert outcome.score == round(spec.weight * 0.25, 4)
    assert res.score == round(sum(t.score for t in res.tests), 4) == pytest.approx(5.0)
    assert res.skills[0].score == res.score


def test_a_test_that_never_reported_scores_zero_and_says_why(config):
    tests = config.tests
    report = {"tests": [entry(t.node_id, "passed", "passed") for t in tests[1:]]}
    res = scoring.build(RunManifest.plan(config), report, {})
    missing = res.tests[0]
    assert missing.status == "not_run" and missing.score == 0 and "did not run" in missing.summary
    assert res.score == pytest.approx(20 - tests[0].weight)


def test_unexpected_tests_in_the_report_earn_nothing(config):
    report = {"tests": [entry("tests/suites/qkv/test_qkv_visible.py::test_bonus", "passed", "passed")]}
    res = scoring.build(RunManifest.plan(config), report, {})
    assert res.score == 0 and {t.status for t in res.tests} == {"not_run"}


def test_grader_errors_score_zero_and_are_not_blamed_on_the_student(config):
    tests = config.tests
    report = {
        "tests": [
            entry(tests[0].node_id, "failed", "grader_error", error={"type": "TypeError", "message": "bug", "traceback": "..."})
        ]
    }
    res = scoring.build(RunManifest.plan(config), report, {})
    first = res.tests[0]
    assert first.status == "error" and first.score == 0 and "not your fault" in first.summary


def test_a_collection_error_marks_the_file_as_not_run(config):
    report = {
        "tests": [],
        "collectors": [{"nodeid": "tests/suites/qkv/test_qkv_hidden.py", "outcome": "failed", "longrepr": "ImportError: boom"}],
    }
    res = scoring.build(RunManifest.plan(config), report, {})
    hidden = [t for t in res.tests if t.visibility == "hidden"]
    assert hidden and all("could not be loaded" in t.summary for t in hidden)


def test_a_broken_run_is_never_a_partial_pass(config):
    report = {"tests": [entry(t.node_id, "passed", "passed") for t in config.tests]}
    res = scoring.build(RunManifest.plan(config), report, {}, status="error", message="the grading run broke")
    assert res.score == 0 and res.status == "error"
    assert all(t.status == "not_run" and "the grading run broke" in t.summary for t in res.tests)


def test_public_view_hides_hidden_details_but_keeps_name_and_hint(config):
    tests = config.tests
    report = {
        "tests": [
            entry(
                t.node_id,
                "failed",
                "check",
                feedback=dict(
                    FEEDBACK,
                    grids=[{"title": "g", "rows": "r", "cols": "c", "expected": [["1"]], "got": [["2"]], "bad": [[True]]}],
                ),
            )
            for t in tests
        ]
    }
    for item in report["tests"]:
        item["metadata"]["printed"] = [{"call": "x", "text": "secret input 0.123", "dropped": 0}]
    res = scoring.build(RunManifest.plan(config), report, {}).public()
    for t in res.tests:
        if t.visibility == "hidden":
            assert t.detail is None and t.grids == [] and t.printed == [] and t.seed is None
            assert "expected" not in t.summary and t.hints and t.name
        else:
            assert t.detail and t.grids and t.printed


def test_results_file_is_written_atomically(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    results_mod.write_atomic(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_failed_gate_zeroes_its_skill(tmp_path):
    from conftest import write_config

    path = write_config(
        tmp_path / "grading.toml",
        {
            'sections = ["Week 7 §1–§9", "Week 7 §12–§13"]': (
                'sections = ["Week 7 §1–§9"]\ngates = ["test_scale_scores_divides_by_sqrt_dk"]'
            )
        },
    )
    config = load(path).select(["qkv"])
    report = {
        "tests": [entry(t.node_id, "passed", "passed") for t in config.tests if t.name != "test_scale_scores_divides_by_sqrt_dk"]
    }
    report["tests"].append(
        entry(
            "tests/suites/qkv/test_qkv_visible.py::test_scale_scores_divides_by_sqrt_dk",
            "failed",
            "check",
            feedback=dict(FEEDBACK, problem="constraint"),
        )
    )
    res = scoring.build(RunManifest.plan(config), report, {})
    assert res.score == 0 and res.skills[0].gated_by.startswith("test_scale_scores_divides_by_sqrt_dk")
    assert all("breaks a rule" in t.summary for t in res.tests if t.status == "passed")
    # the skill's line says "0/N passed" beside its 0 points, not "N-1/N passed" (tester M)
    assert res.skills[0].passed == 0 and res.skills[0].total > 1


@pytest.mark.parametrize("problem", ["timeout", "crash", "raised"])
def test_a_gate_that_timed_out_or_crashed_proves_no_violation(tmp_path, problem):
    """Issue 28 B: a gate zeroes its skill only on a proven violation; a checked call that
    never returned (or crashed) costs the tests it failed, never the whole skill."""
    from conftest import write_config

    gate = "test_scale_scores_divides_by_sqrt_dk"
    path = write_config(
        tmp_path / "grading.toml",
        {'sections = ["Week 7 §1–§9", "Week 7 §12–§13"]': f'sections = ["Week 7 §1–§9"]\ngates = ["{gate}"]'},
    )
    config = load(path).select(["qkv"])
    report = {"tests": [entry(t.node_id, "passed", "passed") for t in config.tests if t.name != gate]}
    report["tests"].append(
        entry(f"tests/suites/qkv/test_qkv_visible.py::{gate}", "failed", "submission", feedback=dict(FEEDBACK, problem=problem))
    )
    res = scoring.build(RunManifest.plan(config), report, {})
    assert res.skills[0].gated_by is None
    assert res.score == pytest.approx(sum(t.weight for t in config.tests if t.name != gate))
    assert not any("breaks a rule" in t.summary for t in res.tests)


def test_property_tests_count_once_other_tests_earn_points_and_only_then(config):
    props = set(config.skills["qkv"].properties)
    assert props, "grading.toml lists qkv's property tests"
    only_properties = {
        "tests": [
            entry(
                t.node_id,
                "passed" if t.name in props else "failed",
                "passed" if t.name in props else "check",
                fraction=None if t.name in props else 0.0,
                feedback=None if t.name in props else FEEDBACK,
            )
            for t in config.tests
        ]
    }
    res = scoring.build(RunManifest.plan(config), only_properties, {})
    assert res.score == 0  # right dtypes and shapes alone (plausible garbage) earn nothing
    assert all("property tests count once" in t.summary for t in res.tests if t.name in props)
    first = config.tests[0].name
    one_value = dict(only_properties)
    one_value["tests"] = [
        entry(t.node_id, "passed", "passed")
        if t.name in props or t.name == first
        else entry(t.node_id, "failed", "check", fraction=0.0, feedback=FEEDBACK)
        for t in config.tests
    ]
    assert config.tests[0].name not in props
    res = scoring.build(RunManifest.plan(config), one_value, {})
    want = config.tests[0].weight + sum(t.weight for t in config.tests if t.name in props)
    assert res.score == pytest.approx(want)  # a value mistake elsewhere costs nothing in the property tests


def test_properties_must_name_tests_of_their_skill_and_not_gates(tmp_path):
    from conftest import write_config

    from autograder.config import ConfigError

    line = 'properties = ["test_attention_head_rejects_sequences_longer_than_its_context", '
    path = write_config(tmp_path / "grading.toml", {line: 'properties = ["test_attention_head_reject_sequences", '})
    with pytest.raises(
        ConfigError, match="skills.qkv.properties: 'test_attention_head_reject_sequences' is not a test of skill qkv"
    ):
        load(path)


def test_gates_must_name_tests_of_their_skill(tmp_path):
    from conftest import write_config

    from autograder.config import ConfigError

    path = write_config(
        tmp_path / "grading.toml",
        {
            'sections = ["Week 7 §1–§9", "Week 7 §12–§13"]': (
                'sections = ["Week 7 §1–§9"]\ngates = ["test_scale_scores_divides_by_sqrtdk"]'
            )
        },
    )
    with pytest.raises(ConfigError, match="is not a test of skill qkv — did you mean 'test_scale_scores_divides_by_sqrt_dk'"):
        load(path)


def _raised(message: str, kind: str = "NotImplementedError", frames=None) -> dict:
    error = {"type": kind, "message": message, "frames": frames or []}
    return {
        "check": "qkv.project_qkv(…)",
        "problem": "raised",
        "detail": f"is not implemented yet — {message}",
        "hints": [],
        "grids": [],
        "frames": frames or [],
        "error": error,
    }


@pytest.mark.parametrize(
    "message, shown",
    [
        ("TODO(qkv): project_qkv", "TODO(qkv): project_qkv"),  # a real function of the module: named
        ("TODO(qkv): AttentionHead.forward", "TODO(qkv): AttentionHead.forward"),
        ("TODO(qkv): hidden_shape_3x17x64", None),  # submission-chosen text: never published
        ("TODO(qkv): ｓｅｃｒｅｔ", None),
        ("TODO(masks): causal_mask", None),  # another skill's name in this skill's test
    ],
)
def test_a_hidden_todo_is_named_only_when_it_is_a_function_of_the_module(config, message, shown):
    report = {"tests": [entry(t.node_id, "failed", "submission", feedback=_raised(message)) for t in config.tests]}
    res = scoring.build(RunManifest.plan(config), report, {}).public()
    hidden = [t for t in res.tests if t.visibility == "hidden"]
    assert "project_qkv" in res.skills[0].functions and "AttentionHead.forward" in res.skills[0].functions
    for test in hidden:
        if shown:
            assert test.summary == f"hidden test failed: is not implemented yet — {shown}"
        else:
            assert test.summary == "hidden test failed: your code raised NotImplementedError"
            assert message.split(": ")[1] not in str(test)


def test_public_hidden_tests_are_a_whitelist(config):
    """No worker text, no timing, no exception type the submission named itself."""
    fake_type = "Fake\n::error::x"
    report = {
        "tests": [
            entry(t.node_id, "failed", "submission", feedback=_raised("secret 0.123", fake_type), fraction=0.25)
            for t in config.tests
        ]
    }
    for item in report["tests"]:
        item["call"]["duration"] = 7.25  # a sleep that encodes data
        item["metadata"]["printed"] = [{"call": "x", "text": "secret 0.123", "dropped": 0}]
        item["metadata"]["targets"] = ["qkv.project_qkv", "qkv.project_qkv secret 0.123"]
    full = scoring.build(RunManifest.plan(config), report, {}, duration=12.5)
    res = full.public()
    assert res.duration == 0 and full.duration == 12.5
    for test in res.tests:
        if test.visibility == "hidden":
            assert "secret" not in repr(test) and "Fake" not in repr(test) and "::error" not in repr(test)
            assert test.duration == 0 and test.error is None and test.printed == [] and test.check is None
            assert test.summary == "hidden test failed: your code raised an exception"
            assert test.credit == {"passed": 1, "total": 4, "fraction": 0.25} and test.score > 0
            assert test.targets == ["qkv.project_qkv"]
        else:
            assert test.duration > 0 and "secret" in test.detail  # the student's own visible feedback stays


def test_frames_are_checked_facts_about_the_students_file(config, tmp_path):
    """File, line and function come from the graded copy (captured when it was made),
    never from the worker's code objects (whose name, file and line a submission can set
    to anything)."""
    copy = tmp_path / "qkv.py"
    copy.write_text("import torch\n\n\ndef project_qkv(x, w_q, w_k, w_v):\n    raise ValueError('no')\n", encoding="utf-8")
    manifest = RunManifest.plan(config)
    manifest.modules = {"qkv": ModuleEntry.of({"display_path": "exercises/qkv.py", "copy_path": str(copy)}, copy.read_bytes())}
    frames = [
        {"file": "qkv.py", "line": 5, "function": "\x1b[31m✓ fake 1/1 points"},  # renamed code object
        {"file": "qkv.py\n::error::x", "line": 5, "function": "f"},  # a file that is not the module
        {"file": "qkv.py", "line": 10**6, "function": "f"},  # a line the file does not have
        {"file": "../solutions/qkv.py", "line": 1, "function": "f"},
        {"file": "qkv.py", "line": True, "function": "f"},
    ]
    report = {
        "tests": [entry(t.node_id, "failed", "submission", feedback=_raised("boom", "ValueError", frames)) for t in config.tests]
    }
    copy.unlink()  # scoring reads data only: the run folder may be gone by now
    res = scoring.build(manifest, report, {"modules": {"qkv": {"display_path": "exercises/qkv.py"}}})
    for test in res.tests:
        assert test.frames == [
            {"file": "exercises/qkv.py", "line": 5, "function": "project_qkv", "code": "raise ValueError('no')"}
        ]
    assert res.submission["modules"]["qkv"]["definitions"] == {"project_qkv": 4}


def test_a_hidden_test_never_shows_an_exception_text_the_visible_tests_did_not(config):
    """A message is the student's to write: ``raise ValueError(str(x.flatten().tolist()))``
    in a hidden test would print its inputs (blind red-team tester R-AH), and torch's own text
    names the call's shapes. A hidden test shows a message only where a visible test of the
    skill raised the very same line; else the exception's type alone."""
    hidden_ids = {t.node_id for t in config.tests if t.visibility == "hidden"}
    leak = "tensor([0.1234, -1.5678]) shape (3, 7)"
    seen = "mat1 and mat2 must have the same dtype, but got Float and Double"
    report = {
        "tests": [
            entry(t.node_id, "failed", "submission", feedback=_raised(leak if t.node_id in hidden_ids else seen, "ValueError"))
            for t in config.tests
        ]
    }
    res = scoring.build(RunManifest.plan(config), report, {}).public()
    hidden = [t for t in res.tests if t.visibility == "hidden"]
    assert hidden and all(t.summary == "hidden test failed: your code raised ValueError" for t in hidden)
    assert "0.1234" not in json.dumps(res.to_dict())
    # the same text under another exception type is another line: type alone
    report = {
        "tests": [
            entry(
                t.node_id,
                "failed",
                "submission",
                feedback=_raised(seen, "RuntimeError" if t.node_id in hidden_ids else "ValueError"),
            )
            for t in config.tests
        ]
    }
    res = scoring.build(RunManifest.plan(config), report, {}).public()
    assert all(t.summary == "hidden test failed: your code raised RuntimeError" for t in res.tests if t.visibility == "hidden")


def test_a_hidden_test_shows_its_frames_only_where_a_visible_test_showed_the_same(config, tmp_path):
    """Which lines a call passed through is the code's to choose: a chain of one-line lambdas,
    one line per byte of an input, spelled a hidden test's inputs in its frames (blind
    red-team tester R-AK). A hidden test shows frames only where a visible test of the skill
    showed the very same list; its score and the rest of its public view do not change."""
    table = "".join(f"_T{i} = lambda: _T{i + 1}()\n" for i in range(8))
    copy = tmp_path / "qkv.py"
    copy.write_text(f"import torch\n{table}\ndef project_qkv(x, w_q, w_k, w_v):\n    raise ValueError('no')\n", encoding="utf-8")
    manifest = RunManifest.plan(config)
    manifest.modules = {"qkv": ModuleEntry.of({"display_path": "exercises/qkv.py", "copy_path": str(copy)}, copy.read_bytes())}
    entry_line = table.count("\n") + 3
    seen = [{"file": "qkv.py", "line": entry_line, "function": "project_qkv"}]
    chain = [{"file": "qkv.py", "line": 2 + i, "function": "<lambda>"} for i in (3, 1, 4, 1, 5)]
    hidden_ids = {t.node_id for t in config.tests if t.visibility == "hidden"}

    def public(hidden_frames):
        report = {
            "tests": [
                entry(
                    t.node_id,
                    "failed",
                    "submission",
                    feedback=_raised("no", "ValueError", hidden_frames if t.node_id in hidden_ids else seen),
                )
                for t in config.tests
            ]
        }
        return [t for t in scoring.build(manifest, report, {}).public().tests if t.visibility == "hidden"]

    leaked = public(seen + chain)
    assert leaked and all(t.frames == [] for t in leaked)
    shown = public(seen)
    assert all([f["line"] for f in t.frames] == [entry_line] for t in shown)
    assert [t.score for t in leaked] == [t.score for t in shown]


def test_a_run_that_could_not_grade_breaks_no_rule():
    """An empty upload or a broken run leaves every test at 0 with the reason — and no "breaks
    a rule of the exercise" banner: a gate that did not run observed no violation."""
    full = load(ROOT / "grading.toml")
    res = scoring.error_result(full, "your upload holds no exercise module")
    assert any(s.gates for s in full.skills.values())
    assert res.score == 0 and all(s.gated_by is None for s in res.skills)


def test_a_hidden_test_shows_the_students_own_exception_and_forbids_only_for_rules(config):
    """The student's own error reads in full on one line (type and message: their code's, or
    torch's about their call); "forbids" is said only of a rule (a weight-0 gate)."""
    report = {
        "tests": [
            entry(
                t.node_id,
                "failed",
                "submission",
                feedback=_raised("mat1 and mat2 must have the same dtype, but got Float and Double", "RuntimeError"),
            )
            for t in config.tests
        ]
    }
    res = scoring.build(RunManifest.plan(config), report, {}).public()
    hidden = [t for t in res.tests if t.visibility == "hidden"]
    assert hidden and all(
        t.summary == "hidden test failed: your code raised RuntimeError: mat1 and mat2 must have the same dtype, "
        "but got Float and Double"
        for t in hidden
    )
    constraint = dict(FEEDBACK, problem="constraint", hints=[])
    report = {"tests": [entry(t.node_id, "failed", "check", fraction=0.0, feedback=constraint) for t in config.tests]}
    res = scoring.build(RunManifest.plan(config), report, {}).public()
    assert all("forbids" not in t.summary for t in res.tests if t.visibility == "hidden" and t.max_score > 0)
