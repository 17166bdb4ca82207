"""`make new-test`: one command writes a test's skeleton, its weight and its hint consistently,
and refuses (writing nothing) what would leave the suites inconsistent."""

from __future__ import annotations

import shutil
import tomllib

import pytest
from conftest import ROOT

from autograder.config import load
from autograder.instructor.new_test import Refused, add_test, main

NAME = "test_scale_scores_keeps_minus_inf"
HINTED = {"take_from": "test_project_qkv_matches_reference_on_random_inputs", "hint": "new-one", "text": "x"}


@pytest.fixture
def repo(tmp_path):
    for part in ("tests/suites", "solutions", "exercises", "docs"):  # docs: the lessons a hint's section must resolve in
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "grading.toml", tmp_path / "grading.toml")
    return tmp_path


def _snapshot(repo):
    return {p: p.read_bytes() for p in [repo / "grading.toml", *sorted((repo / "tests/suites/qkv").glob("*.*"))]}


def test_a_hidden_test_with_a_hint_lands_in_all_three_places(repo):
    changed = add_test(
        repo,
        "qkv",
        NAME,
        hidden=True,
        weight=0.25,
        take_from="test_scale_scores_matches_reference_for_many_widths",
        hint="minus-inf-lost",
        function="scale_scores",
        text="−∞ must stay −∞.",
        section="Week 7 §11",
    )
    assert {p.name for p in changed} == {"grading.toml", "test_qkv_hidden.py", "hints.toml"}
    config = load(repo / "grading.toml")  # the sums still match
    hidden = next(s for s in config.skills["qkv"].suites if s.visibility == "hidden")
    before = next(s for s in load(ROOT / "grading.toml").skills["qkv"].suites if s.visibility == "hidden")
    assert hidden.weights[NAME] == 0.25
    assert hidden.weights["test_scale_scores_matches_reference_for_many_widths"] == pytest.approx(
        before.weights["test_scale_scores_matches_reference_for_many_widths"] - 0.25
    )
    assert config.skills["qkv"].points == load(ROOT / "grading.toml").skills["qkv"].points
    source = (repo / "tests/suites/qkv/test_qkv_hidden.py").read_text(encoding="utf-8")
    assert (
        f"def {NAME}(sub, ref, rng, credit):" in source
        and "raise NotImplementedError" in source
        and '"qkv/minus-inf-lost"' in source
    )
    compile(source, "test_qkv_hidden.py", "exec")
    hint = tomllib.loads((repo / "tests/suites/qkv/hints.toml").read_text(encoding="utf-8"))["minus-inf-lost"]
    assert hint == {"text": "−∞ must stay −∞.", "section": "Week 7 §11", "function": "scale_scores"}


def test_the_edit_keeps_every_comment_and_line_it_does_not_change(repo):
    before = (repo / "grading.toml").read_text(encoding="utf-8")
    add_test(repo, "qkv", NAME, hidden=True, weight=0.25, take_from="test_scale_scores_matches_reference_for_many_widths")
    after = (repo / "grading.toml").read_text(encoding="utf-8")
    removed = [line for line in before.splitlines() if line not in after.splitlines()]
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert removed == ["test_scale_scores_matches_reference_for_many_widths = 0.5"]
    assert added == ["test_scale_scores_matches_reference_for_many_widths = 0.25", f"{NAME} = 0.25"]
    assert after.index(f"{NAME} = 0.25") < after.index("[skills.masks]")  # at the end of qkv's hidden weights


def test_add_points_raises_the_skill_instead(repo):
    add_test(repo, "masks", "test_causal_mask_is_bool", hidden=False, weight=0.5, add_points=True)
    assert load(repo / "grading.toml").skills["masks"].points == load(ROOT / "grading.toml").skills["masks"].points + 0.5
    assert 'c = SNAP["causal_mask_is_bool"]' in (repo / "tests/suites/masks/test_masks_visible.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"take_from": "test_no_such_test"}, "has no test test_no_such_test to take the weight from"),
        # a name that is nothing like one: every test that has points to give, with its weight
        ({"take_from": "test_no_such_test"}, "its tests with points to give: test_project_qkv_reproduces_week7_q_k_v (1), "),
        # a typo: the closest names
        (
            {"take_from": "test_scale_scores_matches_reference_for_many_width"},
            "did you mean test_scale_scores_matches_reference_for_many_widths",
        ),
        # another skill's test: its weight is not this skill's to give
        (
            {"take_from": "test_causal_mask_reproduces_week7_m2_and_m4"},
            "skill qkv has no test test_causal_mask_reproduces_week7_m2_and_m4",
        ),
        ({"take_from": "test_causal_mask_reproduces_week7_m2_and_m4"}, "(it is skill masks's: "),
        ({"take_from": "test_scale_scores_matches_reference_for_many_widths", "weight": 5}, "cannot give 5"),
        ({}, "say where the weight comes from"),
        (
            {
                "take_from": "test_project_qkv_matches_reference_on_random_inputs",
                "name": "test_scale_scores_matches_reference_for_many_widths",
            },
            "already has a test",
        ),
        (
            {
                "take_from": "test_project_qkv_matches_reference_on_random_inputs",
                "hint": "divide-by-dk",
                "text": "x",
                "section": "Week 7 §8",
            },
            "[divide-by-dk] exists already",
        ),
        (
            {
                "take_from": "test_project_qkv_matches_reference_on_random_inputs",
                "hint": "new-one",
                "text": "x",
                "section": "somewhere",
            },
            "--section citing the lesson",
        ),
        # a section the lesson does not have: resolved as a run resolves a hint's section
        (
            {
                "take_from": "test_project_qkv_matches_reference_on_random_inputs",
                "hint": "new-one",
                "text": "x",
                "section": "Day 1 §99 (nothing)",
            },
            "--section 'Day 1 §99 (nothing)': Day 1 (docs/lessons/week1-day1-self-attention.txt) has no §99",
        ),
        (
            {**HINTED, "section": "Day 1 §99"},
            "Day 1's sections are §0, §1, §2, §3, §4, §5, ",
        ),
        (
            {
                "take_from": "test_project_qkv_matches_reference_on_random_inputs",
                "hint": "new-one",
                "text": "x",
                "section": "Week 7 §11 and Day 1 §2.9",
            },
            "has no §2.9 — no heading line opens with it",
        ),
        (
            {**HINTED, "section": "Day 1 §2.9"},
            "under §2: §2.1, §2.2, §2.3, §2.4",
        ),
        (
            {"take_from": "test_project_qkv_matches_reference_on_random_inputs", "function": "no_such_function"},
            "defines no no_such_function",
        ),
    ],
)
def test_refusals_name_the_fix_and_write_nothing(repo, kwargs, message):
    before = _snapshot(repo)
    args = {"hidden": True, "weight": 0.25, "name": NAME, **kwargs}
    with pytest.raises(Refused, match=__import__("re").escape(message)):
        add_test(repo, "qkv", args.pop("name"), **args)
    assert _snapshot(repo) == before
    assert not (repo / ".grading.new-test.toml").exists()


def test_the_command_line_exits_2_on_a_refusal(repo, capsys):
    assert main(["--root", str(repo), "--skill", "qkv", "--name", NAME, "--weight", "0.25", "--hidden"]) == 2
    assert "new-test: refused: say where the weight comes from" in capsys.readouterr().err


def test_every_section_the_grader_resolves_is_accepted(repo):
    """The check is the grader's own resolution, not a stricter one: each section the lesson's
    refusal lists resolves, and a hint citing two texts (one § each) goes in."""
    from autograder.instructor.new_test import sections_of, unresolved_section

    config = load(repo / "grading.toml")
    day1 = sections_of(config, "Day 1")
    assert {"0", "2", "2.3", "A.4", "B"} <= set(day1)
    assert all(unresolved_section(config, f"Day 1 §{s}") is None for s in day1)
    assert sections_of(config, "Week 7")[:3] == ["1", "2", "3"] and "110" not in sections_of(config, "Week 7")
    add_test(
        repo,
        "qkv",
        NAME,
        hidden=True,
        weight=0.25,
        take_from="test_scale_scores_matches_reference_for_many_widths",
        hint="minus-inf-lost",
        function="scale_scores",
        text="x",
        section="Week 7 §11 and Day 1 §2.3",
    )


def test_next_lists_every_step_left(repo, capsys):
    """After the scaffold the command says everything left, in the order of
    autograder/testing/README.md "Adding a test": the mistake, the body, its variant, the
    properties list, the snapshots, the CPU table and the skill's check (not the whole `make check`)."""
    args = ["--root", str(repo), "--skill", "qkv", "--name", NAME, "--weight", "0.25", "--hidden"]
    args += ["--take-from", "test_scale_scores_matches_reference_for_many_widths", "--hint", "minus-inf-lost"]
    args += ["--function", "scale_scores", "--text", "x", "--section", "Week 7 §11"]
    assert main(args) == 0
    out = capsys.readouterr().out
    steps = out.split("next:\n", 1)[1].splitlines()
    wanted = [
        "tests/suites/qkv/mistakes.py",
        f"write the body of {NAME} in tests/suites/qkv/test_qkv_hidden.py",
        "tests/submissions/mistakes/qkv.toml",
        "[skills.qkv] properties in grading.toml",
        "`make snapshots SKILL=qkv`",
        "`make reference-cpu SKILL=qkv`",
        "`make check-skill SKILL=qkv`",
    ]
    assert len(steps) == len(wanted), steps
    for i, (step, want) in enumerate(zip(steps, wanted, strict=True), start=1):
        assert step.startswith(f"  {i}. ") and want in step, (step, want)
    assert "`make check`" not in out


def test_next_for_a_visible_test_without_a_hint(repo, capsys):
    args = ["--root", str(repo), "--skill", "masks", "--name", "test_causal_mask_is_bool", "--weight", "0.5", "--add-points"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "snapshot_cases.py, then `make snapshots SKILL=masks`" in out
    assert "mistakes.py" not in out and "tests/submissions/mistakes" not in out  # no named mistake: no variant
    assert "`make reference-cpu SKILL=masks`" in out and "`make check-skill SKILL=masks`" in out


def test_help_is_the_whole_description(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "in the three places a test lives:" in out
    assert "tests/suites/<skill>/hints.toml" in out and "--take-from" in out and "a refusal names the" in out
