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


def _keys_of(text: str) -> list[tuple[int, str, str]]:
    """(line number, table header, key) of every `key = value` line of a TOML file."""
    import re

    out, table = [], ""
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[\[?([^\]]+)\]\]?", line)
        if header:
            table = header.group(1).strip()
            continue
        key = re.match(r"^\s*([A-Za-z0-9_]+)\s*=", line)
        if key:
            out.append((number, table, key.group(1)))
    return out


KEYS = _keys_of((ROOT / "grading.toml").read_text(encoding="utf-8"))
KEYS_GRADER_LINE = (ROOT / "grading.toml").read_text(encoding="utf-8").splitlines().index("[grader]") + 1


@pytest.mark.parametrize("number, table, key", KEYS, ids=[f"{t}.{k}@{n}" for n, t, k in KEYS])
def test_every_key_with_a_bad_value_exits_2_with_one_line_and_a_results_file(tmp_path, capsys, number, table, key):
    """Each key of grading.toml, given a value of the wrong type: exit 2, one line on stderr
    naming the file, the key's own line and the key, and a results file all the same."""
    import json

    from autograder import cli

    lines = write_config(tmp_path / "grading.toml").read_text(encoding="utf-8").splitlines()
    shift = int(number > KEYS_GRADER_LINE)  # write_config adds `root = …` under [grader]
    lines[number - 1 + shift] = f"{key} = {{ bad = true }}"
    path = tmp_path / "grading.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "r.json"
    rc = cli.main(["grade", str(ROOT / "solutions"), "--config", str(path), "--output", str(out), "--format", "json", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"autograder: grading.toml:{number + shift}: "), (err, number + shift)
    assert f".{key}:" in err or err.split(": ")[2].startswith(key), err
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["status"] == "error" and data["score"] == 0 and "configuration error" in data["message"]


def test_config_errors_in_a_second_suite_table_name_that_tables_line(tmp_path):
    path = _config(tmp_path, {'file = "tests/suites/qkv/test_qkv_hidden.py"\nvisibility = "hidden"': 'file = "tests/suites/qkv/test_qkv_hidden.py"\nvisibility = "secret"'})
    with pytest.raises(ConfigError) as info:
        load(path)
    line = int(str(info.value).split(":")[1])
    assert 'visibility = "secret"' in path.read_text().splitlines()[line - 1], str(info.value)
    assert "skills.qkv.suites[1].visibility" in str(info.value)


def test_an_unknown_sandbox_user_is_a_config_error_when_grading_as_root(tmp_path, capsys):
    import os

    from autograder import cli

    path = _config(tmp_path, {'user = "nobody"': 'user = "no-such-user-here"'})
    out = tmp_path / "r.json"
    rc = cli.main(["grade", str(ROOT / "solutions"), "--config", str(path), "--output", str(out), "--format", "json", "--no-progress", "--skill", "qkv"])
    err = capsys.readouterr().err
    if os.geteuid() != 0:
        pytest.skip("the user is only used (and checked) when grading as root")
    assert rc == 2 and err.count("\n") == 1 and "sandbox.user" in err and "does not exist" in err, err
    assert out.is_file()


@pytest.mark.parametrize("edit, message", [
    ({"memory_mib = 4096": "memory_mib = 4096.5"}, "limits.memory_mib: must be a whole number"),
    ({"run_timeout_s = 900": "run_timeout_s = 1e300"}, "limits.run_timeout_s: must be at most"),
    ({"skill_time_s = 15": "skill_time_s = 5"}, "limits.skill_time_s: must be at least call_timeout_s"),
    ({"trusted_processes = 2 ": "trusted_processes = 3 "}, "limits.trusted_processes: must be at most 2"),
    ({"trusted_processes = 2 ": "trusted_processes = 0 "}, "limits.trusted_processes: must be"),
    ({'user = "nobody"': 'user = "no body; rm"'}, "sandbox.user: must be a user name"),
])
def test_limits_and_sandbox_values_are_range_checked(tmp_path, edit, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load(_config(tmp_path, edit))


@pytest.mark.parametrize(
    "value, message",
    [
        ('["gradescope", "moodle"]', "release.platforms: unknown platform 'moodle'"),
        ('["gradescop"]', "did you mean 'gradescope'?"),
        ('["github-classroom"]', "GitHub Classroom was discontinued (2026) — list \"classroom50\""),
        ('["gradescope", "gradescope"]', "'gradescope' is listed twice"),
        ("[]", "release.platforms: must be a non-empty list of platforms"),
        ('"gradescope"', "release.platforms: must be a non-empty list of platforms"),
    ],
)
def test_release_platforms_are_checked_with_their_line(tmp_path, value, message):
    """`[release] platforms` (where students submit: the README's "How to submit", dist/classroom50)."""
    path = _config(tmp_path, {'platforms = ["gradescope", "github-actions", "classroom50"]': f"platforms = {value}"})
    with pytest.raises(ConfigError) as info:
        load(path)
    assert message in str(info.value)
    line = int(str(info.value).split(":")[1])
    assert path.read_text().splitlines()[line - 1].startswith("platforms = ")


def test_release_platforms_default_to_gradescope_and_actions(tmp_path):
    assert load(ROOT / "grading.toml").platforms == ("gradescope", "github-actions", "classroom50")
    path = _config(tmp_path, {'platforms = ["gradescope", "github-actions", "classroom50"]\n': ""})
    assert load(path).platforms == ("gradescope", "github-actions")
