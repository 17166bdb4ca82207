"""grading.toml validation: every mistake is caught before grading, with the line or key
and the fix, and the command line exits 2 with one line (no traceback)."""

from __future__ import annotations

import pytest

from autograder.config import ConfigError, load
from conftest import ROOT, grade, write_config


def _config(tmp_path, edits=None, **limits):
    return write_config(tmp_path / "grading.toml", edits, **limits)


def test_repository_config_is_valid_and_points_add_up():
    config = load(ROOT / "grading.toml")
    assert set(config.skills) >= {"qkv"}
    for skill in config.skills.values():
        assert sum(w for s in skill.suites for w in s.weights.values()) == pytest.approx(skill.points)
    assert len({t.node_id for t in config.tests}) == len(config.tests)


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"points = 20\nmodule = \"qkv.py\"": "points = 21\nmodule = \"qkv.py\""}, "skills.qkv.points: is 21 but the weights of its tests add up to 20"),
        ({'file = "tests/suites/qkv/test_qkv_visible.py"': 'file = "tests/suites/qkv/test_qkv_visibel.py"'}, "does not exist"),
        ({"test_attention_scores_reproduce_week7_raw_scores = 1\n": "test_attention_scores_reproduce_week7_raw_score = 1\n"}, "did you mean 'test_attention_scores_reproduce_week7_raw_scores'"),
        ({'visibility = "visible"': 'visibility = "public"'}, "must be one of visible, hidden"),
        ({"call_timeout_s = 10": "call_timout_s = 10"}, "limits.call_timout_s: unknown key — did you mean 'call_timeout_s'?"),
        ({'module = "qkv.py"': 'module = "qkv"'}, "must be a Python file name"),
        ({'seed = "content"': 'seed = "sometimes"'}, 'grader.seed: must be "content", "fresh" or a non-negative integer'),
        ({"memory_mib = 4096": "memory_mib = 512"}, "memory_mib: must be at least 768"),
        ({'user = "nobody"': 'user = "nobody"\nshell = "bash"'}, "sandbox.shell: unknown key"),
        ({"fail_below = 0": "fail_below = -1"}, "ci.fail_below: must be 0 (never fail for the score) or a number of points"),
        ({"fail_below = 0": "fail_below = 1000"}, "ci.fail_below: is 1000 but the skills give only 100 points"),
        ({"fail_below = 0": "fail_bellow = 0"}, "ci.fail_bellow: unknown key — did you mean 'fail_below'?"),
        ({"fail_below = 0": 'fail_below = "half"'}, "ci.fail_below: must be a number"),
    ],
)
def test_config_error_names_the_key_and_the_fix(tmp_path, edit, message):
    with pytest.raises(ConfigError) as info:
        load(_config(tmp_path, edit))
    assert message in str(info.value)
    assert str(info.value).startswith("grading.toml")


def test_config_error_carries_a_line_number(tmp_path):
    path = _config(tmp_path, {"points = 20\nmodule = \"qkv.py\"": "points = 21\nmodule = \"qkv.py\""})
    with pytest.raises(ConfigError) as info:
        load(path)
    line = int(str(info.value).split(":")[1])
    assert "points = 21" in path.read_text().splitlines()[line - 1]


def test_invalid_toml_reports_line(tmp_path):
    path = _config(tmp_path, {'name = "LLM course · attention exercises"': 'name = "unterminated'})
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).startswith("grading.toml:") and "invalid TOML" in str(info.value)


def test_test_function_without_weight_is_an_error(tmp_path):
    path = _config(tmp_path, {"test_scale_scores_divides_by_sqrt_dk = 1\n": ""})
    with pytest.raises(ConfigError, match="defines test_scale_scores_divides_by_sqrt_dk but it has no weight"):
        load(path)


def test_a_suite_file_is_listed_once(tmp_path):
    path = _config(tmp_path, {'file = "tests/suites/qkv/test_qkv_hidden.py"': 'file = "tests/suites/qkv/test_qkv_visible.py"'})
    with pytest.raises(ConfigError, match="already listed under skill 'qkv'; each test belongs to exactly one skill"):
        load(path)


def test_cli_config_error_is_one_line_and_exit_2(tmp_path):
    path = _config(tmp_path, {"points = 20\nmodule = \"qkv.py\"": "points = 19\nmodule = \"qkv.py\""})
    result = grade(ROOT / "solutions", config=path, output=tmp_path / "r.json")
    assert result.rc == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and "skills.qkv.points" in result.stderr


def test_unknown_skill_flag_suggests_the_right_one(tmp_path):
    result = grade(ROOT / "solutions", "--skill", "qvk", output=tmp_path / "r.json")
    assert result.rc == 2
    assert "unknown skill 'qvk'" in result.stderr and "did you mean 'qkv'" in result.stderr


def test_unknown_format_is_a_usage_error():
    result = grade(ROOT / "solutions", fmt="yaml", seed=None)
    assert result.rc == 2 and "invalid choice" in result.stderr and "Traceback" not in result.stderr
